"""``nox -s bench``: the build-cost figures of issue 11, measured side by side in one run, in one table.

Parts, run one after the other, each on fresh output folders (``--only PART``, repeatable,
reruns some of them):

- ``local``: the local targets cold (``--jobs 1``, empty compiler cache), no-op, warm
  (``--force``, the same cache) and cold with ``--jobs 2``; the marginal cost of the 2nd and
  3rd Python of each variant (``benchmarks/bench_build.py``);
- ``cibw``: three cpu Pythons in the same image, this pipeline against cibuildwheel alone,
  cold and warm (``benchmarks/bench_build.py``);
- ``plan``: load, expand, select and plan a synthetic matrix of at least 1,000 targets
  in-process (the shipped matrix grown with Pythons and CUDA versions), and the GitHub plan;
- ``smoke``: ``benchmarks/bench_smoke.py`` (venv + pip against uv, per wheel), its JSON lifted;
- ``verify``: ``benchmarks/bench_verify.py`` (a large real wheel: time and peak memory).

The build parts build a copy of the project (matrix, source, smoke script) taken at the start
(``--in-place``: the checkout itself). Prints the machine (cores, load, CPU), one table
(measure | value | budget | ok) and writes the figures as JSON, each with its budget and
verdict. Exit 1 if a budget is missed or a part failed.

    python benchmarks/bench.py [--only PART] [--select GLOB] [--source DIR] [--in-place]
                               [--base-image IMAGE] [--json PATH] [--keep DIR]
    nox -s bench [-- same arguments]

The demo's compile weight is its default unless the environment sets the matrix's
``build.environment_pass`` variables (``MINIFW_CORE_WEIGHT``); their values are recorded. The
``cibw`` part alone builds a heavier core (:data:`CIBW_ENV`, named in its figures' labels).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import bench_build
import bench_verify
import yaml

from builders.base.process import Log, run
from builders.ci import jobs as ci
from builders.engines.images import engine_env
from builders.engines.local import LocalEngine
from builders.families import loader as matrix_mod
from builders.matrix import rules
from builders.matrix.model import OS
from builders.matrix.targets import Selection, expand, select
from builders.pipeline.context import commit_epoch
from builders.pipeline.host import Host
from builders.pipeline.plan import BuildPlan, Context

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
PARTS = ("local", "cibw", "plan", "smoke", "verify")
SMOKE_SCRIPT = ROOT / "benchmarks" / "bench_smoke.py"
PLAN_TARGETS = 1000
PLAN_REPEAT = 5
MAX_PYTHONS, MAX_VERSIONS = 32, 32  # the loader's caps (builders.matrix.yaml_loader), as tests/unit/test_ci_shards.py grows


@dataclass(frozen=True)
class Budget:
    op: str  # "<=" or ">="
    limit: float
    source: str  # where the budget comes from

    def holds(self, value: float) -> bool:
        return value <= self.limit if self.op == "<=" else value >= self.limit

    def shown(self, unit: str) -> str:
        return f"{self.op} {self.limit:g}{'' if unit in ('', 'x') else ' '}{unit}"


ISSUE = "issue 11"
EARLIER = "earlier budget"


@dataclass(frozen=True)
class Figure:
    """One measured number, its unit, and the budget it must keep (None: shown, not judged)."""

    key: str
    label: str
    value: float | None
    unit: str = "s"
    budget: Budget | None = None
    note: str = ""

    @property
    def ok(self) -> bool | None:
        if self.budget is None:
            return None
        return self.value is not None and self.budget.holds(self.value)

    def shown(self) -> str:
        if self.value is None:
            return "n/a"
        if self.unit in ("x", "s"):
            return f"{self.value:.2f}{' s' if self.unit == 's' else 'x'}"
        return f"{self.value:g} {self.unit}".strip()

    def to_json(self) -> dict[str, Any]:
        budget = None if self.budget is None else {"op": self.budget.op, "limit": self.budget.limit,
                                                     "source": self.budget.source}
        return {"key": self.key, "label": self.label, "value": self.value, "unit": self.unit, "budget": budget,
                "ok": self.ok, "note": self.note}


def ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a is not None and b else None


def percent(fraction: float | None) -> float | None:
    return None if fraction is None else round(100 * fraction, 1)


# -- local ------------------------------------------------------------------------------------------

JOBS_BUDGET = Budget("<=", 0.65, EARLIER)
NOOP_BUDGET = Budget("<=", 3.0, EARLIER)
NOOP_RATIO = Budget(">=", 30.0, EARLIER)
MARGINAL = {"cu132": Budget("<=", 0.25, ISSUE)}  # the 2nd and 3rd Python over the first's build


def local_figures(m: Mapping[str, Any]) -> list[Figure]:
    n, cold, warm_cache = len(m["targets"]), m["cold_jobs1_s"], m["warm_compiler_cache"]
    figures = [
        Figure("local.cold_jobs1_s", f"local: cold build, {n} targets, --jobs 1, empty ccache", cold),
        Figure("local.noop_s", "local: no-op rebuild", m["noop_s"], budget=NOOP_BUDGET),
        Figure("local.noop_reused", "local: targets reused by the no-op rebuild", m["noop_reused"], "",
               Budget(">=", n, "every target")),
        Figure("local.cold_over_noop", "local: cold / no-op", ratio(cold, m["noop_s"]), "x", NOOP_RATIO),
        Figure("local.cold_hit_rate", f"local: cold ccache hit rate ({m['cold_compiler_cache']['hits']} hits, "
               f"{m['cold_compiler_cache']['misses']} misses)", percent(m["cold_compiler_cache"]["hit_rate"]), "%"),
        Figure("local.warm_s", f"local: warm rebuild (--force, same ccache), {n} targets", m["warm_s"]),
        Figure("local.warm_over_cold", "local: warm / cold", ratio(m["warm_s"], cold), "x"),
        Figure("local.warm_hit_rate", f"local: warm ccache hit rate ({warm_cache['hits']} hits, "
               f"{warm_cache['misses']} misses)", percent(warm_cache["hit_rate"]), "%"),
        Figure("local.cold_jobs2_s", f"local: cold build, {n} targets, --jobs 2, empty ccache", m["cold_jobs2_s"]),
        Figure("local.jobs2_over_jobs1", "local: --jobs 2 / --jobs 1", ratio(m["cold_jobs2_s"], cold), "x",
               JOBS_BUDGET, "issue 10's budget, set before build.core: the cores' Ninja builds keep every core busy "
               "at --jobs 1 already, so a second job overlaps only the single-threaded rest"),
        Figure("local.jobs2_same", "local: --jobs 2 results and commands = --jobs 1's (differences)",
               len(m["parallel_differences"]), "", Budget("<=", 0, EARLIER), "; ".join(m["parallel_differences"][:3])),
    ]
    return figures + marginal_figures(m["marginal"])


def marginal_figures(groups: Mapping[str, Mapping[str, Any]]) -> list[Figure]:
    figures = []
    for name, group in groups.items():
        variant = name.split("-", 1)[0]
        core = group["core"].get("seconds")
        note = f"first: {group['first']} ({group['reference']}), build {group['first_build_s']:.1f} s" + (
            f", core {core:.1f} s" if core is not None else "")
        for tid, value in group["ratios"].items():
            figures.append(Figure(f"local.marginal.{tid}", f"local: {tid} build / first {variant}'s", value, "x",
                                  MARGINAL.get(variant), note))
    return figures


def part_local(args: argparse.Namespace, work: Path) -> tuple[dict[str, Any], list[Figure]]:
    selection = [a for g in args.select for a in ("--select", g)]
    m = bench_build.measure_local(selection, work, args.env, say, args.project)
    notes = m["plans_changed_during_cold_build"]
    figures = local_figures(m)
    if notes:
        figures = [replace(f, note=f"plans changed during the cold build: {', '.join(notes)}")
                   if f.key == "local.noop_s" else f for f in figures]
    return m, figures


# -- cibuildwheel vs this pipeline -----------------------------------------------------------

CIBW_BUDGET = Budget("<=", 0.5, ISSUE)
# The weight of the demo's core in this part, unless the environment sets it. At the default (6) the
# cpu core compiles in about 25 s, no more than the run's fixed cost (containers, three extension
# builds, three smoke tests), so the ratio would measure that cost, not compilation, which is
# what a framework's release spends its time on. Measured at 6: 0.50 and 0.56 in two runs.
CIBW_ENV = {"MINIFW_CORE_WEIGHT": "12"}


def part_cibw(args: argparse.Namespace, work: Path) -> tuple[dict[str, Any], list[Figure]]:
    env = {**CIBW_ENV, **args.env}  # the environment's own value wins
    m = bench_build.measure_cibw(args.base_image, work, env, say, args.project)
    m["environment"] = {k: env[k] for k in CIBW_ENV}
    weight = ", ".join(f"{k}={v}" for k, v in m["environment"].items() if v is not None)
    what = f"{len(m['targets'])} cpu Pythons ({', '.join(t.split('-')[1] for t in m['targets'])})" + (
        f", {weight}" if weight else "")
    runs = {side: ", ".join("failed" if t is None else f"{t:.1f} s" for t in m[f"{side}_cold_runs_s"])
            for side in ("pipeline", "cibw")}
    return m, [
        Figure("cibw.pipeline_cold_s", f"cibw: this pipeline, {what}, --jobs {m['jobs']}, cold ccache, best of "
               f"{m['repeat']}", m["pipeline_cold_s"], note=f"runs: {runs['pipeline']}"),
        Figure("cibw.cibuildwheel_cold_s", f"cibw: cibuildwheel alone, {what}, best of {m['repeat']} cold runs",
               m["cibw_cold_s"], note=f"runs: {runs['cibw']} (alternating with the pipeline's)"),
        Figure("cibw.cold_ratio", "cibw: pipeline / cibuildwheel, cold", ratio(m["pipeline_cold_s"], m["cibw_cold_s"]),
               "x", CIBW_BUDGET),
        Figure("cibw.pipeline_warm_s", f"cibw: this pipeline, {what}, --force, warm ccache", m["pipeline_warm_s"]),
        Figure("cibw.cibuildwheel_warm_s", f"cibw: cibuildwheel alone, {what}, its last run", m["cibw_warm_s"],
               note="cibuildwheel keeps no compiler cache: a later run of the same is its warm case"),
        Figure("cibw.warm_ratio", "cibw: pipeline / cibuildwheel, warm", ratio(m["pipeline_warm_s"], m["cibw_warm_s"]),
               "x"),
    ]


# -- plan time of a synthetic matrix ---------------------------------------------------------------

PLAN_BUDGET = Budget("<=", 0.5, ISSUE)


def cuda_version(version: str) -> str:
    """A CUDA version entry in the shipped matrix's shape (the same text tests/unit/test_ci_shards.py adds)."""
    return (f'      "{version}":\n        label: cu{version.replace(".", "")}\n        arch_list:\n'
            '          linux-x86_64: "8.0;9.0;10.0;12.0+PTX"\n          linux-aarch64: "8.0;9.0;10.0;12.0+PTX"\n'
            f'        toolkit:\n          requirements: ["cuda-toolkit[nvcc,cudart,cccl,crt,nvvm]=={version}.0"]\n'
            f'        runtime_requirements:\n          - \'cuda-toolkit[cudart]=={version}.0; platform_system == "Linux"\'\n')


