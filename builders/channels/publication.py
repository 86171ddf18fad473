"""Publish a channel's per-variant indexes to a bucket, cumulatively: plan, then apply.

``site`` is what :func:`builders.index.pages.build_index` wrote for this publication with the
channel's layout (``whl/test/<label>/...``: the wheels, their ``.metadata`` files, the mirrored
requirements and ``mirror.json``). The plan reads what the bucket holds under each of those
label folders, so that earlier releases, candidates and nightlies stay listed:

- the files already published are known from the bucket's own PEP 691 pages (each file's
  sha256, its metadata's sha256, read back and checked against the ``.metadata`` object); a
  file in the bucket that no page lists (left by a publication that stopped before its pages)
  is hashed from its bytes;
- a new file whose name is published with other bytes is *refused* on the release channel
  (nothing is written at all: :class:`PublishRefused`), and *replaced* on test and nightly,
  recorded with both digests;
- on nightly, each variant's index keeps the project's newest ``keep`` versions; older ones
  are *pruned*, from the pages first and from the bucket after;
- every page (each project's ``index.html``/``index.json``, the label's root pages,
  ``SHA256SUMS``, ``mirror.json``) is rewritten from the merged set with the same writer the
  static index uses.

Apply uploads the files first and the pages last, then deletes what was pruned, so a reader never
sees a page that links a missing file; then the publication record.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import Version

from builders.base import redact
from builders.base.errors import ObjectStoreError, PublishRefused, SelectionError
from builders.channels.objectstore import Bucket, StoredObject, cache_control
from builders.index.mirror import RECORD
from builders.index.pages import IndexedFile, describe, merge_record, project_html, project_json, root_html, root_json
from builders.matrix.model import Matrix
from builders.matrix.release_channels import ChannelName, ReleaseChannel, nightly_date
from builders.wheel.archive import Wheel

RECORDS = "publish-records/"  # the site-level folder of publication records, one JSON per publication


def channel_matrix(m: Matrix, channel: ReleaseChannel, wheels: list[Path]) -> Matrix:
    """The matrix as ``channel`` built the wheels: for nightly, the commit date is read from their dev version
    (one date for all), and that version must be the channel's for that date."""
    if channel.name is not ChannelName.NIGHTLY:
        return m.on_channel(channel.name)
    versions = {Version(Wheel(w).version.public) for w in wheels}
    dates = {nightly_date(v) for v in versions}
    if len(versions) != 1 or None in dates:
        raise SelectionError(f"the nightly channel publishes one dev release built from one commit; these wheels carry "
                             f"{', '.join(sorted(map(str, versions)))}")
    (day,) = dates
    built = m.on_channel(channel.name, day)
    if built.project.version not in versions:
        raise SelectionError(f"wheels of {versions.pop()} are not the nightly of {day} ({built.project.version})")
    return built


@dataclass(frozen=True, kw_only=True)
class Upload:
    key: str  # relative to the bucket URL's prefix
    source: Path | bytes
    sha256: str


@dataclass(frozen=True, kw_only=True)
class Change:
    key: str
    old_sha256: str
    new_sha256: str


@dataclass(frozen=True, kw_only=True)
class Publication:
    """Everything one publication will do, computed before the first write."""

    channel: ReleaseChannel
    files: tuple[Upload, ...]  # new and replacing files (wheels, .metadata), uploaded first
    pages: tuple[Upload, ...]  # rewritten pages, uploaded after every file
    pruned: tuple[str, ...]  # deleted last
    unchanged: tuple[str, ...] = ()
    replaced: tuple[Change, ...] = ()
    refused: tuple[Change, ...] = ()
    served: tuple[tuple[str, str], ...] = ()  # every wheel the pages list afterwards: (key, sha256), sorted

    @property
    def added(self) -> tuple[str, ...]:
        changed = {c.key for c in self.replaced}
        return tuple(u.key for u in self.files if u.key not in changed)


@dataclass(frozen=True, kw_only=True)
class SiteEntry:
    """One file an index folder lists: its description and where its bytes come from (None: already stored)."""

    info: IndexedFile
    source: Path | None = None


# --- what is published --------------------------------------------------------------------------


