"""``cache``: what builders keeps between runs, with sizes (``list``), and trimming it (``prune``).

Like ``pip cache`` and ``uv cache``. The caches: toolchains and offline wheelhouses, compiler
caches, uv's cache (under ``~/.cache/builders``, or ``$BUILDERS_CACHE``), the images builders made
(``localhost/builders-<family>:<tag>``, podman and docker) and each ``--output`` folder's store.
``prune`` deletes leftovers of killed runs, entries unused for ``--older-than DAYS`` and, oldest
first, as many more as it takes to fit ``--max-size``; never what the current matrix's plans
reference (their store and core digests, image tags, toolkit and compiler-cache folders).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from builders import engines as engine_registry
from builders.base.console import Console, render_table
from builders.base.errors import BuildersError, EngineError, PathError
from builders.cli.arguments import Options
from builders.cli.options import CACHE_KINDS, MATRIX, WHEELHOUSE
from builders.engines import Engine, EngineSetup
from builders.engines.images import engine_env, made_images, remove_image
from builders.families import loader as matrix_mod
from builders.matrix.targets import Selection, Target, select
from builders.pipeline import caches
from builders.pipeline.caches import Entry, Keep, human
from builders.pipeline.context import run_context
from builders.pipeline.host import CONTAINER_ENGINES, detect
from builders.pipeline.plan import BuildPlan, Context, Resolved

KINDS = CACHE_KINDS
KEPT_BY = ("local", "container")  # the engines whose plans the keep set holds (by their registry names)


HELP = "list and prune what builders caches (toolchains, images, ccache, uv, stores)"
DESCRIPTION = __doc__.splitlines()[0] if __doc__ else None


def execute(opts: Options, console: Console) -> int:
    env = engine_env(opts.env)
    cache = opts.cache.resolve()  # --cache, else $BUILDERS_CACHE/toolchains, else the default (the options table)
    outputs = [o.resolve() for o in opts.output]  # --output, else ./wheelhouse where there is one (the options table)
    engines = _engines(opts.container_engine, env)
    entries = [e for e in gather(cache, outputs, engines, env) if not opts.kind or e.kind in opts.kind]
    keep = keep_set(opts, cache, outputs, env, required=opts.verb == "prune")
    now = time.time()
    if opts.verb == "list":
        show(entries, keep, now, console)
        return 0
    doomed = caches.choose(entries, keep, now=now, older_than=opts.older_than, max_size=opts.max_size)
    prune(doomed, env, console, dry_run=opts.dry_run)
    left = sum(e.size for e in entries) - sum(e.size for e in doomed)
    if opts.max_size is not None and left > opts.max_size:
        console.line(f"still {human(left)} over {human(opts.max_size)}: the rest is what the matrix's plans use")
    return 0


def _engines(chosen: str | None, env: Mapping[str, str]) -> list[str]:
    names = [chosen] if chosen else CONTAINER_ENGINES
    return [n for n in names if shutil.which(n, path=env.get("PATH"))]


def gather(cache: Path, outputs: Sequence[Path], engines: Sequence[str], env: Mapping[str, str]) -> list[Entry]:
    """Every cached entry: the folders beside ``cache``, each engine's builders images, each output's store."""
    entries = caches.cache_entries(cache)
    for engine in engines:
        entries += made_images(engine, env)
    for output in outputs:
        entries += caches.store_entries(output)
    return entries


def keep_set(opts: Options, cache: Path, outputs: Sequence[Path], env: dict[str, str], *,
             required: bool) -> Keep:
    """What the current matrix's plans reference, on this host, with the local and the container engine."""
    if opts.no_keep:
        return Keep()
    matrix = opts.matrix  # --matrix, else ./matrix.yaml where there is one (the options table)
    if matrix is None:
        if required:
            raise PathError(f"--matrix {MATRIX}: no such file; prune keeps what the current matrix's plans use "
                            "(pass --matrix PATH, or --no-keep to keep nothing)")
        return Keep()
    m = matrix_mod.load(matrix)
    host = detect(m.pythons, env, engines=True)
    ctx = run_context(host=host, env=env, source=opts.with_matrix(m).source,
                      output=outputs[0] if outputs else WHEELHOUSE, cache=cache, exclude=m.project.source_exclude)
    targets = select(m, Selection())
    setup = EngineSetup(matrix=m, targets=tuple(targets), host=host, env=env, cache=cache,
                        container_engine=opts.container_engine, base_image=opts.base_image)
    made = _engines_here(setup)
    return caches.referenced(p for e in made for t in targets if isinstance(p := _plan(e, t, ctx), BuildPlan))


def _engines_here(setup: EngineSetup) -> list[Engine]:
    """Each engine of :data:`KEPT_BY` that can run here, made through the engine registry as ``build`` makes it."""
    made = []
    for name in KEPT_BY:
        try:
            made.append(engine_registry.named(name).make(setup)[0])
        except EngineError:
            continue  # no container engine works here: nothing of its images is in use
    return made


def _plan(engine: Engine, target: Target, ctx: Context) -> Resolved | None:
    """The target's plan; None where it cannot be planned here (an image argument from an unset variable)."""
    try:
        return engine.plan(target, ctx)
    except BuildersError:
        return None


def show(entries: Sequence[Entry], keep: Keep, now: float, console: Console) -> None:
    """The listing, on stdout: one entry a line, then the totals by kind."""
    rows = [(e.kind, e.key, e.where, human(e.size), _age(now - e.used), "yes" if keep.holds(e) else "")
            for e in entries]
    console.out(render_table(("kind", "entry", "where", "size", "last used", "in use"), rows))
    by_kind = {k: sum(e.size for e in entries if e.kind == k) for k in KINDS}
    console.out("; ".join(f"{k} {human(s)}" for k, s in by_kind.items() if s) + f"; total {human(sum(by_kind.values()))}"
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
