"""Wheels written reproducibly: a copy with a new version and Requires-Dist (:func:`rewrite`,
:func:`label`), or one made from members (:func:`write_wheel`).

A rewrite keeps every payload byte, regenerates RECORD, and writes entries in a deterministic
order with a fixed timestamp, so the same input gives the same bytes; a wheel is written to a
hidden file of this process (:func:`partial_path`) and renamed into place only when complete.
"""

from __future__ import annotations

import csv
import hashlib
import io
import re
import shutil
import time
import zipfile
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from pathlib import Path

from packaging.requirements import Requirement
from packaging.tags import Tag
from packaging.utils import canonicalize_name
from packaging.version import Version

from builders.base.errors import WheelError
from builders.base.safe_output import partial_path, replace_into
from builders.matrix.targets import wheel_filename
from builders.wheel import sbom
from builders.wheel.archive import ZIP_EPOCH, Wheel, WheelReader, record_digest
from builders.wheel.zipcheck import printable

# A member to write: its declared size, and a function giving its bytes in chunks.
Source = tuple[int, Callable[[], Iterable[bytes]]]


def rewrite(
    wheel: Wheel,
    dest_dir: Path,
    *,
    version: Version | None = None,
    requirements: Iterable[Requirement] | None = None,
    epoch: int = ZIP_EPOCH,
    added: Mapping[str, bytes] | None = None,
) -> Path:
    """Other members keep their bytes, streamed (memory stays flat); a wheel whose archive has any problem is
    refused before anything is written. ``added``: dist-info files (by their path in it) written or replaced."""
    version = version or wheel.version
    requirements = tuple(requirements) if requirements is not None else None  # read for METADATA and the SBOM
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
        for name, data in {**_restated_sbom(reader, version, requirements), **(added or {})}.items():
            sources[f"{new_dist_info}/{name}"] = (len(data), partial(iter, (data,)))
        write_members(dest, sources, new_dist_info, modes, epoch)
    return dest


def _restated_sbom(reader: WheelReader, version: Version, requirements: Iterable[Requirement] | None) -> dict[str, bytes]:
    """builders' SBOM of the copy (its version and Requires-Dist restated), where the wheel has one it can read."""
    name = f"{reader.dist_info}/{sbom.SBOM_NAME}"
    if name not in {i.filename for i in reader.infos}:
        return {}
    try:
        return {sbom.SBOM_NAME: sbom.restate(reader.read(name), str(version), requirements)}
    except (ValueError, KeyError, TypeError, AttributeError):  # a damaged SBOM stays as it is: verify says so
        return {}


def _single_tag(wheel: Wheel) -> Tag:
    return sorted(wheel.tags, key=str)[0]


def _rename(wheel: Wheel, version: Version) -> str:
    """Keep a multi-tag wheel's compressed tag set, change only the version."""
    dist, _old_version, rest = wheel.path.name.split("-", 2)
    return f"{dist}-{version}-{rest}"


def _new_metadata(raw: bytes, version: Version, requirements: Iterable[Requirement] | None) -> bytes:
    """Every other line keeps its bytes, whatever their encoding; fields are found as pip reads them, and a new
    line ends as the first line does (CRLF or LF)."""
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
    return next((e for e in _LINE_ENDS if line.endswith(e)), b"\n")


def write_wheel(dest: Path, members: Mapping[str, bytes], dist_info: str, modes: Mapping[str, int], epoch: int) -> None:
    """Write members in sorted order, dist-info last, RECORD generated, atomically."""
    write_members(dest, {n: (len(data), partial(iter, (data,))) for n, data in members.items()}, dist_info, modes, epoch)


def partial_writer(path: Path) -> int | None:
    """The pid that wrote the :func:`partial_path` ``path``, or None when the name carries none."""
    pid = path.name.removesuffix(".partial").rpartition(".")[2]
    return int(pid) if pid.isdigit() else None


def write_members(dest: Path, sources: Mapping[str, Source], dist_info: str, modes: Mapping[str, int], epoch: int) -> None:
    """Members hashed as they are written; ``dest`` is replaced only when complete (:func:`partial_path`)."""
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
    t = time.gmtime(max(epoch, ZIP_EPOCH))
    return (t.tm_year, t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec - t.tm_sec % 2)


def label(wheel: Wheel, version: Version, requirements: tuple[Requirement, ...], dest_dir: Path, epoch: int) -> Path:
    """A build that already did (PyTorch's ``PYTORCH_BUILD_VERSION`` style) is copied unchanged."""
    dest_dir.mkdir(parents=True, exist_ok=True)
    same_reqs = sorted(map(str, wheel.requires_dist)) == sorted(map(str, requirements))
    if wheel.version == version and same_reqs:
        return Path(shutil.copy2(wheel.path, dest_dir / wheel.path.name))
    return rewrite(wheel, dest_dir, version=version, requirements=requirements, epoch=epoch)
