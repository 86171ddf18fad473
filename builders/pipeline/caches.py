"""What builders keeps between runs, with sizes, and what to delete to stay within a budget.

The caches: pinned toolkits and offline wheelhouses (``~/.cache/builders/toolchains/<name>``),
compiler caches (``ccache/<image or host toolchain>``), uv's download cache (``uv``), the
podman/docker images builders made (``localhost/builders-*``, listed by
:mod:`builders.engines.images`) and each output folder's store (``<output>/.store/<digest>``,
``.store/core/<digest>``). Each is an :class:`Entry`; :func:`choose` (pure) says which to delete
for an age limit and/or a size budget, oldest first, never one the current matrix's plans
reference (:class:`Keep`). Leftovers of a killed run (``partial``) always go.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from builders.pipeline.plan import BuildPlan
from builders.pipeline.store import RECORD, writer_alive

DAY = 86400.0
UNITS = {"": 1, "b": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
PARTIAL = "partial"  # the kind of a killed run's leftover: never kept
DEFAULT_STORE_BUDGET = "20G"  # about one release's wheels (every GPU variant is 100s of MB), with room for two
STORE_BUDGET_ENV = "BUILDERS_STORE_BUDGET"


@dataclass(frozen=True, kw_only=True)
class Entry:
    """One thing cached: a folder (``path``) or an image (``key`` is its tag, ``path`` None)."""

    kind: str  # toolchain, ccache, uv, image, store, core, partial
    key: str  # a digest, an image tag or the folder's name
    size: int
    used: float  # when it was last written or used (epoch seconds)
    path: Path | None = None
    where: str = ""  # the cache root or output folder it belongs to


@dataclass(frozen=True, kw_only=True)
class Keep:
    """What the current matrix's plans reference: store and core digests, image tags, cache folders."""

    keys: frozenset[str] = frozenset()
    paths: frozenset[Path] = frozenset()

    def holds(self, entry: Entry) -> bool:
        if entry.kind == PARTIAL:
            return False
        if entry.key in self.keys:
            return True
        return entry.path is not None and any(p == entry.path or entry.path in p.parents for p in self.paths)


def referenced(plans: Iterable[BuildPlan]) -> Keep:
    """The keep set of ``plans``: each plan's digest and core digest, its images, its toolkit, offline wheelhouse
    and compiler cache. Not uv's cache: shared by every smoke test, it only saves downloads."""
    keys: set[str] = set()
    paths: set[str] = set()
    for plan in plans:
        keys.add(plan.digest)
        if plan.core is not None:
            keys.add(plan.core.digest)
        images = (runner.to_json().get("image", "") for runner in (plan.runner, plan.smoke_runner))
        keys.update(i for i in (*images, plan.provision.image) if i)
        paths.update(p for p in (plan.provision.into, plan.provision.wheelhouse, plan.toolchain.root) if p)
        paths.update(plan.provision.folders)
        paths.update(v for k, v in plan.build.env if k == "CCACHE_DIR")
    return Keep(keys=frozenset(keys), paths=frozenset(Path(p) for p in paths))


def choose(entries: Sequence[Entry], keep: Keep, *, now: float, older_than: float | None = None,
           max_size: int | None = None) -> list[Entry]:
    """The entries to delete: leftovers of killed runs; those unused for ``older_than`` days; then, oldest
    first, as many more as it takes to bring the total size to ``max_size``. Never one ``keep`` holds."""
    free = sorted((e for e in entries if not keep.holds(e)), key=lambda e: (e.used, e.key))
    doomed = [e for e in free if e.kind == PARTIAL
              or (older_than is not None and now - e.used > older_than * DAY)]
    if max_size is not None:
        total = sum(e.size for e in entries) - sum(e.size for e in doomed)
        for entry in free:
            if total <= max_size:
                break
            if entry not in doomed:
                doomed.append(entry)
                total -= entry.size
    return doomed


# -- sizes ----------------------------------------------------------------------------------


