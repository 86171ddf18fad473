"""``build``: build, label, repair, verify and smoke-test every selected target this host can build."""

from __future__ import annotations

import argparse
import json
import os
import signal
from pathlib import Path

from .. import matrix as matrix_mod
from ..cli import (PathError, add_container_options, add_matrix_option, add_selection_options, check_input_dir,
                   input_dir, output_dir)
from ..console import Console
from ..engines import Engine
from ..engines.cibw import CibwEngine
from ..engines.container import ContainerEngine, find_engine, reap_stale
from ..engines.local import LocalEngine
from ..errors import EngineError, TargetsFailed
from ..host import Host, detect
from ..images import base_image, engine_env, image_pythons
from ..model import Matrix
from ..pipeline import RunConfig, build_all, summarize
from ..toolchains.provision import default_cache
from .plan import selected


def configure_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("build", help="build, repair, verify and smoke-test wheels",
                       description="Build every selected target this host can build (all of them by default), "
                                   "each through build, label, repair, verify and smoke. Targets this host cannot "
                                   "build are skipped with the reason. A failed target does not stop the others; "
                                   "the exit code is 1 if any failed.")
    add_matrix_option(p)
    add_selection_options(p)
    p.add_argument("--output", type=output_dir, default=Path("wheelhouse"), metavar="DIR",
                   help="wheels by channel (whl/<label>/), logs/<id>.log and results.json (default: wheelhouse/)")
    p.add_argument("--source", type=input_dir, default=None, metavar="DIR",
                   help="framework source tree (default: project.source in the matrix)")
    p.add_argument("--engine", choices=("local", "container", "cibw", "auto"), default="local",
                   help="local: this host; container: the variant's image with docker/podman; cibw: cibuildwheel "
                        "(in the variant's image on Linux); auto: a container engine when one works, else local "
                        "(default: local)")
    p.add_argument("--dry-run", action="store_true",
                   help="print what each selected target would run (cibw: the CIBW_* options), build nothing")
    add_container_options(p)
    p.add_argument("--cache", type=output_dir, default=None, metavar="DIR",
                   help="toolchain cache (default: $BUILDERS_CACHE or ~/.cache/builders/toolchains)")
    p.add_argument("--no-smoke", dest="smoke", action="store_false", help="skip the smoke stage")
    p.set_defaults(execute=execute)


def execute(args: argparse.Namespace, console: Console) -> int:
    m = matrix_mod.load(args.matrix)
    targets = selected(m, args)
    env = engine_env(os.environ)
    host = detect(m.pythons, env)
    engine, why = choose_engine(args, m, host, env)
    source = args.source or m.project.source
    if args.source is None:
        check_project_source(source, args.matrix)
    config = RunConfig(matrix=m, source=source.resolve(), output=args.output.resolve(),
                       engine=engine, host=host, env=env, run_smoke=args.smoke)
    console.line(f"{len(targets)} targets selected; engine {engine.name} ({why}) on {host.platform}; output {config.output}")
    if args.dry_run:
        return dry_run(targets, config)
    signal.signal(signal.SIGTERM, _raise_interrupt)
    outcomes = build_all(targets, config, console)
    summarize(outcomes, console)
    failed = [r.id for r in outcomes if r.status == "failed"]
    if failed:
        raise TargetsFailed(f"{len(failed)} target(s) failed: {', '.join(failed)} (see {config.output / 'logs'})")
    return 0


def check_project_source(source: Path, matrix: Path) -> None:
    """``project.source`` from the matrix is a path argument too: check it before anything runs."""
    try:
        check_input_dir(source)
    except (PathError, OSError) as exc:
        raise PathError(f"project.source of {matrix}: {exc}; pass --source DIR") from None


def choose_engine(args: argparse.Namespace, m: Matrix, host: Host, env: dict[str, str]) -> tuple[Engine, str]:
    """The engine to use, and why it was picked (``auto`` says which and why)."""
    cache = (args.cache or default_cache(env)).resolve()
    if args.engine == "local":
        return LocalEngine(host, cache), "asked for"
    exe = find_engine(env, args.container_engine)
    if exe is None:
        if args.engine == "container":
            raise EngineError("no working container engine (podman or docker); see README for podman setup")
        return LocalEngine(host, cache), "auto: no working container engine"
    base = base_image(args.base_image, env)
    engine = ContainerEngine(exe=exe, pythons=image_pythons(m), cache=cache, host_env=env, base_image=base)
    reap_stale(exe, env)
    why = f"{'auto: ' if args.engine == 'auto' else ''}{exe}" + (f", base {base}" if base else "")
    if args.engine == "cibw":
        return CibwEngine(container=engine), f"cibuildwheel with {why}"
    return engine, why


def dry_run(targets: list, config: RunConfig) -> int:
    """Plan, then apply: what each target would run, as JSON lines; nothing is built."""
    for target in targets:
        record = {"id": target.id, "engine": config.engine.name, "env": dict(target.env),
                  "command": list(target.project.build_command)}
        if isinstance(config.engine, CibwEngine):
            record["cibw"] = config.engine.options(target, config.env, None, build_image=False)
        print(json.dumps(record))
    return 0


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
