"""Build cost, measured: the local targets cold, warm and unchanged, and cibuildwheel against this pipeline.

Two measurements, each on fresh output folders, run by ``benchmarks/bench.py`` (which owns the
budgets, the table and the JSON; ``python benchmarks/bench.py --only local`` or ``--only cibw``
reruns one):

:func:`measure_local`, the targets this host builds (``build --dry-run --json``: on a Linux
x86_64 host with CPython 3.11-3.13, the nine cpu, cu132 and cu134 targets); toolchains already
provisioned stay provisioned (they are cached per pin outside the output):

1. cold, ``--jobs 1``, into an empty output with an empty ``CCACHE_DIR``;
2. no-op: the same command again; every plan's digest is in the store, every wheel reused;
3. warm: ``--force`` into the same output with the same (now full) ``CCACHE_DIR``;
4. cold, ``--jobs 2``, into another empty output with another empty ``CCACHE_DIR``; its results
   and logged commands must equal the serial run's (timings and folders aside).

From the cold serial run, the marginal cost of each further Python of a variant: its build
stage over the build stage of the target that built the variant's core (``core.status ==
"built"``; that build includes the core).

:func:`measure_cibw`, three cpu Pythons the image has, in the same image (built before any
timing): this pipeline (``--engine container``, a fresh ``--cache``, so a cold compiler cache;
then ``--force``, warm) and cibuildwheel alone with the options the cibw engine computes
(its own loop, repair and a test command importing the package and its extensions; no
compiler cache, as cibuildwheel runs by default). The cold runs alternate between the two,
twice, and each side's best counts. Every command's output goes to a log under the work folder.

Both build a :class:`Project`: by default a :func:`snapshot` of the matrix, its source and its
smoke script taken when the benchmark starts, so that edits to a shared checkout while it runs
cannot change the plans half-way (the no-op rebuild would not be one).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from builders.base.process import Completed, Log, run
from builders.engines import images
from builders.engines.cibw import cibw_options
from builders.engines.container import ContainerEngine, image_settings
from builders.families import loader as matrix_mod
from builders.matrix.targets import Selection, select
from builders.pipeline.context import commit_epoch
from builders.pipeline.store import IGNORED_DIRS, IGNORED_SUFFIXES

ROOT = Path(__file__).resolve().parent.parent
IGNORED = shutil.ignore_patterns(*IGNORED_DIRS, *(f"*{suffix}" for suffix in IGNORED_SUFFIXES))
DEFAULT_BASE = "localhost/builders-base:sid"  # scripts/podman-base.sh makes it (debootstrap, nothing pulled)
CIBW_PYTHONS = 3
CIBW_REPEAT = 2  # cold runs of each side, alternating; the best counts
Echo = Callable[[str], None]


# -- the project and running builders -----------------------------------------------------------


@dataclass(frozen=True)
class Project:
    """What is built: a matrix file, and a source tree in place of the matrix's ``project.source`` (or None)."""

    matrix: Path
    source: Path | None = None

    def args(self, command: str) -> list[str]:
        """The options that point ``python -m builders COMMAND`` at this project."""
        return ["--matrix", str(self.matrix), *(["--source", str(self.source)] if self.source and command == "build"
                                                else [])]

    @property
    def tree(self) -> Path:
        return self.source or matrix_mod.load(self.matrix).project.source


