"""Where an installed wheel's ELF files find the runtime wheels' libraries: pure path arithmetic.

The matrix declares each runtime folder relative to ``site-packages`` (``nvidia/cu13/lib``;
``../..`` is the environment's ``lib`` folder, where ``.data/data/lib`` files land). An ELF
file's RUNPATH entry for it depends on where that ELF lies in the wheel: ``pkg/_C.so`` needs
``$ORIGIN/../nvidia/cu13/lib``, ``pkg/lib/libx.so`` needs ``$ORIGIN/../../nvidia/cu13/lib``.
Repair writes these entries (:mod:`builders.wheel.rpath`) and verify resolves every ELF's
entries in a venv layout (:func:`reached`), so both reason from the same arithmetic.

The older ``rpath`` key held entries for an ELF directly in ``site-packages/<pkg>/``;
:func:`runtime_dir_of_rpath` reads one as the folder it reaches from there.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable

ORIGIN = re.compile(r"^\$(?:ORIGIN|\{ORIGIN\})(?=/|$)")
# A venv's site-packages, deep enough that the environment's lib folder (two levels up) and any
# '..' an entry may hold stay distinct paths: the root of every resolution below.
SITE = "/venv/lib/python3/site-packages"
DATA_ROOTS = {"purelib": ".", "platlib": ".", "data": "../../..", "scripts": "../../../bin"}


def runtime_dir_of_rpath(entry: str) -> str:
    """The folder, relative to site-packages, that an old-style ``rpath`` entry reaches from ``site-packages/pkg``."""
    return _relative(posixpath.normpath(posixpath.join(SITE, "pkg", ORIGIN.sub(".", entry))))


def runtime_dirs_of(dirs: Iterable[str], rpaths: Iterable[str]) -> tuple[str, ...]:
    """The declared runtime folders, normalised, in order and once each: ``runtime_dirs`` then the old ``rpath``."""
    found = [_relative(posixpath.normpath(posixpath.join(SITE, d))) for d in dirs]
    found += [runtime_dir_of_rpath(r) for r in rpaths]
    return tuple(dict.fromkeys(found))


def site_dir(member: str) -> str | None:
    """The folder, relative to site-packages, that a wheel member installs into in a venv (``.data/data`` under
    the environment's root, three levels up; ``scripts`` its ``bin``); None for headers."""
    top, _, rest = member.partition("/")
    if not top.endswith(".data"):
        return posixpath.dirname(member)
    kind, _, inner = rest.partition("/")
    root = DATA_ROOTS.get(kind)
    return None if root is None else _relative(posixpath.normpath(posixpath.join(SITE, root, posixpath.dirname(inner))))


def origin_entry(elf_dir: str, runtime_dir: str) -> str | None:
    """The ``$ORIGIN`` entry that reaches ``runtime_dir`` from an ELF file installed in ``elf_dir`` (both
    relative to site-packages); None from outside site-packages into it (the entry would name the Python version)."""
    if _outside(elf_dir) and not _outside(runtime_dir):
        return None
    start = posixpath.join(SITE, elf_dir) if elf_dir else SITE
    rel = posixpath.relpath(posixpath.normpath(posixpath.join(SITE, runtime_dir)), start)
    return "$ORIGIN" if rel == "." else f"$ORIGIN/{rel}"


def _outside(folder: str) -> bool:
    return folder == ".." or folder.startswith("../")


def reached(elf_dir: str, entry: str) -> str | None:
    """The folder, relative to site-packages, that RUNPATH ``entry`` of an ELF file in ``elf_dir`` names in a
    venv; None for an entry that is not ``$ORIGIN``-relative (it names no place in the environment)."""
    if not ORIGIN.match(entry):
        return None
    start = posixpath.join(SITE, elf_dir) if elf_dir else SITE
    return _relative(posixpath.normpath(posixpath.join(start, ORIGIN.sub(".", entry))))


def _relative(path: str) -> str:
    """``path`` (absolute, under the venv) relative to site-packages; ``""`` for site-packages itself."""
    rel = posixpath.relpath(path, SITE)
    return "" if rel == "." else rel
