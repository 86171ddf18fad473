"""``repair-index`` from the ledger: the pages rendered again from what the channel's ledger holds.

Pages lost or damaged (by hand, by a tool that wrote around builders) are a rendering to redo: every
page of every label folder is rendered from the ledger, yanks included, and written where it differs;
a project page of a project the ledger does not hold is deleted. An object under a channel folder that
the ledger never held is a stray: named (in ``--dry-run`` too) and never listed. A file the ledger
holds whose object is gone, or holds other bytes, is named: that is no rendering to redo (exit 40).

A bucket from before the ledger gets one first, built from what its pages still list (unreadable pages
skipped) and its publication records (``publish-records/<channel>/``, their ``served`` files), each
file kept only where its object and ``.metadata`` are stored with the recorded sha256, and with it the
``<file>.provenance`` its page links where the bucket stores one; what could not be accounted for is reported.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote

from builders.base.errors import ObjectStoreError
from builders.channels.evidence import LISTED, FileRecord, LedgerEntry, YankMark
from builders.channels.ledger import ChannelState, Ledger, chained
from builders.channels.objectstore import Bucket
from builders.channels.page_repair import _metadata_of as metadata_of
from builders.channels.provenance import SUFFIX
from builders.channels.publication import RECORDS
from builders.channels.publishing import PAGE_NAMES, current_pages, now, page_keys, render, unrecorded
from builders.matrix.release_channels import ReleaseChannel

HTML_PROVENANCE = re.compile(r'<a [^>]*href="([^"#]*)[^"]*"[^>]*data-provenance="([^"]*)"')


@dataclass(frozen=True, kw_only=True)
class RepairFacts:
    """Everything repair reads, once."""

    channel: ReleaseChannel
    folders: tuple[tuple[str, str], ...]
    state: ChannelState
    adopt: LedgerEntry | None  # the first entry of a bucket from before the ledger (not committed yet)
    sizes: Mapping[str, int]  # every object under the label folders
    pages: Mapping[str, bytes | None]
    digests: Mapping[str, str]  # sha256 of the stored bytes of each file the ledger holds that is stored
    remade: Mapping[str, bytes] = field(default_factory=dict)  # a lost .metadata, made from its wheel's bytes


@dataclass(frozen=True, kw_only=True)
class PageRepair:
    adopt: LedgerEntry | None
    pages: Mapping[str, bytes]
    writes: tuple[str, ...]
    deletes: tuple[str, ...]  # pages of projects the ledger does not hold
    strays: tuple[str, ...]  # objects the ledger never held: never listed
    lost: tuple[str, ...]  # files the ledger holds that the bucket lacks, or holds with other bytes
    remade: Mapping[str, bytes] = field(default_factory=dict)  # lost .metadata made again from its intact wheel

    @property
    def done(self) -> bool:
        return self.adopt is None and not self.writes and not self.deletes and not self.remade


def plan(evidence: RepairFacts) -> PageRepair:
    """The repair, from ``evidence`` alone."""
    state = evidence.state if evidence.adopt is None else evidence.state.after(chained(evidence.state, evidence.adopt))
    mirror = {folder: raw for _label, folder in evidence.folders
              if (raw := evidence.pages.get(f"{folder}mirror.json")) is not None}
    pages = render(state, evidence.folders, mirror)
    writes = tuple(k for k, v in pages.items() if evidence.pages.get(k) != v)
    deletes = tuple(sorted(k for k in evidence.pages if k not in pages and k.rsplit("/", 1)[-1] in PAGE_NAMES
                           and evidence.pages[k] is not None and k.count("/") > min(f.count("/") for _l, f in evidence.folders)))
    strays = tuple(sorted(k for k in evidence.sizes if k not in state.files and k not in state.removed
                          and k.rsplit("/", 1)[-1] not in PAGE_NAMES))
    remade = {k: v for k, v in evidence.remade.items() if k in state.files and sha256(v) == state.files[k].sha256}
    lost = tuple(sorted(k for k, f in state.files.items() if evidence.digests.get(k) != f.sha256 and k not in remade))
    return PageRepair(adopt=evidence.adopt, pages=pages, writes=writes, deletes=deletes, strays=strays, lost=lost,
                  remade=remade)


def gather(bucket: Bucket, ledger: Ledger, channel: ReleaseChannel, labels: Iterable[str]) -> RepairFacts:
    """The ledger (or what a first one would hold), the objects, the pages, the stored digests."""
    folders = tuple((label, channel.index_path(label)) for label in sorted(labels))
    sizes = {k: o.size for _label, folder in folders for k, o in bucket.listing(folder).items()}
    pages = current_pages(bucket, page_keys(sizes, folders))
    state = ledger.read().state
    adopt = None
    if state.head is None:
        adopt = first_entry(bucket, channel, pages, sizes, folders=folders, writer=ledger.writer)
    held = state.files if adopt is None else state.after(chained(state, adopt)).files
    digests = {k: bucket.verified_sha256(k) for k in held if k in sizes}
    remade = {f"{k}.metadata": metadata_of(bucket, k, k.rsplit("/", 1)[-1]) for k, f in held.items()
              if f.form in LISTED and f"{k}.metadata" not in sizes and digests.get(k) == f.sha256}
    return RepairFacts(channel=channel, folders=folders, state=state, adopt=adopt, sizes=sizes, pages=pages,
                    digests=digests, remade=remade)


def first_entry(bucket: Bucket, channel: ReleaseChannel, pages: Mapping[str, bytes | None], sizes: Mapping[str, int],
                *, folders: tuple[tuple[str, str], ...], writer: str) -> LedgerEntry | None:
    """What the readable pages list (with their yanks), then what the publication records served, each kept only
    where its objects are stored with the recorded bytes."""
    files: dict[str, FileRecord] = {}
    yanks: list[YankMark] = []
    for key, raw in pages.items():
        try:
            listed = unrecorded(ChannelState(), {key: raw}, sizes, folders=folders, at=now(), writer=writer)
        except ObjectStoreError:
            continue  # unreadable: what it listed comes from the records, or is reported as a stray
        files.update({f.key: f for f in (listed.added if listed else ())})
        yanks += listed.yanks if listed else ()
    for key, sha in served(bucket, channel).items():
        if key not in files and key in sizes and f"{key}.metadata" in sizes:
            files[key] = FileRecord(key=key, sha256=sha, size=sizes[key])
            files[f"{key}.metadata"] = FileRecord(key=f"{key}.metadata", size=sizes[f"{key}.metadata"], form="metadata",
                                                  sha256=bucket.verified_sha256(f"{key}.metadata"))
    kept = {k: f for k, f in files.items() if bucket.verified_sha256(k) == f.sha256}
    kept = {k: f for k, f in kept.items() if (k if f.form == "metadata" else f"{k}.metadata") in kept
            and (k.removesuffix(".metadata") in kept)}
    links = linked_provenance(pages)
    kept |= provenance_records(links, kept, {p: (bucket.verified_sha256(p), sizes[p])
                                             for p in links.values() if p in sizes})
    if not kept:
        return None
    return LedgerEntry(seq=0, parent=None, parent_sha256=None, kind="adopt", at=now(), writer=writer,
                 added=tuple(kept[k] for k in sorted(kept)),
                 yanks=tuple(YankMark(key=y.key, reason=y.reason) for y in yanks if y.key in kept),
                 note="built by repair-index from the readable pages and the publication records")


def linked_provenance(pages: Mapping[str, bytes | None]) -> dict[str, str]:
    """wheel key -> the ``<file>.provenance`` key its readable project page links (PEP 740: ``provenance`` in JSON,
    ``data-provenance`` in HTML); an unreadable page links nothing."""
    out: dict[str, str] = {}
    for key, raw in sorted(pages.items()):
        base = key.rsplit("/", 1)[0] + "/"
        if raw is None or key.count("/") < 2:
            continue
        if key.endswith("/index.json") and _is_json(raw) and isinstance(files := json.loads(raw).get("files"), list):
            out |= {base + str(f["filename"]): base + unquote(f["provenance"]) for f in files
                    if isinstance(f, dict) and "filename" in f and isinstance(f.get("provenance"), str)}
        elif key.endswith("/index.html"):
            out |= {base + unquote(html.unescape(href)): base + unquote(html.unescape(link))
                    for href, link in HTML_PROVENANCE.findall(raw.decode(errors="replace"))}
    return out


def provenance_records(links: Mapping[str, str], kept: Mapping[str, FileRecord],
                       stored: Mapping[str, tuple[str, int]]) -> dict[str, FileRecord]:
    """The provenance of each kept wheel its page links as ``<file>.provenance`` and the bucket stores (its sha256
    as stored, its size): without it the first ledger would drop a file every page rendered before it linked."""
    return {p: FileRecord(key=p, sha256=stored[p][0], size=stored[p][1], form="provenance")
            for wheel, p in links.items()
            if p == f"{wheel}{SUFFIX}" and wheel in kept and kept[wheel].form in LISTED and p in stored}


def served(bucket: Bucket, channel: ReleaseChannel) -> dict[str, str]:
    """key -> sha256 of every wheel a publication record of ``channel`` says its pages served (newest last)."""
    out: dict[str, str] = {}
    for key in sorted(bucket.listing(f"{RECORDS}{channel.name.value}/")):
        raw = bucket.read(key)
        data = json.loads(raw) if _is_json(raw) else {}
        for source in ("served", "released"):
            found = data.get(source) if isinstance(data, dict) else None
            if isinstance(found, dict):
                out.update({k: v for k, v in found.items() if isinstance(k, str) and isinstance(v, str)})
    return out


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _is_json(raw: bytes) -> bool:
    try:
        json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return False
    return True
