"""What a run's plans and outcomes mean once they are known: the exit verdict (a run that made no wheel,
or skipped a wheel its plan promised, fails unless skips are allowed), the note on a missing ccache,
the store trimmed to its budget, and a signal that stops every running target.

``build`` calls these with values; none of them reads the command line.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Iterator, Sequence
from types import FrameType

from builders.base import process
from builders.base.console import Console
from builders.base.errors import NothingToBuild
from builders.pipeline import caches, compilercache
from builders.pipeline.executor import RunConfig
from builders.pipeline.host import Host
from builders.pipeline.plan import BuildPlan, Resolved, Skipped
from builders.pipeline.results import Result
from builders.pipeline.store import sweep_partials


def ccache_note(resolved: Sequence[Resolved], host: Host) -> str | None:
    """The one note for a run whose builds on this host would go through ccache, which is not installed."""
    compiles_here = any(isinstance(r, BuildPlan) and r.runner.on_host and r.direct for r in resolved)
    return compilercache.MISSING if compiles_here and host.ccache is None else None


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