def grown(text: str, pythons: int, versions: int) -> str:
    """The matrix ``text`` with ``pythons`` more Pythons and ``versions`` more CUDA versions, the rest untouched."""
    listed = yaml.safe_load(text)["pythons"]
    top = max(int(p.rstrip("t").split(".")[1]) for p in listed)
    extra = [f"3.{minor}{t}" for minor in range(top + 1, top + 40) for t in ("", "t")][:pythons]
    anchor, family = f'  - "{listed[-1]}"\n', "\n    versions:\n"  # the first family with versions is CUDA's
    if anchor not in text or family not in text:
        raise RuntimeError("the matrix no longer has the shape the plan benchmark grows (pythons list, CUDA versions)")
    text = text.replace(anchor, anchor + "".join(f'  - "{p}"\n' for p in extra), 1)
    taken = set(yaml.safe_load(text)["accelerators"]["cuda"]["versions"])
    cuda = [v for v in (f"13.{minor}" for minor in range(5, 99)) if v not in taken][:versions]
    return text.replace(family, family + "".join(cuda_version(v) for v in cuda), 1)


def synthetic(text: str, path: Path, want: int = PLAN_TARGETS) -> str:
    """The shipped matrix grown by the fewest targets past ``want``, within the loader's caps.

    Targets grow as Pythons x (targets per Python + CUDA versions x CUDA targets per version
    and Python), candidates as Pythons x platforms x variants; the first growth whose loaded
    matrix really has ``want`` targets is taken.
    """
    m = matrix_mod.loads(text, path)
    targets = expand(m)[0]
    pythons, platforms, variants = len(m.pythons), len(m.platforms), len(m.variants)
    cuda = [t for t in targets if t.variant.accelerator.value == "cuda"]
    per_cuda = len(cuda) / pythons / len({t.variant.label for t in cuda})
    options = [(p, c) for p in range(MAX_PYTHONS - pythons + 1) for c in range(MAX_VERSIONS + 1)
               if (pythons + p) * platforms * (variants + c) <= rules.MAX_TARGETS]
    estimate = {o: (pythons + o[0]) * (len(targets) / pythons + o[1] * per_cuda) for o in options}
    for option in sorted((o for o in options if estimate[o] >= want), key=lambda o: estimate[o]):
        candidate = grown(text, *option)
        if len(expand(matrix_mod.loads(candidate, path))[0]) >= want:
            return candidate
    raise RuntimeError(f"the shipped matrix cannot grow to {want} targets within the loader's caps")


