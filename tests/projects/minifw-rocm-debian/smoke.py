"""minifw's ROCm checks for the Debian HIP stand-in (stdlib only; see matrix.yaml here).

builders runs this after its generic probe (which already checked the version, that minifw._C
loaded from the venv, that libamdhip64.so.7 loaded from the system and that its
hipRuntimeGetVersion() is the variant's). Here, what minifw itself says through the HIP runtime:
its build facts, the runtime version it reads, and the device it finds. These machines have no
AMD GPU: the device check then passes as skipped, with the runtime's own reason, and the
default-device saxpy must fall back to the CPU with the right numbers.
"""

from __future__ import annotations

import json
import sys
import traceback
from typing import Any

Check = dict[str, Any]
HIP_VERSION_PER_RELEASE = 100_000  # HIP_VERSION = major * 10**7 + minor * 10**5 + patch


def check(name: str, ok: bool, detail: str = "", *, skipped: bool = False) -> Check:
    return {"name": name, "ok": bool(ok), "detail": detail, "skipped": skipped}


def equal(name: str, got: object, want: object) -> Check:
    return check(name, got == want, f"got {got!r}, expected {want!r}")


def build_checks(minifw: Any, facts: dict[str, Any]) -> list[Check]:
    v = minifw.version
    return [equal("__version__", minifw.__version__, facts.get("version")),
            equal("version.accelerator", v.accelerator, "rocm"),
            equal("version.hip", v.hip, facts.get("accelerator_version")),
            check("version.device_compiler", str(v.device_compiler).startswith("hipcc "), str(v.device_compiler))]


def runtime_checks(minifw: Any, facts: dict[str, Any]) -> list[Check]:
    """minifw's own hipRuntimeGetVersion() call reports the variant's release."""
    got = minifw.hip.runtime_version()
    want = facts.get("expected_runtime_version")
    return [check("hip.runtime_version", got // HIP_VERSION_PER_RELEASE == want,
                  f"hipRuntimeGetVersion() = {got} (release {got // HIP_VERSION_PER_RELEASE}), expected release {want}")]


def device_checks(minifw: Any) -> list[Check]:
    """With a device, saxpy runs on it; without one, the runtime says why and saxpy uses the CPU."""
    x, y = [1.0, 2.0, 3.0, -4.5], [10.0, 20.0, 30.0, 0.5]
    want = [2.0 * a + b for a, b in zip(x, y)]
    checks = [equal("saxpy", minifw.saxpy(2.0, x, y), want)]
    if minifw.hip.device_count() > 0:
        return [*checks, equal("saxpy rocm", minifw.saxpy(2.0, x, y, device="rocm"), want)]
    reason = minifw.hip.probe_error()
    return [*checks, check("saxpy rocm", bool(reason), f"no AMD GPU here, device kernels not run: {reason}",
                           skipped=True)]


def main() -> int:
    facts = json.load(sys.stdin)
    checks: list[Check] = []
    try:
        import minifw

        for group in (build_checks(minifw, facts), runtime_checks(minifw, facts), device_checks(minifw)):
            checks += group
        seen = {"hip_runtime_version": minifw.hip.runtime_version(), "device_count": minifw.hip.device_count(),
                "probe_error": minifw.hip.probe_error(), "gpu_archs": minifw.version.gpu_archs}
    except Exception as exc:  # noqa: BLE001 - any failure is a failed check, never a lost record
        traceback.print_exc()
        checks.append(check("minifw", False, f"{type(exc).__name__}: {exc}"))
        seen = {}
    print(json.dumps({"checks": checks, "facts": seen}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
