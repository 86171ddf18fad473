#!/usr/bin/env python3
"""Smoke test of an installed minifw wheel (stdlib only).

Run it with the interpreter of a fresh environment where a minifw wheel is
installed, from an empty working directory, e.g.::

    cd "$(mktemp -d)" && /path/to/venv/bin/python /repo/scripts/smoke_test.py

It prints exactly one JSON object on stdout describing what was found (the
caller compares it with what it expects; nothing here judges the variant) and
exits 0 when minifw imported and its saxpy gave the right numbers, 1 otherwise.
"""

from __future__ import annotations

import json
import os
import sys
import sysconfig
import traceback

# Never import a minifw from the current directory or the script's folder.
sys.path[:] = [p for p in sys.path if p not in ("", os.getcwd(), os.path.dirname(os.path.abspath(__file__)))]


def _mapped_files() -> list[str]:
    """Real paths of the files mapped into this process (Linux /proc/self/maps)."""
    paths: list[str] = []
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                parts = line.split(None, 5)
                if len(parts) == 6 and parts[5].startswith("/"):
                    path = parts[5].strip()
                    if path.endswith(" (deleted)"):
                        path = path[: -len(" (deleted)")]
                    if path not in paths:
                        paths.append(path)
    except OSError:
        pass
    return [os.path.realpath(p) for p in paths]


def _find_lib(mapped: list[str], stem: str) -> str | None:
    for path in mapped:
        if os.path.basename(path).startswith(stem):
            return path
    return None


def _gil_enabled() -> bool:
    probe = getattr(sys, "_is_gil_enabled", None)
    return bool(probe()) if probe is not None else True


def main() -> int:
    errors: list[str] = []
    record: dict[str, object] = {
        "python": sys.version,
        "executable": sys.executable,
        "sys_prefix": os.path.realpath(sys.prefix),
        "implementation_cache_tag": sys.implementation.cache_tag,
        "platform": sysconfig.get_platform(),
        "free_threaded": bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
        "gil_enabled_before_import": _gil_enabled(),
        "gil_enabled": None,
        "version": None,
        "accelerator": None,
        "accelerator_version": None,
        "gpu_archs": None,
        "cuda": None,
        "hip": None,
        "xpu": None,
        "cuda_runtime_version": None,
        "runtime_version": None,
        "device_count": None,
        "device_error": None,
        "cudart_path": None,
        "accelerator_runtime_paths": [],
        "extension_path": None,
        "extension_loaded": False,
        "extension_cxx_standard": None,
        "module_path": None,
        "dist_version": None,
        "op_ok": False,
        "op_result": None,
        "errors": errors,
    }
    imported = False
    try:
        import minifw  # noqa: PLC0415

        imported = True
    except Exception as exc:  # record everything, judge nothing
        errors.append(f"import minifw: {exc!r}")
        errors.append(traceback.format_exc())

    record["gil_enabled"] = _gil_enabled()

    if imported:
        record["module_path"] = getattr(minifw, "__file__", None)
        try:
            from importlib.metadata import version as dist_version  # noqa: PLC0415

            record["dist_version"] = dist_version("minifw")
        except Exception as exc:
            errors.append(f"importlib.metadata.version('minifw'): {exc!r}")
        try:
            v = minifw.version
            record["version"] = minifw.__version__
            record["accelerator"] = v.accelerator
            record["accelerator_version"] = v.accelerator_version
            record["gpu_archs"] = v.gpu_archs
            record["cuda"] = v.cuda
            record["hip"] = v.hip
            record["xpu"] = v.xpu
        except Exception as exc:
            errors.append(f"minifw.version: {exc!r}")

        ext = sys.modules.get("minifw._C")
        if ext is not None:
            ext_file = getattr(ext, "__file__", None)
            record["extension_path"] = ext_file
            record["extension_cxx_standard"] = getattr(ext, "cxx_standard", None)
            mapped = _mapped_files()
            record["extension_loaded"] = bool(ext_file) and os.path.realpath(ext_file) in mapped
        else:
            errors.append("minifw._C is not in sys.modules after import minifw")

        try:
            if minifw.cuda.is_built():
                record["cuda_runtime_version"] = minifw.cuda.runtime_version()
        except Exception as exc:
            errors.append(f"minifw.cuda.runtime_version(): {exc!r}")
        try:
            record["runtime_version"] = ext.runtime_version() if ext is not None and hasattr(ext, "runtime_version") else None
            record["device_count"] = minifw.device_count()
            if hasattr(ext, "device_probe"):
                record["device_error"] = ext.device_probe()[1]
        except Exception as exc:
            errors.append(f"accelerator runtime query: {exc!r}")

        try:
            x, y = [1.0, 2.0, 3.0, -4.5], [10.0, 20.0, 30.0, 0.5]
            expected = [2.0 * a + b for a, b in zip(x, y)]
            got_default = minifw.saxpy(2.0, x, y)
            got_cpu = minifw.saxpy(2.0, x, y, device="cpu")
            record["op_result"] = got_default
            record["op_ok"] = got_default == expected and got_cpu == expected and minifw.add(x, y) == [a + b for a, b in zip(x, y)]
            if not record["op_ok"]:
                errors.append(f"saxpy gave {got_default} / cpu {got_cpu}, wanted {expected}")
        except Exception as exc:
            errors.append(f"minifw.saxpy: {exc!r}")

    # After everything that may have loaded runtime libraries.
    mapped = _mapped_files()
    record["cudart_path"] = _find_lib(mapped, "libcudart.so")
    record["accelerator_runtime_paths"] = [
        p for p in mapped
        if os.path.basename(p).startswith(("libcudart.so", "libcuda.so", "libamdhip64.so", "libsycl.so", "libminifw_sycl.so"))
    ]
    record["gil_enabled"] = _gil_enabled()

    print(json.dumps(record, indent=2, sort_keys=True))
    return 0 if imported and record["op_ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
