"""The release channel's ledger beside ``promote-release``: each promotion an entry with its files, the manifest's
sha256 and every validation record's sha256 (what ``rollback`` and ``history`` read).

promote-release still copies and writes its pages itself (its plan lives in :mod:`builders.index.promotion`);
its entry is appended after the copies are verified and the pages written, and a release channel from before
the ledger, or one whose pages were written by a run cut short before its entry, is adopted from its pages
first (:func:`builders.channels.publishing.settled`). A rerun of a finished promotion appends nothing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path

from builders.channels.evidence import FileRecord, LedgerEntry, PromotionDigests
from builders.channels.ledger import ChannelState, Ledger
from builders.channels.publishing import current_pages, now, page_keys, settled
from builders.index.objectstore import Bucket
from builders.index.pages import PROVENANCE
from builders.matrix.release_channels import ReleaseChannel


def folders_of(channel: ReleaseChannel, labels: Iterable[str]) -> tuple[tuple[str, str], ...]:
    return tuple((label, channel.index_path(label)) for label in sorted(labels))


def settle(bucket: Bucket, ledger: Ledger, folders: Iterable[tuple[str, str]]) -> ChannelState:
    """The release ledger with whatever its pages list adopted (one read of the folders and pages)."""
    sizes = {k: o.size for _label, folder in folders for k, o in bucket.listing(folder).items()}
    return settled(ledger, current_pages(bucket, page_keys(sizes, folders)), sizes)


def promotion_entry(held: Mapping[str, str], pages: Mapping[str, bytes], sizes: Mapping[str, int], *, version: str,
                    manifest_sha256: str, validations: Iterable[bytes], writer: str) -> LedgerEntry:
    """The promotion as an entry (pure): each release wheel (its size as stored, Requires-Python as its page says)
    and its ``.metadata`` (the sha256 its page declares), the manifest's digest and each validation record's."""
    listed = _listed(pages)
    added: list[FileRecord] = []
    for key, sha in sorted(held.items()):
        if key.endswith((".metadata", PROVENANCE)):
            continue
        requires, core = listed.get(key, (None, ""))
        added.append(FileRecord(key=key, sha256=sha, size=sizes.get(key, 0), requires_python=requires))
        core = held.get(f"{key}.metadata") or core
        if core:
            added.append(FileRecord(key=f"{key}.metadata", sha256=core, size=sizes.get(f"{key}.metadata", 0),
                                    form="metadata"))
        added += provenance_record(held, sizes, key)
    return LedgerEntry(seq=0, parent=None, parent_sha256=None, kind="promotion", at=now(), writer=writer, added=tuple(added),
                 promotion=PromotionDigests(version=version, manifest_sha256=manifest_sha256,
                                     validation_sha256=tuple(hashlib.sha256(v).hexdigest() for v in validations)))


def provenance_record(held: Mapping[str, str], sizes: Mapping[str, int], key: str) -> list[FileRecord]:
    """The release's ``<key>.provenance`` (PEP 740), where the promotion copied one."""
    sha = held.get(f"{key}{PROVENANCE}")
    return [FileRecord(key=f"{key}{PROVENANCE}", sha256=sha, size=sizes.get(f"{key}{PROVENANCE}", 0),
                       form="provenance")] if sha else []


def _listed(pages: Mapping[str, bytes]) -> dict[str, tuple[str | None, str]]:
    """key -> (Requires-Python, the .metadata's sha256) of each file the project pages list."""
    out: dict[str, tuple[str | None, str]] = {}
    for key, raw in pages.items():
        if key.endswith("/index.json") and key.count("/") >= 2:
            for item in json.loads(raw).get("files", []):
                out[key.removesuffix("index.json") + item["filename"]] = (
                    item.get("requires-python"), item.get("core-metadata", {}).get("sha256", ""))
    return out


def held(state: ChannelState, version: str, manifest_sha256: str) -> bool:
    """Whether the ledger holds a promotion of ``version`` from this manifest."""
    return any(e.kind == "promotion" and e.promotion is not None and e.promotion.version == version
               and e.promotion.manifest_sha256 == manifest_sha256 for e in state.entries)


def record(ledger: Ledger, entry: LedgerEntry) -> LedgerEntry | None:
    """``entry`` appended unless a promotion of the same manifest and version is in the ledger (a rerun)."""
    def replan(state: ChannelState) -> LedgerEntry | None:
        for e in state.entries:
            if e.kind == "promotion" and e.promotion == entry.promotion:
                return None
        return entry

    return ledger.append(replan)[0]


def validation_bytes(paths: Iterable[Path]) -> list[bytes]:
    return [p.read_bytes() for p in paths]
