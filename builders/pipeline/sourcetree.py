"""What of a source tree is the source: everything but what its own VCS ignores, or a declared list.

A folder is never left out for its name: ``mypkg/build/`` and ``mypkg/dist/`` are packages like any
other, and the private copy (:mod:`builders.pipeline.private_source`) and the source digest
(:func:`builders.pipeline.store.tree_digest`) both keep them. What is left out, as paths relative
to the root, worked out once per run on this host:

- in a git checkout, what git ignores (``git ls-files --others --ignored --exclude-standard
  --directory``: the project's ``.gitignore``, ``.git/info/exclude``, the user's global excludes),
  plus ``build.exclude`` where the matrix declares it;
- elsewhere (an unpacked sdist), ``build.exclude``, by default :data:`DEFAULT_EXCLUDE`: the folders a
  previous build, test run or tool left at the top of the tree (setuptools' ``build/``, ``dist/``, a
  ``*.egg-info``), never a folder of the same name deeper down;
- the output folder where it lies inside the tree.

Two things are never part of a source's identity wherever they are, and never of the digest: VCS
data (:data:`VCS_DIRS`; the copy keeps it, since a version computed from tags needs it) and Python's
bytecode caches (:data:`BYTECODE_DIRS`, :data:`BYTECODE_SUFFIXES`), which an import writes beside
any source.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from builders.base.process import ProcessError, run

VCS_DIRS = frozenset({".git", ".hg", ".svn"})
BYTECODE_DIRS = frozenset({"__pycache__"})
BYTECODE_SUFFIXES = (".pyc", ".pyo")
# Root-relative globs left out of a tree that is not a git checkout and declares no build.exclude.
DEFAULT_EXCLUDE = ("build", "dist", "wheelhouse", "_skbuild", ".venv", ".nox", ".tox", ".pytest_cache",
                   ".mypy_cache", ".ruff_cache", "*.egg-info", "src/*.egg-info")
GIT_TIMEOUT = 120.0


def git_ignored(root: Path, env: Mapping[str, str]) -> tuple[str, ...] | None:
    """What git ignores under ``root``, relative to it; None where ``root`` is not in a git work tree
    (or git is missing, or ``root`` itself is ignored, as an sdist unpacked into an ignored folder is)."""
    base = ["git", "-C", str(root)]
    try:
        inside = run([*base, "rev-parse", "--is-inside-work-tree"], env=env, separate_stderr=True, check=False)
        if inside.returncode != 0 or inside.stdout.strip() != "true":
            return None
        if run([*base, "check-ignore", "-q", "."], env=env, separate_stderr=True, check=False).returncode == 0:
            return None
        argv = [*base, "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory"]
        out = run(argv, env=env, separate_stderr=True, timeout=GIT_TIMEOUT).stdout
    except (ProcessError, OSError):
        return None
    entries = out.rstrip("\n").split("\0")  # NUL-separated; the output helper ends it with a newline
    return tuple(sorted(p.rstrip("/") for p in entries if p.rstrip("/")))


def declared(root: Path, patterns: Iterable[str]) -> tuple[str, ...]:
    """The paths under ``root`` that the root-relative globs ``patterns`` name (``build``, ``*.egg-info``)."""
    found = {p.relative_to(root).as_posix() for pattern in patterns for p in root.glob(pattern)}
    return tuple(sorted(found))


def inside(root: Path, folder: Path) -> str | None:
    """``folder`` relative to ``root`` where it lies strictly inside, else None."""
    relative = os.path.relpath(folder.resolve(), root.resolve())
    return None if relative == "." or relative.startswith("..") else Path(relative).as_posix()


def excluded(root: Path, env: Mapping[str, str], exclude: tuple[str, ...] | None = None,
             output: Path | None = None) -> tuple[str, ...]:
    """The root-relative paths the private copy and the digest leave out (see the module's docstring)."""
    ignored = git_ignored(root, env)
    patterns = exclude if exclude is not None else (() if ignored is not None else DEFAULT_EXCLUDE)
    out = {*(ignored or ()), *declared(root, patterns)}
    where = inside(root, output) if output is not None else None
    return tuple(sorted(out | ({where} if where else set())))
