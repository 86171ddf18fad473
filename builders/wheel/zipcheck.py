"""Zip archives as untrusted input: the caps, what a central directory entry may hold, and the one
way builders opens a zip to read it (:func:`open_zip`).

Every wheel is read through here, whether it lies on disk (:mod:`builders.wheel.archive`) or on an
index, read with HTTP range requests (:mod:`builders.index.remote`): ``zipfile`` parses the end
record and the central directory, over a file object that refuses any one read over
:data:`MAX_CENTRAL_DIRECTORY`, and a zip of more than :data:`MAX_MEMBERS` entries is refused before
anything else is looked at. What one entry shows is wrong (:func:`member_problems`, :func:`refusal`)
and what the archive as a whole declares (:func:`archive_problems`) are decided from the central
directory alone, before any member is inflated; each is a :class:`Finding` with its own code.
"""

from __future__ import annotations

import posixpath
import re
import stat
import struct
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Protocol

from builders.base.errors import WheelError

MIB, GIB = 1 << 20, 1 << 30
# Caps on what a wheel may hold. Measured on torch 2.13's CPU wheel (183 MiB, 12,248 members,
# 667 MiB inflated, largest member libtorch_cpu.so at 414 MiB, highest ratio 33:1 overall and
# 24:1 among members over 1 MiB); CUDA framework wheels that link the runtime from pip stay
# under 1.5 GiB per library and 3 GiB inflated. Deflate tops out near 1032:1, so 200:1 is
# 6x above any real member and 5x below a stream of zeros.
MAX_MEMBERS = 100_000  # torch has 12k; ~560 bytes of ZipInfo each once parsed
MAX_CENTRAL_DIRECTORY = 16 * MIB  # read in one piece by zipfile; torch's is 1.3 MiB
MAX_MEMBER_INFLATED = 2 * GIB
MAX_TOTAL_INFLATED = 4 * GIB
MAX_RATIO = 200  # inflated:compressed, for a member (or the whole wheel) over RATIO_FLOOR
RATIO_FLOOR = 1 * MIB
MAX_READ = 32 * MIB  # a dist-info file read whole (METADATA, WHEEL, RECORD; torch's RECORD is 1.6 MiB)

# The compression methods wheel builders write and every installer reads.
COMPRESSION = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate"}
ENCRYPTED = 0x0001 | 0x0040  # general purpose flag bits: traditional and strong encryption
FILE_TYPES = frozenset({0, stat.S_IFREG, stat.S_IFDIR})  # 0: no Unix mode recorded
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_DRIVE = re.compile(r"^[A-Za-z]:")

# What zipfile raises on a damaged or unsupported archive (bad CRC, bad deflate stream,
# unknown compression method, encrypted member): each becomes one finding or WheelError.
ZIP_ERRORS = (zipfile.BadZipFile, zlib.error, OSError, EOFError, NotImplementedError, RuntimeError, ValueError,
              struct.error, IndexError, KeyError)


@dataclass(frozen=True, kw_only=True)
class Finding:
    """One thing wrong with a wheel: a stable code, a message, the member it concerns."""

    code: str
    message: str
    file: str = ""

    def __str__(self) -> str:
        where = f" [{printable(self.file)}]" if self.file else ""
        return f"{self.code}: {printable(self.message)}{where}"

    def to_json(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message, "file": self.file}


