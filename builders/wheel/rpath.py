"""Remove the build interpreter's own RPATH from a freshly built wheel.

A CPython built with ``--enable-shared`` (pyenv's, for one) links extensions with
``-Wl,-rpath,<prefix>/lib`` taken from its ``LDSHARED``; every C extension built with it
then carries that absolute path, which exists only on the build machine. auditwheel leaves
it alone when it grafts nothing. Only the entries that the interpreter's link flags add are
removed; any other absolute RPATH stays, so verify still reports what the project did.
"""

from __future__ import annotations

import re
import shlex
import tempfile
from collections.abc import Mapping
from pathlib import Path

from builders.base.process import Call, LogLike, run
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


def strip_rpaths(wheel: Path, unwanted: frozenset[str], env: Mapping[str, str], log: LogLike,
                 epoch: int) -> bool:
    """In place; an unchanged wheel keeps its bytes (returns whether anything changed)."""
    if not unwanted:
        return False
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
                data, edited = _strip_one(data, unwanted, Path(tmp), env, log)
                changed |= edited
            members[info.filename], modes[info.filename] = data, info.external_attr
    if changed:
        write_wheel(wheel, members, dist_info, modes, epoch)
    return changed


def _strip_one(data: bytes, unwanted: frozenset[str], tmp: Path, env: Mapping[str, str],
               log: LogLike) -> tuple[bytes, bool]:
    """``data`` with ``unwanted`` RPATH entries removed (patchelf), and whether it changed."""
    path = tmp / "elf"
    path.write_bytes(data)
    current = run(["patchelf", "--print-rpath", str(path)], env=env, log=log, separate_stderr=True).stdout.strip()
    entries = [e for e in current.split(":") if e]
    kept = [e for e in entries if e.rstrip("/") not in {u.rstrip("/") for u in unwanted}]
    if kept == entries:
        return data, False
    if kept:
        run(["patchelf", "--set-rpath", ":".join(kept), str(path)], env=env, log=log)
    else:
        run(["patchelf", "--remove-rpath", str(path)], env=env, log=log)
    return path.read_bytes(), True
