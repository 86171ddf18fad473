// minifw._C: the thin per-Python extension of minifw, written against the plain CPython C API
// (no binding library) in C++20. Every kernel lives in minifw_core (../core), the static,
// Python-independent library linked in; this file only converts between Python values and
// minifw::core::Tensor, and C++ exceptions into Python ones.
//
// * multi-phase initialisation (PEP 489), no per-module mutable state;
// * Py_mod_gil = Py_MOD_GIL_NOT_USED: on a free-threaded interpreter (Py_GIL_DISABLED, 3.13t+)
//   importing minifw keeps the GIL off. Inputs are snapshotted with PySequence_Tuple (which
//   locks a list while copying it) into tensors owned here, and the core keeps no mutable
//   state, so kernels run with the GIL released.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <limits>
#include <new>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>

#include "minifw/core.hpp"

namespace core = minifw::core;

namespace {

// ------------------------------------------------------------ conversions --

// A C++ exception from the core, carried as data out of a region that may run without the GIL
// (no std::exception_ptr: it needs a libstdc++ newer than manylinux_2_28 allows).
struct Failure {
  PyObject* type = nullptr;  // nullptr: no failure
  char message[512] = {};
};

void fail_with(Failure& f, PyObject* type, const char* message) {
  f.type = type;
  std::snprintf(f.message, sizeof f.message, "%s", message);
}

// Runs f(); a C++ exception becomes a Failure. Makes no Python call.
template <typename F>
Failure attempt(F&& f) {
  Failure out;
  try {
    f();
  } catch (const std::bad_alloc&) {
    out.type = PyExc_MemoryError;
  } catch (const std::invalid_argument& e) {
    fail_with(out, PyExc_ValueError, e.what());
  } catch (const std::out_of_range& e) {
    fail_with(out, PyExc_ValueError, e.what());
  } catch (const std::length_error& e) {
    fail_with(out, PyExc_ValueError, e.what());
  } catch (const std::exception& e) {
    fail_with(out, PyExc_RuntimeError, e.what());
  } catch (...) {
    fail_with(out, PyExc_RuntimeError, "minifw: unknown C++ exception");
  }
  return out;
}

// Sets the Python exception of a failure (with the GIL); true when there was one.
bool raise(const Failure& f) {
  if (f.type == nullptr) return false;
  if (f.type == PyExc_MemoryError) {
    PyErr_NoMemory();
  } else {
    PyErr_SetString(f.type, f.message);
  }
  return true;
}

// out = f() with the GIL released; false with a Python exception set if it threw.
template <typename T, typename F>
bool without_gil(F&& f, T& out) {
  Failure failure;
  Py_BEGIN_ALLOW_THREADS
  failure = attempt([&] { out = f(); });
  Py_END_ALLOW_THREADS
  return !raise(failure);
}

bool parse_shape(PyObject* obj, core::Shape& shape) {
  PyObject* tup = PySequence_Tuple(obj);
  if (tup == nullptr) return false;
  const Py_ssize_t n = PyTuple_GET_SIZE(tup);
  std::array<std::size_t, core::kMaxDims> dims{};
  for (Py_ssize_t i = 0; i < n && i < static_cast<Py_ssize_t>(dims.size()); ++i) {
    const Py_ssize_t d = PyLong_AsSsize_t(PyTuple_GET_ITEM(tup, i));
    if (d < 0) {
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "shape entries must be >= 0");
      Py_DECREF(tup);
      return false;
    }
    dims[static_cast<std::size_t>(i)] = static_cast<std::size_t>(d);
  }
  Py_DECREF(tup);
  if (n > static_cast<Py_ssize_t>(dims.size())) {
    PyErr_Format(PyExc_ValueError, "a shape of %zd dimensions (minifw supports %zu)", n, core::kMaxDims);
    return false;
  }
  shape = core::Shape(std::span<const std::size_t>(dims.data(), static_cast<std::size_t>(n)));
  return true;
}