def printable(text: str) -> str:
    """``text`` with control characters escaped (``\\x00``, ``\\n``): a member name cannot forge a line."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


class Seekable(Protocol):
    """What :func:`open_zip` reads from: a file on disk, or a ranged reader over HTTP."""

    def read(self, n: int = -1, /) -> bytes: ...

    def seek(self, offset: int, whence: int = 0, /) -> int: ...

    def tell(self) -> int: ...


def open_zip(source: Seekable, size: int, name: str) -> zipfile.ZipFile:
    """``source`` (``size`` bytes) as a zip whose central directory was read within the caps;
    :class:`WheelError` (naming ``name``) for anything zipfile cannot read or the caps refuse."""
    try:
        zf = zipfile.ZipFile(_CappedReads(source, size))  # type: ignore[arg-type]
    except _TooLarge as exc:
        raise WheelError(f"{name}: refused: its central directory is {exc.size:,} bytes, more than "
                         f"{MAX_CENTRAL_DIRECTORY // MIB} MiB (a wheel of at most {MAX_MEMBERS:,} members)") from exc
    except Exception as exc:  # zipfile parses hostile bytes: any failure means "not a wheel we can read"
        raise WheelError(f"{name}: not a readable wheel: {exc or type(exc).__name__}") from exc
    if len(zf.filelist) > MAX_MEMBERS:
        zf.close()
        raise WheelError(f"{name}: refused: {len(zf.filelist)} members, more than {MAX_MEMBERS:,}")
    return zf


class _TooLarge(Exception):
    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


class _CappedReads:
    """The archive file, refusing any one read over the central directory cap.

    zipfile reads the whole central directory with one ``read`` and parses all of it into
    ``ZipInfo`` objects; members are read in chunks of at most :data:`CHUNK_SIZE`.
    """

    def __init__(self, fh: Seekable, size: int) -> None:
        self._fh, self._size = fh, size

    def read(self, n: int | None = -1) -> bytes:
        want = self._size - self._fh.tell() if n is None or n < 0 else n
        if want > MAX_CENTRAL_DIRECTORY:
            raise _TooLarge(want)
        return self._fh.read(want)

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._fh.seek(offset, whence)

    def tell(self) -> int:
        return self._fh.tell()

    def seekable(self) -> bool:
        return True


# --- what the central directory shows -------------------------------------------------------


def member_problems(info: zipfile.ZipInfo) -> Iterator[Finding]:
    """Every problem of one entry's name, type, flags and declared sizes."""
    raw = info.orig_filename  # before zipfile cuts the name at a NUL byte
    yield from name_problems(raw)
    if not info.filename.strip("/"):
        yield Finding(code="member-empty-name", message=f"empty name {raw!r}: nowhere to write it", file=raw)
    kind = stat.S_IFMT(info.external_attr >> 16)
    if kind == stat.S_IFLNK:
        yield Finding(code="member-symlink", message="is a symbolic link (zip external_attr S_IFLNK); a wheel holds "
                      "regular files only", file=info.filename)
    elif kind not in FILE_TYPES:
        yield Finding(code="member-special", message=f"is not a regular file (mode {oct(kind)})", file=info.filename)
    problem = refusal(info)
    if problem is not None:
        yield problem


def name_problems(raw: str) -> Iterator[Finding]:
    """A member name that would land outside the install folder, or somewhere else than it says."""
    if _CONTROL.search(raw):
        yield Finding(code="member-control-char", message="name holds a control character (NUL, newline, ...)", file=raw)
    if "\\" in raw:
        yield Finding(code="member-backslash", message="name holds a backslash, a separator on Windows", file=raw)
    if raw.startswith(("/", "\\")) or _DRIVE.match(raw):
        yield Finding(code="member-absolute", message="absolute path: would be written outside the install folder",
                      file=raw)
    if ".." in re.split(r"[/\\]", raw):
        yield Finding(code="member-traversal", message="'..' in the path: would be written outside the install "
                      "folder (zip-slip)", file=raw)


def refusal(info: zipfile.ZipInfo) -> Finding | None:
    """Why this member must not be inflated at all, from its central directory entry alone."""
    name = info.filename
    if info.flag_bits & ENCRYPTED:
        return Finding(code="member-encrypted", message="is encrypted (general purpose flag bit 0)", file=name)
    if info.compress_type not in COMPRESSION:
        return Finding(code="member-compression", message=f"compression method {info.compress_type} is not "
                       f"{' or '.join(COMPRESSION.values())}", file=name)
    if info.file_size > MAX_MEMBER_INFLATED:
        return Finding(code="member-too-large", message=f"declares {info.file_size:,} bytes inflated, more than "
                       f"{MAX_MEMBER_INFLATED // GIB} GiB", file=name)
    if _over_ratio(info.file_size, info.compress_size):
        return Finding(code="member-ratio", message=f"declares {info.file_size:,} bytes inflated from "
                       f"{info.compress_size:,}: over {MAX_RATIO}:1 (a zip bomb)", file=name)
    return None


def _over_ratio(inflated: int, compressed: int) -> bool:
    return inflated > RATIO_FLOOR and inflated > MAX_RATIO * max(compressed, 1)


def duplicate_problems(entries: Iterable[zipfile.ZipInfo]) -> Iterator[Finding]:
    """Two entries that would be written to the same path (``a/b``, ``a//b``, ``a/./b``)."""
    seen: set[str] = set()
    for info in entries:
        key = posixpath.normpath(info.filename)
        if key in seen:
            yield Finding(code="member-duplicate", message="a second entry with this path", file=info.filename)
        seen.add(key)


def archive_problems(entries: Iterable[zipfile.ZipInfo], archive_size: int) -> Iterator[Finding]:
    """The wheel as a whole: what all members declare they inflate to (the file size is a fact)."""
    total = sum(i.file_size for i in entries)
    if total > MAX_TOTAL_INFLATED:
        yield Finding(code="archive-too-large", message=f"members declare {total:,} bytes inflated, more than "
                      f"{MAX_TOTAL_INFLATED // GIB} GiB; nothing was inflated")
    elif _over_ratio(total, archive_size):
        yield Finding(code="archive-ratio", message=f"members declare {total:,} bytes inflated from a "
                      f"{archive_size:,}-byte file: over {MAX_RATIO}:1 (a zip bomb); nothing was inflated")
