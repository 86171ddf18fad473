"""Plan, then apply, measured: a cold build, a no-op rebuild and parallel targets, side by side.

In one run, on the targets this host can build (taken from ``build --dry-run --json``: on a
Linux x86_64 host with CPython 3.11-3.13, the nine cpu, cu132 and cu134 targets):

1. a cold build with ``--jobs 1`` into an empty output folder (toolchains already provisioned
   stay provisioned: they are cached per pin outside the output);
2. a no-op rebuild into the same folder: every plan's digest is in the store, every wheel is
   reused (budget: at most 3 s, and at least 30 times less than the cold build);
3. a cold build with ``--jobs 2`` into another empty folder (budget: at most 0.65 times the
   wall time of ``--jobs 1``); its results and logs must match the serial run's: the same
   wheels (sha256), the same commands with the same environments and exit codes.

Prints a table and writes JSON. Exit 1 when a budget is missed.

    python benchmarks/bench_build.py [--select GLOB] [--json PATH] [--keep DIR]
    nox -s bench        (after bench_verify.py; with the defaults)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
NOOP_BUDGET_S = 3.0
NOOP_MIN_RATIO = 30.0
JOBS_BUDGET = 0.65
DEFAULT_JSON = ROOT / "benchmarks" / "results" / "bench_build.json"


def builders(*args: str, check: bool = True) -> tuple[float, subprocess.CompletedProcess[str]]:
    """``python -m builders ARGS`` from the repository root: (wall seconds, the finished process)."""
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "builders", *args], cwd=ROOT, text=True, capture_output=True)
    took = time.monotonic() - start
    if check and proc.returncode != 0:
        sys.stderr.write(proc.stderr[-5000:])
        raise SystemExit(f"builders {' '.join(args)} exited {proc.returncode}")
    return took, proc


def plans(selection: list[str], out: Path) -> dict[str, str]:
    """The targets this host builds, with their plan digests: the plans (not the skipped ones) of a dry run."""
    _, proc = builders("build", "--dry-run", "--json", "--output", str(out), *selection)
    return {plan["id"]: plan["digest"] for plan in json.loads(proc.stdout)["plans"]}


def results(out: Path, path: Path | None = None) -> dict[str, dict[str, Any]]:
    data = json.loads((path or out / "results.json").read_text())
    return {r["id"]: r for r in data["targets"] if r["status"] != "skipped"}


def commands(log: str, out: Path) -> list[str]:
    """The commands a log recorded, with their environment and exit code, the output folder made generic."""
    keep = [line for line in log.splitlines() if line.startswith(("$ ", "# cwd: ", "# env: ", "[exit "))]
    text = "\n".join(keep).replace(str(out), "{output}")
    text = re.sub(r"/builders-rpath-[A-Za-z0-9_]+/", "/builders-rpath-*/", text)  # a temporary folder's name
    return re.sub(r"\[exit (-?\d+) after [0-9.]+s\]", r"[exit \1]", text).splitlines()


def generic(value: Any, out: Path) -> str:
    """``value`` as JSON with the output folder made generic (the smoke venv lives under it)."""
    return json.dumps(value, sort_keys=True).replace(str(out), "{output}")


def same_as_serial(serial: Path, parallel: Path, serial_results: Path) -> list[str]:
    """Where the parallel run's results and logs differ from the serial run's (timings and paths aside)."""
    problems = []
    a, b = results(serial, serial_results), results(parallel)
    if a.keys() != b.keys():
        problems.append(f"targets differ: {sorted(a.keys() ^ b.keys())}")
    for tid in sorted(a.keys() & b.keys()):
        for key in ("status", "sha256", "wheel", "digest", "policy", "smoke"):
            if generic(a[tid].get(key), serial) != generic(b[tid].get(key), parallel):
                problems.append(f"{tid}: {key} differs")
        if commands((serial / a[tid]["log"]).read_text(), serial) != commands((parallel / b[tid]["log"]).read_text(),
                                                                                parallel):
            problems.append(f"{tid}: the logged commands differ")
    return problems


def measure(selection: list[str], work: Path) -> dict[str, Any]:
    serial, parallel = work / "jobs1", work / "jobs2"
    targets = list(plans(selection, serial))
    if not targets:
        raise SystemExit("this host can build none of the selected targets")
    picked = [a for t in targets for a in ("--target", t)]
    cold, _ = builders("build", "--output", str(serial), "--jobs", "1", *picked)
    shutil.copyfile(serial / "results.json", work / "jobs1-results.json")  # before the no-op makes them 'reused'
    # A commit to the source or an edit of builders' code while the cold build ran is a new plan.
    changed = sorted(t for t, d in plans(picked, serial).items() if d != results(serial)[t].get("digest"))
    noop, proc = builders("build", "--output", str(serial), *picked)
    reused = sum(r["status"] == "reused" for r in results(serial).values())
    jobs2, _ = builders("build", "--output", str(parallel), "--jobs", "2", *picked)
    return {"targets": targets, "cores": os.cpu_count(), "cold_jobs1_s": round(cold, 2), "noop_s": round(noop, 2),
            "noop_reused": reused, "cold_jobs2_s": round(jobs2, 2), "noop_ratio": round(cold / noop, 1),
            "jobs2_vs_jobs1": round(jobs2 / cold, 3),
            "parallel_differences": same_as_serial(serial, parallel, work / "jobs1-results.json"),
            "noop_console_tail": proc.stderr.strip().splitlines()[-1], "plans_changed_during_cold_build": changed}


def verdicts(m: dict[str, Any]) -> list[tuple[str, str, str, bool]]:
    n = len(m["targets"])
    return [
        (f"cold build, {n} targets, --jobs 1", f"{m['cold_jobs1_s']:.1f} s", "", True),
        (f"no-op rebuild ({m['noop_reused']}/{n} reused)", f"{m['noop_s']:.2f} s",
         f"<= {NOOP_BUDGET_S:.0f} s", m["noop_s"] <= NOOP_BUDGET_S and m["noop_reused"] == n),
        ("cold / no-op", f"{m['noop_ratio']:.0f}x", f">= {NOOP_MIN_RATIO:.0f}x", m["noop_ratio"] >= NOOP_MIN_RATIO),
        (f"cold build, {n} targets, --jobs 2", f"{m['cold_jobs2_s']:.1f} s", "", True),
        ("--jobs 2 / --jobs 1", f"{m['jobs2_vs_jobs1']:.2f}", f"<= {JOBS_BUDGET}", m["jobs2_vs_jobs1"] <= JOBS_BUDGET),
        ("--jobs 2 results and logs = --jobs 1's", "same" if not m["parallel_differences"] else
         f"{len(m['parallel_differences'])} differences", "same", not m["parallel_differences"]),
    ]


def table(rows: list[tuple[str, str, str, bool]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = [f"{name:<{widths[0]}}  {value:>{widths[1]}}  {budget:<{widths[2]}}  {'ok' if ok else 'MISSED'}"
             for name, value, budget, ok in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--select", action="append", default=[], metavar="GLOB", help="only targets matching GLOB")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, metavar="PATH", help="where to write the numbers")
    parser.add_argument("--keep", type=Path, default=None, metavar="DIR", help="build into DIR and keep it")
    args = parser.parse_args(argv)
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-build-"))
    for sub in ("jobs1", "jobs2"):
        shutil.rmtree(work / sub, ignore_errors=True)
    work.mkdir(parents=True, exist_ok=True)
    try:
        m = measure([a for g in args.select for a in ("--select", g)], work)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    rows = verdicts(m)
    print(table(rows))
    for problem in m["parallel_differences"]:
        print(f"  difference: {problem}")
    if m["plans_changed_during_cold_build"]:
        print(f"  note: plans changed while the cold build ran (a commit or an edit): "
              f"{', '.join(m['plans_changed_during_cold_build'])}; the no-op rebuild was not one")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({**m, "ok": all(r[3] for r in rows)}, indent=2) + "\n")
    print(f"numbers written to {args.json}")
    return 0 if all(r[3] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