template <typename T>
bool store(PyObject* item, T& out) {
  if constexpr (std::is_floating_point_v<T>) {
    const double v = PyFloat_AsDouble(item);
    out = static_cast<T>(v);
    return !(v == -1.0 && PyErr_Occurred());
  } else {
    const long long v = PyLong_AsLongLong(item);
    if (v == -1 && PyErr_Occurred()) return false;
    if (v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max()) {
      PyErr_Format(PyExc_OverflowError, "%lld does not fit the tensor's integer dtype", v);
      return false;
    }
    out = static_cast<T>(v);
    return true;
  }
}

// A flat Python sequence of numbers -> a tensor of `shape` and `dtype`.
bool to_tensor(PyObject* seq, const core::Shape& shape, core::DType dtype, const char* what, core::Tensor& out) {
  if (raise(attempt([&] { out = core::Tensor(dtype, shape); }))) return false;
  PyObject* tup = PySequence_Tuple(seq);  // a private, immutable snapshot
  if (tup == nullptr) {
    PyErr_Format(PyExc_TypeError, "%s must be a sequence of numbers, not %.100s", what, Py_TYPE(seq)->tp_name);
    return false;
  }
  bool ok = false;
  if (out.numel() != static_cast<std::size_t>(PyTuple_GET_SIZE(tup))) {
    PyErr_Format(PyExc_ValueError, "%s has %zd values, its shape needs %zu", what, PyTuple_GET_SIZE(tup),
                 out.numel());
  } else {
    ok = core::visit(dtype, [&]<typename T>() {
      auto data = out.data<T>();
      for (std::size_t i = 0; i < data.size(); ++i) {
        if (!store(PyTuple_GET_ITEM(tup, static_cast<Py_ssize_t>(i)), data[i])) return false;
      }
      return true;
    });
  }
  Py_DECREF(tup);
  return ok;
}

PyObject* shape_tuple(const core::Shape& shape) {
  PyObject* tup = PyTuple_New(static_cast<Py_ssize_t>(shape.rank()));
  if (tup == nullptr) return nullptr;
  for (std::size_t i = 0; i < shape.rank(); ++i) {
    PyObject* d = PyLong_FromSize_t(shape[i]);
    if (d == nullptr) {
      Py_DECREF(tup);
      return nullptr;
    }
    PyTuple_SET_ITEM(tup, static_cast<Py_ssize_t>(i), d);
  }
  return tup;
}

PyObject* to_list(const core::Tensor& t) {
  PyObject* list = PyList_New(static_cast<Py_ssize_t>(t.numel()));
  if (list == nullptr) return nullptr;
  const bool ok = core::visit(t.dtype(), [&]<typename T>() {
    Py_ssize_t i = 0;
    for (T v : t.data<T>()) {
      PyObject* item = std::is_floating_point_v<T> ? PyFloat_FromDouble(static_cast<double>(v))
                                                   : PyLong_FromLongLong(static_cast<long long>(v));
      if (item == nullptr) return false;
      PyList_SET_ITEM(list, i++, item);
    }
    return true;
  });
  if (!ok) Py_CLEAR(list);
  return list;
}

// (flat list, shape tuple)
PyObject* to_python(const core::Tensor& t) {
  PyObject* data = to_list(t);
  PyObject* shape = data ? shape_tuple(t.shape()) : nullptr;
  if (shape == nullptr) {
    Py_XDECREF(data);
    return nullptr;
  }
  return Py_BuildValue("(NN)", data, shape);
}

// Names of dtypes, devices and ops -> core values (ValueError for an unknown one).
template <typename T, typename F>
bool named(const char* name, F parse, T& out) {
  return !raise(attempt([&] { out = parse(name); }));
}