def fixed_context(m: Any) -> Context:
    """A Linux x86_64 host with an interpreter for every Python of the matrix, and fixed run inputs."""
    host = Host(os=OS.LINUX, arch="x86_64", cxx20="/usr/bin/c++", ccache="/usr/bin/ccache",
                interpreters=tuple((p.abi, f"/py/{p}/bin/python{p.release}") for p in m.pythons))
    return Context(host=host, env={"PATH": "/usr/bin:/bin", "HOME": "/root"}, source=m.project.source,
                   source_digest="0" * 64, epoch=1_700_000_000, output=Path("/bench/out"), cache=Path("/bench/cache"),
                   tools_python="/bench/bin/python", builders_version="0.0.0+bench")


def plan_once(text: str, path: Path) -> dict[str, Any]:
    """One in-process pass: load, expand, select every target, plan each with the local engine; seconds each."""
    clock = time.perf_counter
    t0 = clock()
    m = matrix_mod.loads(text, path)
    t1 = clock()
    targets, _ = expand(m)
    t2 = clock()
    chosen = select(m, Selection())
    t3 = clock()
    engine, ctx = LocalEngine(cache=Path("/bench/cache"), env={}), fixed_context(m)
    resolved = [engine.plan(t, ctx) for t in chosen]
    t4 = clock()
    ci.github_plan(targets)
    t5 = clock()
    return {"targets": len(targets), "plans": sum(isinstance(r, BuildPlan) for r in resolved),
            "load_s": t1 - t0, "expand_s": t2 - t1, "select_s": t3 - t2, "plan_s": t4 - t3,
            "total_s": t4 - t0, "github_plan_s": t5 - t4}


