"""Wheel files as values: read name, tags, METADATA and RECORD; rewrite them reproducibly.

Names and tags always go through ``packaging`` (``parse_wheel_filename``); a rewrite keeps
every payload byte, regenerates RECORD, and writes entries in a deterministic order with a
fixed timestamp so the same input gives the same bytes.

Every wheel is untrusted input, read defensively: the central directory is capped before it is
parsed, every member name, type, flag and compression method is checked
(:attr:`WheelReader.problems`), and what a member may inflate to is capped from its declared
sizes before anything is inflated, then enforced again while streaming (declared sizes can
lie). A member that is unsafe to inflate is never inflated; what is wrong is a :class:`Finding`
with its own code, never a traceback.
"""

from __future__ import annotations

import base64
import csv
import email.message
import email.parser
import email.policy
import hashlib
import io
import os
import posixpath
import re
import shutil
import stat
import struct
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property, partial
from pathlib import Path
from typing import BinaryIO

from packaging.requirements import InvalidRequirement, Requirement
from packaging.tags import Tag, parse_tag
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import Version

from builders.base.errors import WheelError
from builders.base.safe_output import partial_path, replace_into
from builders.matrix.targets import wheel_filename

# 1980-01-01 is the earliest time a zip can hold; used when SOURCE_DATE_EPOCH is unset.
ZIP_EPOCH = 315532800

# Streamed members are read this much at a time: memory stays flat whatever a member's size.
CHUNK_SIZE = 1 << 20

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


@dataclass(frozen=True)
class RecordEntry:
    path: str
    hash: str
    size: str


@dataclass(frozen=True)
class Wheel:
    """A wheel file on disk, read lazily.

    Each property below opens the archive once for itself; a caller that reads many members
    (verify) opens one :class:`WheelReader` with :meth:`open` instead, since every
    ``zipfile.ZipFile`` construction parses the whole central directory again.
    """

    path: Path

    @cached_property
    def parsed(self) -> tuple[str, Version, frozenset[Tag]]:
        try:
            name, version, _build, tags = parse_wheel_filename(self.path.name)
        except InvalidWheelFilename as exc:
            raise WheelError(f"{printable(self.path.name)}: {exc}") from exc
        return name, version, tags

    @property
    def name(self) -> str:
        return self.parsed[0]

    @property
    def version(self) -> Version:
        return self.parsed[1]

    @property
    def tags(self) -> frozenset[Tag]:
        return self.parsed[2]

    @contextmanager
    def open(self) -> Iterator[WheelReader]:
        """One open archive that every read of a whole-wheel pass goes through."""
        try:
            fh = self.path.open("rb")
        except OSError as exc:
            raise WheelError(f"{self.path}: not a readable wheel: {exc}") from exc
        with fh:
            size = os.fstat(fh.fileno()).st_size
            with self._zip(_CappedReads(fh, size)) as zf:
                if len(zf.filelist) > MAX_MEMBERS:
                    raise WheelError(f"{self.path}: refused: {len(zf.filelist)} members, more than {MAX_MEMBERS:,}")
                yield WheelReader(self, zf, size=size)

    @cached_property
    def dist_info(self) -> str:
        """The ``.dist-info`` folder actually present in the archive."""
        with self.open() as reader:
            return reader.dist_info

    def read(self, member: str) -> bytes:
        with self.open() as reader:
            return reader.read(member)

    def names(self) -> list[str]:
        with self.open() as reader:
            return reader.names()

    @cached_property
    def metadata(self) -> email.message.Message:
        with self.open() as reader:
            return reader.metadata

    @cached_property
    def wheel_tags(self) -> frozenset[Tag]:
        """The ``Tag:`` lines of the WHEEL file."""
        with self.open() as reader:
            return reader.wheel_tags

    @property
    def requires_dist(self) -> tuple[Requirement, ...]:
        return _requires_dist(self.metadata)

    def record(self) -> list[RecordEntry]:
        with self.open() as reader:
            return reader.record()

    def problems(self) -> list[Finding]:
        """Everything wrong with the archive itself, every member inflated once (nothing kept)
        to check its CRC and size: for a wheel about to be installed or copied as it is."""
        with self.open() as reader:
            found = list(reader.problems)
            for info in reader.infos:
                stream = reader.member_stream(info)
                for _chunk in stream:
                    pass
                if stream.problem is not None and stream.refusal is None:
                    found.append(stream.problem)
            return found

    def _zip(self, source: BinaryIO | _CappedReads) -> zipfile.ZipFile:
        try:
            return zipfile.ZipFile(source)  # type: ignore[arg-type]
        except _TooLarge as exc:
            raise WheelError(f"{self.path}: refused: its central directory is {exc.size:,} bytes, more than "
                             f"{MAX_CENTRAL_DIRECTORY // MIB} MiB (a wheel of at most {MAX_MEMBERS:,} members)") from exc
        except Exception as exc:  # zipfile parses hostile bytes: any failure means "not a wheel we can read"
            raise WheelError(f"{self.path}: not a readable wheel: {exc or type(exc).__name__}") from exc


