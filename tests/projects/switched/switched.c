/* Says which switches it was compiled with: switched.switches() is (fast, label). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#ifdef BROKEN
#error "-DBROKEN: this host's CFLAGS reached the build"
#endif
#ifndef SWITCHED_FAST
#define SWITCHED_FAST 0
#endif

static PyObject *switches(PyObject *self, PyObject *unused) {
    return Py_BuildValue("(is)", SWITCHED_FAST, SWITCHED_LABEL);
}

static PyMethodDef methods[] = {
    {"switches", switches, METH_NOARGS, "(fast, label) as compiled"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "switched", NULL, -1, methods};

PyMODINIT_FUNC PyInit_switched(void) { return PyModule_Create(&module); }
