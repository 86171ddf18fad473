"""The smoke test with venv + pip and with uv, side by side, per wheel, cold and warm.

In one run, on one cpu and one CUDA wheel of the bundled demo for the same Python (the first
Python this host builds both for; by default the variants ``cpu`` and ``cu132``):

1. both wheels are built with the local engine (``build --target ID --no-smoke``), or taken from
   ``--wheelhouse DIR`` where a results.json there lists them as built;
2. per wheel, the smoke test (builders' own, in-process: :func:`builders.wheel.smoke.smoke`) runs with
   venv + pip and with uv: once cold (an empty pip cache; an empty uv cache), then ``--repeat``
   times warm (the same caches). Every run must pass its checks.

pip's configuration is read once per run and interpreter (``pip config list``, about a second);
that read is timed on its own and left out of the per-smoke figures, for uv and pip alike.

Budgets (issue 11): uv warm at most 2 s per wheel (median), and venv + pip warm at least 3 times
uv warm. Prints a table and writes JSON. Exit 1 when a budget is missed or a smoke failed.

    python benchmarks/bench_smoke.py [--variant cpu --variant cu132] [--repeat N] [--wheelhouse DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from builders.base.process import HostRunner, Log
from builders.families import loader as matrix
from builders.matrix.targets import Selection, Target, select
from builders.pipeline.host import detect
from builders.wheel.archive import Wheel
from builders.wheel.smoke import HIDDEN_ENV, host_key, pip_config, smoke

ROOT = Path(__file__).resolve().parent.parent

UV_WARM_BUDGET_S = 2.0
MIN_SPEEDUP = 3.0
DEFAULT_VARIANTS = ("cpu", "cu132")
DEFAULT_JSON = ROOT / "benchmarks" / "results" / "bench_smoke.json"


def builders(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m builders ARGS`` from the repository root; a failure ends the benchmark."""
    proc = subprocess.run([sys.executable, "-m", "builders", *args], cwd=ROOT, text=True, capture_output=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-5000:])
        raise SystemExit(f"builders {' '.join(args)} exited {proc.returncode}")
    return proc


def pick_targets(variants: list[str], house: Path) -> list[str]:
    """One target per variant, all for one Python this host can build every variant for: one whose wheels
    ``house`` has already, else the first."""
    plans = json.loads(builders("build", "--dry-run", "--json", "--output", str(house),
                                *[a for v in variants for a in ("--select", f"{v}-*")]).stdout)["plans"]
    ids, have = [p["id"] for p in plans], listed(house)
    pythons = list(dict.fromkeys(i.split("-")[1] for i in ids))
    for python in sorted(pythons, key=lambda py: -sum(i in have for i in ids if i.split("-")[1] == py)):
        picked = [next((i for i in ids if i.startswith(f"{v}-{python}-")), None) for v in variants]
        if all(picked):
            return [p for p in picked if p]
    raise SystemExit(f"this host builds no Python for every one of the variants {', '.join(variants)}")


def built_wheels(ids: list[str], house: Path) -> dict[str, Path]:
    """The wheels of ``ids`` in ``house`` (results.json), built there first where missing."""
    missing = [t for t in ids if t not in listed(house)]
    if missing:
        builders("build", "--no-smoke", "--output", str(house), *[a for t in missing for a in ("--target", t)])
    found = listed(house)
    return {t: house / found[t] for t in ids}


def listed(house: Path) -> dict[str, str]:
    path = house / "results.json"
    if not path.is_file():
        return {}
    targets = json.loads(path.read_text())["targets"]
    return {r["id"]: r["wheel"] for r in targets if r.get("wheel") and (house / r["wheel"]).is_file()}


def timed_smoke(wheel: Path, target: Target, python: Path, env: dict[str, str], installer: str,
                log: Log) -> float:
    start = time.monotonic()
    out = smoke(wheel, target, python, env, log, dist_version=str(Wheel(wheel).version), installer=installer)
    took = time.monotonic() - start
    if not out.ok or out.installer != installer:
        raise SystemExit(f"{target.id} with {installer}: {out.installer} ran ({out.note}); {list(out.problems)}")
    return took


