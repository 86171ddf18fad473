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
import math
import sys
import traceback
from collections.abc import Callable, Sequence
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
    checks = [equal("__version__", minifw.__version__, facts.get("build_version", facts.get("version"))),
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


def close(got: Any, want: Any, rel: float) -> bool:
    """Nested lists of numbers equal within ``rel`` (relative to the largest magnitude)."""
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(close(g, w, rel) for g, w in zip(got, want))
    return bool(abs(got - want) <= rel * max(1.0, abs(want)))


def near(name: str, got: Any, want: Any, rel: float) -> Check:
    ok = close(got, want, rel)
    return check(name, ok, "" if ok else f"got {got!r}, expected {want!r}")


# Small fixed inputs and their values computed here, in plain Python.
A = [[1.0, -2.0, 3.5, 0.25, 4.0], [0.5, 6.0, -1.0, 2.0, -3.0], [7.0, 0.0, 1.5, -2.5, 1.0]]
B = [[2.0, -1.0], [0.5, 3.0], [-4.0, 1.0], [1.0, 1.0], [0.0, -2.0]]
X = [[[[float((3 * c + 5 * i + 7 * j) % 11 - 5) for j in range(5)] for i in range(4)] for c in range(2)]]
W = [[[[float((o + c + kh - kw) % 3 - 1) for kw in range(3)] for kh in range(3)] for c in range(2)] for o in range(3)]


def ref_matmul(a: Sequence[Sequence[float]], b: Sequence[Sequence[float]]) -> list[list[float]]:
    return [[sum(a[i][p] * b[p][j] for p in range(len(b))) for j in range(len(b[0]))] for i in range(len(a))]


def ref_conv2d(x: Any, w: Any, stride: int, pad: int) -> Any:
    h, wd, kh, kw = len(x[0][0]), len(x[0][0][0]), len(w[0][0]), len(w[0][0][0])
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1

    def at(n: int, c: int, i: int, j: int) -> float:
        return x[n][c][i][j] if 0 <= i < h and 0 <= j < wd else 0.0

    return [[[[sum(at(n, c, r * stride + a - pad, q * stride + b - pad) * w[o][c][a][b]
                   for c in range(len(w[0])) for a in range(kh) for b in range(kw))
               for q in range(ow)] for r in range(oh)] for o in range(len(w))] for n in range(len(x))]


def ref_softmax(rows: list[list[float]]) -> list[list[float]]:
    out = []
    for row in rows:
        e = [math.exp(v - max(row)) for v in row]
        out.append([v / sum(e) for v in e])
    return out


def core_checks(minifw: Any) -> list[Check]:
    """minifw_core (linked into _C) describes this build, and its kernels compute the right numbers."""
    ops, v = minifw.ops, minifw.version
    info = ops.info()
    checks = [equal("core.accelerator", info["accelerator"], v.accelerator),
              equal("core.accelerator_version", info["accelerator_version"] or None, v.accelerator_version),
              equal("core.gpu_archs", info["gpu_archs"], v.gpu_archs),
              check("core.weight", info["weight"] >= 1 and len(info["gemm_variants"]) == info["weight"],
                    f"weight {info['weight']}, {len(info['gemm_variants'])} GEMM variants")]
    return checks + kernel_checks(ops, "cpu", len(info["gemm_variants"]))


def kernel_checks(ops: Any, device: str, variants: int) -> list[Check]:
    """matmul (every variant, every dtype), conv2d, softmax and reductions on ``device``."""
    want = ref_matmul(A, B)
    checks = [near(f"{device} matmul variant {i}", ops.matmul(A, B, device=device, variant=i), want, 1e-12)
              for i in range(variants)]
    ints = [[int(x * 2) for x in row] for row in A], [[int(x * 2) for x in row] for row in B]
    checks += [near(f"{device} matmul float32", ops.matmul(A, B, dtype="float32", device=device), want, 1e-5),
               equal(f"{device} matmul int32", ops.matmul(*ints, dtype="int32", device=device), ref_matmul(*ints)),
               equal(f"{device} matmul int64", ops.matmul(*ints, dtype="int64", device=device), ref_matmul(*ints)),
               near(f"{device} conv2d", ops.conv2d(X, W, stride=2, padding=1, device=device),
                    ref_conv2d(X, W, 2, 1), 1e-12),
               near(f"{device} softmax", ops.softmax(A, device=device), ref_softmax(A), 1e-12),
               near(f"{device} reduce sum", ops.reduce("sum", A, device=device), [sum(r) for r in A], 1e-12),
               near(f"{device} reduce norm2", ops.reduce("norm2", A, device=device),
                    [math.sqrt(sum(x * x for x in r)) for r in A], 1e-12),
               near(f"{device} gelu", ops.unary("gelu", A[0], device=device),
                    [0.5 * x * (1 + math.erf(x / math.sqrt(2))) for x in A[0]], 1e-12)]
    return checks


def device_kernel_checks(minifw: Any) -> list[Check]:
    """The same kernels on the accelerator, where a device is present (skipped otherwise)."""
    accel = minifw.version.accelerator
    if accel == "cpu" or minifw.device_count() == 0:
        return []
    return kernel_checks(minifw.ops, accel, len(minifw.ops.info()["gemm_variants"]))


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
                "hip_runtime_version": minifw.hip.runtime_version(),
                "core_weight": minifw.ops.info()["weight"]}
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
              + guarded("runtime", runtime_checks, minifw, facts) + guarded("core", core_checks, minifw)
              + guarded("device kernels", device_kernel_checks, minifw))
    print(json.dumps({"checks": checks, "facts": observed(minifw)}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
