/* The stable ABI unless the build says otherwise (setup.py). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *add(PyObject *self, PyObject *args) {
    long a, b;
    if (!PyArg_ParseTuple(args, "ll", &a, &b)) return NULL;
    return PyLong_FromLong(a + b);
}

static PyObject *python(PyObject *self, PyObject *unused) {
#ifdef Py_LIMITED_API
    return PyUnicode_FromString("abi3");
#else
    /* The full API: a version-specific object using a function outside the stable ABI. */
    static const char text[] = {'0' + PY_MAJOR_VERSION, '.', '0' + PY_MINOR_VERSION / 10, '0' + PY_MINOR_VERSION % 10};
    return PyUnicode_FromKindAndData(PyUnicode_1BYTE_KIND, text, sizeof text);
#endif
}

static PyMethodDef methods[] = {
    {"add", add, METH_VARARGS, "a + b"},
    {"python", python, METH_NOARGS, "abi3, or the Python it was compiled for"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "stableshape", NULL, -1, methods};

PyMODINIT_FUNC PyInit_stableshape(void) { return PyModule_Create(&module); }
