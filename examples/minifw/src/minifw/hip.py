"""ROCm/HIP device queries (meaningful on the 'rocm' build of minifw only)."""

from __future__ import annotations

from . import _device

__all__ = ["device_count", "is_available", "is_built", "probe_error", "runtime_version"]


def is_built() -> bool:
    """True when this minifw build was compiled for ROCm/HIP."""
    return _device.built_for("rocm")


def device_count() -> int:
    """Number of ROCm/HIP devices; 0 without driver/device or on other builds."""
    return _device.device_count("rocm")


def is_available() -> bool:
    return device_count() > 0


def probe_error() -> str | None:
    """The runtime's reason for seeing no device, or None."""
    return _device.probe_error("rocm")


def runtime_version() -> int | None:
    """Version of the ROCm/HIP runtime library loaded (None on other builds)."""
    return _device.runtime_version("rocm")
