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

/* The variant it was built for: setup.py defines these from the build's build.env variables. */
#ifndef FLAGGED_ACCELERATOR
#define FLAGGED_ACCELERATOR ""
#endif
#ifndef FLAGGED_ACCELERATOR_VERSION
#define FLAGGED_ACCELERATOR_VERSION ""
#endif

static PyObject *variant(PyObject *self, PyObject *unused) {
    return Py_BuildValue("(ss)", FLAGGED_ACCELERATOR, FLAGGED_ACCELERATOR_VERSION);
}

/* The CUDA runtime's version (13020 for 13.2; no device needed), None in a build without CUDA. */
#ifdef FLAGGED_CUDA
#include <cuda_runtime_api.h>
#endif

static PyObject *runtime(PyObject *self, PyObject *unused) {
#ifdef FLAGGED_CUDA
    int version = 0;
    if (cudaRuntimeGetVersion(&version) != cudaSuccess) {
        PyErr_SetString(PyExc_RuntimeError, "cudaRuntimeGetVersion failed");
        return NULL;
    }
    return PyLong_FromLong(version);
#else
    Py_RETURN_NONE;
#endif
}

static PyMethodDef methods[] = {
    {"optimized", optimized, METH_NOARGS, "1 when compiled with optimisation"},
    {"python", python, METH_NOARGS, "the Python the object was compiled for"},
    {"runtime", runtime, METH_NOARGS, "the CUDA runtime's version, None without CUDA"},
    {"variant", variant, METH_NOARGS, "(accelerator, accelerator version) the object was compiled for"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "flagged", NULL, -1, methods};

PyMODINIT_FUNC PyInit_flagged(void) { return PyModule_Create(&module); }
