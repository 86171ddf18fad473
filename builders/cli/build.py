"""``build``: plan every selected target, then build, label, repair, verify and smoke-test the plans.

Plan, then apply: each target resolves, purely, to a :class:`~builders.pipeline.plan.BuildPlan`
(``--dry-run`` prints them, ``--json`` as JSON); the plans then build ``--jobs`` at a time, a
plan whose digest is already in the store is reused (``--force`` builds anyway).

A run that leaves nothing to build fails, as cibuildwheel does on an empty selection: in CI
a green job with no wheel hides a runner that cannot build its target. A skip counts the
same whether the plan decided it or the build found it (the check stage: the image has no
CPython 3.12): a run that made no wheel exits 22, and so does a run in which a target the plan
could build was skipped while building, since the plan promised that wheel. ``--allow-skip``
accepts both (cibuildwheel's ``--allow-empty``). An engine asked for by name that cannot run
here is an error naming what is missing, never silently another engine.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import FrameType

from builders import engines
from builders.base import folderlock, process
from builders.base.console import Console, render_table
from builders.base.errors import EngineError, InputError, Interrupted, NothingToBuild, Problem, TargetsFailed
from builders.base.process import ProcessError, run
from builders.cli import add_container_options, add_matrix_option, add_selection_options, input_dir, output_dir
from builders.cli.plan import selected
from builders.engines import Engine, EngineSetup
from builders.engines.images import engine_env
from builders.families.provision import default_cache
from builders.matrix import loader as matrix_mod
from builders.matrix.model import Matrix
from builders.matrix.targets import Target
from builders.pipeline import caches, compilercache, platform_policy
from builders.pipeline.caches import DEFAULT_STORE_BUDGET, STORE_BUDGET_ENV, parse_size
from builders.pipeline.executor import RunConfig, build_all, summarize
from builders.pipeline.host import Host, detect
from builders.pipeline.plan import BuildPlan, Context, Resolved, Skipped, describe
from builders.pipeline.results import Result
from builders.pipeline.store import builders_version, sweep_partials, tree_digest
from builders.wheel.archive import source_date_epoch

DESCRIPTION = ("Plan every selected target this host can build (all of them by default), then "
               "run each plan through build, label, repair, verify and smoke. Targets this host "
               "cannot build are skipped with the reason; a plan whose digest is in the store "
               "(<output>/.store) is reused. A failed target does not stop the others; the exit "
               "code is 1 if any failed; 22 (unless --allow-skip) if no wheel was made because every "
               "selected target was skipped, before the build or during it, or if a target the "
               "plan could build was skipped during the build (its check found no such "
               "interpreter or toolkit); 9 if the engine asked for cannot run here. One run "
               "writes an output folder at a time: another run's is waited for, saying whose "
               "it is (--no-wait: exit 26), and results.json keeps the records of earlier runs' "
               "targets this run did not build.")


def configure_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("build", help="build, repair, verify and smoke-test wheels", description=DESCRIPTION)
    add_matrix_option(p)
    add_selection_options(p)
    p.add_argument("--output", type=output_dir, default=Path("wheelhouse"), metavar="DIR",
                   help="wheels by channel (whl/<label>/), logs/<id>.log, results.json and the store of verified "
                        "wheels by plan digest, .store/ (default: wheelhouse/)")
    p.add_argument("--source", type=input_dir, default=None, metavar="DIR",
                   help="framework source tree (default: project.source in the matrix)")
    p.add_argument("--engine", choices=engines.names(), default=engines.DEFAULT,
                   help=f"{engines.help_text()}. An engine asked for that cannot run here is an error, exit 9 "
                        f"(default: {engines.DEFAULT})")
    p.add_argument("--allow-skip", action="store_true",
                   help="exit 0 even if every selected target is skipped here, or a planned target is skipped "
                        "during the build (default: exit 22 with each target's reason, as cibuildwheel fails on "
                        "an empty selection without --allow-empty)")
    p.add_argument("--jobs", "-j", type=_jobs, default=os.cpu_count() or 1, metavar="N",
                   help="targets in their build stages (provision, compile, repair) at the same time; verify and "
                        "smoke of finished builds run beside them (default: the number of cores)")
    add_run_options(p)
    add_container_options(p)
    p.add_argument("--cache", type=output_dir, default=None, metavar="DIR",
                   help="toolchain cache (default: $BUILDERS_CACHE or ~/.cache/builders/toolchains)")
    p.add_argument("--no-smoke", dest="smoke", action="store_false", help="skip the smoke stage")
    p.add_argument("--keep-failed", action="store_true",
                   help="keep a failed target's work folder (the raw and labelled wheels, the unrepaired one); "
                        "its reason says where")
    p.add_argument("--local-only", action="store_true",
                   help="tag Linux wheels at this host's own glibc level (manylinux_2_36 on glibc 2.36) instead of "
                        "the matrix's policy: wheels for testing here, which promote, index and release refuse")
    p.add_argument("--no-wait", dest="wait", action="store_false",
                   help=f"when another run is writing the output folder (it holds {folderlock.LOCK_NAME} there), stop "
                        "at once with exit 26 instead of waiting for it to finish (the message names its pid, command "
                        "line and start)")
    p.add_argument("--store-budget", type=_budget, default=None, metavar="SIZE",
                   help="after the build, trim <output>/.store to SIZE (500M, 20G; 'unlimited' keeps all), least "
                        "recently used first, never an entry of this run's plans (default: $BUILDERS_STORE_BUDGET, "
                        f"else {DEFAULT_STORE_BUDGET})")
    p.set_defaults(execute=execute)


def add_run_options(p: argparse.ArgumentParser) -> None:
    """What this run does: rebuild, how much to say, whether to build at all."""
    p.add_argument("--force", action="store_true", help="build every plan, even one whose wheel is in the store")
    p.add_argument("--verbose", "-v", action="store_true", help="show every command's output as it is written")
    p.add_argument("--dry-run", action="store_true",
                   help="print each selected target's build plan (commands, environment, digest), build nothing")
    p.add_argument("--json", action="store_true", help="with --dry-run: the plans as JSON")


def _jobs(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _budget(text: str) -> int | None:
    """A store budget in bytes; None for ``unlimited``."""
    if text.strip().lower() in ("unlimited", "none"):
        return None
    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def execute(args: argparse.Namespace, console: Console) -> int:
    m = matrix_mod.load(args.matrix, source=args.source)
    env = engine_env(os.environ)
    host = detect(m.pythons, env, engines=engines.named(args.engine).containers)
    m = local_only_matrix(m, host, args)
    targets = selected(m, args)
    engine, why = choose_engine(args, m, targets, host, env)
    for risk in repair_risks(targets, host) if engine.name == "local" and not args.local_only else ():
        console.warning(risk)
    ctx = context(args, m, host, env)
    resolved = [engine.plan(t, ctx) for t in targets]
    config = RunConfig(matrix=m, output=ctx.output, engine=engine, env=env, run_smoke=args.smoke, force=args.force,
                       jobs=args.jobs, verbose=args.verbose, keep_failed=args.keep_failed)
    console.line(f"{len(targets)} targets selected; engine {engine.name} ({why}) on {host.platform}; "
                 f"{args.jobs} builds at a time; output {config.output}")
    note = ccache_note(resolved, host)
    if note:
        console.warning(note)
    if args.dry_run:
        dry_run(resolved, config, as_json=args.json)
        return something_to_build(resolved, args.allow_skip, console)
    # One run per output folder: its work folders, its store and results.json are this run's until it ends.
    with folderlock.held(config.output, wait=args.wait, note=console.line, argv=sys.orig_argv):
        process.reset_cancel()
        with stop_on_signals():
            outcomes = build_all(resolved, config, console)
    summarize(outcomes, console)
    if not process.cancelled():
        tidy(config, resolved, store_budget(args.store_budget, env), console)
    if process.cancelled():
        stopped = [r.id for r in outcomes if r.status == "interrupted"]
        raise Interrupted(f"interrupted while building {', '.join(stopped) or 'nothing'}; partial outputs removed")
    failed = [r.id for r in outcomes if r.status == "failed"]
    if failed:
        raise TargetsFailed(f"{len(failed)} target(s) failed: {', '.join(failed)} (see {config.output / 'logs'})")
    return something_to_build(resolved, args.allow_skip, console, outcomes)


def ccache_note(resolved: Sequence[Resolved], host: Host) -> str | None:
    """The one note for a run whose builds on this host would go through ccache, which is not installed."""
    compiles_here = any(isinstance(r, BuildPlan) and r.runner.on_host and r.direct for r in resolved)
    return compilercache.MISSING if compiles_here and host.ccache is None else None


def store_budget(option: int | None, env: Mapping[str, str]) -> int | None:
    """``--store-budget``, else ``$BUILDERS_STORE_BUDGET``, else the default; None: unlimited."""
    if option is not None:
        return option
    try:
        return _budget(env.get(STORE_BUDGET_ENV) or DEFAULT_STORE_BUDGET)
    except argparse.ArgumentTypeError as exc:
        raise InputError([Problem(message=f"${STORE_BUDGET_ENV}: {exc}")]) from None


def tidy(config: RunConfig, resolved: Sequence[Resolved], budget: int | None, console: Console) -> None:
    """What killed runs left half-written goes (the store's temporary folders, the wheel folders' ``.partial``
    files); a store over its budget loses its least recently used entries, never one of this run's plans."""
    plans = [r for r in resolved if isinstance(r, BuildPlan)]
    for folder in {(config.output / p.outputs.destination).parent for p in plans}:
        sweep_partials(folder)
    gone = caches.trim_store(config.output, budget, caches.referenced(plans), now=time.time())
    if budget is not None and any(e.kind != caches.PARTIAL for e in gone):
        console.line(f"store {config.output / '.store'} kept within {caches.human(budget)}: removed {len(gone)} "
                     f"entries ({caches.human(sum(e.size for e in gone))}), least recently used first")


