"""CUDA device queries (meaningful on the 'cuda' build of minifw only)."""

from __future__ import annotations

from . import _device

__all__ = ["device_count", "is_available", "is_built", "probe_error", "runtime_version"]


def is_built() -> bool:
    """True when this minifw build was compiled for CUDA."""
    return _device.built_for("cuda")


def device_count() -> int:
    """Number of CUDA devices; 0 without driver/device or on other builds."""
    return _device.device_count("cuda")


def is_available() -> bool:
    return device_count() > 0


def probe_error() -> str | None:
    """The runtime's reason for seeing no device, or None."""
    return _device.probe_error("cuda")


def runtime_version() -> int | None:
    """Version of the CUDA runtime library loaded (None on other builds)."""
    return _device.runtime_version("cuda")
