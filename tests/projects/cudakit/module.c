/* cudakit._cudakit: what the extension was compiled against and what it loads, without a GPU. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <cuda_runtime_api.h>
#include <cublas_v2.h>

int cudakit_compiled_runtime(void);

static PyObject *compiled_runtime(PyObject *self, PyObject *args) { return PyLong_FromLong(cudakit_compiled_runtime()); }

static PyObject *runtime(PyObject *self, PyObject *args) {
  int version = 0;
  cudaRuntimeGetVersion(&version);
  return PyLong_FromLong(version);
}

static PyObject *cublas(PyObject *self, PyObject *args) {
  int major = 0, minor = 0;
  if (cublasGetProperty(MAJOR_VERSION, &major) != CUBLAS_STATUS_SUCCESS ||
      cublasGetProperty(MINOR_VERSION, &minor) != CUBLAS_STATUS_SUCCESS)
    return PyErr_Format(PyExc_RuntimeError, "cublasGetProperty failed");
  return Py_BuildValue("(ii)", major, minor);
}

static PyMethodDef methods[] = {
    {"compiled_runtime", compiled_runtime, METH_NOARGS, "CUDART_VERSION the device code was compiled with."},
    {"runtime", runtime, METH_NOARGS, "cudaRuntimeGetVersion() of the libcudart loaded."},
    {"cublas", cublas, METH_NOARGS, "(major, minor) of the libcublas loaded."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_cudakit", NULL, -1, methods};

PyMODINIT_FUNC PyInit__cudakit(void) { return PyModule_Create(&module); }
