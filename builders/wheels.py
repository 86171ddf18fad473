"""Wheel files as values: read name, tags, METADATA and RECORD; rewrite them reproducibly.

Names and tags always go through ``packaging`` (``parse_wheel_filename``); a rewrite keeps
every payload byte, regenerates RECORD, and writes entries in a deterministic order with a
fixed timestamp so the same input gives the same bytes.
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
import shutil
import zipfile
import zlib
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import BinaryIO

from packaging.requirements import InvalidRequirement, Requirement
from packaging.tags import Tag, parse_tag
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import Version

from .errors import WheelError
from .targets import wheel_filename

# 1980-01-01 is the earliest time a zip can hold; used when SOURCE_DATE_EPOCH is unset.
ZIP_EPOCH = 315532800

# Streamed members are read this much at a time: memory stays flat whatever a member's size.
CHUNK_SIZE = 1 << 20

# What zipfile raises on a damaged or unsupported archive (bad CRC, bad deflate stream,
# unknown compression method, encrypted member): each becomes one WheelError.
ZIP_ERRORS = (zipfile.BadZipFile, zlib.error, OSError, EOFError, NotImplementedError, RuntimeError, ValueError)


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
            raise WheelError(f"{self.path.name}: {exc}") from exc
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
        with fh, self._zip(fh) as zf:
            yield WheelReader(self, zf, size=os.fstat(fh.fileno()).st_size)

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

    def _zip(self, source: BinaryIO | None = None) -> zipfile.ZipFile:
        try:
            return zipfile.ZipFile(source or self.path)
        except ZIP_ERRORS as exc:
            raise WheelError(f"{self.path}: not a readable wheel: {exc}") from exc


class WheelReader:
    """A wheel's archive held open: names, small reads and chunked streams from one ZipFile.

    Cost is linear in the member count (the central directory is parsed once) and memory is
    bounded by the chunk size for streamed members. Parsed dist-info files are cached here.
    """

    def __init__(self, wheel: Wheel, zf: zipfile.ZipFile, *, size: int) -> None:
        self.wheel = wheel
        self.size = size  # of the file that was opened, whatever happens to the path since
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
        return tuple(i for i in self._zf.infolist() if not i.is_dir())

    def names(self) -> list[str]:
        return self._zf.namelist()

    def read(self, member: str) -> bytes:
        """A whole member; for the small dist-info files (stream anything that may be large)."""
        try:
            return self._zf.read(member)
        except KeyError as exc:
            raise WheelError(f"{self.path.name}: missing {member}") from exc
        except ZIP_ERRORS as exc:
            raise WheelError(f"{self.path.name}: cannot read {member}: {exc}") from exc

    def stream(self, member: zipfile.ZipInfo, chunk_size: int = CHUNK_SIZE) -> Iterator[bytes]:
        """The member's bytes in chunks of at most ``chunk_size``; its CRC is checked at the end."""
        try:
            with self._zf.open(member) as fh:
                yield from iter(lambda: fh.read(chunk_size), b"")
        except ZIP_ERRORS as exc:
            raise WheelError(f"{self.path.name}: cannot read {member.filename}: {exc}") from exc

    @cached_property
    def dist_info(self) -> str:
        """The ``.dist-info`` folder actually present in the archive."""
        tops = {n.split("/", 1)[0] for n in self._zf.namelist()}
        dirs = {t for t in tops if t.endswith(".dist-info")}
        if len(dirs) != 1:
            raise WheelError(f"{self.path.name}: expected one .dist-info folder, found {sorted(dirs) or 'none'}")
        return dirs.pop()

    @cached_property
    def metadata(self) -> email.message.Message:
        return _parse_headers(self.read(f"{self.dist_info}/METADATA"))

    @cached_property
    def wheel_tags(self) -> frozenset[Tag]:
        """The ``Tag:`` lines of the WHEEL file."""
        info = _parse_headers(self.read(f"{self.dist_info}/WHEEL"))
        return frozenset(t for line in info.get_all("Tag", []) for t in parse_tag(line))

    @property
    def requires_dist(self) -> tuple[Requirement, ...]:
        return _requires_dist(self.metadata)

    def record(self) -> list[RecordEntry]:
        name = f"{self.dist_info}/RECORD"
        try:
            rows = list(csv.reader(io.StringIO(self.read(name).decode("utf-8"))))
        except (UnicodeDecodeError, csv.Error) as exc:
            raise WheelError(f"{self.path.name}: {name} is not a UTF-8 CSV file: {exc}") from exc
        return [RecordEntry(*(row + ["", ""])[:3]) for row in rows if row]


