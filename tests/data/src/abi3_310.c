/* An abi3 extension module built for the 3.10 limited API: PyModule_AddType joined the
   stable ABI in 3.10, so the module cannot load on 3.8 or 3.9. */
#define Py_LIMITED_API 0x030A0000
#include <Python.h>
static PyType_Slot slots[] = {{0, NULL}};
static PyType_Spec spec = {"abi3_310.T", sizeof(PyObject), 0, Py_TPFLAGS_DEFAULT, slots};
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "abi3_310", NULL, -1, NULL};
PyMODINIT_FUNC PyInit_abi3_310(void) {
    PyObject *m = PyModule_Create(&def);
    PyObject *t = m ? PyType_FromSpec(&spec) : NULL;
    if (t) { PyModule_AddType(m, (PyTypeObject *)t); Py_DECREF(t); }
    return m;
}