def part_plan(args: argparse.Namespace, work: Path) -> tuple[dict[str, Any], list[Figure]]:
    path = ROOT / "matrix.yaml"
    text = synthetic(path.read_text(), path)
    passes = [plan_once(text, path) for _ in range(PLAN_REPEAT)]
    best = min(passes, key=lambda p: p["total_s"])
    github = min(p["github_plan_s"] for p in passes)
    n = best["targets"]
    m = {"best": best, "first": passes[0], "github_plan_best_s": github, "repeat": PLAN_REPEAT}
    return m, [
        Figure("plan.total_s", f"plan: load+expand+select+plan, {n} targets ({best['plans']} plans), best of "
               f"{PLAN_REPEAT}", round(best["total_s"], 4), budget=PLAN_BUDGET,
               note=", ".join(f"{k[:-2]} {best[k]:.3f} s" for k in ("load_s", "expand_s", "select_s", "plan_s"))),
        Figure("plan.first_total_s", "plan: the same, first pass in the process", round(passes[0]["total_s"], 4)),
        Figure("plan.github_plan_s", f"plan: ci.github_plan, {n} targets, best of {PLAN_REPEAT}", round(github, 4)),
    ]


# -- smoke (bench_smoke.py) and verify (bench_verify.py) ----------------------------------------

