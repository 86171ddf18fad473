"""The run's fixed inputs every plan depends on, worked out once per run from values (never from argv).

The source tree's digest and commit time, the output folder, the toolchain cache and builders'
own version: :class:`~builders.pipeline.plan.Context`. ``build`` and ``cache`` (which must
compute the very plans ``build`` would, to keep what they use) both make it here.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

from builders.base.process import ProcessError, run
from builders.pipeline import sourcetree
from builders.pipeline.host import Host
from builders.pipeline.plan import Context
from builders.pipeline.remotecache import RemoteCache
from builders.pipeline.store import builders_version, tree_digest
from builders.wheel.archive import source_date_epoch


def run_context(*, host: Host, env: dict[str, str], source: Path, output: Path, cache: Path,
                compile_cache: RemoteCache | None = None, exclude: tuple[str, ...] | None = None) -> Context:
    """The context of a run building ``source`` into ``output`` with toolchains in ``cache`` (all made absolute),
    through the run's shared compiler cache, if any (:func:`builders.pipeline.remotecache.resolve`); ``exclude``
    is the matrix's ``build.exclude`` (None: not declared)."""
    source = source.resolve()
    left_out = sourcetree.excluded(source, env, exclude, output)
    return Context(host=host, env=env, source=source, source_digest=tree_digest(source, left_out),
                   epoch=commit_epoch(source, env), output=output.resolve(), cache=cache.resolve(),
                   tools_python=sys.executable, builders_version=builders_version(),
                   compile_cache=compile_cache, source_excluded=left_out)


def commit_epoch(source: Path, env: Mapping[str, str]) -> int:
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