core::Device parse_device_name(std::string_view name) {
  if (name == "cpu") return core::Device::cpu;
  if (name == core::build_info().accelerator) return core::Device::accelerator;
  throw std::invalid_argument(core::cat("minifw: device '", name, "' is not 'cpu' or this build's '", core::build_info().accelerator, "'"));
}

// The arguments every tensor op takes: dtype and device names.
struct Common {
  core::DType dtype;
  core::Device device;
};
bool common(const char* dtype, const char* device, Common& out) {
  return named(dtype, core::dtype_from_name, out.dtype) && named(device, parse_device_name, out.device);
}

// Runs op() -> Tensor without the GIL and returns (flat list, shape).
template <typename F>
PyObject* run(F&& op) {
  core::Tensor out;
  if (!without_gil(op, out)) return nullptr;
  return to_python(out);
}

// ------------------------------------------------------------- tensor ops --

PyObject* py_unary(PyObject*, PyObject* args, PyObject* kwargs) {
  static const char* kw[] = {"op", "data", "shape", "dtype", "device", nullptr};
  const char *op_name, *dtype = "float64", *device = "cpu";
  PyObject *data, *shape_obj;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "sOO|ss:unary", const_cast<char**>(kw), &op_name, &data,
                                   &shape_obj, &dtype, &device)) {
    return nullptr;
  }
  Common c;
  core::UnaryOp op;
  core::Shape shape;
  core::Tensor x;
  if (!common(dtype, device, c) || !named(op_name, core::unary_op_from_name, op) || !parse_shape(shape_obj, shape) ||
      !to_tensor(data, shape, c.dtype, "data", x)) {
    return nullptr;
  }
  return run([&] { return core::unary(op, x, c.device); });
}

PyObject* py_binary(PyObject*, PyObject* args, PyObject* kwargs) {
  static const char* kw[] = {"op", "x", "y", "shape", "dtype", "device", nullptr};
  const char *op_name, *dtype = "float64", *device = "cpu";
  PyObject *xo, *yo, *shape_obj;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "sOOO|ss:binary", const_cast<char**>(kw), &op_name, &xo, &yo,
                                   &shape_obj, &dtype, &device)) {
    return nullptr;
  }
  Common c;
  core::BinaryOp op;
  core::Shape shape;
  core::Tensor x, y;
  if (!common(dtype, device, c) || !named(op_name, core::binary_op_from_name, op) ||
      !parse_shape(shape_obj, shape) || !to_tensor(xo, shape, c.dtype, "x", x) ||
      !to_tensor(yo, shape, c.dtype, "y", y)) {
    return nullptr;
  }
  return run([&] { return core::binary(op, x, y, c.device); });
}

PyObject* py_reduce(PyObject*, PyObject* args, PyObject* kwargs) {
  static const char* kw[] = {"op", "data", "shape", "dtype", "device", nullptr};
  const char *op_name, *dtype = "float64", *device = "cpu";
  PyObject *data, *shape_obj;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "sOO|ss:reduce", const_cast<char**>(kw), &op_name, &data,
                                   &shape_obj, &dtype, &device)) {
    return nullptr;
  }
  Common c;
  core::ReduceOp op;
  core::Shape shape;
  core::Tensor x;
  if (!common(dtype, device, c) || !named(op_name, core::reduce_op_from_name, op) ||
      !parse_shape(shape_obj, shape) || !to_tensor(data, shape, c.dtype, "data", x)) {
    return nullptr;
  }
  return run([&] { return core::reduce(op, x, c.device); });
}

PyObject* py_softmax(PyObject*, PyObject* args, PyObject* kwargs) {
  static const char* kw[] = {"data", "shape", "log", "dtype", "device", nullptr};
  const char *dtype = "float64", *device = "cpu";
  int log = 0;
  PyObject *data, *shape_obj;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|pss:softmax", const_cast<char**>(kw), &data, &shape_obj, &log,
                                   &dtype, &device)) {
    return nullptr;
  }
  Common c;
  core::Shape shape;
  core::Tensor x;
  if (!common(dtype, device, c) || !parse_shape(shape_obj, shape) || !to_tensor(data, shape, c.dtype, "data", x)) {
    return nullptr;
  }
  return run([&] { return core::softmax(x, log != 0, c.device); });
}

