"""The per-target pipeline, written once for every engine:

provision -> build -> label -> repair -> verify -> smoke -> publish (move into the wheelhouse)

Each target works in its own scratch folder; only a wheel that passed verify and smoke is
moved into ``<output>/<channel index path>/``. A failed target records the stage and reason
and the run goes on with the next one.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from . import results
from .console import Console, markdown_table
from .engines import Engine
from .engines.container import NotBuildableHere
from .errors import BuildersError, Interrupted, SmokeError, VerifyError
from .host import Host, unbuildable
from .model import Matrix
from .process import ProcessError, run
from .repair import repair
from .results import Result
from .targets import Target
from .verify import Expectation, verify
from .wheels import Wheel, file_sha256, label, source_date_epoch


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    matrix: Matrix
    source: Path
    output: Path
    engine: Engine
    host: Host
    env: Mapping[str, str]
    run_smoke: bool = True

    @property
    def results_path(self) -> Path:
        return self.output / "results.json"

    def log_path(self, target: Target) -> Path:
        return self.output / "logs" / f"{target.id}.log"

    def wheel_dir(self, target: Target) -> Path:
        return self.output / target.index_path


@dataclass
class _Progress:
    """Timings of one target's stages, and where it is now."""

    stage: str = "plan"
    durations: dict[str, float] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)


def build_all(targets: Sequence[Target], config: RunConfig, console: Console) -> list[Result]:
    """Build every target, continuing past failures; return their results."""
    out: list[Result] = []
    for index, target in enumerate(targets, 1):
        reason = unbuildable(target, config.host, config.engine.name)
        if reason:
            result = Result(id=target.id, status="skipped", engine=config.engine.name, reason=reason)
            console.progress(index, len(targets), target.id, "skipped", note=reason)
        else:
            with console.group(f"[{index}/{len(targets)}] {target.id}"):
                result = build_one(target, config, partial(console.progress, index, len(targets), target.id))
        results.record(config.results_path, result)
        out.append(result)
        if result.status == "interrupted":
            raise Interrupted(f"interrupted while building {target.id} (at {result.stage}); partial outputs removed")
    return out


def build_one(target: Target, config: RunConfig, tick: Callable[[str, float], None]) -> Result:
    """Run every stage for ``target``; never raises for a target failure."""
    log = config.log_path(target)
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(f"# {target.id} ({config.engine.name} engine)\n")
    work = config.output / ".work" / target.id
    _remove_previous(target, config, work)
    progress = _Progress()
    try:
        final = _stages(target, config, work, log, progress, tick)
    except KeyboardInterrupt:
        return _result(target, config, progress, status="interrupted", reason="interrupted by signal")
    except NotBuildableHere as exc:
        return _result(target, config, progress, status="skipped", reason=str(exc))
    except (BuildersError, OSError) as exc:
        with log.open("a") as fh:
            fh.write(f"\nFAILED at {progress.stage}: {exc}\n")
        return _result(target, config, progress, status="failed", reason=_first_line(exc))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return _result(target, config, progress, status="built", wheel=final)


def _stages(target: Target, config: RunConfig, work: Path, log: Path, progress: _Progress,
            tick: Callable[[str, float], None]) -> Path:
    def stage(name: str, fn: Callable[[], Any]) -> Any:
        progress.stage = name
        start = time.monotonic()
        value = fn()
        progress.durations[name] = round(time.monotonic() - start, 2)
        tick(name, progress.durations[name])
        return value

    env = dict(config.env)
    epoch = stage("provision", lambda: _prepare_env(target, config, env, log))
    raw = stage("build", lambda: config.engine.build(target, config.source, _fresh(work / "raw"), env, log))
    labelled = stage("label", lambda: label(Wheel(raw), target.version, target.requirements, _fresh(work / "labelled"), epoch))
    repaired = stage("repair", lambda: repair(labelled, target, _fresh(work / "repaired"), env, log))
    progress.facts["policy"] = repaired.policy
    stage("verify", lambda: _verify(repaired.path, target, config, progress))
    if config.run_smoke:
        stage("smoke", lambda: _smoke(repaired.path, target, config, env, log, progress))
    return stage("publish", lambda: _publish(repaired.path, config.wheel_dir(target)))


