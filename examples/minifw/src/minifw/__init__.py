"""minifw: a tiny framework with the packaging surface of a GPU DL framework.

>>> import minifw
>>> minifw.__version__            # e.g. '2.15.0+cu132'
>>> minifw.version.cuda           # '13.2' on CUDA builds, else None
>>> minifw.cuda.is_available()
>>> minifw.saxpy(2.0, [1.0, 2.0], [10.0, 20.0])
[12.0, 24.0]
>>> minifw.ops.matmul([[1, 2], [3, 4]], [[5], [6]])   # minifw_core's kernels
[[17.0], [39.0]]
"""

from __future__ import annotations

from collections.abc import Iterable

from . import _C, cuda, hip, ops, version, xpu
from ._build_info import version as __version__

__all__ = ["__version__", "add", "cuda", "device_count", "hip", "ops", "saxpy", "version", "xpu"]

_ACCEL_MODULES = {"cuda": cuda, "rocm": hip, "xpu": xpu}


def _accel_available() -> bool:
    mod = _ACCEL_MODULES.get(version.accelerator)
    return mod is not None and mod.is_available()


def device_count() -> int:
    """Devices of this build's accelerator (0 on cpu builds or without device)."""
    mod = _ACCEL_MODULES.get(version.accelerator)
    return mod.device_count() if mod is not None else 0


def add(x: Iterable[float], y: Iterable[float]) -> list[float]:
    """Elementwise ``x + y`` (C++20 CPU kernel)."""
    return _C.add(x, y)


def saxpy(a: float, x: Iterable[float], y: Iterable[float], *, device: str | None = None) -> list[float]:
    """``a * x + y``.

    ``device=None`` runs on this build's accelerator when a device is present
    and falls back to the CPU kernel otherwise (always on cpu builds);
    ``device="cpu"`` forces the CPU kernel; ``"cuda"``/``"rocm"``/``"xpu"``
    requires that accelerator and raises ``RuntimeError`` without it.
    """
    if device is None:
        device = version.accelerator if _accel_available() else "cpu"
    if device == "cpu":
        return _C.saxpy(a, x, y)
    if device != version.accelerator:
        raise RuntimeError(f"minifw was built for {version.accelerator!r}, not {device!r}")
    if not _accel_available():
        raise RuntimeError(f"no {device} device available")
    return _C.device_saxpy(a, x, y)
