// minifw._C: the extension module of minifw, written against the plain
// CPython C API (no binding library) in C++20.
//
// * multi-phase initialisation (PEP 489), no per-module mutable state;
// * Py_mod_gil = Py_MOD_GIL_NOT_USED: on a free-threaded interpreter
//   (Py_GIL_DISABLED, 3.13t+) importing minifw keeps the GIL off.  The code is
//   safe without the GIL: inputs are snapshotted with PySequence_Tuple (which
//   locks a list while copying it) and nothing shared is mutated;
// * accelerator entry points (csrc/accel.h) on cuda/rocm/xpu builds.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cstddef>
#include <exception>
#include <new>
#include <span>
#include <stdexcept>
#include <vector>

#include "ops.hpp"
#ifndef MINIFW_WITH_CPU
#include "accel.h"
#endif

#ifndef MINIFW_ACCELERATOR
#define MINIFW_ACCELERATOR "cpu"
#endif

namespace {

// Python iterable of numbers -> std::vector<double>; false with an exception set.
bool to_vector(PyObject* obj, const char* what, std::vector<double>& out) {
  PyObject* tup = PySequence_Tuple(obj);  // a private, immutable snapshot
  if (tup == nullptr) {
    PyErr_Format(PyExc_TypeError, "%s must be a sequence of numbers, not %.100s", what,
                 Py_TYPE(obj)->tp_name);
    return false;
  }
  const Py_ssize_t n = PyTuple_GET_SIZE(tup);
  try {
    out.resize(static_cast<std::size_t>(n));
  } catch (const std::bad_alloc&) {
    Py_DECREF(tup);
    PyErr_NoMemory();
    return false;
  }
  for (Py_ssize_t i = 0; i < n; ++i) {
    const double v = PyFloat_AsDouble(PyTuple_GET_ITEM(tup, i));
    if (v == -1.0 && PyErr_Occurred()) {
      Py_DECREF(tup);
      return false;
    }
    out[static_cast<std::size_t>(i)] = v;
  }
  Py_DECREF(tup);
  return true;
}

PyObject* to_list(std::span<const double> values) {
  PyObject* list = PyList_New(static_cast<Py_ssize_t>(values.size()));
  if (list == nullptr) return nullptr;
  Py_ssize_t i = 0;
  for (double v : values) {
    PyObject* f = PyFloat_FromDouble(v);
    if (f == nullptr) {
      Py_DECREF(list);
      return nullptr;
    }
    PyList_SET_ITEM(list, i++, f);
  }
  return list;
}

bool same_length(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size()) {
    PyErr_Format(PyExc_ValueError, "operands must have the same length (got %zd and %zd)",
                 static_cast<Py_ssize_t>(x.size()), static_cast<Py_ssize_t>(y.size()));
    return false;
  }
  return true;
}

// Runs a C++ kernel, turning C++ exceptions into Python ones.
template <typename F>
PyObject* guarded(F&& f) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return PyErr_NoMemory();
  } catch (const std::length_error& e) {
    PyErr_SetString(PyExc_ValueError, e.what());
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  } catch (...) {
    PyErr_SetString(PyExc_RuntimeError, "minifw: unknown C++ exception");
  }
  return nullptr;
}

PyObject* py_add(PyObject*, PyObject* args) {
  PyObject *xo, *yo;
  if (!PyArg_ParseTuple(args, "OO:add", &xo, &yo)) return nullptr;
  std::vector<double> x, y;
  if (!to_vector(xo, "x", x) || !to_vector(yo, "y", y) || !same_length(x, y)) return nullptr;
  return guarded([&] {
    std::vector<double> out(x.size());
    minifw::cpu::add<double>(x, y, out);
    return to_list(out);
  });
}

PyObject* py_saxpy(PyObject*, PyObject* args) {
  double a;
  PyObject *xo, *yo;
  if (!PyArg_ParseTuple(args, "dOO:saxpy", &a, &xo, &yo)) return nullptr;
  std::vector<double> x, y;
  if (!to_vector(xo, "x", x) || !to_vector(yo, "y", y) || !same_length(x, y)) return nullptr;
  return guarded([&] {
    std::vector<double> out(x.size());
    minifw::cpu::saxpy<double>(a, x, y, out);
    return to_list(out);
  });
}

#ifndef MINIFW_WITH_CPU
constexpr std::size_t kErrLen = 512;

PyObject* py_runtime_version(PyObject*, PyObject*) {
  int version = 0;
  char err[kErrLen] = {0};
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = minifw_accel_runtime_version(&version, err, sizeof err);
  Py_END_ALLOW_THREADS
  if (rc != 0) {
    PyErr_Format(PyExc_RuntimeError, "%s runtime version: %s", minifw_accel_name(), err);
    return nullptr;
  }
  return PyLong_FromLong(version);
}

