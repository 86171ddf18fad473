"""Shared helpers behind minifw.cuda / minifw.hip / minifw.xpu."""

from __future__ import annotations

from . import _C


def built_for(accelerator: str) -> bool:
    return _C.accelerator == accelerator


def device_count(accelerator: str) -> int:
    if not built_for(accelerator):
        return 0
    try:
        return int(_C.device_count())
    except Exception:  # never let a broken driver break import-time checks
        return 0


def probe_error(accelerator: str) -> str | None:
    """Why no device is usable (driver/device error text), or None."""
    if not built_for(accelerator):
        return f"minifw was built for {_C.accelerator!r}, not {accelerator!r}"
    _count, err = _C.device_probe()
    return err


def runtime_version(accelerator: str) -> int | None:
    if not built_for(accelerator):
        return None
    return int(_C.runtime_version())


def resolve(device: str | None) -> str:
    """``None`` -> this build's accelerator when it has a device, else ``"cpu"``."""
    if device is not None:
        return device
    return _C.accelerator if _C.accelerator != "cpu" and device_count(_C.accelerator) > 0 else "cpu"