PyObject* py_matmul(PyObject*, PyObject* args, PyObject* kwargs) {
  static const char* kw[] = {"a", "a_shape", "b", "b_shape", "dtype", "device", "variant", nullptr};
  const char *dtype = "float64", *device = "cpu";
  int variant = -1;
  PyObject *ao, *as, *bo, *bs;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOO|ssi:matmul", const_cast<char**>(kw), &ao, &as, &bo, &bs,
                                   &dtype, &device, &variant)) {
    return nullptr;
  }
  Common c;
  core::Shape ashape, bshape;
  core::Tensor a, b;
  if (!common(dtype, device, c) || !parse_shape(as, ashape) || !parse_shape(bs, bshape) ||
      !to_tensor(ao, ashape, c.dtype, "a", a) || !to_tensor(bo, bshape, c.dtype, "b", b)) {
    return nullptr;
  }
  return run([&] { return core::matmul(a, b, c.device, variant); });
}

PyObject* py_conv2d(PyObject*, PyObject* args, PyObject* kwargs) {
  static const char* kw[] = {"x", "x_shape", "w", "w_shape", "stride", "padding", "dtype", "device", "variant",
                             nullptr};
  const char *dtype = "float64", *device = "cpu";
  Py_ssize_t stride = 1, padding = 0;
  int variant = -1;
  PyObject *xo, *xs, *wo, *ws;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOO|nnssi:conv2d", const_cast<char**>(kw), &xo, &xs, &wo, &ws,
                                   &stride, &padding, &dtype, &device, &variant)) {
    return nullptr;
  }
  if (stride < 1 || padding < 0) {
    PyErr_SetString(PyExc_ValueError, "conv2d needs stride >= 1 and padding >= 0");
    return nullptr;
  }
  Common c;
  core::Shape xshape, wshape;
  core::Tensor x, w;
  if (!common(dtype, device, c) || !parse_shape(xs, xshape) || !parse_shape(ws, wshape) ||
      !to_tensor(xo, xshape, c.dtype, "x", x) || !to_tensor(wo, wshape, c.dtype, "w", w)) {
    return nullptr;
  }
  const core::Conv2dParams p{static_cast<std::size_t>(stride), static_cast<std::size_t>(padding)};
  return run([&] { return core::conv2d(x, w, p, c.device, variant); });
}

// ------------------------------------------- the original float64 helpers --

// saxpy/add on lists of floats (float64): list in, list out.
bool float_pair(PyObject* xo, PyObject* yo, core::Tensor& x, core::Tensor& y) {
  const Py_ssize_t n = PySequence_Size(xo);
  if (n < 0) {
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError, "x must be a sequence of numbers, not %.100s", Py_TYPE(xo)->tp_name);
    return false;
  }
  const Py_ssize_t m = PySequence_Size(yo);
  if (m >= 0 && m != n) {
    PyErr_Format(PyExc_ValueError, "operands must have the same length (got %zd and %zd)", n, m);
    return false;
  }
  PyErr_Clear();  // y's own type error is reported by to_tensor
  const core::Shape shape{static_cast<std::size_t>(n)};
  return to_tensor(xo, shape, core::DType::float64, "x", x) && to_tensor(yo, shape, core::DType::float64, "y", y);
}

template <typename F>
PyObject* float_list(F&& op) {
  core::Tensor out;
  if (!without_gil(op, out)) return nullptr;
  return to_list(out);
}

PyObject* py_add(PyObject*, PyObject* args) {
  PyObject *xo, *yo;
  core::Tensor x, y;
  if (!PyArg_ParseTuple(args, "OO:add", &xo, &yo) || !float_pair(xo, yo, x, y)) return nullptr;
  return float_list([&] { return core::binary(core::BinaryOp::add, x, y); });
}

