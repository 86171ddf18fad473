"""RUNPATH edits of a wheel's ELF files with patchelf (as auditwheel does): the build interpreter's own
RPATH goes (:func:`strip_rpaths`), the runtime wheels' folders come in (:func:`set_runtime_rpaths`).

A CPython built with ``--enable-shared`` (pyenv's, for one) links extensions with
``-Wl,-rpath,<prefix>/lib`` taken from its ``LDSHARED``; every C extension built with it
then carries that absolute path, which exists only on the build machine. auditwheel leaves
it alone when it grafts nothing. Only the entries that the interpreter's link flags add are
removed; any other absolute RPATH stays, so verify still reports what the project did.
"""

from __future__ import annotations

import fnmatch
import io
import re
import shlex
import tempfile
from collections.abc import Callable, Collection, Mapping
from pathlib import Path

from builders.base.process import Call, LogLike, run
from builders.matrix.runpath import origin_entry, site_dir
from builders.wheel import elf
from builders.wheel.archive import Wheel
from builders.wheel.writer import write_wheel

ELF_MAGIC = b"\x7fELF"
LINK_FLAG_VARS = ("LDSHARED", "LDFLAGS", "LDCXXSHARED", "CONFIGURE_LDFLAGS")
_PROBE = f"import sysconfig; print(' '.join(sysconfig.get_config_var(v) or '' for v in {LINK_FLAG_VARS!r}))"
_RPATH_FLAG = re.compile(r"^-Wl,(?:-rpath[,=]|-R,?)(?P<paths>.+)$")


def rpaths_in_flags(flags: str) -> frozenset[str]:
    """The RPATH directories that ``-Wl,-rpath,...`` style linker flags ask for."""
    found: set[str] = set()
    for word in shlex.split(flags):
        match = _RPATH_FLAG.match(word)
        if match:
            found.update(p for chunk in match["paths"].split(",") for p in chunk.split(":") if p)
    return frozenset(found)


def interpreter_rpaths(interpreter: str, call: Call) -> frozenset[str]:
    """The absolute RPATHs ``interpreter``'s sysconfig link flags add to every extension (asked where it runs)."""
    flags = call([interpreter, "-c", _PROBE], separate_stderr=True, timeout=60).stdout
    return frozenset(p for p in rpaths_in_flags(flags) if p.startswith("/"))


# Given a member's name and its current RUNPATH entries: the entries it should have.
Edit = Callable[[str, bytes, list[str]], list[str]]


def strip_rpaths(wheel: Path, unwanted: frozenset[str], env: Mapping[str, str], log: LogLike,
                 epoch: int) -> bool:
    """In place; an unchanged wheel keeps its bytes (returns whether anything changed)."""
    if not unwanted:
        return False
    gone = {u.rstrip("/") for u in unwanted}
    return rewrite_runpaths(wheel, lambda _name, _data, entries: [e for e in entries if e.rstrip("/") not in gone],
                            env, log, epoch)


def set_runtime_rpaths(wheel: Path, runtime_dirs: Collection[str], runtime_libs: Collection[str],
                       env: Mapping[str, str], log: LogLike, epoch: int) -> bool:
    """Every ELF file that needs one of ``runtime_libs`` (names or globs) gets, after its own entries, the
    ``$ORIGIN`` entry that reaches each of ``runtime_dirs`` from where it lies; in place, like :func:`strip_rpaths`."""
    if not runtime_dirs or not runtime_libs:
        return False

    def edit(name: str, data: bytes, entries: list[str]) -> list[str]:
        where = site_dir(name)
        if where is None or not _needs_any(data, runtime_libs):
            return entries
        wanted = [e for e in (origin_entry(where, d) for d in runtime_dirs) if e is not None]
        return entries + [w for w in wanted if w not in entries]

    return rewrite_runpaths(wheel, edit, env, log, epoch)


def _needs_any(data: bytes, libs: Collection[str]) -> bool:
    """Whether the ELF file ``data`` names one of ``libs`` in its DT_NEEDED (an unreadable one: no)."""
    try:
        needed = elf.parse(io.BytesIO(data)).needed
    except elf.ElfParseError:
        return False  # verify reports it
    return any(fnmatch.fnmatchcase(n, lib) for n in needed for lib in libs)


def rewrite_runpaths(wheel: Path, edit: Edit, env: Mapping[str, str], log: LogLike, epoch: int) -> bool:
    """Each ELF member's RUNPATH set to what ``edit`` says; the wheel is rewritten (deterministically) only when
    some entry changed, and the result says whether one did."""
    members: dict[str, bytes] = {}
    modes: dict[str, int] = {}
    changed = False
    with Wheel(wheel).open() as reader, tempfile.TemporaryDirectory(prefix="builders-rpath-") as tmp:
        dist_info = reader.dist_info
        for info in reader.infos:
            if info.filename == f"{dist_info}/RECORD":
                continue
            data = b"".join(reader.stream(info))
            if data.startswith(ELF_MAGIC):
                data, edited = _edit_one(info.filename, data, edit, Path(tmp), env, log)
                changed |= edited
            members[info.filename], modes[info.filename] = data, info.external_attr
    if changed:
        write_wheel(wheel, members, dist_info, modes, epoch)
    return changed


def _edit_one(name: str, data: bytes, edit: Edit, tmp: Path, env: Mapping[str, str],
              log: LogLike) -> tuple[bytes, bool]:
    """``data`` with the RUNPATH ``edit`` gives it (patchelf), and whether it changed."""
    path = tmp / "elf"
    path.write_bytes(data)
    current = run(["patchelf", "--print-rpath", str(path)], env=env, log=log, separate_stderr=True).stdout.strip()
    entries = [e for e in current.split(":") if e]
    kept = edit(name, data, entries)
    if kept == entries:
        return data, False
    if kept:
        run(["patchelf", "--set-rpath", ":".join(kept), str(path)], env=env, log=log)
    else:
        run(["patchelf", "--remove-rpath", str(path)], env=env, log=log)
    return path.read_bytes(), True