def snapshot(matrix: Path, source: Path | None, dest: Path) -> Project:
    """The project as it is now, copied into ``dest``: the matrix file, the source tree and the smoke script
    at the same places relative to the matrix. Edits made while the benchmark runs (a shared checkout)
    cannot change its plans half-way then. Left out: what the plan digest leaves out (VCS, caches, builds).
    """
    m, base = matrix_mod.load(matrix), matrix.parent.resolve()
    dest.mkdir(parents=True)
    shutil.copyfile(matrix, dest / matrix.name)
    shutil.copytree(source or m.project.source, dest / inside(m.project.source, base), ignore=IGNORED, symlinks=True)
    script = m.project.smoke_script
    if script is not None and not (dest / inside(script, base)).exists():
        (dest / inside(script, base)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(script, dest / inside(script, base))
    return Project(matrix=dest / matrix.name)


def inside(path: Path, base: Path) -> Path:
    try:
        return path.resolve().relative_to(base)
    except ValueError:
        raise RuntimeError(f"{path} is outside {base}, so the project cannot be copied; build it in place") from None


class Runs:
    """Every command of a measurement, logged to ``<logs>/<step>.log``, with a line per step on the console."""

    def __init__(self, logs: Path, env: Mapping[str, str], echo: Echo, project: Project) -> None:
        self.logs, self.env, self.echo, self.project = logs, dict(env), echo, project
        logs.mkdir(parents=True, exist_ok=True)

    def __call__(self, step: str, argv: Sequence[str], *, env: Mapping[str, str] | None = None,
                 separate_stderr: bool = False, check: bool = True, cwd: Path = ROOT) -> Completed:
        log = self.logs / f"{step}.log"
        self.echo(f"  {step}: {shlex.join(argv)[:160]}")
        result = run(argv, env={**self.env, **(env or {})}, log=Log(log), cwd=cwd, separate_stderr=separate_stderr,
                     timeout=4 * 3600, check=check)
        self.echo(f"  {step}: {result.duration:.1f} s, exit {result.returncode} (log {log})")
        return result

    def builders(self, step: str, command: str, *args: str, env: Mapping[str, str] | None = None,
                 check: bool = True) -> Completed:
        """``python -m builders COMMAND ARGS`` on the benchmark's project."""
        argv = [sys.executable, "-m", "builders", command, *self.project.args(command), *args]
        return self(step, argv, env=env, separate_stderr=True, check=check)

    def timed(self, step: str, result: Completed, errors: list[str]) -> float | None:
        """The wall time of a run that succeeded; a failed one is recorded in ``errors`` and has none."""
        if result.returncode == 0:
            return round(result.duration, 2)
        errors.append(f"{step} exited {result.returncode} after {result.duration:.0f} s ({self.logs / step}.log)")
        return None


def dry_run(runs: Runs, step: str, *args: str) -> dict[str, Any]:
    """``build --dry-run --json ARGS``: the plans (not the skipped targets) and the engine."""
    return json.loads(runs.builders(step, "build", "--dry-run", "--json", *args).stdout)


def results(path: Path) -> dict[str, dict[str, Any]]:
    """The targets of a ``results.json`` that were not skipped, by id."""
    return {r["id"]: r for r in json.loads(path.read_text())["targets"] if r["status"] != "skipped"}


def results_if(path: Path) -> dict[str, dict[str, Any]]:
    """:func:`results`, or none where a failed run wrote no file (its failure is recorded elsewhere)."""
    return results(path) if path.is_file() else {}


def picked(ids: Sequence[str]) -> list[str]:
    return [a for t in ids for a in ("--target", t)]


# -- local targets: cold, no-op, warm, --jobs 2 ---------------------------------------------------


def measure_local(selection: Sequence[str], work: Path, env: Mapping[str, str], echo: Echo,
                  project: Project) -> dict[str, Any]:
    """Cold ``--jobs 1``, no-op, warm (``--force``, the same compiler cache) and cold ``--jobs 2``.

    ``selection`` (``--select GLOB`` arguments) narrows the targets.
    """
    runs = Runs(work / "logs", env, echo, project)
    plans = dry_run(runs, "plan", "--output", str(work / "jobs1"), *selection)["plans"]
    if not plans:
        raise RuntimeError(f"this host can build none of the selected targets ({' '.join(selection) or 'all'})")
    ids = [p["id"] for p in plans]
    serial, cold_results = serial_runs(runs, ids, work)
    parallel, cache2 = work / "jobs2", work / "ccache-jobs2"
    jobs2 = runs.builders("cold-jobs2", "build", "--output", str(parallel), "--jobs", "2", *picked(ids),
                          env={"CCACHE_DIR": str(cache2)})
    mine = (work / "jobs1", work / "ccache-jobs1", cold_results)
    return {"targets": ids, **serial, "cold_jobs2_s": round(jobs2.duration, 2),
            "parallel_differences": same_as_serial(mine, (parallel, cache2, results(parallel / "results.json")))}


def serial_runs(runs: Runs, ids: Sequence[str], work: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """Cold, no-op and warm, ``--jobs 1``, one output folder, one compiler cache (empty at first).

    Returns the figures and the cold run's results (which the no-op would mark reused).
    """
    out, cache = work / "jobs1", {"CCACHE_DIR": str(work / "ccache-jobs1")}
    build = ["build", "--output", str(out), "--jobs", "1", *picked(ids)]
    cold = runs.builders("cold-jobs1", *build, env=cache)
    shutil.copyfile(out / "results.json", work / "cold-results.json")
    cold_results = results(work / "cold-results.json")
    # A commit or an edit of builders' code while the cold build ran is a new plan: the no-op would not be one.
    now = {p["id"]: p["digest"] for p in dry_run(runs, "replan", "--output", str(out), *picked(ids))["plans"]}
    changed = sorted(t for t, d in now.items() if d != cold_results[t].get("digest"))
    noop = runs.builders("noop", *build, env=cache)
    reused = sum(r["status"] == "reused" for r in results(out / "results.json").values())
    warm = runs.builders("warm", *build, "--force", env=cache)
    warm_results = results(out / "results.json")
    figures = {"cold_jobs1_s": round(cold.duration, 2), "noop_s": round(noop.duration, 2), "noop_reused": reused,
               "warm_s": round(warm.duration, 2), "cold_compiler_cache": cache_totals(cold_results),
               "warm_compiler_cache": cache_totals(warm_results),
               "warm_hit_rates": {t: r.get("compiler_cache", {}).get("hit_rate") for t, r in warm_results.items()},
               "marginal": marginal(cold_results), "durations": {t: r["durations"] for t, r in cold_results.items()},
               "cores": {t: r.get("core", {}) for t, r in cold_results.items()},
               "warm_durations": {t: r["durations"] for t, r in warm_results.items()},
               "plans_changed_during_cold_build": changed}
    return figures, cold_results


def cache_totals(found: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The compiler cache over every target of a run: hits, misses, uncacheable calls and the hit rate."""
    total: Counter[str] = Counter()
    for record in found.values():
        stats = record.get("compiler_cache") or {}
        total.update({k: stats.get(k, 0) for k in ("hits", "misses", "uncacheable")})
    looked_up = total["hits"] + total["misses"]
    return {**total, "targets_with_stats": sum(bool(r.get("compiler_cache")) for r in found.values()),
            "hit_rate": round(total["hits"] / looked_up, 3) if looked_up else None}


def split_id(tid: str) -> tuple[str, str, str]:
    """``cu132-cp312-linux-x86_64`` -> (variant, python, platform)."""
    variant, python, platform = tid.split("-", 2)
    return variant, python, platform


def marginal(found: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per (variant, platform): the build stage of each further Python over the first's (the core's builder).

    Without ``build.core`` in the matrix no target says it built a core; the lowest Python is
    the reference then, and the record says so.
    """
    groups: dict[str, list[str]] = {}
    for tid in sorted(found, key=lambda t: (split_id(t)[0], split_id(t)[2], int(re.sub(r"\D", "", split_id(t)[1])))):
        variant, _, platform = split_id(tid)
        groups.setdefault(f"{variant}-{platform}", []).append(tid)
    return {name: group_marginal(ids, found) for name, ids in groups.items()}


def group_marginal(ids: Sequence[str], found: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    built = [t for t in ids if found[t].get("core", {}).get("status") == "built"]
    first = built[0] if built else ids[0]
    base = found[first]["durations"].get("build", 0.0)
    others = {t: round(found[t]["durations"].get("build", 0.0) / base, 3) if base else None for t in ids if t != first}
    return {"first": first, "first_build_s": base, "core": found[first].get("core", {}),
            "reference": "core built" if built else "no build.core: the lowest Python", "ratios": others}


def same_as_serial(serial: tuple[Path, Path, dict[str, Any]], parallel: tuple[Path, Path, dict[str, Any]]) -> list[str]:
    """Where the parallel run's results and logged commands differ from the serial run's.

    Per target: status, wheel, sha256, plan digest, policy, smoke record. The commands are
    compared over the whole run, not per target: which target of a variant builds the shared
    core (and logs its commands, with its own compiler-cache stats log) is a race under
    ``--jobs 2``.
    """
    (a_out, a_cache, a), (b_out, b_cache, b) = serial, parallel
    problems = [f"targets differ: {sorted(a.keys() ^ b.keys())}"] if a.keys() != b.keys() else []
    for tid in sorted(a.keys() & b.keys()):
        for key in ("status", "sha256", "wheel", "digest", "policy", "smoke"):
            if generic(a[tid].get(key), a_out, a_cache) != generic(b[tid].get(key), b_out, b_cache):
                problems.append(f"{tid}: {key} differs")
    mine, theirs = logged(a_out, a_cache, a), logged(b_out, b_cache, b)
    problems += [f"only in --jobs 1: {c}" for c in sorted((mine - theirs).elements())][:5]
    problems += [f"only in --jobs 2: {c}" for c in sorted((theirs - mine).elements())][:5]
    return problems


def generic(value: Any, out: Path, cache: Path) -> str:
    """``value`` as JSON with the output folder and the compiler cache made generic."""
    return json.dumps(value, sort_keys=True).replace(str(cache), "{ccache}").replace(str(out), "{output}")


def logged(out: Path, cache: Path, found: Mapping[str, Mapping[str, Any]]) -> Counter[str]:
    """Every command the run's logs recorded, with its environment and exit code, folders made generic."""
    lines: Counter[str] = Counter()
    for record in found.values():
        text = (out / record["log"]).read_text().replace(str(cache), "{ccache}").replace(str(out), "{output}")
        text = re.sub(r"/builders-rpath-[A-Za-z0-9_]+/", "/builders-rpath-*/", text)  # a temporary folder's name
        # The core's commands carry the stats log of whichever target built it.
        text = re.sub(r"CCACHE_STATSLOG=\{output\}/\.work/[^/]+/", "CCACHE_STATSLOG={output}/.work/*/", text)
        text = re.sub(r"\[exit (-?\d+) after [0-9.]+s\]", r"[exit \1]", text)
        lines.update(line for line in text.splitlines() if line.startswith(("$ ", "# cwd: ", "# env: ", "[exit ")))
    return lines


# -- cibuildwheel against this pipeline -------------------------------------------------------


def measure_cibw(base: str, work: Path, env: Mapping[str, str], echo: Echo, project: Project,
                 count: int = CIBW_PYTHONS, repeat: int = CIBW_REPEAT) -> dict[str, Any]:
    """The same ``count`` cpu targets built by this pipeline (container engine) and by cibuildwheel alone.

    The cold runs alternate (pipeline, cibuildwheel, pipeline, ...) ``repeat`` times and each side's
    best counts, as timeit takes the best of its runs: a shared machine's noise only ever adds time,
    and alternating spreads it over both sides. Then the pipeline's warm run (``--force``, the last
    cold run's compiler cache); cibuildwheel's "warm" figure is its last run (it keeps no compiler
    cache, and its containers start fresh, so a later run is all it has).
    """
    runs = Runs(work / "logs", env, echo, project)
    glob = f"cpu-*-{host_platform()}"
    runs.builders("image", "images", "--base-image", base, "--select", glob)
    plans = dry_run(runs, "plan", "--engine", "container", "--base-image", base, "--select", glob,
                    "--output", str(work / "dry"))["plans"]
    chosen = in_image(runs, plans)[:count]
    if len(chosen) < count:
        raise RuntimeError(f"the image {plans[0]['runner']['image']} has {len(chosen)} of the Pythons of {glob}, "
                           f"{count} wanted")
    ids = [p["id"] for p in chosen]
    options, errors = cibuildwheel_env(ids, base, env, chosen[0]["runner"], project), list[str]()
    cold: dict[str, list[float | None]] = {"pipeline": [], "cibw": []}
    for n in range(1, repeat + 1):
        cold["pipeline"].append(pipeline_cold(runs, base, ids, work / f"pipeline-{n}", f"pipeline-cold-{n}", errors))
        cold["cibw"].append(cibuildwheel_run(runs, options, project.tree, work / f"cibw-cold-{n}", f"cibw-cold-{n}",
                                             errors))
    last = work / f"pipeline-{repeat}"
    warm = runs.timed("pipeline-warm", runs.builders("pipeline-warm", *pipeline_args(base, ids, last), "--force",
                                                     check=False), errors)
    cibw_warm = cold["cibw"][-1] if repeat > 1 else None  # cibuildwheel keeps nothing between runs: a later run
    cold_results = results_if(last / "cold-results.json")
    return {"targets": ids, "image": chosen[0]["runner"]["image"], "jobs": os.cpu_count() or 1, "repeat": repeat,
            "pipeline_cold_runs_s": cold["pipeline"], "cibw_cold_runs_s": cold["cibw"],
            "pipeline_cold_s": best(cold["pipeline"]), "cibw_cold_s": best(cold["cibw"]),
            "pipeline_warm_s": warm, "cibw_warm_s": cibw_warm,
            "pipeline_durations": {t: r["durations"] for t, r in cold_results.items()},
            "pipeline_core": {t: r.get("core", {}) for t, r in cold_results.items()},
            "pipeline_cold_compiler_cache": cache_totals(cold_results),
            "pipeline_warm_compiler_cache": cache_totals(results_if(last / "out" / "results.json")),
            "cibw_wheels": sorted(p.name for p in (work / "cibw-cold-1").glob("*.whl")), "errors": errors,
            "cibw_options": {k: v for k, v in options.items() if k.startswith("CIBW_")}}


def best(times: Sequence[float | None]) -> float | None:
    """The best of a side's runs; None if any failed (a failure is no figure)."""
    return None if not times or None in times else min(t for t in times if t is not None)


def pipeline_args(base: str, ids: Sequence[str], folder: Path) -> list[str]:
    """This pipeline in the image, ``--jobs`` = cores, its own ``--cache`` (so its own compiler cache)."""
    return ["build", "--engine", "container", "--base-image", base, "--jobs", str(os.cpu_count() or 1),
            "--cache", str(folder / "toolchains"), "--output", str(folder / "out"), *picked(ids)]


def pipeline_cold(runs: Runs, base: str, ids: Sequence[str], folder: Path, step: str, errors: list[str]) -> float | None:
    """One cold run of this pipeline: a fresh ``--cache``, so an empty compiler cache; its results kept."""
    took = runs.timed(step, runs.builders(step, *pipeline_args(base, ids, folder), check=False), errors)
    if (folder / "out" / "results.json").is_file():
        shutil.copyfile(folder / "out" / "results.json", folder / "cold-results.json")
    return took


def cibuildwheel_run(runs: Runs, options: Mapping[str, str], tree: Path, out: Path, step: str,
                     errors: list[str]) -> float | None:
    """cibuildwheel alone on ``tree`` into the empty folder ``out``; it runs in ``tree`` (cibuildwheel wants
    the package inside its working directory)."""
    argv = [sys.executable, "-m", "cibuildwheel", "--platform", "linux", "--output-dir", str(out), "."]
    return runs.timed(step, runs(step, argv, env=options, check=False, cwd=tree), errors)


def host_platform() -> str:
    machine = os.uname().machine
    return f"linux-{'aarch64' if machine in ('aarch64', 'arm64') else machine}"


def in_image(runs: Runs, plans: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The plans whose interpreter the image has (one throw-away container, no network), oldest Python first."""
    runner = plans[0]["runner"]
    script = 'for p in "$@"; do [ -x "$p" ] && echo "$p"; done; true'
    argv = [runner["engine"], "run", "--rm", "--network", "none", "--entrypoint", "sh", runner["image"], "-c", script,
            "sh", *(p["interpreter"] for p in plans)]
    present = set(runs("interpreters", argv).stdout.split())
    return [p for p in plans if p["interpreter"] in present]


def cibuildwheel_env(ids: Sequence[str], base: str, env: Mapping[str, str], runner: Mapping[str, Any],
                     project: Project) -> dict[str, str]:
    """cibuildwheel's options for the group, as the cibw engine computes them, plus a test command.

    The image is the one this pipeline builds in (checked against the dry run's), the repair is
    builders' repair command, and the test imports the package and every extension module.
    """
    m = matrix_mod.load(project.matrix)
    targets = select(m, Selection(targets=tuple(ids)))
    engine = ContainerEngine(exe=runner["engine"], pythons=images.image_pythons(m), cache=Path("/unused"),
                             host_env=env, base_image=base)
    image = engine.image_spec(targets[0]).tag
    if image != runner["image"]:
        raise RuntimeError(f"cibw_options would name image {image}, the pipeline builds in {runner['image']}")
    epoch = commit_epoch(project.tree.resolve(), dict(env))
    passed = {k: env[k] for k in m.project.environment_pass if k in env}  # as the pipeline's builds get them
    options = cibw_options(targets, image=image, engine=runner["engine"],
                           env={**image_settings(targets[0], epoch), **passed}, ca_bundle=images.host_ca_bundle(env))
    modules = ", ".join([m.project.import_name, *m.project.extension_modules])
    return {**options, "CIBW_TEST_COMMAND": f'python -c "import {modules}"', "SOURCE_DATE_EPOCH": str(epoch)}