PyObject* py_saxpy(PyObject*, PyObject* args) {
  double a;
  PyObject *xo, *yo;
  core::Tensor x, y;
  if (!PyArg_ParseTuple(args, "dOO:saxpy", &a, &xo, &yo) || !float_pair(xo, yo, x, y)) return nullptr;
  return float_list([&] { return core::saxpy(a, x, y); });
}

PyObject* py_device_saxpy(PyObject*, PyObject* args) {
  double a;
  PyObject *xo, *yo;
  core::Tensor x, y;
  if (!PyArg_ParseTuple(args, "dOO:device_saxpy", &a, &xo, &yo) || !float_pair(xo, yo, x, y)) {
    return nullptr;
  }
  return float_list([&] { return core::saxpy(a, x, y, core::Device::accelerator); });
}

// ------------------------------------------------------- build and device --

PyObject* py_core_info(PyObject*, PyObject*) {
  const core::BuildInfo b = core::build_info();
  PyObject* variants = PyList_New(0);
  if (variants == nullptr) return nullptr;
  for (int v = 0; v < core::gemm_variant_count(); ++v) {
    const core::GemmTiling t = core::gemm_variant_tiling(v);
    PyObject* item = Py_BuildValue("{sisisisisi}", "bm", t.bm, "bn", t.bn, "bk", t.bk, "rm", t.rm, "rn", t.rn);
    if (item == nullptr || PyList_Append(variants, item) < 0) {
      Py_XDECREF(item);
      Py_DECREF(variants);
      return nullptr;
    }
    Py_DECREF(item);
  }
  return Py_BuildValue("{ss#ss#ss#ss#ss#sisN}", "version", b.version.data(), (Py_ssize_t)b.version.size(),
                       "accelerator", b.accelerator.data(), (Py_ssize_t)b.accelerator.size(), "accelerator_version",
                       b.accelerator_version.data(), (Py_ssize_t)b.accelerator_version.size(), "gpu_archs",
                       b.gpu_archs.data(), (Py_ssize_t)b.gpu_archs.size(), "device_compiler",
                       b.device_compiler.data(), (Py_ssize_t)b.device_compiler.size(), "weight", b.weight,
                       "gemm_variants", variants);
}

PyObject* py_choose_variant(PyObject*, PyObject* args) {
  Py_ssize_t m, n;
  if (!PyArg_ParseTuple(args, "nn:choose_variant", &m, &n)) return nullptr;
  if (m < 0 || n < 0) return PyErr_Format(PyExc_ValueError, "sizes must be >= 0");
  return PyLong_FromLong(core::choose_gemm_variant(static_cast<std::size_t>(m), static_cast<std::size_t>(n)));
}

PyObject* py_runtime_version(PyObject*, PyObject*) {
  int version = 0;
  if (!without_gil([] { return core::accelerator_runtime_version(); }, version)) return nullptr;
  return PyLong_FromLong(version);
}

// (count, error message or None): never raises for a missing driver/device.
PyObject* py_device_probe(PyObject*, PyObject*) {
  std::pair<int, std::string> probe;
  if (!without_gil([] {
        std::string why;
        const int count = core::accelerator_device_count(&why);
        return std::make_pair(count, why);
      }, probe)) {
    return nullptr;
  }
  if (probe.first == 0 && !probe.second.empty()) return Py_BuildValue("(is)", 0, probe.second.c_str());
  return Py_BuildValue("(iO)", probe.first, Py_None);
}

PyObject* py_device_count(PyObject*, PyObject*) {
  int count = 0;
  if (!without_gil([] { return core::accelerator_device_count(); }, count)) return nullptr;
  return PyLong_FromLong(count);
}

