"""``cache``: what builders keeps between runs, with sizes (``list``), and trimming it (``prune``).

Like ``pip cache`` and ``uv cache``. The caches: toolchains and offline wheelhouses, compiler
caches, uv's cache (under ``~/.cache/builders``, or ``$BUILDERS_CACHE``), the images builders made
(``localhost/builders-<family>:<tag>``, podman and docker) and each ``--output`` folder's store.
``prune`` deletes leftovers of killed runs, entries unused for ``--older-than DAYS`` and, oldest
first, as many more as it takes to fit ``--max-size``; never what the current matrix's plans
reference (their store and core digests, image tags, toolkit and compiler-cache folders).
"""

from __future__ import annotations

import argparse
import os
import shutil
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from builders.base.console import Console, render_table
from builders.base.errors import BuildersError, PathError
from builders.cli import add_container_options, input_dir, input_file, output_dir
from builders.engines import Engine
from builders.engines.container import ContainerEngine
from builders.engines.images import base_image, engine_env, image_pythons, made_images, remove_image
from builders.engines.local import LocalEngine
from builders.families.provision import default_cache
from builders.matrix import loader as matrix_mod
from builders.matrix.targets import Selection, Target, select
from builders.pipeline import caches
from builders.pipeline.caches import Entry, Keep, human
from builders.pipeline.host import detect
from builders.pipeline.plan import BuildPlan, Context, Resolved

KINDS = ("toolchain", "ccache", "uv", "image", "store", "core", caches.PARTIAL)
ENGINES = ("podman", "docker")