class _TooLarge(Exception):
    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


class _CappedReads:
    """The archive file, refusing any one read over the central directory cap.

    zipfile reads the whole central directory with one ``read`` and parses all of it into
    ``ZipInfo`` objects; members are read in chunks of at most :data:`CHUNK_SIZE`.
    """

    def __init__(self, fh: BinaryIO, size: int) -> None:
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


class WheelReader:
    """A wheel's archive held open: names, small reads and chunked streams from one ZipFile.

    Cost is linear in the member count (the central directory is parsed once) and memory is
    bounded by the chunk size for streamed members. Parsed dist-info files are cached here.
    """

    def __init__(self, wheel: Wheel, zf: zipfile.ZipFile, *, size: int) -> None:
        self.wheel = wheel
        self.size = size  # of the file that was opened, whatever happens to the path since
        self.inflated = 0  # bytes inflated through this reader, held to MAX_TOTAL_INFLATED
        self._zf = zf

    @property
    def path(self) -> Path:
        return self.wheel.path

    @property
    def name(self) -> str:
        return self.wheel.name

    @property
    def version(self) -> Version:
        return self.wheel.version

    @property
    def tags(self) -> frozenset[Tag]:
        return self.wheel.tags

    @cached_property
    def infos(self) -> tuple[zipfile.ZipInfo, ...]:
        """Every file entry (folders left out), in archive order."""
        return tuple(i for i in self._zf.infolist() if not i.filename.endswith("/"))  # is_dir() fails on ""

    def names(self) -> list[str]:
        return self._zf.namelist()

    @cached_property
    def problems(self) -> tuple[Finding, ...]:
        """What the central directory alone shows is wrong: unsafe names, types, flags,
        compression, sizes. Nothing is inflated to find these."""
        entries = self._zf.infolist()
        found = [p for info in entries for p in member_problems(info)]
        found += duplicate_problems(entries)
        found += archive_problems(entries, self.size)
        return tuple(found)

    @cached_property
    def refusals(self) -> dict[int, Finding]:
        """id(ZipInfo) -> why that member must not be inflated (first reason)."""
        refused: dict[int, Finding] = {}
        for info in self._zf.infolist():
            problem = refusal(info)
            if problem is not None:
                refused[id(info)] = problem
        return refused

    @cached_property
    def archive_refusal(self) -> Finding | None:
        """Why no payload member is inflated at all: the wheel as a whole inflates too far."""
        return next(iter(archive_problems(self._zf.infolist(), self.size)), None)

    def member_stream(self, info: zipfile.ZipInfo, chunk_size: int = CHUNK_SIZE, *,
                      whole_archive: bool = True) -> MemberStream:
        """``info``'s bytes in chunks, never raising: what went wrong is the stream's ``problem``."""
        refused = self.refusals.get(id(info)) or (self.archive_refusal if whole_archive else None)
        return MemberStream(self, info, chunk_size, refused)

    def stream(self, member: zipfile.ZipInfo, chunk_size: int = CHUNK_SIZE) -> Iterator[bytes]:
        """The member's bytes in chunks of at most ``chunk_size``; its CRC is checked at the end.
        A member refused or damaged raises :class:`WheelError` (chunks already given stay given)."""
        stream = self.member_stream(member, chunk_size)
        yield from stream
        if stream.problem is not None:
            raise WheelError(f"{printable(self.path.name)}: {stream.problem}")

    def read(self, member: str) -> bytes:
        """A whole member of at most :data:`MAX_READ` bytes: for the small dist-info files."""
        try:
            info = self._zf.getinfo(member)
        except KeyError as exc:
            raise WheelError(f"{printable(self.path.name)}: missing {printable(member)}") from exc
        if info.file_size > MAX_READ:
            raise WheelError(f"{printable(self.path.name)}: {printable(member)} declares {info.file_size:,} bytes, "
                             f"more than the {MAX_READ // MIB} MiB such a file may have; refused unread")
        stream = self.member_stream(info, whole_archive=False)
        data = b"".join(stream)
        if stream.problem is not None:
            raise WheelError(f"{printable(self.path.name)}: cannot read {printable(member)}: {stream.problem}")
        return data

    @cached_property
    def dist_info(self) -> str:
        """The ``.dist-info`` folder actually present in the archive."""
        tops = {n.split("/", 1)[0] for n in self._zf.namelist()}
        dirs = {t for t in tops if t.endswith(".dist-info")}
        if len(dirs) != 1:
            raise WheelError(f"{printable(self.path.name)}: expected one .dist-info folder, "
                             f"found {sorted(dirs) or 'none'}")
        return dirs.pop()

    @cached_property
    def metadata(self) -> email.message.Message:
        return _parse_headers(self.read(f"{self.dist_info}/METADATA"))

    @cached_property
    def wheel_tags(self) -> frozenset[Tag]:
        """The ``Tag:`` lines of the WHEEL file."""
        info = _parse_headers(self.read(f"{self.dist_info}/WHEEL"))
        lines = [str(line) for line in info.get_all("Tag", [])]
        try:
            return frozenset(t for line in lines for t in parse_tag(line))
        except ValueError as exc:
            raise WheelError(f"{printable(self.path.name)}: {self.dist_info}/WHEEL has an invalid Tag line "
                             f"in {lines!r}") from exc

    @property
    def requires_dist(self) -> tuple[Requirement, ...]:
        return _requires_dist(self.metadata)

    def record(self) -> list[RecordEntry]:
        name = f"{self.dist_info}/RECORD"
        try:
            rows = list(csv.reader(io.StringIO(self.read(name).decode("utf-8"))))
        except (UnicodeDecodeError, csv.Error) as exc:
            raise WheelError(f"{printable(self.path.name)}: {name} is not a UTF-8 CSV file: {exc}") from exc
        return [RecordEntry(*(row + ["", ""])[:3]) for row in rows if row]