#define MINIFW_KW(fn) reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(fn)), METH_VARARGS | METH_KEYWORDS

PyMethodDef methods[] = {
    {"add", py_add, METH_VARARGS, "add(x, y) -> list[float]: elementwise x + y (CPU, float64)."},
    {"saxpy", py_saxpy, METH_VARARGS, "saxpy(a, x, y) -> list[float]: a*x + y (CPU, float64)."},
    {"device_saxpy", py_device_saxpy, METH_VARARGS, "device_saxpy(a, x, y) -> list[float]: a*x + y on device 0."},
    {"unary", MINIFW_KW(py_unary), "unary(op, data, shape, dtype='float64', device='cpu') -> (data, shape)."},
    {"binary", MINIFW_KW(py_binary), "binary(op, x, y, shape, dtype='float64', device='cpu') -> (data, shape)."},
    {"reduce", MINIFW_KW(py_reduce),
     "reduce(op, data, shape, dtype='float64', device='cpu') -> (data, shape): over the last axis."},
    {"softmax", MINIFW_KW(py_softmax),
     "softmax(data, shape, log=False, dtype='float64', device='cpu') -> (data, shape): over the last axis."},
    {"matmul", MINIFW_KW(py_matmul),
     "matmul(a, a_shape, b, b_shape, dtype='float64', device='cpu', variant=-1) -> (data, shape)."},
    {"conv2d", MINIFW_KW(py_conv2d),
     "conv2d(x, x_shape, w, w_shape, stride=1, padding=0, dtype='float64', device='cpu', variant=-1)"
     " -> (data, shape): NCHW input, OIHW weight."},
    {"core_info", py_core_info, METH_NOARGS, "What minifw_core was built as (accelerator, weight, GEMM variants)."},
    {"choose_variant", py_choose_variant, METH_VARARGS, "choose_variant(m, n): the GEMM variant picked for m x n."},
    {"runtime_version", py_runtime_version, METH_NOARGS, "Version of the accelerator runtime loaded in this process."},
    {"device_count", py_device_count, METH_NOARGS, "Number of accelerator devices (0 without driver or device)."},
    {"device_probe", py_device_probe, METH_NOARGS, "(device count, error message or None)."},
#ifdef MINIFW_WITH_CUDA
    {"cuda_runtime_version", py_runtime_version, METH_NOARGS,
     "cudaRuntimeGetVersion() of the loaded libcudart (13020 for CUDA 13.2)."},
    {"cuda_device_count", py_device_count, METH_NOARGS, "cudaGetDeviceCount(), or 0 without driver or device."},
#endif
#ifdef MINIFW_WITH_ROCM
    {"hip_runtime_version", py_runtime_version, METH_NOARGS, "hipRuntimeGetVersion() of the loaded libamdhip64."},
    {"hip_device_count", py_device_count, METH_NOARGS, "hipGetDeviceCount(), or 0 without driver or device."},
#endif
#ifdef MINIFW_WITH_XPU
    {"xpu_device_count", py_device_count, METH_NOARGS, "Number of SYCL GPU devices, or 0."},
#endif
    {nullptr, nullptr, 0, nullptr},
};

int exec_module(PyObject* m) {
  const std::string accel(core::build_info().accelerator);
  if (PyModule_AddStringConstant(m, "accelerator", accel.c_str()) < 0) return -1;
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
    // Matters when Py_GIL_DISABLED (free-threaded build): without it the interpreter would
    // re-enable the GIL on import. Ignored otherwise.
    {Py_mod_gil, Py_MOD_GIL_NOT_USED},
#endif
    {0, nullptr},
};

PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "minifw._C",
    "minifw's Python binding of minifw_core (C++20, CPython C API).",
    0,
    methods,
    slots,
    nullptr,
    nullptr,
    nullptr,
};

}  // namespace

PyMODINIT_FUNC PyInit__C(void) { return PyModuleDef_Init(&module_def); }