def configure_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("cache", help="list and prune what builders caches (toolchains, images, ccache, uv, stores)",
                       description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("verb", choices=("list", "prune"),
                   help="list: every cached entry with its size, last use and whether the matrix's plans use it; "
                        "prune: delete leftovers of killed runs, entries unused for --older-than DAYS, then the least "
                        "recently used until --max-size; never what the matrix's plans use")
    p.add_argument("--matrix", type=input_file, default=None, metavar="PATH",
                   help="the matrix whose plans' entries are kept (default: ./matrix.yaml; prune needs one)")
    p.add_argument("--source", type=input_dir, default=None, metavar="DIR",
                   help="the source tree (default: project.source)")
    p.add_argument("--output", type=output_dir, action="append", default=[], metavar="DIR",
                   help="an output folder whose store to include (repeatable; default: ./wheelhouse if it exists)")
    p.add_argument("--cache", type=output_dir, default=None, metavar="DIR",
                   help="toolchain cache as `build --cache` names it; ccache/ and uv/ are beside it "
                        "(default: $BUILDERS_CACHE or ~/.cache/builders/toolchains)")
    p.add_argument("--kind", action="append", choices=KINDS, default=[],
                   help="only entries of this kind (repeatable; default: all)")
    add_container_options(p)
    prune = p.add_argument_group("prune")
    prune.add_argument("--older-than", type=_days, default=None, metavar="DAYS",
                       help="delete entries not used for more than DAYS days")
    prune.add_argument("--max-size", type=_size, default=None, metavar="SIZE",
                       help="then delete the least recently used entries until the listed ones total SIZE (500M, 20G)")
    prune.add_argument("--dry-run", action="store_true", help="say what would be deleted, delete nothing")
    prune.add_argument("--no-keep", action="store_true", help="keep nothing the matrix references (no matrix needed)")
    p.set_defaults(execute=execute)


def _days(text: str) -> float:
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return value


def _size(text: str) -> int:
    try:
        return caches.parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def execute(args: argparse.Namespace, console: Console) -> int:
    env = engine_env(os.environ)
    cache = (args.cache or default_cache(env)).resolve()
    outputs = [o.resolve() for o in args.output] or ([Path("wheelhouse").resolve()] if Path("wheelhouse").is_dir() else [])
    engines = _engines(args, env)
    entries = [e for e in gather(cache, outputs, engines, env) if not args.kind or e.kind in args.kind]
    keep = keep_set(args, cache, outputs, env, required=args.verb == "prune")
    now = time.time()
    if args.verb == "list":
        show(entries, keep, now)
        return 0
    doomed = caches.choose(entries, keep, now=now, older_than=args.older_than, max_size=args.max_size)
    prune(doomed, env, console, dry_run=args.dry_run)
    left = sum(e.size for e in entries) - sum(e.size for e in doomed)
    if args.max_size is not None and left > args.max_size:
        console.line(f"still {human(left)} over {human(args.max_size)}: the rest is what the matrix's plans use")
    return 0


def _engines(args: argparse.Namespace, env: Mapping[str, str]) -> list[str]:
    names = [args.container_engine] if args.container_engine else ENGINES
    return [n for n in names if shutil.which(n, path=env.get("PATH"))]


def gather(cache: Path, outputs: Sequence[Path], engines: Sequence[str], env: Mapping[str, str]) -> list[Entry]:
    """Every cached entry: the folders beside ``cache``, each engine's builders images, each output's store."""
    entries = caches.cache_entries(cache)
    for engine in engines:
        entries += made_images(engine, env)
    for output in outputs:
        entries += caches.store_entries(output)
    return entries


def keep_set(args: argparse.Namespace, cache: Path, outputs: Sequence[Path], env: dict[str, str], *,
             required: bool) -> Keep:
    """What the current matrix's plans reference, on this host, with the local and the container engine."""
    if getattr(args, "no_keep", False):
        return Keep()
    matrix = args.matrix or Path("matrix.yaml")
    if not matrix.is_file():
        if required:
            raise PathError(f"--matrix {matrix}: no such file; prune keeps what the current matrix's plans use "
                            "(pass --matrix PATH, or --no-keep to keep nothing)")
        return Keep()
    from builders.cli.build import context

    m = matrix_mod.load(matrix)
    host = detect(m.pythons, env, engines=True)
    ns = argparse.Namespace(source=args.source,
                            output=outputs[0] if outputs else Path("wheelhouse"), cache=cache)
    ctx = context(ns, m, host, env)
    engines: list[Engine] = [LocalEngine(cache=cache, env=env)]
    exe = next((e for e in host.container_engines if e == (args.container_engine or e)), None)
    if exe:
        engines.append(ContainerEngine(exe=exe, pythons=image_pythons(m), cache=cache, host_env=env,
                                       base_image=base_image(args.base_image, env)))
    targets = select(m, Selection())
    return caches.referenced(p for e in engines for t in targets if isinstance(p := _plan(e, t, ctx), BuildPlan))


def _plan(engine: Engine, target: Target, ctx: Context) -> Resolved | None:
    """The target's plan; None where it cannot be planned here (an image argument from an unset variable)."""
    try:
        return engine.plan(target, ctx)
    except BuildersError:
        return None


def show(entries: Sequence[Entry], keep: Keep, now: float) -> None:
    """The listing, on stdout: one entry a line, then the totals by kind."""
    rows = [(e.kind, e.key, e.where, human(e.size), _age(now - e.used), "yes" if keep.holds(e) else "")
            for e in entries]
    print(render_table(("kind", "entry", "where", "size", "last used", "in use"), rows))
    by_kind = {k: sum(e.size for e in entries if e.kind == k) for k in KINDS}
    print("; ".join(f"{k} {human(s)}" for k, s in by_kind.items() if s) + f"; total {human(sum(by_kind.values()))}"
          if entries else "nothing cached")


def prune(doomed: Sequence[Entry], env: Mapping[str, str], console: Console, *, dry_run: bool) -> None:
    verb = "would delete" if dry_run else "deleted"
    freed = 0
    for entry in doomed:
        problem = None if dry_run else _delete(entry, env)
        if problem:
            console.line(f"kept {entry.kind} {entry.key}: {problem}")
            continue
        freed += entry.size
        console.line(f"{verb} {entry.kind} {entry.key} ({human(entry.size)}) {entry.path or entry.where}")
    console.line(f"{verb} {len(doomed)} entries, {human(freed)}" if doomed else "nothing to delete")


def _delete(entry: Entry, env: Mapping[str, str]) -> str | None:
    if entry.kind == "image":
        return remove_image(entry.where, entry.key, env)
    caches.remove(entry)
    return None


def _age(seconds: float) -> str:
    days = seconds / caches.DAY
    if days >= 2:
        return f"{days:.0f} days ago"
    return f"{seconds / 3600:.0f} hours ago" if seconds >= 7200 else f"{seconds / 60:.0f} minutes ago"