def parse_size(text: str) -> int:
    """``500M``, ``20G``, ``1.5GiB``, ``1000`` (bytes) -> bytes (powers of 1024)."""
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([kmgtb]?)(?:i?b)?\s*", text.lower())
    if not match:
        raise ValueError(f"{text!r} is not a size (say 500M, 20G or a number of bytes)")
    return int(float(match.group(1)) * UNITS[match.group(2)])


def human(size: int) -> str:
    for unit in ("T", "G", "M", "K"):
        if size >= UNITS[unit.lower()]:
            return f"{size / UNITS[unit.lower()]:.1f} {unit}iB"
    return f"{size} B"


def measure(path: Path) -> tuple[int, float]:
    """Bytes of the files under ``path`` (hard links once) and the newest modification time in it."""
    seen: set[tuple[int, int]] = set()
    size, newest = 0, 0.0
    for info in _walk(path):
        newest = max(newest, info.st_mtime)
        if not stat.S_ISDIR(info.st_mode) and (info.st_dev, info.st_ino) not in seen:
            seen.add((info.st_dev, info.st_ino))
            size += info.st_size
    return size, newest


def _walk(path: Path) -> Iterator[os.stat_result]:
    try:
        yield path.lstat()
        if not path.is_dir() or path.is_symlink():
            return
        with os.scandir(path) as it:
            children = list(it)
    except OSError:
        return
    for child in children:
        yield from _walk(Path(child.path))


# -- what is there ----------------------------------------------------------------------------


def folder_entries(kind: str, root: Path, *, whole: bool = False) -> list[Entry]:
    """One entry per folder in ``root`` (``whole``: ``root`` itself); a killed install's ``.partial-*`` too."""
    if not root.is_dir():
        return []
    folders = [root] if whole else sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink())
    return [_entry(PARTIAL if p.name.startswith(".partial-") else kind, p.name, p, str(root.parent if whole else root))
            for p in folders]


def cache_entries(cache: Path) -> list[Entry]:
    """The toolchains (``cache``, as ``build --cache`` names it), compiler caches and uv cache beside it."""
    return [*folder_entries("toolchain", cache), *folder_entries("ccache", cache.parent / "ccache"),
            *folder_entries("uv", cache.parent / "uv", whole=True)]


def store_entries(output: Path) -> list[Entry]:
    """Every entry of ``output``'s store: wheels by plan digest, cores by digest, and leftovers of killed runs."""
    store = output / ".store"
    entries = []
    for kind, root in (("store", store), ("core", store / "core")):
        if not root.is_dir():
            continue
        for p in sorted(root.iterdir()):
            if (p.name == "core" and kind == "store") or (p.name.startswith(".") and writer_alive(p.name)):
                continue  # the cores, listed next; a temporary folder a running build is writing
            whole = kind == "core" or (p / RECORD).is_file()
            entries.append(_entry(kind if whole and not p.name.startswith(".") else PARTIAL, p.name, p, str(output)))
    return entries


def _entry(kind: str, key: str, path: Path, where: str) -> Entry:
    size, used = measure(path)
    return Entry(kind=kind, key=key, size=size, used=used, path=path, where=where)


def remove(entry: Entry) -> None:
    """Delete a folder entry (an image is removed by its engine)."""
    assert entry.path is not None
    if entry.path.is_dir() and not entry.path.is_symlink():
        shutil.rmtree(entry.path, ignore_errors=True)
    else:
        entry.path.unlink(missing_ok=True)


def trim_store(output: Path, budget: int | None, protected: Keep, *, now: float) -> list[Entry]:
    """Bring ``output``'s store within ``budget`` (None: no limit): leftovers of killed runs, then the least
    recently used entries; never one ``protected`` holds (the entries of the run that just ended). Returns what
    went."""
    doomed = choose(store_entries(output), protected, now=now, max_size=budget)
    for entry in doomed:
        remove(entry)
    return doomed