SMOKE_UV = Budget("<=", 2.0, ISSUE)
SMOKE_SPEEDUP = Budget(">=", 3.0, ISSUE)


def part_smoke(args: argparse.Namespace, work: Path) -> tuple[dict[str, Any], list[Figure]]:
    """bench_smoke.py with its JSON; the local part's wheels (when it ran first) spare it building its own."""
    if not SMOKE_SCRIPT.is_file():
        raise RuntimeError(f"{SMOKE_SCRIPT.relative_to(ROOT)} is not there")
    out, house = work / "bench_smoke.json", work.parent / "local" / "jobs1"
    argv = [sys.executable, str(SMOKE_SCRIPT), "--json", str(out)]
    if (house / "results.json").is_file():
        argv += ["--wheelhouse", str(house)]
    say(f"  smoke: {' '.join(argv)}")
    result = run(argv, env=args.env, log=Log(work / "bench_smoke.log"), cwd=ROOT, check=False,
                 timeout=3 * 3600)
    say(f"  smoke: {result.duration:.1f} s, exit {result.returncode} (log {work / 'bench_smoke.log'})")
    if not out.is_file():
        raise RuntimeError(f"bench_smoke.py exited {result.returncode} and wrote no {out} (log {work}/bench_smoke.log)")
    m = json.loads(out.read_text())
    return m, [f for wheel in m["wheels"] for f in smoke_figures(wheel)]


def smoke_figures(w: Mapping[str, Any]) -> list[Figure]:
    """bench_smoke.py's figures of one wheel: venv + pip and uv, cold and warm (median), and pip / uv."""
    tid, pip, uv = w["target"], w["pip"], w["uv"]
    note = f"{len(uv['warm_s'])} warm runs each; pip config read once per run, {w['pip_config_s']:.2f} s, left out"
    return [
        Figure(f"smoke.{tid}.pip_cold_s", f"smoke: {tid}, venv + pip, cold", pip["cold_s"]),
        Figure(f"smoke.{tid}.pip_warm_s", f"smoke: {tid}, venv + pip, warm", pip["warm_median_s"], note=note),
        Figure(f"smoke.{tid}.uv_cold_s", f"smoke: {tid}, uv, cold", uv["cold_s"]),
        Figure(f"smoke.{tid}.uv_warm_s", f"smoke: {tid}, uv, warm", uv["warm_median_s"], budget=SMOKE_UV),
        Figure(f"smoke.{tid}.speedup_cold", f"smoke: {tid}, venv + pip / uv, cold", w["speedup_cold"], "x"),
        Figure(f"smoke.{tid}.speedup_warm", f"smoke: {tid}, venv + pip / uv, warm", w["speedup_warm"], "x",
               SMOKE_SPEEDUP),
    ]


