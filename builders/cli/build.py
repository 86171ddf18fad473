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

import json
import sys
from collections.abc import Sequence

from builders import engines
from builders.base import folderlock, process
from builders.base.console import Console, render_table
from builders.base.errors import EngineError, Interrupted, TargetsFailed
from builders.cli import load
from builders.cli.arguments import Options
from builders.engines import Engine, EngineSetup
from builders.engines.images import engine_env
from builders.matrix.model import Matrix
from builders.matrix.targets import Target, selected
from builders.pipeline import cacheprobe, platform_policy, remotecache
from builders.pipeline.context import run_context
from builders.pipeline.executor import RunConfig, build_all, summarize
from builders.pipeline.host import Host, detect
from builders.pipeline.outcome import ccache_note, something_to_build, stop_on_signals, tidy
from builders.pipeline.plan import BuildPlan, Resolved, describe
from builders.pipeline.results import Result

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


HELP = "build, repair, verify and smoke-test wheels"


def execute(opts: Options, console: Console) -> int:
    m = load.matrix(opts, builds=True, source=opts.source, channel=True)
    opts = opts.with_matrix(m)  # --source, else project.source
    env = engine_env(opts.env)
    host = detect(m.pythons, env, engines=engines.named(opts.engine).containers)
    m = local_only_matrix(m, host, opts)
    targets = selected(m, load.selection(opts))
    engine, why = choose_engine(opts, m, targets, host, env)
    if engine.name == "local" and not opts.local_only:  # the targets built here, with this host's libraries
        here = [t for t in targets if engines.named(engine.name).unbuildable(t, host) is None]
        risk = platform_policy.repair_warning(here, host)
        if risk is not None:
            console.warning(risk)
    shared = remotecache.resolve(m.compile_cache, env, write=opts.compile_cache_write, location=opts.compile_cache,
                                 dist=opts.sccache_dist, sccache=remotecache.find_sccache(env))
    shared = looked_at(shared, env, required=opts.compile_cache_required, console=console)
    ctx = run_context(host=host, env=env, source=opts.source, output=opts.output, cache=opts.cache,
                      compile_cache=shared, exclude=m.project.source_exclude)
    resolved = [engine.plan(t, ctx) for t in targets]
    config = RunConfig(matrix=m, output=ctx.output, engine=engine, env=env, run_smoke=opts.smoke, force=opts.force,
                       jobs=opts.jobs, verbose=opts.verbose, keep_failed=opts.keep_failed)
    console.line(f"{len(targets)} targets selected; engine {engine.name} ({why}) on {host.platform}; "
                 f"{opts.jobs} builds at a time; output {config.output}")
    announce_caches(shared, resolved, host, console)
    if opts.dry_run:
        dry_run(resolved, config, console, as_json=opts.json)
        return something_to_build(resolved, opts.allow_skip, console)
    # One run per output folder: its work folders, its store and results.json are this run's until it ends.
    with folderlock.held(config.output, wait=opts.wait, note=console.line, argv=sys.orig_argv):
        process.reset_cancel()
        with stop_on_signals():
            outcomes = build_all(resolved, config, console)
    return finish(outcomes, resolved, config, opts, console)


def looked_at(shared: remotecache.RemoteCache | None, env: dict[str, str], *, required: bool,
              console: Console) -> remotecache.RemoteCache | None:
    """The shared compile cache after one bounded look (:func:`builders.pipeline.cacheprobe.probe`): as it was where
    it answers; else stopped (``--compile-cache-required``), or degraded, said here and in every target's record."""
    if shared is None or not shared.active:
        return shared
    cause = cacheprobe.probe(shared.location, env)
    if not cause:
        return shared
    if required:
        raise remotecache.refused(f"compile cache unavailable: {cause} (--compile-cache-required; without it the "
                                  "build goes on with the local cache)")
    console.warning(f"compile cache unavailable: {cause}; building with the local cache only "
                    "(--compile-cache-required stops instead)")
    return shared.degraded(cause)


def announce_caches(shared: remotecache.RemoteCache | None, resolved: Sequence[Resolved], host: Host,
                    console: Console) -> None:
    """The shared compile cache in use and a missing local compiler cache, said before the first build."""
    if shared is not None:
        console.line(f"compile cache: {shared.describe()}")
    note = ccache_note(resolved, host)
    if note:
        console.warning(note)


def finish(outcomes: Sequence[Result], resolved: Sequence[Resolved], config: RunConfig, opts: Options,
           console: Console) -> int:
    """The summary, the store's tidy-up (never after an interrupt), then the run's exit: interrupted, failed or ok."""
    summarize(outcomes, console, verbose=opts.verbose)
    if not process.cancelled():
        tidy(config, resolved, opts.store_budget, console)
    if process.cancelled():
        stopped = [r.id for r in outcomes if r.status == "interrupted"]
        raise Interrupted(f"interrupted while building {', '.join(stopped) or 'nothing'}; partial outputs removed")
    failed = [r.id for r in outcomes if r.status == "failed"]
    if failed:
        raise TargetsFailed(f"{len(failed)} target(s) failed: {', '.join(failed)} (see {config.output / 'logs'})")
    return something_to_build(resolved, opts.allow_skip, console, outcomes)


def local_only_matrix(m: Matrix, host: Host, opts: Options) -> Matrix:
    """``--local-only``: this host's Linux wheels tagged at its own glibc level, for testing (never published)."""
    if not opts.local_only:
        return m
    if opts.engine != "local":
        raise EngineError(f"--local-only tags wheels at this host's own level, so it builds here: use --engine local "
                          f"(not {opts.engine})")
    return platform_policy.local_only(m, host)


def choose_engine(opts: Options, m: Matrix, targets: Sequence[Target], host: Host,
                  env: dict[str, str]) -> tuple[Engine, str]:
    """The engine registered under ``--engine``, and why it was picked (``auto`` says which and why). An
    engine asked for by name that cannot run here is an :class:`EngineError` naming what is missing."""
    setup = EngineSetup(matrix=m, targets=tuple(targets), host=host, env=env, cache=opts.cache.resolve(),
                        container_engine=opts.container_engine, base_image=opts.base_image, dry_run=opts.dry_run)
    return engines.named(opts.engine).make(setup)


def dry_run(resolved: Sequence[Resolved], config: RunConfig, console: Console, *, as_json: bool) -> None:
    """Plan, then apply: print the plans the build would run (and which the store already holds)."""
    plans = [r for r in resolved if isinstance(r, BuildPlan)]
    stored = {p.id: config.store.get(p.digest) is not None for p in plans}
    if as_json:
        skipped = [{"id": r.id, "reason": r.reason} for r in resolved if not isinstance(r, BuildPlan)]
        doc = {"engine": config.engine.name, "output": str(config.output),
               "plans": [{**p.to_json(), "stored": stored[p.id]} for p in plans], "skipped": skipped}
        console.out(json.dumps(doc, indent=2))
        return
    headers, rows = describe(resolved)
    console.out(render_table((*headers, "stored"), [(*row, "yes" if stored.get(row[0]) else "") for row in rows]))
    for plan in plans:
        console.out(f"\n{plan.id}  (plan {plan.digest})")
        for name, line in plan.steps():
            console.out(f"  {name:<9} {line}")