def _parse_headers(data: bytes) -> email.message.Message:
    return email.parser.BytesParser(policy=email.policy.compat32).parsebytes(data)


def _requires_dist(metadata: email.message.Message) -> tuple[Requirement, ...]:
    try:
        return tuple(Requirement(r) for r in metadata.get_all("Requires-Dist", []))
    except InvalidRequirement as exc:
        raise WheelError(f"METADATA has an invalid Requires-Dist: {exc}") from exc


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
    every other member keeps its bytes. Returns the new wheel's path.
    """
    version = version or wheel.version
    name = wheel.name
    tag = _single_tag(wheel)
    new_dist_info = f"{canonicalize_name(name).replace('-', '_')}-{version}.dist-info"
    metadata = _new_metadata(wheel, version, requirements)
    dest = dest_dir / (wheel_filename(name, version, tag) if len(wheel.tags) == 1 else _rename(wheel, version))
    members: dict[str, bytes] = {}
    modes: dict[str, int] = {}
    with wheel._zip() as zf:
        for info in zf.infolist():
            if info.is_dir() or info.filename == f"{wheel.dist_info}/RECORD":
                continue
            renamed = info.filename.replace(wheel.dist_info + "/", new_dist_info + "/", 1)
            members[renamed] = metadata if info.filename == f"{wheel.dist_info}/METADATA" else zf.read(info)
            modes[renamed] = info.external_attr
    write_wheel(dest, members, new_dist_info, modes, epoch)
    return dest


def _single_tag(wheel: Wheel) -> Tag:
    return sorted(wheel.tags, key=str)[0]


def _rename(wheel: Wheel, version: Version) -> str:
    """Keep a multi-tag wheel's compressed tag set, change only the version."""
    dist, _old_version, rest = wheel.path.name.split("-", 2)
    return f"{dist}-{version}-{rest}"


def _new_metadata(wheel: Wheel, version: Version, requirements: Iterable[Requirement] | None) -> bytes:
    msg = wheel.metadata
    lines = []
    body = msg.get_payload()
    for key, value in msg.items():
        if key == "Version":
            value = str(version)
        if key == "Requires-Dist" and requirements is not None:
            continue
        lines.append(f"{key}: {value}")
    if requirements is not None:
        lines += [f"Requires-Dist: {r}" for r in requirements]
    text = "\n".join(lines) + "\n"
    if body:
        text += "\n" + body
    return text.encode()


def write_wheel(dest: Path, members: Mapping[str, bytes], dist_info: str, modes: Mapping[str, int], epoch: int) -> None:
    """Write members in sorted order, dist-info last, RECORD generated, atomically."""
    record_name = f"{dist_info}/RECORD"
    order = sorted(members, key=lambda n: (n.startswith(dist_info + "/"), n))
    rows = [(n, record_hash(members[n]), str(len(members[n]))) for n in order] + [(record_name, "", "")]
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    stamp = _zip_time(epoch)
    tmp = dest.with_name(f".{dest.name}.partial")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name in [*order, record_name]:
            info = zipfile.ZipInfo(name, date_time=stamp)
            info.external_attr = modes.get(name, 0o644 << 16) or (0o644 << 16)
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, buf.getvalue().encode() if name == record_name else members[name])
    os.replace(tmp, dest)


def _zip_time(epoch: int) -> tuple[int, int, int, int, int, int]:
    import time

    t = time.gmtime(max(epoch, ZIP_EPOCH))
    return (t.tm_year, t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec - t.tm_sec % 2)


def label(wheel: Wheel, version: Version, requirements: tuple[Requirement, ...], dest_dir: Path, epoch: int) -> Path:
    """Give ``wheel`` the variant's labelled version and exact runtime requirements.

    A build that already did (PyTorch's ``PYTORCH_BUILD_VERSION`` style) is copied unchanged;
    otherwise the version and Requires-Dist are rewritten and RECORD regenerated.
    """
    dest_dir.mkdir(parents=True, exist_ok=True)
    same_reqs = sorted(map(str, wheel.requires_dist)) == sorted(map(str, requirements))
    if wheel.version == version and same_reqs:
        return Path(shutil.copy2(wheel.path, dest_dir / wheel.path.name))
    return rewrite(wheel, dest_dir, version=version, requirements=requirements, epoch=epoch)