def published_entries(bucket: Bucket, folder: str, label: str) -> dict[str, SiteEntry]:
    """The files the bucket's project pages under ``folder`` (a label's index) list: key -> entry."""
    listing = bucket.listing(folder)
    out: dict[str, SiteEntry] = {}
    for key in sorted(k for k in listing if k.count("/") == folder.count("/") + 1 and k.endswith("/index.json")):
        project = key[len(folder):].split("/")[0]
        page = json.loads(bucket.read(key))
        for item in page.get("files", []):
            info = _stored_info(bucket, f"{folder}{project}/", project, label, item)
            out[f"{folder}{project}/{info.filename}"] = SiteEntry(info=info)
    return out


def _stored_info(bucket: Bucket, folder: str, project: str, label: str, item: dict[str, Any]) -> IndexedFile:
    filename = item["filename"]
    metadata = bucket.read_if_there(f"{folder}{filename}.metadata") or b""
    if hashlib.sha256(metadata).hexdigest() != item.get("core-metadata", {}).get("sha256"):
        raise ObjectStoreError(f"{bucket.url}{folder}{filename}.metadata is missing or not what the page declares: "
                               "the bucket's pages disagree with its files (repair it before publishing)")
    return IndexedFile(filename=filename, project=project, label=label, sha256=item["hashes"]["sha256"],
                       size=int(item.get("size", 0)), version=str(parse_wheel_filename(filename)[1]),
                       requires_python=item.get("requires-python"), metadata=metadata, yanked=yanked(item),
                       provenance=item["provenance"] if isinstance(item.get("provenance"), str) else None)


def yanked(item: dict[str, Any]) -> str | None:
    """PEP 691's ``yanked`` (absent or false: not yanked; true: yanked with no reason; a string: the reason)."""
    value = item.get("yanked", False)
    if value is False or value is None:
        return None
    return value if isinstance(value, str) else ""


def local_entries(site: Path, folder: str, label: str) -> dict[str, SiteEntry]:
    """The wheels ``index`` wrote under ``site/folder``: key -> entry (its bytes to upload)."""
    base = site / folder
    return {f"{folder}{w.parent.name}/{w.name}": SiteEntry(info=describe(w, label), source=w)
            for w in sorted(base.glob("*/*.whl"))}


def label_folders(site: Path, channel: ReleaseChannel, labels: Iterable[str]) -> list[tuple[str, str]]:
    """(label, its folder relative to the site) for every label with an index under ``site``."""
    return [(label, channel.index_path(label)) for label in sorted(labels) if (site / channel.index_path(label)).is_dir()]


# --- the plan ---------------------------------------------------------------------------------


def plan(bucket: Bucket, channel: ReleaseChannel, site: Path, labels: Iterable[str], *, project: str) -> Publication:
    """What publishing ``site`` on ``channel`` does to ``bucket`` (module docstring); nothing is written."""
    files: list[Upload] = []
    pages: list[Upload] = []
    pruned: list[str] = []
    unchanged: list[str] = []
    replaced: list[Change] = []
    refused: list[Change] = []
    served: dict[str, str] = {}
    for label, folder in label_folders(site, channel, labels):
        stored, local = published_entries(bucket, folder, label), local_entries(site, folder, label)
        unlisted = _unlisted(bucket, folder, stored)
        for key, entry in local.items():
            old = stored[key].info.sha256 if key in stored else unlisted.get(key)
            if old == entry.info.sha256:
                unchanged.append(key)
                continue
            if old is not None:
                (replaced if channel.replaces else refused).append(Change(key=key, old_sha256=old,
                                                                          new_sha256=entry.info.sha256))
            files.extend(_uploads(key, entry))
        same = set(unchanged)
        merged = {**stored, **{k: e for k, e in local.items() if k not in same}}  # a yank stays
        gone = _prune(merged, channel, project)
        pruned += [k for key in gone for k in (key, f"{key}.metadata")]
        kept = {k: e for k, e in merged.items() if k not in gone}
        local_record = site / folder / RECORD
        pages += index_pages(bucket, folder, kept, local_record.read_bytes() if local_record.is_file() else None)
        served.update({k: e.info.sha256 for k, e in kept.items()})
    return Publication(channel=channel, files=tuple(files), pages=tuple(pages), pruned=tuple(pruned),
                       unchanged=tuple(unchanged), replaced=tuple(replaced), refused=tuple(refused),
                       served=tuple(sorted(served.items())))


