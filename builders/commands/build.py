"""``build``: plan every selected target, then build, label, repair, verify and smoke-test the plans.

Plan, then apply: each target resolves, purely, to a :class:`~builders.buildplan.BuildPlan`
(``--dry-run`` prints them, ``--json`` as JSON); the plans then run ``--jobs`` at a time, a
plan whose digest is already in the store is reused (``--force`` builds anyway).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import FrameType

from .. import matrix as matrix_mod
from .. import process
from ..buildplan import BuildPlan, Context, Resolved, describe
from ..cli import add_container_options, add_matrix_option, add_selection_options, input_dir, output_dir
from ..console import Console, render_table
from ..engines import Engine
from ..engines.cibw import CibwEngine
from ..engines.container import ContainerEngine, find_engine, reap_stale
from ..engines.local import LocalEngine
from ..errors import EngineError, Interrupted, TargetsFailed
from ..host import Host, detect
from ..images import base_image, engine_env, image_pythons
from ..model import Matrix
from ..pipeline import RunConfig, build_all, summarize
from ..process import ProcessError, run
from ..store import builders_version, tree_digest
from ..toolchains.provision import default_cache
from ..wheels import source_date_epoch
from .plan import selected


def configure_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("build", help="build, repair, verify and smoke-test wheels",
                       description="Plan every selected target this host can build (all of them by default), then "
                                   "run each plan through build, label, repair, verify and smoke. Targets this host "
                                   "cannot build are skipped with the reason; a plan whose digest is in the store "
                                   "(<output>/.store) is reused. A failed target does not stop the others; the exit "
                                   "code is 1 if any failed.")
    add_matrix_option(p)
    add_selection_options(p)
    p.add_argument("--output", type=output_dir, default=Path("wheelhouse"), metavar="DIR",
                   help="wheels by channel (whl/<label>/), logs/<id>.log, results.json and the store of verified "
                        "wheels by plan digest, .store/ (default: wheelhouse/)")
    p.add_argument("--source", type=input_dir, default=None, metavar="DIR",
                   help="framework source tree (default: project.source in the matrix)")
    p.add_argument("--engine", choices=("local", "container", "cibw", "auto"), default="local",
                   help="local: this host; container: the variant's image with docker/podman; cibw: cibuildwheel "
                        "(in the variant's image on Linux); auto: a container engine when one works, else local "
                        "(default: local)")
    p.add_argument("--jobs", "-j", type=_jobs, default=os.cpu_count() or 1, metavar="N",
                   help="targets built at the same time (default: the number of cores)")
    p.add_argument("--force", action="store_true", help="build every plan, even one whose wheel is in the store")
    p.add_argument("--verbose", "-v", action="store_true", help="show every command's output as it is written")
    p.add_argument("--dry-run", action="store_true",
                   help="print each selected target's build plan (commands, environment, digest), build nothing")
    p.add_argument("--json", action="store_true", help="with --dry-run: the plans as JSON")
    add_container_options(p)
    p.add_argument("--cache", type=output_dir, default=None, metavar="DIR",
                   help="toolchain cache (default: $BUILDERS_CACHE or ~/.cache/builders/toolchains)")
    p.add_argument("--no-smoke", dest="smoke", action="store_false", help="skip the smoke stage")
    p.set_defaults(execute=execute)


def _jobs(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def execute(args: argparse.Namespace, console: Console) -> int:
    m = matrix_mod.load(args.matrix)
    targets = selected(m, args)
    env = engine_env(os.environ)
    host = detect(m.pythons, env, engines=args.engine != "local")
    engine, why = choose_engine(args, m, host, env)
    ctx = context(args, m, host, env)
    resolved = [engine.plan(t, ctx) for t in targets]
    config = RunConfig(matrix=m, output=ctx.output, engine=engine, env=env, run_smoke=args.smoke, force=args.force,
                       jobs=args.jobs, verbose=args.verbose)
    console.line(f"{len(targets)} targets selected; engine {engine.name} ({why}) on {host.platform}; "
                 f"{args.jobs} at a time; output {config.output}")
    if args.dry_run:
        return dry_run(resolved, config, as_json=args.json)
    process.reset_cancel()
    with stop_on_signals():
        outcomes = build_all(resolved, config, console)
    summarize(outcomes, console)
    if process.cancelled():
        stopped = [r.id for r in outcomes if r.status == "interrupted"]
        raise Interrupted(f"interrupted while building {', '.join(stopped) or 'nothing'}; partial outputs removed")
    failed = [r.id for r in outcomes if r.status == "failed"]
    if failed:
        raise TargetsFailed(f"{len(failed)} target(s) failed: {', '.join(failed)} (see {config.output / 'logs'})")
    return 0


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


def choose_engine(args: argparse.Namespace, m: Matrix, host: Host, env: dict[str, str]) -> tuple[Engine, str]:
    """The engine to use, and why it was picked (``auto`` says which and why)."""
    cache = (args.cache or default_cache(env)).resolve()
    if args.engine == "local":
        return LocalEngine(cache=cache, env=env), "asked for"
    exe = find_engine(env, args.container_engine)
    if exe is None:
        if args.engine == "container":
            raise EngineError("no working container engine (podman or docker); see README for podman setup")
        return LocalEngine(cache=cache, env=env), "auto: no working container engine"
    base = base_image(args.base_image, env)
    engine = ContainerEngine(exe=exe, pythons=image_pythons(m), cache=cache, host_env=env, base_image=base)
    reap_stale(exe, env)
    why = f"{'auto: ' if args.engine == 'auto' else ''}{exe}" + (f", base {base}" if base else "")
    if args.engine == "cibw":
        return CibwEngine(container=engine), f"cibuildwheel with {why}"
    return engine, why


def dry_run(resolved: Sequence[Resolved], config: RunConfig, *, as_json: bool) -> int:
    """Plan, then apply: print the plans the build would run (and which the store already holds)."""
    plans = [r for r in resolved if isinstance(r, BuildPlan)]
    stored = {p.id: config.store.get(p.digest) is not None for p in plans}
    if as_json:
        skipped = [{"id": r.id, "reason": r.reason} for r in resolved if not isinstance(r, BuildPlan)]
        doc = {"engine": config.engine.name, "output": str(config.output),
               "plans": [{**p.to_json(), "stored": stored[p.id]} for p in plans], "skipped": skipped}
        print(json.dumps(doc, indent=2))
        return 0
    headers, rows = describe(resolved)
    print(render_table((*headers, "stored"), [(*row, "yes" if stored.get(row[0]) else "") for row in rows]))
    for plan in plans:
        print(f"\n{plan.id}  (plan {plan.digest})")
        for name, command in plan.commands():
            print(f"  {name:<6} {command.shell()}")
    return 0


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
