"""Every file builders writes whole goes through here: a temporary file renamed into place, except
where a rename would do harm.

A rename replaces whatever the name held. ``plan --output /dev/null`` run as root once turned the
machine's ``/dev/null`` into a regular file; a symlink named as an output would be replaced by a
file (or, followed, would let a run write anywhere). So before renaming, the destination is looked at:

- nothing there, or a regular file: the temporary file replaces it (readers never see half a file);
- a character device, a FIFO, or a standard stream (``/dev/stdout``, ``/dev/stderr``, ``/dev/fd/N``):
  written into directly, as a shell's ``>`` would (a rename cannot be atomic there anyway);
- a symlink: followed when it points inside ``root`` (the output folder; by default the folder the
  name is in), refused when it points outside;
- anything else (a folder, a socket, a block device): refused.

Refusals raise :class:`~builders.base.errors.PathError` (a bad output path) before anything is written.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from builders.base.errors import PathError

STREAMS = frozenset({"/dev/stdout", "/dev/stderr"})
FD_FOLDERS = ("/dev/fd/", "/proc/self/fd/")
MAX_LINKS = 40  # as the kernel's own limit on symlinks followed in one lookup


def partial_path(dest: Path) -> Path:
    """Per process, so two runs writing one file at once never write into each other's half-written copy."""
    return dest.with_name(f".{dest.name}.{os.getpid()}.partial")


def destination(dest: Path, root: Path | None = None) -> Path | None:
    """The regular file (present or not) a rename onto ``dest`` must replace, or None where ``dest`` is written
    into directly (a character device, a FIFO, a standard stream). Raises :class:`PathError` otherwise."""
    inside = Path(os.path.realpath(root if root is not None else dest.parent))
    path = dest
    for _ in range(MAX_LINKS):
        if str(path) in STREAMS or str(path).startswith(FD_FOLDERS):
            return None
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            return path
        if not stat.S_ISLNK(info.st_mode):
            return _kind_of(dest, path, info.st_mode)
        path = _followed(dest, path, inside)
    raise PathError(f"{dest}: more than {MAX_LINKS} symlinks to follow; refused, nothing was written")


def _followed(dest: Path, link: Path, inside: Path) -> Path:
    """Where the symlink ``link`` points, if that lies inside ``inside``."""
    target = Path(os.path.realpath(link))
    if target != inside and inside not in target.parents:
        raise PathError(f"{dest} is a symlink to {target}, outside {inside}: refused, nothing was written "
                           "(name a file inside the output, or remove the link)")
    return target


def _kind_of(dest: Path, path: Path, mode: int) -> Path | None:
    if stat.S_ISREG(mode):
        return path
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return None
    kind = "folder" if stat.S_ISDIR(mode) else "block device" if stat.S_ISBLK(mode) else \
        "socket" if stat.S_ISSOCK(mode) else "special file"
    shown = dest if path == dest else f"{dest} (through its symlinks, {path})"
    raise PathError(f"{shown} is a {kind}, not a file: refused, nothing was written (name a file to write)")


def replace_into(tmp: Path, dest: Path, *, root: Path | None = None) -> Path:
    """The finished ``tmp`` becomes ``dest`` (see the module's rules); returns the path written."""
    try:
        target = destination(dest, root)
    except PathError:
        tmp.unlink(missing_ok=True)
        raise
    if target is None:
        with tmp.open("rb") as src, open(dest, "wb") as out:
            shutil.copyfileobj(src, out)
        tmp.unlink(missing_ok=True)
        return dest
    os.replace(tmp, target)
    return target


def write_whole(dest: Path, data: bytes, *, root: Path | None = None) -> Path:
    """``data`` as the whole of ``dest``, never half-written where a reader can see it (see the module's rules)."""
    target = destination(dest, root)
    if target is None:
        with open(dest, "wb") as out:
            out.write(data)
        return dest
    tmp = partial_path(target)
    try:
        tmp.write_bytes(data)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target