def _unlisted(bucket: Bucket, folder: str, stored: dict[str, SiteEntry]) -> dict[str, str]:
    """sha256 of each wheel in the bucket under ``folder`` that no page lists (read from its bytes)."""
    listing = bucket.listing(folder)
    return {key: bucket.sha256(key) for key in listing if key.endswith(".whl") and key not in stored}


def _uploads(key: str, entry: SiteEntry) -> list[Upload]:
    assert entry.source is not None
    metadata = entry.info.metadata
    return [Upload(key=key, source=entry.source, sha256=entry.info.sha256),
            Upload(key=f"{key}.metadata", source=metadata, sha256=entry.info.metadata_sha256)]


def _prune(entries: dict[str, SiteEntry], channel: ReleaseChannel, project: str) -> set[str]:
    """The keys of the project's own wheels past the channel's retention (its newest ``keep`` versions stay)."""
    if channel.keep is None:
        return set()
    own = {k: e for k, e in entries.items() if e.info.project == canonicalize_name(project)}
    versions = sorted({Version(e.info.version) for e in own.values()}, reverse=True)
    old = set(versions[channel.keep:])
    return {k for k, e in own.items() if Version(e.info.version) in old}


def index_pages(bucket: Bucket, folder: str, entries: dict[str, SiteEntry], record: bytes | None) -> list[Upload]:
    """Every page of one label's index, from ``entries``: projects' pages, then the root's, SHA256SUMS, and
    ``mirror.json`` (the bucket's merged with ``record``, this publication's, if any)."""
    by_project: dict[str, list[IndexedFile]] = {}
    for entry in entries.values():
        by_project.setdefault(entry.info.project, []).append(entry.info)
    out = []
    for name, infos in sorted(by_project.items()):
        out += [_page(f"{folder}{name}/index.html", project_html(name, infos).encode()),
                _page(f"{folder}{name}/index.json", _dumps(project_json(name, infos)))]
    out += [_page(f"{folder}index.html", root_html(sorted(by_project)).encode()),
            _page(f"{folder}index.json", _dumps(root_json(sorted(by_project)))),
            _page(f"{folder}SHA256SUMS", sha256sums(entries, folder))]
    merged = merged_record(bucket, folder, record)
    return out + ([_page(f"{folder}{RECORD}", merged)] if merged is not None else [])


def sha256sums(entries: dict[str, SiteEntry], folder: str) -> bytes:
    """``sha256sum`` lines of every wheel of the index, paths relative to it (``ci/checksums.sh``'s form)."""
    lines = sorted((key[len(folder):], e.info.sha256) for key, e in entries.items())
    return "".join(f"{sha}  {path}\n" for path, sha in lines).encode()


def merged_record(bucket: Bucket, folder: str, new: bytes | None) -> bytes | None:
    """``mirror.json``: the bucket's and ``new``, merged (every file either mirrored, both's targets)."""
    return merged_bytes(bucket.read_if_there(f"{folder}{RECORD}"), new)


def merged_bytes(old: bytes | None, new: bytes | None) -> bytes | None:
    """Two ``mirror.json`` records merged (:func:`builders.index.pages.merge_record`); ``old`` where there is no new."""
    if new is None:
        return old
    with tempfile.TemporaryDirectory(prefix="builders-record-") as tmp:
        incoming, merged = Path(tmp) / "new.json", Path(tmp) / RECORD
        incoming.write_bytes(new)
        if old is not None:
            merged.write_bytes(old)
        merge_record(incoming, merged)
        return merged.read_bytes()


def _page(key: str, data: bytes) -> Upload:
    return Upload(key=key, source=data, sha256=hashlib.sha256(data).hexdigest())


def _dumps(data: object) -> bytes:
    return (json.dumps(data, indent=2, sort_keys=True) + "\n").encode()


# --- apply ------------------------------------------------------------------------------------


def refuse(publication: Publication) -> None:
    """Raise :class:`PublishRefused` when the plan would change a release file's bytes."""
    if publication.refused:
        shown = "; ".join(f"{c.key} (published sha256 {c.old_sha256[:12]}..., new {c.new_sha256[:12]}...)"
                          for c in publication.refused[:5])
        raise PublishRefused(f"{len(publication.refused)} file(s) on the {publication.channel.name.value} channel "
                             f"would change, nothing was written: {shown}; {_never_changes(publication.channel)}")


