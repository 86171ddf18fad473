"""Wheel files as values: read name, tags, METADATA and RECORD (writing them is :mod:`builders.wheel.writer`).

Names and tags always go through ``packaging`` (``parse_wheel_filename``).

Every wheel is untrusted input, read defensively through :mod:`builders.wheel.zipcheck`: the
central directory is capped before it is parsed, every member name, type, flag and compression
method is checked (:attr:`WheelReader.problems`), and what a member may inflate to is capped from
its declared sizes before anything is inflated, then enforced again while streaming (declared
sizes can lie). A member that is unsafe to inflate is never inflated; what is wrong is a :class:`Finding`
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
import zipfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.tags import Tag, parse_tag
from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import Version

from builders.base.errors import WheelError
from builders.wheel.zipcheck import (
    GIB,
    MAX_READ,
    MAX_TOTAL_INFLATED,
    MIB,
    ZIP_ERRORS,
    Finding,
    archive_problems,
    duplicate_problems,
    member_problems,
    open_zip,
    printable,
    refusal,
)

# 1980-01-01 is the earliest time a zip can hold; used when SOURCE_DATE_EPOCH is unset.
ZIP_EPOCH = 315532800

# Streamed members are read this much at a time: memory stays flat whatever a member's size.
CHUNK_SIZE = 1 << 20


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
            with open_zip(fh, size, str(self.path)) as zf:
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
        return parse_metadata(self.read(f"{self.dist_info}/METADATA"))

    @cached_property
    def wheel_tags(self) -> frozenset[Tag]:
        """The ``Tag:`` lines of the WHEEL file."""
        info = parse_metadata(self.read(f"{self.dist_info}/WHEEL"))
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




def parse_metadata(data: bytes) -> email.message.Message:
    """METADATA (or WHEEL) bytes as headers, the way the installers read them (compat32)."""
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