class MemberStream:
    """One member's bytes in chunks. Iterating never raises on a bad archive: a refused member
    yields nothing, a damaged one stops, and ``problem`` says why (``refusal`` when it was known
    from the central directory, before anything was inflated)."""

    def __init__(self, reader: WheelReader, info: zipfile.ZipInfo, chunk_size: int, refusal: Finding | None) -> None:
        self.reader, self.info, self.chunk_size = reader, info, chunk_size
        self.refusal = self.problem = refusal
        self.size = 0

    def __iter__(self) -> Iterator[bytes]:
        if self.refusal is not None:
            return
        try:
            yield from self._inflate()
        except ZIP_ERRORS as exc:
            self.problem = _stream_problem(self.info, exc)

    def _inflate(self) -> Iterator[bytes]:
        info, reader = self.info, self.reader
        with reader._zf.open(info) as fh:
            while chunk := fh.read(self.chunk_size):
                self.size += len(chunk)
                reader.inflated += len(chunk)
                if self.size > info.file_size or reader.inflated > MAX_TOTAL_INFLATED:
                    self.problem = _overrun(info, reader.inflated)
                    return
                yield chunk
        if self.size != info.file_size:
            self.problem = Finding(code="member-size", file=info.filename, message=f"inflates to {self.size:,} "
                                   f"bytes, the central directory says {info.file_size:,}")


def _overrun(info: zipfile.ZipInfo, total: int) -> Finding:
    if total > MAX_TOTAL_INFLATED:
        return Finding(code="archive-too-large", file=info.filename, message=f"inflating stopped at {total:,} bytes: "
                       f"the wheel inflates past {MAX_TOTAL_INFLATED // GIB} GiB")
    return Finding(code="member-size", file=info.filename,
                   message=f"inflates past the {info.file_size:,} bytes the central directory declares; stopped")


def _stream_problem(info: zipfile.ZipInfo, exc: BaseException) -> Finding:
    text = str(exc) or type(exc).__name__
    code = "member-crc" if "CRC" in text else "member-corrupt"
    return Finding(code=code, message=f"cannot be inflated: {text}", file=info.filename)


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


def _parse_headers(data: bytes) -> email.message.Message:
    return email.parser.BytesParser(policy=email.policy.compat32).parsebytes(data)


def header(metadata: email.message.Message, key: str) -> str | None:
    """One header as text (compat32 hands back a ``Header`` object for non-ASCII bytes)."""
    value = metadata.get(key)
    return None if value is None else str(value)


