/* Reports how it was compiled, so a test can tell stale objects from fresh ones. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *optimized(PyObject *self, PyObject *unused) {
#ifdef __OPTIMIZE__
    return PyLong_FromLong(1);
#else
    return PyLong_FromLong(0);
#endif
}

static PyObject *python(PyObject *self, PyObject *unused) {
    return PyUnicode_FromFormat("%d.%d", PY_MAJOR_VERSION, PY_MINOR_VERSION);
}

static PyMethodDef methods[] = {
    {"optimized", optimized, METH_NOARGS, "1 when compiled with optimisation"},
    {"python", python, METH_NOARGS, "the Python the object was compiled for"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "flagged", NULL, -1, methods};

PyMODINIT_FUNC PyInit_flagged(void) { return PyModule_Create(&module); }
