"""The shared compile cache on the demo's cores: cold, then warm from the store as a fresh runner, then one
changed source file.

For each variant (by default ``cpu`` and ``cu132``), one target of the first Python this host builds, the
local engine, sccache on a Redis server of the benchmark's own (loopback, a temporary folder):

1. **cold**: ``build --target ID --no-smoke --compile-cache-write`` into an empty store: every compile misses
   and is written (the nightly's role);
2. **warm**: the same plan again as a fresh runner would build it: the same output path, emptied (so the core
   is compiled again: nothing local is reused), read-only, every compile a lookup in the store;
3. **changed**: one header of the core (``--changed``, by default ``src/cpu/math.hpp``) gets a real declaration
   added; the translation units that include it, directly or through another header, are counted from the
   sources (an oracle independent of sccache), and must be exactly the compiles that miss on top of those that
   miss warm.

Figures: the core's seconds (results.json ``core.seconds``), sccache's hits and misses (``compiler_cache``),
the warm/cold ratio. Goals (issue 28): at least 90 % hits warm and at most 0.3x of the cold core time.
Prints a table and writes Markdown to ``benchmarks/results/compile-cache.md`` and the results.json files
of every run beside it (``compile-cache/``) for ``plan --estimate --results``. Exit 1 when a goal is missed.

    python benchmarks/bench_compile_cache.py [--variant cpu --variant cu132] [--weight N] [--changed PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
HIT_GOAL, RATIO_GOAL = 0.9, 0.3
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)
UNIT_SUFFIXES = (".cpp", ".cu")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def redis_server(folder: Path) -> Iterator[str]:
    """A Redis server of this benchmark's own on loopback; its address."""
    port = free_port()
    proc = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", str(folder),
                             "--save", "", "--appendonly", "no"], stdout=subprocess.DEVNULL)
    try:
        for _ in range(150):
            if subprocess.run(["redis-cli", "-p", str(port), "ping"], capture_output=True, text=True).stdout.strip() == "PONG":
                break
            time.sleep(0.2)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def project_copy(dest: Path) -> Path:
    """The demo (one of its headers changes) beside the shipped matrix (its compile_cache: sccache); the matrix path."""
    shutil.copytree(ROOT / "examples" / "minifw", dest / "examples" / "minifw",
                    ignore=shutil.ignore_patterns("build", "*.egg-info"))
    shutil.copy(ROOT / "matrix.yaml", dest / "matrix.yaml")
    return dest / "matrix.yaml"


def build(matrix: Path, target: str, out: Path, env: Mapping[str, str], *extra: str) -> dict[str, Any]:
    """One build of ``target`` into ``out``; its results.json record."""
    argv = [sys.executable, "-m", "builders", "build", "--matrix", str(matrix), "--target", target, "--no-smoke",
            "--output", str(out), *extra]
    proc = subprocess.run(argv, cwd=ROOT, env=dict(env), text=True, capture_output=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}")
    (record,) = json.loads((out / "results.json").read_text())["targets"]
    return dict(record)


def first_target(matrix: Path, variant: str, env: Mapping[str, str]) -> str:
    """The variant's first Linux target this host builds with the local engine (its lowest Python)."""
    argv = [sys.executable, "-m", "builders", "build", "--matrix", str(matrix), "--select", f"{variant}-*-linux-*",
            "--dry-run", "--json", "--allow-skip", "--output", tempfile.mkdtemp()]
    plans = json.loads(subprocess.run(argv, cwd=ROOT, env=dict(env), text=True, capture_output=True,
                                      check=True).stdout)["plans"]
    if not plans:
        raise SystemExit(f"this host builds no {variant} target")
    return str(sorted(p["id"] for p in plans)[0])


