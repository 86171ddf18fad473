"""``build``: build, label, repair, verify and smoke-test every selected target this host can build."""

from __future__ import annotations

import argparse
import os
import signal
from pathlib import Path

from .. import matrix as matrix_mod
from ..cli import add_matrix_option, add_selection_options
from ..console import Console
from ..engines.local import LocalEngine
from ..errors import TargetsFailed
from ..host import detect
from ..pipeline import RunConfig, build_all, summarize
from ..targets import select
from ..toolchains.provision import default_cache
from .plan import selection_of


def configure_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("build", help="build, repair, verify and smoke-test wheels",
                       description="Build every selected target this host can build (all of them by default), "
                                   "each through build, label, repair, verify and smoke. Targets this host cannot "
                                   "build are skipped with the reason. A failed target does not stop the others; "
                                   "the exit code is 1 if any failed.")
    add_matrix_option(p)
    add_selection_options(p)
    p.add_argument("--output", type=Path, default=Path("wheelhouse"), metavar="DIR",
                   help="wheels by channel (whl/<label>/), logs/<id>.log and results.json (default: wheelhouse/)")
    p.add_argument("--source", type=Path, default=None, metavar="DIR",
                   help="framework source tree (default: project.source in the matrix)")
    p.add_argument("--engine", choices=("local",), default="local", help="where builds run (default: local)")
    p.add_argument("--cache", type=Path, default=None, metavar="DIR",
                   help="toolchain cache (default: $BUILDERS_CACHE or ~/.cache/builders/toolchains)")
    p.add_argument("--no-smoke", dest="smoke", action="store_false", help="skip the smoke stage")
    p.set_defaults(execute=execute)


def execute(args: argparse.Namespace, console: Console) -> int:
    m = matrix_mod.load(args.matrix)
    targets = select(m, selection_of(args))
    env = dict(os.environ)
    host = detect(m.pythons, env)
    config = RunConfig(matrix=m, source=(args.source or m.project.source).resolve(), output=args.output.resolve(),
                       cache=(args.cache or default_cache(env)).resolve(), engine=LocalEngine(host), host=host, env=env,
                       run_smoke=args.smoke)
    console.line(f"{len(targets)} targets selected; engine {config.engine.name} on {host.platform}; output {config.output}")
    signal.signal(signal.SIGTERM, _raise_interrupt)
    outcomes = build_all(targets, config, console)
    summarize(outcomes, console)
    failed = [r.id for r in outcomes if r.status == "failed"]
    if failed:
        raise TargetsFailed(f"{len(failed)} target(s) failed: {', '.join(failed)} (see {config.output / 'logs'})")
    return 0


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