def _never_changes(channel: ReleaseChannel) -> str:
    if channel.name is ChannelName.NIGHTLY:
        return ("a nightly's version is its commit date: that day's nightly is published already (the same commit "
                "gives the same bytes, a no-op); publish the next day's")
    return "a published file never changes: release a new version"


def apply(bucket: Bucket, publication: Publication) -> None:
    """Files, then pages, then deletions; a refused plan writes nothing. A wheel the plan found absent is written
    only if still absent (rclone ignores the condition, which is why the plan looked first); a ``.metadata`` is
    not conditional, the plan never looked for one."""
    refuse(publication)
    name = publication.channel.name.value
    absent = {key for key in publication.added if key.endswith(".whl")}
    for upload in (*publication.files, *publication.pages):
        bucket.upload(upload.key, upload.source, cache_control=cache_control(name, upload.key),
                      if_absent=upload.key in absent)
    if publication.pruned:
        bucket.delete(publication.pruned)


def unresolved(bucket: Bucket, publication: Publication) -> list[str]:
    """Every link of the project pages ``publication`` wrote that the bucket does not hold as declared: a listed
    wheel missing or of another size than the page says, or its ``.metadata`` missing (each named, with why).
    Read from one listing per label folder, after :func:`apply`: a reader must never meet a dead link."""
    problems: list[str] = []
    for folder, pages in _project_pages(publication).items():
        listing = bucket.listing(folder)
        for page in pages:
            problems += _dead_links(page, listing)
    return problems


def _project_pages(publication: Publication) -> dict[str, list[Upload]]:
    """The written projects' ``index.json`` pages by label folder (a folder is where ``SHA256SUMS`` was written)."""
    folders = [u.key.removesuffix("SHA256SUMS") for u in publication.pages if u.key.endswith("/SHA256SUMS")]
    return {folder: [u for u in publication.pages if u.key.startswith(folder) and u.key.endswith("/index.json")
                     and u.key[len(folder):].count("/") == 1] for folder in folders}


def _dead_links(page: Upload, listing: dict[str, StoredObject]) -> list[str]:
    assert isinstance(page.source, bytes)  # pages are written from memory
    base = page.key.removesuffix("index.json")
    problems = []
    for item in json.loads(page.source).get("files", []):
        key, size = f"{base}{item['filename']}", item.get("size")
        if key not in listing:
            problems.append(f"{key}: linked by {page.key}, not in the bucket")
        elif size is not None and listing[key].size != int(size):
            problems.append(f"{key}: {listing[key].size} bytes in the bucket, {page.key} declares {size}")
        if item.get("core-metadata") and f"{key}.metadata" not in listing:
            problems.append(f"{key}.metadata: linked by {page.key} (PEP 658), not in the bucket")
    return problems


def record(publication: Publication, *, at: datetime.datetime, version: str, bucket: Bucket) -> dict[str, Any]:
    """The publication as JSON: what was added, replaced (both digests), pruned, left unchanged."""
    return {
        "channel": publication.channel.name.value, "bucket": str(bucket.url), "version": version,
        "at": at.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "added": list(publication.added),
        "replaced": [{"key": c.key, "old_sha256": c.old_sha256, "new_sha256": c.new_sha256} for c in publication.replaced],
        "pruned": list(publication.pruned), "unchanged": list(publication.unchanged),
        "served": dict(publication.served),
    }


def store_record(bucket: Bucket, channel: str, data: Mapping[str, Any], *, at: datetime.datetime,
                 kind: str = "") -> str:
    """``data`` stored beside the channels as ``publish-records/<channel>/<time>[-kind].json`` (a publication, a
    promotion, a yank); returns its key."""
    key = f"{RECORDS}{channel}/{at.astimezone(datetime.UTC):%Y%m%dT%H%M%S%fZ}{'-' + kind if kind else ''}.json"
    bucket.upload(key, _dumps(redact.scrub(data)), cache_control=cache_control(channel, key))
    return key


def write_record(bucket: Bucket, publication: Publication, *, at: datetime.datetime, version: str) -> dict[str, Any]:
    """The record, stored beside the channels (``publish-records/<channel>/<time>.json``), and returned."""
    data = record(publication, at=at, version=version, bucket=bucket)
    store_record(bucket, publication.channel.name.value, data, at=at)
    return data