VERIFY_S = Budget("<=", bench_verify.BUDGET_SECONDS, EARLIER)
VERIFY_MIB = Budget("<=", bench_verify.BUDGET_MB, EARLIER)


def part_verify(args: argparse.Namespace, work: Path) -> tuple[dict[str, Any], list[Figure]]:
    m = bench_verify.numbers()
    what = f"{Path(m['wheel']).name} ({m['size_mib']:.0f} MiB)"
    return m, [
        Figure("verify.seconds", f"verify: {what}", round(m["seconds"], 2), budget=VERIFY_S,
               note=f"{len(m['findings'])} findings"),
        Figure("verify.peak_mib", "verify: peak RSS", round(m["peak_mib"], 1), "MiB", VERIFY_MIB),
    ]


# -- the driver --------------------------------------------------------------------------------------

Part = Callable[[argparse.Namespace, Path], tuple[dict[str, Any], list[Figure]]]
RUNNERS: dict[str, Part] = {"local": part_local, "cibw": part_cibw, "plan": part_plan, "smoke": part_smoke,
                            "verify": part_verify}


def say(text: str) -> None:
    print(text, flush=True)


def machine() -> dict[str, Any]:
    """Cores, load averages, CPU model, memory, OS: what the figures were measured on."""
    cpuinfo = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").is_file() else ""
    model = next((line.split(":", 1)[1].strip() for line in cpuinfo.splitlines() if line.startswith("model name")),
                 platform.processor())
    meminfo = Path("/proc/meminfo").read_text() if Path("/proc/meminfo").is_file() else ""
    kib = next((int(line.split()[1]) for line in meminfo.splitlines() if line.startswith("MemTotal:")), 0)
    passed = matrix_mod.load(ROOT / "matrix.yaml").project.environment_pass
    return {"cores": os.cpu_count(), "load": [round(x, 2) for x in os.getloadavg()], "cpu": model,
            "memory_gib": round(kib / 2**20, 1), "os": f"{platform.system()} {platform.release()}",
            "python": platform.python_version(),
            "environment_pass": {name: os.environ.get(name) for name in passed}}  # unset: the project's default


def project(args: argparse.Namespace, work: Path) -> bench_build.Project:
    """The project the build parts measure: a snapshot of the shipped one (``--in-place``: the checkout)."""
    matrix = ROOT / "matrix.yaml"
    if args.in_place or not {"local", "cibw"} & set(args.parts):
        return bench_build.Project(matrix=matrix, source=args.source)
    shutil.rmtree(work / "project", ignore_errors=True)
    return bench_build.snapshot(matrix, args.source, work / "project")


def run_env(args: argparse.Namespace) -> dict[str, str]:
    """The environment of every command: podman's configuration, and the source's commit time (which a
    snapshot, having no history, cannot give) unless ``SOURCE_DATE_EPOCH`` is set already."""
    env = engine_env(os.environ)
    if "SOURCE_DATE_EPOCH" not in env:
        source = (args.source or matrix_mod.load(ROOT / "matrix.yaml").project.source).resolve()
        env["SOURCE_DATE_EPOCH"] = str(commit_epoch(source, env))
    return env