def _prepare_env(target: Target, config: RunConfig, env: dict[str, str], log: Path) -> int:
    """Provision the toolchain and fill ``env`` with the variant's build settings."""
    settings = config.engine.provision(target, env, log)
    names = dict(target.project.build_env)
    env.update(dict(target.env))
    for setting, value in settings.items():
        if setting in names:
            env[names[setting]] = value
    env["SOURCE_DATE_EPOCH"] = str(commit_epoch(config.source, env, log))
    return source_date_epoch(env)


def commit_epoch(source: Path, env: Mapping[str, str], log: Path | None) -> int:
    """The source's last commit time: builds of the same commit get the same timestamps."""
    if env.get("SOURCE_DATE_EPOCH"):
        return int(env["SOURCE_DATE_EPOCH"])
    try:
        return int(run(["git", "-C", str(source), "log", "-1", "--format=%ct"], env=env, log=log).stdout.strip())
    except (ProcessError, ValueError):
        return source_date_epoch({})


def _verify(path: Path, target: Target, config: RunConfig, progress: _Progress) -> None:
    findings = verify(Wheel(path), Expectation(target=target, dropped=config.matrix.dropped))
    progress.facts["findings"] = tuple(f.to_json() for f in findings)
    if findings:
        raise VerifyError("; ".join(map(str, findings)))


def _smoke(path: Path, target: Target, config: RunConfig, env: Mapping[str, str], log: Path, progress: _Progress) -> None:
    """Smoke-test without the project's build settings: an installed wheel must not need them."""
    smoke_env = {k: v for k, v in env.items() if k not in target.project.build_env_names}
    outcome = config.engine.smoke(path, target, smoke_env, log)
    progress.facts["smoke"] = outcome.summary
    if not outcome.ok:
        raise SmokeError("; ".join(outcome.problems))


def _publish(path: Path, wheel_dir: Path) -> Path:
    """Move the verified wheel into place (a rename within one filesystem: all or nothing)."""
    wheel_dir.mkdir(parents=True, exist_ok=True)
    dest = wheel_dir / path.name
    tmp = wheel_dir / f".{path.name}.partial"
    shutil.copy2(path, tmp)
    os.replace(tmp, dest)
    return dest


def _remove_previous(target: Target, config: RunConfig, work: Path) -> None:
    """A stale wheel of this target must not survive a failed rebuild."""
    shutil.rmtree(work, ignore_errors=True)
    (config.wheel_dir(target) / target.wheel_name).unlink(missing_ok=True)


def _fresh(path: Path) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def _result(target: Target, config: RunConfig, progress: _Progress, *, status: str, reason: str = "",
            wheel: Path | None = None) -> Result:
    smoke_record = progress.facts.get("smoke", {})
    return Result(
        id=target.id, status=status, engine=config.engine.name, stage="" if status == "built" else progress.stage,
        reason=reason, wheel=str(wheel.relative_to(config.output)) if wheel else "", channels=target.channels,
        sha256=file_sha256(wheel) if wheel else "", size=wheel.stat().st_size if wheel else 0,
        policy=progress.facts.get("policy", ""), durations=progress.durations,
        smoke=smoke_record,
        findings=progress.facts.get("findings", ()), log=str(config.log_path(target).relative_to(config.output)),
    )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:500] if text else type(exc).__name__


def summarize(outcomes: Sequence[Result], console: Console) -> None:
    """The final table on the console and, in GitHub Actions, the job summary."""
    headers = ("target", "status", "stage / reason", "size", "sha256", "time")
    rows = [(r.id, r.status, (f"{r.stage}: " if r.stage else "") + r.reason[:90],
             _size(r.size), r.sha256[:12], f"{sum(r.durations.values()):.0f}s")
            for r in outcomes]
    console.line()
    console.table(headers, rows)
    counts = {s: sum(r.status == s for r in outcomes) for s in results.STATUSES}
    console.line(", ".join(f"{n} {s}" for s, n in counts.items() if n) or "nothing selected")
    console.job_summary(markdown_table(headers, rows))


def _size(size: int) -> str:
    if not size:
        return ""
    return f"{size / 2**20:.1f} MiB" if size >= 2**20 else f"{size / 1024:.1f} KiB"
