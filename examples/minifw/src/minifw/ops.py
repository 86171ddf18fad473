"""Tensor operators of minifw, computed by minifw_core (the C++/CUDA/HIP/SYCL library linked
into ``minifw._C``).

Tensors are rectangular nested lists of numbers; results come back the same way::

    >>> from minifw import ops
    >>> ops.matmul([[1, 2], [3, 4]], [[5], [6]])
    [[17.0], [39.0]]
    >>> ops.softmax([[0.0, 0.0]])
    [[0.5, 0.5]]

Every operator takes ``dtype`` (``"float32"``, ``"float64"``, ``"int32"``, ``"int64"``) and
``device``: ``None`` runs on this build's accelerator when a device is present and on the CPU
otherwise, ``"cpu"`` forces the CPU, the accelerator's name (``"cuda"``, ``"rocm"``, ``"xpu"``)
requires it. ``matmul`` and ``conv2d`` also take ``variant``: one of the compiled GEMM tilings
(``info()["gemm_variants"]``, as many as the build's ``MINIFW_CORE_WEIGHT``), or ``None`` to let
the library choose one for the shape.
"""

from __future__ import annotations

from typing import Any

from . import _C, _device

__all__ = ["binary", "conv2d", "info", "matmul", "reduce", "softmax", "unary"]

Nested = Any  # a number, or a rectangular list of Nested


def info() -> dict[str, Any]:
    """What minifw_core was built as: accelerator, version, archs, weight, GEMM variants."""
    info: dict[str, Any] = _C.core_info()
    return info


def _flatten(x: Nested) -> tuple[list[Any], tuple[int, ...]]:
    """A rectangular nested list -> (flat values, shape)."""
    if not isinstance(x, (list, tuple)):
        return [x], ()
    parts = [_flatten(item) for item in x]
    inner = parts[0][1] if parts else ()
    if any(shape != inner for _, shape in parts):
        raise ValueError("tensor is not rectangular")
    return [v for flat, _ in parts for v in flat], (len(parts), *inner)


def _nest(flat: list[Any], shape: tuple[int, ...]) -> Nested:
    if not shape:
        return flat[0]
    if len(shape) == 1:
        return list(flat)
    step = len(flat) // shape[0] if shape[0] else 0
    return [_nest(flat[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]


def _variant(variant: int | None) -> int:
    return -1 if variant is None else variant


def unary(op: str, x: Nested, *, dtype: str = "float64", device: str | None = None) -> Nested:
    """``op`` elementwise: neg, abs, square, relu; exp, log, sqrt, tanh, sigmoid, gelu (floating)."""
    flat, shape = _flatten(x)
    return _nest(*_C.unary(op, flat, shape, dtype=dtype, device=_device.resolve(device)))


def binary(op: str, x: Nested, y: Nested, *, dtype: str = "float64", device: str | None = None) -> Nested:
    """``op`` elementwise over two tensors of one shape: add, sub, mul, div, maximum, minimum."""
    fx, shape = _flatten(x)
    fy, yshape = _flatten(y)
    if shape != yshape:
        raise ValueError(f"shapes {shape} and {yshape} differ")
    return _nest(*_C.binary(op, fx, fy, shape, dtype=dtype, device=_device.resolve(device)))


def reduce(op: str, x: Nested, *, dtype: str = "float64", device: str | None = None) -> Nested:
    """``op`` over the last axis: sum, prod, max, min; mean, norm2 (floating)."""
    flat, shape = _flatten(x)
    return _nest(*_C.reduce(op, flat, shape, dtype=dtype, device=_device.resolve(device)))


def softmax(x: Nested, *, log: bool = False, dtype: str = "float64", device: str | None = None) -> Nested:
    """(log-)softmax over the last axis."""
    flat, shape = _flatten(x)
    return _nest(*_C.softmax(flat, shape, log=log, dtype=dtype, device=_device.resolve(device)))


def matmul(a: Nested, b: Nested, *, dtype: str = "float64", device: str | None = None,
           variant: int | None = None) -> Nested:
    """``a @ b`` for 2-D ``a`` [m, k] and ``b`` [k, n]."""
    fa, ashape = _flatten(a)
    fb, bshape = _flatten(b)
    return _nest(*_C.matmul(fa, ashape, fb, bshape, dtype=dtype, device=_device.resolve(device),
                            variant=_variant(variant)))


def conv2d(x: Nested, w: Nested, *, stride: int = 1, padding: int = 0, dtype: str = "float64",
           device: str | None = None, variant: int | None = None) -> Nested:
    """2-D convolution (cross-correlation) of ``x`` [n, c, h, w] with ``w`` [o, c, kh, kw]."""
    fx, xshape = _flatten(x)
    fw, wshape = _flatten(w)
    return _nest(*_C.conv2d(fx, xshape, fw, wshape, stride=stride, padding=padding, dtype=dtype,
                            device=_device.resolve(device), variant=_variant(variant)))