def including_units(core: Path, header: str) -> list[str]:
    """The core's translation units that include ``header`` (relative to ``src/``), directly or through another
    header: read from the sources' ``#include "..."`` lines, resolved against the includer's folder, ``src/``
    and ``include/``."""
    files = {str(p.relative_to(core)): p.read_text(errors="replace") for p in core.rglob("*") if p.is_file()
             and p.suffix in (*UNIT_SUFFIXES, ".h", ".hpp", ".cuh", ".inl")}
    target = f"src/{header}"

    def reaches(name: str, seen: frozenset[str]) -> bool:
        for inc in INCLUDE.findall(files[name]):
            for base in (str(Path(name).parent), "src", "include"):
                found = os.path.normpath(f"{base}/{inc}")
                if found in files and found not in seen:
                    if found == target or reaches(found, seen | {found}):
                        return True
                    break
        return False

    return sorted(n for n in files if n.endswith(UNIT_SUFFIXES) and reaches(n, frozenset({n})))


def change(header: Path) -> None:
    """A real change (a declaration, not a comment the preprocessor drops)."""
    header.write_text(header.read_text() + "\nnamespace minifw_bench { inline int changed() { return 28; } }\n")


def runner_workspace(work: Path, variant: str) -> Path:
    """The output folder of a fresh runner: one path for every run (as a hosted runner's workspace is), emptied
    first, so nothing local is reused. sccache 0.16 hashes arguments with their absolute paths, so entries serve
    builds at the same paths."""
    out = work / f"{variant}-runner"
    shutil.rmtree(out, ignore_errors=True)
    return out


def measure(variant: str, matrix: Path, work: Path, env: Mapping[str, str], changed: str) -> dict[str, Any]:
    target = first_target(matrix, variant, env)
    runs = {}
    for name, extra in (("cold", ("--compile-cache-write",)), ("warm", ())):
        runs[name] = build(matrix, target, runner_workspace(work, variant), env, *extra)
        shutil.copy(work / f"{variant}-runner" / "results.json", work / f"{variant}-{name}.json")
    core = matrix.parent / "examples" / "minifw" / "core"
    units = including_units(core, changed)
    original = (core / "src" / changed).read_text()
    change(core / "src" / changed)
    try:
        runs["changed"] = build(matrix, target, runner_workspace(work, variant), env)
        shutil.copy(work / f"{variant}-runner" / "results.json", work / f"{variant}-changed.json")
    finally:
        (core / "src" / changed).write_text(original)
    return {"variant": variant, "target": target, "runs": runs, "including": units}


def row(found: Mapping[str, Any]) -> dict[str, Any]:
    cold, warm, changed = (found["runs"][k] for k in ("cold", "warm", "changed"))
    cold_s, warm_s = cold["core"]["seconds"], warm["core"]["seconds"]
    stats = warm["compiler_cache"]
    return {"variant": found["variant"], "target": found["target"], "cold_core_s": cold_s, "warm_core_s": warm_s,
            "ratio": round(warm_s / cold_s, 3) if cold_s else None, "warm_hit_rate": stats["hit_rate"],
            "warm_hits": stats["hits"], "warm_misses": stats["misses"], "cold_writes": cold["compiler_cache"]["writes"],
            "changed_misses": changed["compiler_cache"]["misses"],
            "extra_misses": changed["compiler_cache"]["misses"] - stats["misses"], "including_units": found["including"]}


def verdicts(r: Mapping[str, Any]) -> list[str]:
    misses = []
    if (r["warm_hit_rate"] or 0) < HIT_GOAL:
        misses.append(f"{r['variant']}: warm hit rate {r['warm_hit_rate']} < {HIT_GOAL}")
    if r["ratio"] is None or r["ratio"] > RATIO_GOAL:
        misses.append(f"{r['variant']}: warm/cold core time {r['ratio']} > {RATIO_GOAL}")
    if r["extra_misses"] != len(r["including_units"]):
        misses.append(f"{r['variant']}: {r['extra_misses']} more misses after the change than warm, "
                      f"{len(r['including_units'])} units include it")
    return misses