def _requires_dist(metadata: email.message.Message) -> tuple[Requirement, ...]:
    try:
        return tuple(Requirement(str(r)) for r in metadata.get_all("Requires-Dist", []))
    except InvalidRequirement as exc:
        raise WheelError(f"METADATA has an invalid Requires-Dist: {printable(str(exc))}") from exc


def record_hash(data: bytes) -> str:
    """The RECORD form of a sha256: ``sha256=<urlsafe b64, no padding>``."""
    return record_digest(hashlib.sha256(data))


def record_digest(h: hashlib._Hash) -> str:
    """A finished hash in RECORD form (``<algorithm>=<urlsafe b64, no padding>``), for streamed members."""
    digest = base64.urlsafe_b64encode(h.digest()).rstrip(b"=").decode()
    return f"{h.name}={digest}"


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def source_date_epoch(env: Mapping[str, str]) -> int:
    return max(int(env.get("SOURCE_DATE_EPOCH", ZIP_EPOCH)), ZIP_EPOCH)


# A member to write: its declared size, and a function giving its bytes in chunks.
Source = tuple[int, Callable[[], Iterable[bytes]]]


def rewrite(
    wheel: Wheel,
    dest_dir: Path,
    *,
    version: Version | None = None,
    requirements: Iterable[Requirement] | None = None,
    epoch: int = ZIP_EPOCH,
) -> Path:
    """Write a copy of ``wheel`` into ``dest_dir`` with a new version and/or Requires-Dist.

    The dist-info folder is renamed with the version, METADATA and RECORD are rewritten,
    every other member keeps its bytes, streamed from the input (memory stays flat). A wheel
    whose archive has any problem is refused before anything is written. Returns the new path.
    """
    version = version or wheel.version
    name = wheel.name
    dest = dest_dir / (wheel_filename(name, version, _single_tag(wheel)) if len(wheel.tags) == 1 else _rename(wheel, version))
    new_dist_info = f"{canonicalize_name(name).replace('-', '_')}-{version}.dist-info"
    with wheel.open() as reader:
        if reader.problems:
            raise WheelError(f"{printable(wheel.path.name)}: refused to rewrite: "
                             + "; ".join(map(str, reader.problems)))
        old = reader.dist_info
        metadata = _new_metadata(reader.read(f"{old}/METADATA"), version, requirements)
        sources: dict[str, Source] = {}
        modes: dict[str, int] = {}
        for info in reader.infos:
            if info.filename == f"{old}/RECORD":
                continue
            renamed = info.filename.replace(old + "/", new_dist_info + "/", 1)
            is_metadata = info.filename == f"{old}/METADATA"
            sources[renamed] = (len(metadata), lambda: (metadata,)) if is_metadata else \
                (info.file_size, partial(reader.stream, info))
            modes[renamed] = info.external_attr
        write_members(dest, sources, new_dist_info, modes, epoch)
    return dest


def _single_tag(wheel: Wheel) -> Tag:
    return sorted(wheel.tags, key=str)[0]


def _rename(wheel: Wheel, version: Version) -> str:
    """Keep a multi-tag wheel's compressed tag set, change only the version."""
    dist, _old_version, rest = wheel.path.name.split("-", 2)
    return f"{dist}-{version}-{rest}"


def _new_metadata(raw: bytes, version: Version, requirements: Iterable[Requirement] | None) -> bytes:
    """METADATA with its Version (and, given ``requirements``, its Requires-Dist) replaced;
    every other header line and the body keep their bytes, whatever their encoding.

    Fields are found as pip and packaging read them (:func:`header_fields`); a new line ends
    as the METADATA's first line does (CRLF or LF).
    """
    fields, rest = header_fields(raw)
    eol = _eol(fields[0][-1] if fields else b"")
    out: list[bytes] = []
    for field in fields:
        key = field[0].split(b":", 1)[0].strip().lower()
        if key == b"version":
            field = [b"Version: " + str(version).encode() + (_eol(field[-1]) if _ends_line(field[-1]) else b"")]
        elif key == b"requires-dist" and requirements is not None:
            continue
        out += field
    added = [f"Requires-Dist: {r}".encode() + eol for r in requirements or ()]
    if added and out and not _ends_line(out[-1]):
        out[-1] += eol
    return b"".join(out + added) + rest


# email.feedparser's rule, which pip and packaging read METADATA with: a line that starts with
# a space or tab continues the field above (a whitespace-only one too); a line that is neither
# that nor ``Name:`` ends the headers, and is dropped when it is empty, else starts the body.
_FIELD_LINE = re.compile(rb"From |[\041-\071\073-\176]*:|[\t ]")
_LINE_ENDS = (b"\r\n", b"\n", b"\r")


