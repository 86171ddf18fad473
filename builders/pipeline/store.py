"""Content-addressed reuse: finished, verified wheels stored under their plan's digest.

A plan's digest covers everything that decides the wheel's bytes (the source tree's
content with uncommitted changes, the target's matrix record, the toolchain pins or image
tag, the commands, builders' own code). ``build`` looks a plan's digest up before building;
a hit is published as it is (``reused``), so a rebuild with nothing changed costs a lookup
per target. ``--force`` builds anyway. The store lives in the output folder
(``<output>/.store/<digest>/``): one wheel and the record of its verified build.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from builders import __version__
from builders.base.safe_output import replace_into
from builders.pipeline.sourcetree import BYTECODE_DIRS, BYTECODE_SUFFIXES, VCS_DIRS
from builders.wheel.writer import partial_path, partial_writer

# Never part of a source's identity, wherever they are: VCS data and bytecode caches (see
# :mod:`builders.pipeline.sourcetree`; build outputs are left out by path, never by name).
IGNORED_DIRS = VCS_DIRS | BYTECODE_DIRS
IGNORED_SUFFIXES = BYTECODE_SUFFIXES
RECORD = "record.json"
LOG = "build.log"


def _source_files(root: Path, excluded: Collection[str] = ()) -> Iterator[Path]:
    """Every file under ``root`` but VCS data, bytecode and the root-relative paths ``excluded``, in a fixed order."""
    skipped = frozenset(excluded)
    for folder, dirs, files in os.walk(root):
        here = Path(folder).relative_to(root)
        dirs[:] = sorted(d for d in dirs if d not in IGNORED_DIRS and (here / d).as_posix() not in skipped)
        for name in sorted(files):
            if name not in VCS_DIRS and not name.endswith(IGNORED_SUFFIXES) and (here / name).as_posix() not in skipped:
                yield Path(folder) / name


def tree_digest(root: Path, excluded: Collection[str] = ()) -> str:
    """sha256 over every file's relative path, kind, executable bit and content (symlinks: their target), less
    the root-relative paths ``excluded`` (:func:`builders.pipeline.sourcetree.excluded`)."""
    h = hashlib.sha256()
    for path in _source_files(root, excluded):
        info = path.lstat()
        h.update(path.relative_to(root).as_posix().encode() + b"\0")
        if stat.S_ISLNK(info.st_mode):
            h.update(b"L" + os.readlink(path).encode())
        else:
            h.update(b"X" if info.st_mode & 0o111 else b"F")
            with path.open("rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
        h.update(b"\0")
    return h.hexdigest()


# builders' code is part of every plan's digest, all of it by default: a new package is hashed
# until someone decides otherwise here. Left out, by package, is the work done after a build on
# what builds produced: ``index`` (promotion, indexes, mirrors, audit), ``channels`` (the ledger), ``ci`` (CI matrices, the workflow
# check, estimates, release gates), ``report`` and ``cli``, the argparse fronts, except ``cli.build`` and the options
# table, its reader and its path checks (``cli.options``, ``cli.arguments``, ``cli.paths``: defaults
# such as the cache folder), which make the run's configuration. The schemas and templates are left
# out too: the matrix's meaning reaches a plan through the target's record.
RELEASE_ONLY = frozenset({"index", "channels", "ci", "report", "cli"})
HASHED_ANYWAY = frozenset({"cli.build", "cli.options", "cli.arguments", "cli.paths"})
UNHASHED_DATA = frozenset({"schema", "templates"})


def module_of(relative: Path) -> str:
    """``commands/build.py`` -> ``commands.build`` (a package's ``__init__.py`` keeps its name)."""
    return ".".join(relative.with_suffix("").parts)


def hashed(relative: Path) -> bool:
    """Whether the package file at ``relative`` can change a wheel's bytes (see :data:`RELEASE_ONLY`)."""
    if relative.parts[0] in UNHASHED_DATA:
        return False
    if relative.suffix != ".py":
        return True  # Containerfiles, install scripts, the smoke probe's neighbours: build inputs
    return module_of(relative) in HASHED_ANYWAY or relative.parts[0] not in RELEASE_ONLY


@cache
def builders_version() -> str:
    """The package version and a digest of the code that builds: a changed pipeline is a new pipeline."""
    package = Path(__file__).resolve().parent.parent
    h = hashlib.sha256()
    for path in _source_files(package):
        relative = path.relative_to(package)
        if hashed(relative):
            h.update(relative.as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return f"{__version__}+{h.hexdigest()[:16]}"


def canonical(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def digest(data: Any) -> str:
    return hashlib.sha256(canonical(data).encode()).hexdigest()


@dataclass(frozen=True, kw_only=True)
class Stored:
    """A stored wheel and the record of the build that made it."""

    wheel: Path
    record: Mapping[str, Any]

    @property
    def log(self) -> Path:
        return self.wheel.parent / LOG


@dataclass(frozen=True)
class Store:
    root: Path

    def get(self, key: str) -> Stored | None:
        """The wheel stored under ``key``, if it is there whole."""
        folder = self.root / key
        try:
            record = json.loads((folder / RECORD).read_text(encoding="utf-8"))
            wheel = folder / record["wheel"]
            if wheel.stat().st_size != record["size"]:
                return None
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return Stored(wheel=wheel, record=record)

    def touch(self, key: str) -> None:
        """Mark the entry under ``key`` as used now (a store over its budget loses its least recently used)."""
        with contextlib.suppress(OSError):
            os.utime(self.root / key)

    def put(self, key: str, wheel: Path, record: Mapping[str, Any], log: Path | None = None) -> Stored:
        """Store ``wheel`` (and the log of its build) with ``record`` under ``key``: all or nothing."""
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=self.root, prefix=temp_prefix(key)))
        try:
            shutil.copy2(wheel, tmp / wheel.name)
            if log is not None and log.exists():
                shutil.copyfile(log, tmp / LOG)
            full = {**record, "wheel": wheel.name, "size": wheel.stat().st_size}
            (tmp / RECORD).write_text(json.dumps(full, indent=2, sort_keys=True) + "\n", encoding="utf-8")
            shutil.rmtree(self.root / key, ignore_errors=True)
            os.replace(tmp, self.root / key)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return Stored(wheel=self.root / key / wheel.name, record=full)


def temp_prefix(key: str) -> str:
    """The name a store's temporary folder starts with: hidden, and the writer's pid (:func:`writer_alive`)."""
    return f".{key[:12]}-{os.getpid()}-"


def writer_alive(name: str) -> bool:
    """A folder of a killed run is a leftover, one of a running build is not."""
    parts = name.split("-")
    return len(parts) >= 3 and parts[1].isdigit() and pid_alive(int(parts[1]))


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` runs (one of another user counts as running)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def sweep_partials(folder: Path) -> list[Path]:
    """Remove what :func:`place` left half-done under ``folder`` in a run that was killed (its pid is gone)."""
    gone = []
    for path in folder.rglob(".*.partial") if folder.is_dir() else ():
        pid = partial_writer(path)
        if pid is None or not pid_alive(pid):
            path.unlink(missing_ok=True)
            gone.append(path)
    return gone


def place(source: Path, dest: Path) -> Path:
    """Put ``source`` at ``dest`` all at once: a hard link (the store's files never change) or a copy."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = partial_path(dest)
    tmp.unlink(missing_ok=True)
    try:
        try:
            os.link(source, tmp)
        except OSError:
            shutil.copy2(source, tmp)
        replace_into(tmp, dest)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    return dest
