"""minifw's own smoke checks, run by builders after its generic probe (stdlib only).

builders runs this with the test venv's interpreter (``python -I smoke.py``) from an empty
directory and writes the target's facts as one JSON object on stdin (``distribution``,
``import_name``, ``version``, ``variant``, ``accelerator``, ``accelerator_version``,
``expected_runtime_version``, ``free_threaded``, ``extension_modules``, ``venv``, ...).
This script prints one JSON document on stdout, ``{"checks": [{"name", "ok", "detail"}...],
"facts": {...}}``, and anything else on stderr. The generic checks (distribution version,
extension modules loaded from the venv, runtime libraries from the runtime wheels, GIL) are
builders'; here only what is particular to minifw.

By hand: ``echo '{"version": "2.15.0+cpu", "accelerator": "cpu"}' | python smoke.py``.
"""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Callable
from typing import Any

Check = dict[str, Any]


def check(name: str, ok: bool, detail: str = "") -> Check:
    return {"name": name, "ok": bool(ok), "detail": detail}


def equal(name: str, got: object, want: object) -> Check:
    return check(name, got == want, f"got {got!r}, expected {want!r}")


def version_checks(minifw: Any, facts: dict[str, Any]) -> list[Check]:
    """minifw.version describes the build the matrix asked for."""
    v = minifw.version
    accel = facts.get("accelerator")
    accel_version = facts.get("accelerator_version")
    checks = [equal("__version__", minifw.__version__, facts.get("version")),
              equal("version.accelerator", v.accelerator, accel),
              equal("version.accelerator_version", v.accelerator_version, accel_version)]
    for field, family in (("cuda", "cuda"), ("hip", "rocm"), ("xpu", "xpu")):
        checks.append(equal(f"version.{field}", getattr(v, field), accel_version if accel == family else None))
    return checks


def op_checks(minifw: Any) -> list[Check]:
    """saxpy (default device and CPU) and add give the right numbers."""
    x, y = [1.0, 2.0, 3.0, -4.5], [10.0, 20.0, 30.0, 0.5]
    want = [2.0 * a + b for a, b in zip(x, y)]
    return [equal("saxpy", minifw.saxpy(2.0, x, y), want),
            equal("saxpy cpu", minifw.saxpy(2.0, x, y, device="cpu"), want),
            equal("add", minifw.add(x, y), [a + b for a, b in zip(x, y)])]


def runtime_checks(minifw: Any, facts: dict[str, Any]) -> list[Check]:
    """On CUDA and ROCm builds minifw reports the runtime version the variant promises."""
    want = facts.get("expected_runtime_version")
    if facts.get("accelerator") == "cuda":
        return [equal("cuda.runtime_version", minifw.cuda.runtime_version(), want)]
    if facts.get("accelerator") == "rocm":
        # HIP_VERSION = major * 10**7 + minor * 10**5 + build; the variant promises major * 100 + minor.
        got = minifw.hip.runtime_version()
        return [check("hip.runtime_version", got // 100_000 == want, f"got {got} (release {got // 100_000}), expected {want}")]
    return []


def observed(minifw: Any) -> dict[str, Any]:
    """What the build says about itself, for the results record (never fails the smoke test)."""
    try:
        v = minifw.version
        return {"version": minifw.__version__, "accelerator": v.accelerator, "cuda": v.cuda,
                "gpu_archs": v.gpu_archs, "device_count": minifw.device_count(),
                "cuda_runtime_version": minifw.cuda.runtime_version(), "hip": v.hip,
                "hip_runtime_version": minifw.hip.runtime_version()}
    except Exception as exc:  # noqa: BLE001 - any failure is a failed check, never a lost record
        return {"error": f"{type(exc).__name__}: {exc}"}


def guarded(name: str, fn: Callable[..., list[Check]], *args: Any) -> list[Check]:
    """Run one group of checks; an exception becomes a failed check (traceback on stderr)."""
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001 - any failure is a failed check, never a lost record
        traceback.print_exc()
        return [check(name, False, f"{type(exc).__name__}: {exc}")]


def main() -> int:
    facts = json.load(sys.stdin)
    try:
        import minifw
    except Exception as exc:  # noqa: BLE001 - any failure is a failed check, never a lost record
        traceback.print_exc()
        print(json.dumps({"checks": [check("import", False, f"{type(exc).__name__}: {exc}")]}))
        return 0
    checks = (guarded("version", version_checks, minifw, facts) + guarded("ops", op_checks, minifw)
              + guarded("runtime", runtime_checks, minifw, facts))
    print(json.dumps({"checks": checks, "facts": observed(minifw)}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
