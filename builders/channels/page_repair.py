"""Pages rebuilt from the objects a bucket holds: what ``publish``'s exit 40 ("the bucket's pages disagree with
its files") asks for.

A publication that stopped between its files and its pages, or a hand deletion, leaves pages that link a
missing wheel or ``.metadata``, or wheels no page lists. ``publish`` and ``promote-release`` refuse to build
on such a folder. The repair reads each label folder's objects, never the pages' word: every wheel
present is listed with the sha256 of its bytes (the store's checksum where it keeps one), its
``.metadata`` written from the wheel where it is missing, yanks kept from the old pages where they can
be read, and every page rewritten; pages of a project with no wheel left are deleted.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

from builders.channels.objectstore import Bucket, cache_control
from builders.channels.publication import SiteEntry, Upload, index_pages, yanked
from builders.index.pages import IndexedFile
from builders.matrix.release_channels import ReleaseChannel
from builders.wheel.archive import Wheel, header, parse_metadata


@dataclass(frozen=True, kw_only=True)
class Repair:
    channel: ReleaseChannel
    metadata: tuple[Upload, ...]  # .metadata files made from their wheels, written first
    pages: tuple[Upload, ...]
    deleted: tuple[str, ...]  # pages of projects with no wheel left
    listed: tuple[str, ...]  # every wheel the pages list afterwards


def stored_entry(bucket: Bucket, key: str, label: str) -> SiteEntry | None:
    """The index entry of the wheel object ``key`` from its own bytes (None when there is no such object)."""
    head = bucket.head(key)
    if head is None:
        return None
    info = _describe(bucket, key, label, bucket.read_if_there(f"{key}.metadata"))
    return SiteEntry(info=dataclasses.replace(info, size=head.size, sha256=bucket.verified_sha256(key)))


def _describe(bucket: Bucket, key: str, label: str, metadata: bytes | None) -> IndexedFile:
    filename = key.rsplit("/", 1)[-1]
    name, version, _build, _tags = parse_wheel_filename(filename)
    if metadata is None:
        metadata = _metadata_of(bucket, key, filename)
    requires_python = header(parse_metadata(metadata), "Requires-Python")
    return IndexedFile(filename=filename, project=canonicalize_name(name), label=label, sha256="", size=0,
                       version=str(version), requires_python=requires_python.strip() if requires_python else None,
                       metadata=metadata)


def _metadata_of(bucket: Bucket, key: str, filename: str) -> bytes:
    """The wheel's METADATA, read from its bytes through the capped wheel reader."""
    with tempfile.TemporaryDirectory(prefix="builders-repair-") as tmp:
        path = Path(tmp) / filename
        path.write_bytes(bucket.read(key))
        wheel = Wheel(path)
        with wheel.open() as reader:
            return reader.read(f"{reader.dist_info}/METADATA")


def _old_yanks(bucket: Bucket, page: str) -> dict[str, str | None]:
    """file name -> its yank on the old page, where the page can still be read (else nothing is kept)."""
    with contextlib.suppress(ValueError, KeyError, TypeError):
        data = json.loads(bucket.read_if_there(page) or b"{}")
        return {item["filename"]: yanked(item) for item in data.get("files", [])}
    return {}


def wheel_keys(keys: Iterable[str], folder: str) -> list[str]:
    """The wheels directly in a project folder of ``folder`` (``folder/<project>/<file>.whl``)."""
    out = []
    for key in keys:
        parts = key[len(folder):].split("/")
        if key.startswith(folder) and len(parts) == 2 and parts[1].endswith(".whl"):
            with contextlib.suppress(InvalidWheelFilename):
                parse_wheel_filename(parts[1])
                out.append(key)
    return sorted(out)


def plan(bucket: Bucket, channel: ReleaseChannel, labels: Iterable[str]) -> Repair:
    """What repairing every label's index of ``channel`` writes and deletes (nothing is written here)."""
    metadata: list[Upload] = []
    pages: list[Upload] = []
    deleted: list[str] = []
    listed: list[str] = []
    for label in sorted(labels):
        folder = channel.index_path(label)
        listing = bucket.listing(folder)
        if not listing:
            continue
        entries: dict[str, SiteEntry] = {}
        for key in wheel_keys(listing, folder):
            entry = stored_entry(bucket, key, label)
            assert entry is not None  # listed a moment ago
            project_page = f"{folder}{entry.info.project}/index.json"
            old = _old_yanks(bucket, project_page).get(entry.info.filename)
            entries[key] = SiteEntry(info=dataclasses.replace(entry.info, yanked=old))
            if f"{key}.metadata" not in listing:
                metadata.append(Upload(key=f"{key}.metadata", source=entry.info.metadata,
                                       sha256=entry.info.metadata_sha256))
        projects = {e.info.project for e in entries.values()}
        deleted += sorted(k for k in listing if k.count("/") == folder.count("/") + 1
                          and k.rsplit("/", 1)[-1] in ("index.html", "index.json")
                          and k[len(folder):].split("/")[0] not in projects)
        pages += index_pages(bucket, folder, entries, None)
        listed += sorted(entries)
    return Repair(channel=channel, metadata=tuple(metadata), pages=tuple(pages), deleted=tuple(deleted),
                  listed=tuple(listed))


def apply(bucket: Bucket, repair: Repair) -> None:
    """The missing ``.metadata`` first, then every page, then the orphaned pages deleted."""
    name = repair.channel.name.value
    for upload in (*repair.metadata, *repair.pages):
        bucket.upload(upload.key, upload.source, cache_control=cache_control(name, upload.key))
    if repair.deleted:
        bucket.delete(repair.deleted)
