/* cuda_ext._ext: add_one(list of floats) -> list of floats, computed on the GPU. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>

int cuda_ext_add_one(float* x, int n);

static PyObject* add_one(PyObject* self, PyObject* arg) {
  (void)self;
  PyObject* seq = PySequence_Fast(arg, "add_one expects a sequence of numbers");
  if (seq == NULL) return NULL;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  float* x = PyMem_Malloc(sizeof(float) * (size_t)(n ? n : 1));
  if (x == NULL) {
    Py_DECREF(seq);
    return PyErr_NoMemory();
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    x[i] = (float)PyFloat_AsDouble(PySequence_Fast_GET_ITEM(seq, i));
  }
  Py_DECREF(seq);
  if (PyErr_Occurred()) {
    PyMem_Free(x);
    return NULL;
  }
  int err = n ? cuda_ext_add_one(x, (int)n) : 0;
  if (err != 0) {
    PyMem_Free(x);
    return PyErr_Format(PyExc_RuntimeError, "CUDA error %d", err);
  }
  PyObject* out = PyList_New(n);
  for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
    PyList_SET_ITEM(out, i, PyFloat_FromDouble(x[i]));
  }
  PyMem_Free(x);
  return out;
}

static PyMethodDef methods[] = {
    {"add_one", add_one, METH_O, "Add 1 to each number, on the GPU."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_ext", NULL, -1, methods};

PyMODINIT_FUNC PyInit__ext(void) { return PyModule_Create(&module); }