def run_part(name: str, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """One part, timed, with the load before and after; a failure is recorded, and the other parts still run."""
    say(f"== {name} (load {' '.join(f'{x:.2f}' for x in os.getloadavg())})")
    start, load = time.monotonic(), [round(x, 2) for x in os.getloadavg()]
    folder = work / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    try:
        measured, figures = RUNNERS[name](args, folder)
        error = "; ".join(measured.get("errors", []))
    except Exception as exc:  # noqa: BLE001 - one failed part must not lose the others' figures
        measured, figures, error = {}, [], f"{type(exc).__name__}: {exc}"
        say(f"  {name} failed: {error}")
        traceback.print_exc()
    return {"name": name, "seconds": round(time.monotonic() - start, 1), "load_before": load,
            "load_after": [round(x, 2) for x in os.getloadavg()], "error": error, "measured": measured,
            "figures": figures}


def table(figures: Sequence[Figure]) -> str:
    rows = [("measure", "value", "budget", "ok")] + [
        (f.label, f.shown(), f.budget.shown(f.unit) if f.budget else "", {None: "", True: "ok", False: "MISSED"}[f.ok]) for f in figures]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = [f"| {a:<{widths[0]}} | {b:>{widths[1]}} | {c:<{widths[2]}} | {d:<{widths[3]}} |" for a, b, c, d in rows]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def document(parts: Sequence[dict[str, Any]], info: dict[str, Any], argv: Sequence[str]) -> dict[str, Any]:
    figures = [f for p in parts for f in p["figures"]]
    ok = all(f.ok is not False for f in figures) and not any(p["error"] for p in parts)
    return {"command": " ".join(["python benchmarks/bench.py", *argv]), "started": info.pop("started"),
            "machine": info, "ok": ok, "figures": [f.to_json() for f in figures],
            "parts": {p["name"]: {k: v for k, v in p.items() if k not in ("name", "figures")} for p in parts}}


def report(doc: Mapping[str, Any], figures: Sequence[Figure]) -> None:
    info = doc["machine"]
    say(f"\nmachine: {info['cores']} cores, {info['cpu']}, {info['memory_gib']} GiB, {info['os']}; load "
        f"{' '.join(map(str, info['load']))} at the start, {' '.join(map(str, info['load_end']))} at the end")
    if info["environment_pass"]:
        say("build.environment_pass: " + ", ".join(f"{k}={v if v is not None else '(unset: default)'}"
                                                   for k, v in info["environment_pass"].items()))
    say(table(figures))
    for name, part in doc["parts"].items():
        if part["error"]:
            say(f"part {name} FAILED: {part['error']}")
    for f in figures:
        if f.note:
            say(f"  {f.label}: {f.note}")


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--only", action="append", choices=PARTS, default=[], metavar="PART",
                   help=f"run only this part (repeatable; one of {', '.join(PARTS)}; default: all)")
    p.add_argument("--select", action="append", default=[], metavar="GLOB",
                   help="local part: only the local targets matching GLOB (default: every target this host builds)")
    p.add_argument("--base-image", default=os.environ.get("BUILDERS_BASE_IMAGE") or bench_build.DEFAULT_BASE,
                   help="cibw part: the base of the cpu image (default: $BUILDERS_BASE_IMAGE or %(default)s)")
    p.add_argument("--source", type=lambda text: Path(text).resolve(), default=None, metavar="DIR",
                   help="local and cibw parts: build this source tree instead of the matrix's project.source")
    p.add_argument("--in-place", action="store_true",
                   help="local and cibw parts: build the project where it is (default: a copy of the matrix, source "
                        "and smoke script taken at the start, which edits made during the run cannot reach)")
    p.add_argument("--json", type=Path, default=None, metavar="PATH",
                   help="where to write the figures (default: benchmarks/results/bench.json for a full run, "
                        "bench-<parts>.json with --only)")
    p.add_argument("--keep", type=lambda text: Path(text).resolve(), default=None, metavar="DIR",
                   help="build into DIR and keep it")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse(argv)
    names = args.parts = [n for n in PARTS if n in args.only] or list(PARTS)
    out = args.json or RESULTS / ("bench.json" if names == list(PARTS) else f"bench-{'-'.join(names)}.json")
    info = {"started": datetime.now(UTC).isoformat(timespec="seconds"), **machine()}
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        args.project, args.env = project(args, work), run_env(args)
        info["project"] = {"matrix": str(args.project.matrix), "source": str(args.project.tree),
                           "SOURCE_DATE_EPOCH": args.env["SOURCE_DATE_EPOCH"]}
        parts = [run_part(name, args, work) for name in names]
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    info["load_end"] = [round(x, 2) for x in os.getloadavg()]
    doc = document(parts, info, argv)
    report(doc, [f for p in parts for f in p["figures"]])
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2) + "\n")
    say(f"figures written to {out}")
    return 0 if doc["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
