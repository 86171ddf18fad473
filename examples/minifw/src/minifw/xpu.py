"""Intel XPU (SYCL) device queries (meaningful on the 'xpu' build of minifw only)."""

from __future__ import annotations

from . import _device

__all__ = ["device_count", "is_available", "is_built", "probe_error", "runtime_version"]


def is_built() -> bool:
    """True when this minifw build was compiled for Intel XPU (SYCL)."""
    return _device.built_for("xpu")


def device_count() -> int:
    """Number of Intel XPU (SYCL) devices; 0 without driver/device or on other builds."""
    return _device.device_count("xpu")


def is_available() -> bool:
    return device_count() > 0


def probe_error() -> str | None:
    """The runtime's reason for seeing no device, or None."""
    return _device.probe_error("xpu")


def runtime_version() -> int | None:
    """Version of the Intel XPU (SYCL) runtime library loaded (None on other builds)."""
    return _device.runtime_version("xpu")