def measure_wheel(wheel: Path, target: Target, env: dict[str, str], work: Path, repeat: int) -> dict[str, Any]:
    """Cold and warm smoke times of ``wheel`` with each installer, each with caches of its own."""
    python = detect((target.python,), env).interpreter(target.python.abi)
    if python is None:
        raise SystemExit(f"no {target.python} interpreter for {target.id}")
    log = Log(work / "logs" / f"{target.id}.log")
    caches = {"pip": {"PIP_CACHE_DIR": str(work / target.id / "pip-cache")},
              "uv": {"BUILDERS_CACHE": str(work / target.id / "builders-cache")}}
    uv_env = {**env, **caches["uv"]}
    start = time.monotonic()
    pip_config(HostRunner(uv_env, log), str(python), host_key(str(python), uv_env))  # once, as a build run does
    config_s = time.monotonic() - start
    figures: dict[str, Any] = {"target": target.id, "wheel": wheel.name, "python": str(python),
                               "pip_config_s": round(config_s, 2)}
    for installer in ("pip", "uv"):
        run_env = {**env, **caches[installer]}
        runs = [timed_smoke(wheel, target, python, run_env, installer, log) for _ in range(repeat + 1)]
        figures[installer] = {"cold_s": round(runs[0], 2), "warm_s": [round(r, 2) for r in runs[1:]],
                              "warm_median_s": round(statistics.median(runs[1:]), 2)}
    figures["speedup_warm"] = round(figures["pip"]["warm_median_s"] / figures["uv"]["warm_median_s"], 1)
    figures["speedup_cold"] = round(figures["pip"]["cold_s"] / figures["uv"]["cold_s"], 1)
    return figures


def verdicts(per_wheel: list[dict[str, Any]]) -> list[tuple[str, str, str, bool]]:
    rows: list[tuple[str, str, str, bool]] = []
    for f in per_wheel:
        pip, uv, tid = f["pip"], f["uv"], f["target"]
        rows += [
            (f"{tid}: pip config list (once per run)", f"{f['pip_config_s']:.2f} s", "", True),
            (f"{tid}: venv + pip, cold / warm", f"{pip['cold_s']:.2f} / {pip['warm_median_s']:.2f} s", "", True),
            (f"{tid}: uv, cold / warm", f"{uv['cold_s']:.2f} / {uv['warm_median_s']:.2f} s",
             f"warm <= {UV_WARM_BUDGET_S:.0f} s", uv["warm_median_s"] <= UV_WARM_BUDGET_S),
            (f"{tid}: pip / uv, cold / warm", f"{f['speedup_cold']:.1f}x / {f['speedup_warm']:.1f}x",
             f"warm >= {MIN_SPEEDUP:.0f}x", f["speedup_warm"] >= MIN_SPEEDUP),
        ]
    return rows


def table(rows: list[tuple[str, str, str, bool]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    return "\n".join(f"{name:<{widths[0]}}  {value:>{widths[1]}}  {budget:<{widths[2]}}  {'ok' if ok else 'MISSED'}"
                     for name, value, budget, ok in rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--variant", action="append", default=[], metavar="LABEL",
                        help=f"a variant to smoke one wheel of (default: {' and '.join(DEFAULT_VARIANTS)})")
    parser.add_argument("--repeat", type=int, default=2, metavar="N", help="warm runs per wheel and installer")
    parser.add_argument("--wheelhouse", type=Path, default=None, metavar="DIR",
                        help="take the wheels from (or build them into) DIR and keep it (default: a temporary one)")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, metavar="PATH", help="where to write the numbers")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench-smoke-"))
    house = (args.wheelhouse or work / "wheelhouse").resolve()
    env = {k: v for k, v in os.environ.items() if k not in HIDDEN_ENV}
    try:
        m = matrix.load(ROOT / "matrix.yaml")
        ids = pick_targets(args.variant or list(DEFAULT_VARIANTS), house)
        wheels = built_wheels(ids, house)
        per_wheel = [measure_wheel(wheels[t], select(m, Selection(targets=(t,)))[0], env, work, args.repeat)
                     for t in ids]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    rows = verdicts(per_wheel)
    print(table(rows))
    ok = all(r[3] for r in rows)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    record = {"cores": os.cpu_count(), "load_average": [round(x, 2) for x in os.getloadavg()],
              "repeat": args.repeat, "wheels": per_wheel, "ok": ok}  # load: other work on the machine skews figures
    args.json.write_text(json.dumps(record, indent=2) + "\n")
    print(f"numbers written to {args.json}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