// (count, error message or None): never raises for a missing driver/device.
PyObject* py_device_probe(PyObject*, PyObject*) {
  int count = 0;
  char err[kErrLen] = {0};
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = minifw_accel_device_count(&count, err, sizeof err);
  Py_END_ALLOW_THREADS
  if (rc != 0) return Py_BuildValue("(is)", 0, err);
  return Py_BuildValue("(iO)", count, Py_None);
}

PyObject* py_device_count(PyObject*, PyObject*) {
  int count = 0;
  char err[kErrLen] = {0};
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = minifw_accel_device_count(&count, err, sizeof err);
  Py_END_ALLOW_THREADS
  return PyLong_FromLong(rc == 0 ? count : 0);
}

PyObject* py_device_saxpy(PyObject*, PyObject* args) {
  double a;
  PyObject *xo, *yo;
  if (!PyArg_ParseTuple(args, "dOO:device_saxpy", &a, &xo, &yo)) return nullptr;
  std::vector<double> x, y;
  if (!to_vector(xo, "x", x) || !to_vector(yo, "y", y) || !same_length(x, y)) return nullptr;
  std::vector<double> out;
  try {
    out.resize(x.size());
  } catch (const std::bad_alloc&) {
    return PyErr_NoMemory();
  }
  char err[kErrLen] = {0};
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = minifw_accel_saxpy(a, x.data(), y.data(), out.data(), x.size(), err, sizeof err);
  Py_END_ALLOW_THREADS
  if (rc != 0) {
    PyErr_Format(PyExc_RuntimeError, "%s saxpy: %s", minifw_accel_name(), err);
    return nullptr;
  }
  return to_list(out);
}
#endif  // !MINIFW_WITH_CPU

PyMethodDef methods[] = {
    {"add", py_add, METH_VARARGS, "add(x, y) -> list[float]: elementwise x + y (CPU)."},
    {"saxpy", py_saxpy, METH_VARARGS, "saxpy(a, x, y) -> list[float]: a*x + y (CPU)."},
#ifndef MINIFW_WITH_CPU
    {"runtime_version", py_runtime_version, METH_NOARGS,
     "Version of the accelerator runtime loaded in this process."},
    {"device_count", py_device_count, METH_NOARGS,
     "Number of accelerator devices (0 without driver or device)."},
    {"device_probe", py_device_probe, METH_NOARGS,
     "(device count, error message or None)."},
    {"device_saxpy", py_device_saxpy, METH_VARARGS,
     "device_saxpy(a, x, y) -> list[float]: a*x + y on device 0."},
#endif
#ifdef MINIFW_WITH_CUDA
    {"cuda_runtime_version", py_runtime_version, METH_NOARGS,
     "cudaRuntimeGetVersion() of the loaded libcudart (13020 for CUDA 13.2)."},
    {"cuda_device_count", py_device_count, METH_NOARGS,
     "cudaGetDeviceCount(), or 0 when there is no driver or device."},
#endif
#ifdef MINIFW_WITH_ROCM
    {"hip_runtime_version", py_runtime_version, METH_NOARGS,
     "hipRuntimeGetVersion() of the loaded libamdhip64."},
    {"hip_device_count", py_device_count, METH_NOARGS,
     "hipGetDeviceCount(), or 0 when there is no driver or device."},
#endif
#ifdef MINIFW_WITH_XPU
    {"xpu_device_count", py_device_count, METH_NOARGS,
     "Number of SYCL GPU devices, or 0."},
#endif
    {nullptr, nullptr, 0, nullptr},
};

int exec_module(PyObject* m) {
  if (PyModule_AddStringConstant(m, "accelerator", MINIFW_ACCELERATOR) < 0) return -1;
  if (PyModule_AddIntConstant(m, "cxx_standard", static_cast<long>(__cplusplus)) < 0) return -1;
#ifdef Py_GIL_DISABLED
  PyObject* ft = Py_True;
#else
  PyObject* ft = Py_False;
#endif
  if (PyModule_AddObjectRef(m, "free_threaded_build", ft) < 0) return -1;
  return 0;
}

PyModuleDef_Slot slots[] = {
    {Py_mod_exec, reinterpret_cast<void*>(exec_module)},
#if PY_VERSION_HEX >= 0x030C0000
    // Stateless: fine in sub-interpreters with their own GIL.
    {Py_mod_multiple_interpreters, Py_MOD_PER_INTERPRETER_GIL_SUPPORTED},
#endif
#if PY_VERSION_HEX >= 0x030D0000
    // Matters when Py_GIL_DISABLED (free-threaded build): without it the
    // interpreter would re-enable the GIL on import.  Ignored otherwise.
    {Py_mod_gil, Py_MOD_GIL_NOT_USED},
#endif
    {0, nullptr},
};

PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "minifw._C",
    "minifw native kernels (C++20, CPython C API).",
    0,
    methods,
    slots,
    nullptr,
    nullptr,
    nullptr,
};

}  // namespace

PyMODINIT_FUNC PyInit__C(void) { return PyModuleDef_Init(&module_def); }
