"""Every file builders writes whole goes through here: a temporary file renamed into place, except
where a rename would do harm.

A rename replaces whatever the name held. ``plan --output /dev/null`` run as root once turned the
machine's ``/dev/null`` into a regular file; a symlink named as an output would be replaced by a
file (or, followed, would let a run write anywhere). So before renaming, the destination is looked at:

- nothing there, or a regular file: the temporary file (opened ``O_NOFOLLOW``) replaces it (readers
  never see half a file);
- a standard stream (``/dev/stdout``, ``/dev/stderr``, ``/dev/fd/N``) or ``/dev/null``: written into
  directly, as a shell's ``>`` would;
- a FIFO: written into when a reader holds it open (opened ``O_NONBLOCK``, so a FIFO nobody reads is
  refused at once instead of waited on forever);
- a symlink: followed when it points inside ``root`` (the output folder; by default the folder the
  name is in), refused when it points outside;
- anything else (a folder, a socket, any other device node): refused, never replaced.

Refusals raise :class:`~builders.base.errors.PathError` (a bad output path, exit 19) before anything
is written; a write that fails (a full or read-only filesystem, ENOSPC, EROFS) raises it too, naming
the path and the cause, and leaves no partial file. Logs and job summaries, appended as a run goes,
open through :func:`open_append` under the same rules.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from builders.base.errors import PathError

STREAMS = frozenset({"/dev/stdout", "/dev/stderr", "/dev/null"})
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


def regular(dest: Path, root: Path | None = None) -> Path:
    """The regular file (present or not) behind ``dest``, for a file builders reads back as well as writes (a results
    file merged run after run): a stream, a FIFO or /dev/null is refused too, with the rest :func:`destination`
    refuses."""
    target = destination(dest, root)
    if target is None:
        raise PathError(f"{dest} is not a regular file (a stream, a FIFO or a device): refused, nothing was written "
                        "(this file is read back on the next run: name a file)")
    return target


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
    if stat.S_ISFIFO(mode):
        return None
    kind = "folder" if stat.S_ISDIR(mode) else "block device" if stat.S_ISBLK(mode) else \
        "character device" if stat.S_ISCHR(mode) else "socket" if stat.S_ISSOCK(mode) else "special file"
    shown = dest if path == dest else f"{dest} (through its symlinks, {path})"
    raise PathError(f"{shown} is a {kind}, not a file: refused, nothing was written (name a file to write)")


def replace_into(tmp: Path, dest: Path, *, root: Path | None = None) -> Path:
    """The finished ``tmp`` becomes ``dest`` (see the module's rules); returns the path written."""
    try:
        with _reported(dest):
            target = destination(dest, root)
            if target is None:
                with tmp.open("rb") as src, _direct(dest) as out:
                    _copy_stream(src, out)
                return dest
            os.replace(tmp, target)
            return target
    finally:
        tmp.unlink(missing_ok=True)


def write_whole(dest: Path, data: bytes, *, root: Path | None = None, parents: bool = False) -> Path:
    """``data`` as the whole of ``dest``, never half-written where a reader can see it (see the module's rules);
    ``parents``: its missing folders are made first."""
    with _reported(dest):
        if parents:
            dest.parent.mkdir(parents=True, exist_ok=True)
        target = destination(dest, root)
        if target is None:
            with _direct(dest) as out:
                out.write(data)
            return dest
        tmp = partial_path(target)
        try:
            with _created(tmp) as out:
                out.write(data)
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
        return target


def write_text(dest: Path, text: str, *, root: Path | None = None, parents: bool = True) -> Path:
    """:func:`write_whole` for text (UTF-8), the form every record takes (its folders made, by default)."""
    return write_whole(dest, text.encode("utf-8"), root=root, parents=parents)


@contextlib.contextmanager
def open_append(dest: Path, *, root: Path | None = None) -> Iterator[IO[str]]:
    """``dest`` opened for appending text (a log, a job summary), under the module's rules: a symlink out of
    ``root`` or a node that is not a file is refused, a FIFO nobody reads is never waited on."""
    with _reported(dest):
        dest.parent.mkdir(parents=True, exist_ok=True)
        target = destination(dest, root)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
        with (_direct(dest) if target is None else os.fdopen(os.open(target, flags, 0o644), "wb")) as raw, \
                open(raw.fileno(), "w", encoding="utf-8", closefd=False) as out:
            yield out


@contextlib.contextmanager
def _reported(dest: Path) -> Iterator[None]:
    """An OS error while writing ``dest`` (ENOSPC, EROFS, EACCES...) as a :class:`PathError` naming the path."""
    try:
        yield
    except PathError:
        raise
    except OSError as exc:
        cause = exc.strerror or str(exc)
        name = errno.errorcode.get(exc.errno or 0, "")
        raise PathError(f"{dest}: cannot write: {cause}{f' ({name})' if name else ''}; "
                        "nothing was left half-written") from None


def _created(tmp: Path) -> IO[bytes]:
    """A fresh temporary file, never through a symlink someone planted at its name."""
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    return os.fdopen(fd, "wb")


_HELD: dict[str, int] = {}


def hold(dest: Path) -> None:
    """Open the stream or FIFO ``dest`` now (a FIFO nobody reads is refused now, not at the end of a run) and keep it
    open for the write that comes later: closing it in between would hand its reader an end of file."""
    with _reported(dest):
        if str(dest) not in _HELD:
            _HELD[str(dest)] = _opened(dest)


def _direct(dest: Path) -> IO[bytes]:
    """A stream, /dev/null or a FIFO (held by :func:`hold`, or opened now without waiting)."""
    fd = _HELD.pop(str(dest), None)
    return os.fdopen(fd if fd is not None else _opened(dest), "wb")


def _opened(dest: Path) -> int:
    """``dest`` opened for writing without waiting: a FIFO with no reader is refused (ENXIO)."""
    try:
        fd = os.open(dest, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise PathError(f"{dest} is a FIFO nobody reads: refused, nothing was written (start its reader "
                            "first, or name a file)") from None
        raise
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    return fd


def _copy_stream(src: IO[bytes], out: IO[bytes]) -> None:
    while chunk := src.read(1 << 20):
        out.write(chunk)
