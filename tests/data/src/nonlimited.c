/* An extension module built without Py_LIMITED_API that calls PyCode_NewEmpty, which is
   outside the stable ABI: its code-object layout changes between Python versions. */
#include <Python.h>
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "nonlimited", NULL, -1, NULL};
PyMODINIT_FUNC PyInit_nonlimited(void) {
    PyObject *m = PyModule_Create(&def);
    PyCodeObject *c = m ? PyCode_NewEmpty("f", "g", 1) : NULL;
    Py_XDECREF(c);
    return m;
}
