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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from packaging.requirements import Requirement
from packaging.tags import Tag, parse_tag
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import Version

from .errors import WheelError
from .targets import wheel_filename

# 1980-01-01 is the earliest time a zip can hold; used when SOURCE_DATE_EPOCH is unset.
ZIP_EPOCH = 315532800


@dataclass(frozen=True)
class RecordEntry:
    path: str
    hash: str
    size: str


@dataclass(frozen=True)
class Wheel:
    """A wheel file on disk, read lazily."""

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

    @cached_property
    def dist_info(self) -> str:
        """The ``.dist-info`` folder actually present in the archive."""
        with self._zip() as zf:
            dirs = {n.split("/", 1)[0] for n in zf.namelist() if n.split("/", 1)[0].endswith(".dist-info")}
        if len(dirs) != 1:
            raise WheelError(f"{self.path.name}: expected one .dist-info folder, found {sorted(dirs) or 'none'}")
        return dirs.pop()

    def read(self, member: str) -> bytes:
        with self._zip() as zf:
            try:
                return zf.read(member)
            except KeyError as exc:
                raise WheelError(f"{self.path.name}: missing {member}") from exc

    def names(self) -> list[str]:
        with self._zip() as zf:
            return zf.namelist()

    @cached_property
    def metadata(self) -> email.message.Message:
        return email.parser.BytesParser(policy=email.policy.compat32).parsebytes(self.read(f"{self.dist_info}/METADATA"))

    @cached_property
    def wheel_tags(self) -> frozenset[Tag]:
        """The ``Tag:`` lines of the WHEEL file."""
        info = email.parser.BytesParser(policy=email.policy.compat32).parsebytes(self.read(f"{self.dist_info}/WHEEL"))
        return frozenset(t for line in info.get_all("Tag", []) for t in parse_tag(line))

    @property
    def requires_dist(self) -> tuple[Requirement, ...]:
        return tuple(Requirement(r) for r in self.metadata.get_all("Requires-Dist", []))

    def record(self) -> list[RecordEntry]:
        text = self.read(f"{self.dist_info}/RECORD").decode()
        return [RecordEntry(*(row + ["", ""])[:3]) for row in csv.reader(io.StringIO(text)) if row]

    def _zip(self) -> zipfile.ZipFile:
        try:
            return zipfile.ZipFile(self.path)
        except (OSError, zipfile.BadZipFile) as exc:
            raise WheelError(f"{self.path}: not a readable wheel: {exc}") from exc


def record_hash(data: bytes) -> str:
    """The RECORD form of a sha256: ``sha256=<urlsafe b64, no padding>``."""
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


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