def something_to_build(resolved: Sequence[Resolved], allow_skip: bool, console: Console,
                       outcomes: Sequence[Result] = ()) -> int:
    """0 when every plan made its wheel (``outcomes``: the run's results; none for a dry run). Else
    :class:`NothingToBuild` with each reason, or 0 and a note with ``--allow-skip``: when no wheel was
    made because every target was skipped (cibuildwheel's rule for an empty selection), wherever the
    skip was decided, and when a target the plan could build was skipped during the build."""
    planned = {r.id for r in resolved if isinstance(r, BuildPlan)}
    late = [r for r in outcomes if r.status == "skipped" and r.id in planned]
    if not late and planned:
        return 0
    skips: list[Skipped | Result] = list(late)
    if planned - {r.id for r in late}:
        what = f"{len(late)} target(s) the plan could build were skipped during the build"
    else:
        what = "nothing to build here: every selected target is skipped"
        skips[:0] = [r for r in resolved if isinstance(r, Skipped)]
    reasons = "\n  ".join(f"{r.id}: {r.reason}" for r in skips)
    if allow_skip:
        console.line(f"{what} (--allow-skip):\n  {reasons}")
        return 0
    raise NothingToBuild(f"{what} (pass --allow-skip to accept that):\n  {reasons}")


def context(args: argparse.Namespace, m: Matrix, host: Host, env: dict[str, str]) -> Context:
    """The run's fixed inputs every plan depends on (source digest, commit time, cache, builders' version)."""
    source = (args.source or m.project.source).resolve()
    return Context(host=host, env=env, source=source, source_digest=tree_digest(source),
                   epoch=commit_epoch(source, env), output=args.output.resolve(),
                   cache=(args.cache or default_cache(env)).resolve(), tools_python=sys.executable,
                   builders_version=builders_version())