def markdown(rows: list[dict[str, Any]], changed: str, weight: str, failed: list[str]) -> str:
    head = ("| variant | target | cold core s | warm core s | warm/cold | warm hits | warm misses | cold writes | "
            f"misses after changing `{changed}` (more than warm) | units that include it |\n"
            "|---|---|---|---|---|---|---|---|---|---|\n")
    body = "".join(f"| {r['variant']} | {r['target']} | {r['cold_core_s']} | {r['warm_core_s']} | {r['ratio']} | "
                   f"{r['warm_hits']} ({r['warm_hit_rate']}) | {r['warm_misses']} | {r['cold_writes']} | "
                   f"{r['changed_misses']} ({r['extra_misses']}) | {len(r['including_units'])} ({', '.join(r['including_units'])}) |\n"
                   for r in rows)
    return (f"# Compile cache: the demo's cores cold, warm from the shared store, and one changed header\n\n"
            f"`python benchmarks/bench_compile_cache.py` on {os.cpu_count()} cores, {time.strftime('%Y-%m-%d')}, "
            f"sccache on a loopback Redis, local engine, `MINIFW_CORE_WEIGHT={weight}`. Warm = a fresh output "
            "folder (the core compiles again, nothing local), read-only. Goals: hits >= 90 %, warm <= 0.3x cold; "
            "after the change exactly the units that include the header miss on top of what misses warm (the "
            "compiles that miss on every build: the warm run counts them).\n\n" + head + body
            + ("\n" + "\n".join(f"- goal missed: {m}" for m in failed) + "\n" if failed else "\nEvery goal met.\n"))


def estimate(folder: Path) -> str:
    """``plan --estimate`` of the shipped matrix from the cold and warm runs' results.json files (not the changed
    ones: a candidate after one changed header is warmer than cold and colder than warm)."""
    results = sorted(str(p.relative_to(ROOT)) for p in folder.glob("*-*.json") if p.stem.endswith(("-cold", "-warm")))
    argv = [sys.executable, "-m", "builders", "plan", "--estimate", *(a for r in results for a in ("--results", r))]
    shown = subprocess.run(argv, cwd=ROOT, text=True, capture_output=True, check=True).stdout
    listed = " ".join(f"--results {r}" for r in results)
    return (f"\n## The release run, cold and warm\n\n`python -m builders plan --estimate {listed}`:\n\n"
            f"```\n{shown.rstrip()}\n```\n")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--variant", action="append", default=None)
    p.add_argument("--weight", default="2", help="MINIFW_CORE_WEIGHT: GEMM variants compiled (default 2)")
    p.add_argument("--changed", default="cpu/math.hpp", help="the core header changed (relative to core/src)")
    p.add_argument("--estimate-only", action="store_true",
                   help="build nothing: redo the estimate section of the figures from the kept results.json files")
    args = p.parse_args(argv)
    if args.estimate_only:
        figures = RESULTS / "compile-cache.md"
        kept = figures.read_text().split("\n## The release run")[0].rstrip("\n") + "\n"
        figures.write_text(kept + estimate(RESULTS / "compile-cache"))
        print(figures.read_text())
        return 0
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "BUILDERS_COMPILER", "SCCACHE_"))}
    env |= {"MINIFW_CORE_WEIGHT": args.weight}
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-compile-cache-") as tmp, redis_server(Path(tmp)) as redis:
        matrix = project_copy(Path(tmp) / "project")
        env["BUILDERS_COMPILER_CACHE"] = f"redis://{redis}/bench"  # the store, named at run time as CI names it
        for variant in args.variant or ["cpu", "cu132"]:
            found = measure(variant, matrix, Path(tmp) / "runs", env, args.changed)
            keep = RESULTS / "compile-cache"
            keep.mkdir(parents=True, exist_ok=True)
            for name in found["runs"]:
                shutil.copy(Path(tmp) / "runs" / f"{variant}-{name}.json", keep / f"{variant}-{name}.json")
            rows.append(row(found))
            print(json.dumps(rows[-1]))
    failed = [m for r in rows for m in verdicts(r)]
    text = markdown(rows, args.changed, args.weight, failed) + estimate(RESULTS / "compile-cache")
    (RESULTS / "compile-cache.md").write_text(text)
    print(text)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