def header_fields(raw: bytes) -> tuple[list[list[bytes]], bytes]:
    """METADATA's header fields, each as its lines (line ends kept), and every byte after them
    (the empty separator line and the body, verbatim)."""
    fields: list[list[bytes]] = []
    offset = 0
    for line in raw.splitlines(keepends=True):
        if not _FIELD_LINE.match(line):
            break
        if line[:1] in (b" ", b"\t") and fields:
            fields[-1].append(line)
        else:
            fields.append([line])
        offset += len(line)
    return fields, raw[offset:]


def _ends_line(line: bytes) -> bool:
    return line.endswith(_LINE_ENDS)


def _eol(line: bytes) -> bytes:
    """The line end of ``line`` (LF when it has none)."""
    return next((e for e in _LINE_ENDS if line.endswith(e)), b"\n")


def write_wheel(dest: Path, members: Mapping[str, bytes], dist_info: str, modes: Mapping[str, int], epoch: int) -> None:
    """Write members in sorted order, dist-info last, RECORD generated, atomically."""
    write_members(dest, {n: (len(data), partial(iter, (data,))) for n, data in members.items()}, dist_info, modes, epoch)


def partial_writer(path: Path) -> int | None:
    """The pid that wrote the :func:`partial_path` ``path``, or None when the name carries none."""
    pid = path.name.removesuffix(".partial").rpartition(".")[2]
    return int(pid) if pid.isdigit() else None


def write_members(dest: Path, sources: Mapping[str, Source], dist_info: str, modes: Mapping[str, int], epoch: int) -> None:
    """:func:`write_wheel` from streamed sources: each member hashed for RECORD as it is written.

    Sorted order, dist-info last, one timestamp, written to a hidden temporary file of this
    process (:func:`partial_path`) that replaces ``dest`` only when complete (and is removed on
    any failure).
    """
    record_name = f"{dist_info}/RECORD"
    order = sorted(sources, key=lambda n: (n.startswith(dist_info + "/"), n))
    stamp = _zip_time(epoch)
    tmp = partial_path(dest)
    try:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            rows = [(n, *_write_member(zf, _zip_info(n, stamp, modes), sources[n])) for n in order]
            buf = io.StringIO()
            csv.writer(buf, lineterminator="\n").writerows([*rows, (record_name, "", "")])
            zf.writestr(_zip_info(record_name, stamp, modes), buf.getvalue().encode())
        replace_into(tmp, dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _zip_info(name: str, stamp: tuple[int, int, int, int, int, int], modes: Mapping[str, int]) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=stamp)
    info.external_attr = modes.get(name, 0o644 << 16) or (0o644 << 16)
    info.compress_type = zipfile.ZIP_DEFLATED
    return info


def _write_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, source: Source) -> tuple[str, str]:
    """Stream one member into ``zf`` (its declared size picks zip64 as writestr would); (hash, size) for RECORD."""
    info.file_size, chunks = source[0], source[1]
    digest, size = hashlib.sha256(), 0
    with zf.open(info, "w") as out:
        for chunk in chunks():
            digest.update(chunk)
            size += len(chunk)
            out.write(chunk)
    return record_digest(digest), str(size)


def _zip_time(epoch: int) -> tuple[int, int, int, int, int, int]:
    import time

    t = time.gmtime(max(epoch, ZIP_EPOCH))
    return (t.tm_year, t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec - t.tm_sec % 2)


def label(wheel: Wheel, version: Version, requirements: tuple[Requirement, ...], dest_dir: Path, epoch: int) -> Path:
    """Give ``wheel`` the variant's labelled version and the whole Requires-Dist ``requirements`` (the
    pipeline passes the build's own list with the variant's runtime requirements added).

    A build that already did (PyTorch's ``PYTORCH_BUILD_VERSION`` style) is copied unchanged;
    otherwise the version and Requires-Dist are rewritten and RECORD regenerated.
    """
    dest_dir.mkdir(parents=True, exist_ok=True)
    same_reqs = sorted(map(str, wheel.requires_dist)) == sorted(map(str, requirements))
    if wheel.version == version and same_reqs:
        return Path(shutil.copy2(wheel.path, dest_dir / wheel.path.name))
    return rewrite(wheel, dest_dir, version=version, requirements=requirements, epoch=epoch)