def commit_epoch(source: Path, env: dict[str, str]) -> int:
    """The time of the last commit that changed the source tree (or $SOURCE_DATE_EPOCH): one source,
    one timestamp, whatever else the repository's later commits touched."""
    if env.get("SOURCE_DATE_EPOCH"):
        return source_date_epoch(env)
    try:
        argv = ["git", "-C", str(source), "log", "-1", "--format=%ct", "--", "."]
        out = run(argv, env=env, separate_stderr=True).stdout
        return source_date_epoch({"SOURCE_DATE_EPOCH": out.strip()})
    except (ProcessError, ValueError):
        return source_date_epoch({})


def local_only_matrix(m: Matrix, host: Host, args: argparse.Namespace) -> Matrix:
    """``--local-only``: this host's Linux wheels tagged at its own glibc level, for testing (never published)."""
    if not args.local_only:
        return m
    if args.engine != "local":
        raise EngineError(f"--local-only tags wheels at this host's own level, so it builds here: use --engine local "
                          f"(not {args.engine})")
    return platform_policy.local_only(m, host)


def repair_risks(targets: Sequence[Target], host: Host) -> list[str]:
    """What the platform policy will do to builds on this host, once per distinct answer."""
    return sorted({risk for t in targets if (risk := platform_policy.repair_risk(t, host))})


def choose_engine(args: argparse.Namespace, m: Matrix, targets: Sequence[Target], host: Host,
                  env: dict[str, str]) -> tuple[Engine, str]:
    """The engine registered under ``--engine``, and why it was picked (``auto`` says which and why). An
    engine asked for by name that cannot run here is an :class:`EngineError` naming what is missing."""
    setup = EngineSetup(matrix=m, targets=tuple(targets), host=host, env=env, cache=cache_dir(args, env),
                        container_engine=args.container_engine, base_image=args.base_image, dry_run=args.dry_run)
    return engines.named(args.engine).make(setup)


def cache_dir(args: argparse.Namespace, env: dict[str, str]) -> Path:
    return (args.cache or default_cache(env)).resolve()


def dry_run(resolved: Sequence[Resolved], config: RunConfig, *, as_json: bool) -> None:
    """Plan, then apply: print the plans the build would run (and which the store already holds)."""
    plans = [r for r in resolved if isinstance(r, BuildPlan)]
    stored = {p.id: config.store.get(p.digest) is not None for p in plans}
    if as_json:
        skipped = [{"id": r.id, "reason": r.reason} for r in resolved if not isinstance(r, BuildPlan)]
        doc = {"engine": config.engine.name, "output": str(config.output),
               "plans": [{**p.to_json(), "stored": stored[p.id]} for p in plans], "skipped": skipped}
        print(json.dumps(doc, indent=2))
        return
    headers, rows = describe(resolved)
    print(render_table((*headers, "stored"), [(*row, "yes" if stored.get(row[0]) else "") for row in rows]))
    for plan in plans:
        print(f"\n{plan.id}  (plan {plan.digest})")
        for name, line in plan.steps():
            print(f"  {name:<9} {line}")


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    """SIGINT and SIGTERM stop every running target (their commands' process groups), then the run ends."""

    def stop(signum: int, frame: FrameType | None) -> None:
        threading.Thread(target=process.cancel_all, daemon=True).start()

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
