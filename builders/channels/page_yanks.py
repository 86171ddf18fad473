"""Undo without deleting a byte: yank a version on a channel's pages (PEP 592), and roll a promotion back.

Deleting a released version's files breaks every unpinned install that already resolved it (its
``.metadata`` answers 404) and leaves pages that disagree with the bucket. A yank keeps the bytes and
marks each of the version's files on every page that lists it (``data-yanked`` in the HTML,
``"yanked"`` in the JSON, both with the reason): pip and uv then skip it unless it is pinned with
``==``, as PyPI's yank does. A rollback of a promotion yanks exactly the files its publish record
(``publish-records/release/...``) says it released, and restores any file the pages listed before the
promotion that they no longer list.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from packaging.utils import canonicalize_name
from packaging.version import Version

from builders.base.errors import InputError, Problem, SelectionError
from builders.channels.objectstore import Bucket, cache_control
from builders.channels.page_repair import stored_entry
from builders.channels.publication import SiteEntry, Upload, index_pages, published_entries, store_record
from builders.matrix.release_channels import ReleaseChannel


@dataclass(frozen=True, kw_only=True)
class Yank:
    """The pages one yank (or rollback) rewrites, and the files it marks."""

    channel: ReleaseChannel
    pages: tuple[Upload, ...]
    marked: tuple[str, ...]  # the keys newly yanked (or un-yanked with ``undo``)
    restored: tuple[str, ...] = ()  # rollback: keys the pages listed before the promotion and list again


def marked(entries: Mapping[str, SiteEntry], chosen: Iterable[str], reason: str | None) -> dict[str, SiteEntry]:
    """``entries`` with each key of ``chosen`` yanked for ``reason`` (``None``: listed as installable again)."""
    keys = set(chosen)
    return {k: dataclasses.replace(e, info=dataclasses.replace(e.info, yanked=reason)) if k in keys else e
            for k, e in entries.items()}


def of_version(entries: Mapping[str, SiteEntry], project: str, version: Version) -> list[str]:
    """The keys of ``project``'s files of ``version`` (its public part: every label's file)."""
    own = canonicalize_name(project)
    return sorted(k for k, e in entries.items()
                  if e.info.project == own and Version(e.info.version).public == version.public)


def yank(bucket: Bucket, channel: ReleaseChannel, labels: Iterable[str], *, project: str, version: Version,
         reason: str | None) -> Yank:
    """The pages that mark ``version`` yanked on every label's index of ``channel`` (none written here)."""
    pages: list[Upload] = []
    changed: list[str] = []
    for label in sorted(labels):
        folder = channel.index_path(label)
        entries = published_entries(bucket, folder, label)
        keys = [k for k in of_version(entries, project, version) if entries[k].info.yanked != reason]
        if keys:
            changed += keys
            pages += index_pages(bucket, folder, marked(entries, keys, reason), None)
    if not changed:
        state = "not yanked" if reason is None else "yanked"
        raise SelectionError(f"{bucket.url}: no file of {project} {version} on the {channel.name.value} channel that is "
                             f"not {state} already")
    return Yank(channel=channel, pages=tuple(pages), marked=tuple(changed))


def rollback(bucket: Bucket, channel: ReleaseChannel, record: Mapping[str, Any], *, reason: str) -> Yank:
    """A promotion undone: the files its record released yanked, the files its pages listed before listed again."""
    released, before = record.get("released"), record.get("before")
    if record.get("kind") != "promotion" or not isinstance(released, dict) or not isinstance(before, dict):
        raise InputError([Problem(message="not a promotion's publish record (kind, released, before)")])
    pages: list[Upload] = []
    changed: list[str] = []
    restored: list[str] = []
    for folder in sorted(before):
        label = _label_of(channel, folder)
        entries = published_entries(bucket, folder, label)
        keys = [k for k in released if k.startswith(folder) and k in entries]
        back = _relisted(bucket, folder, label, before[folder], entries)
        restored += sorted(back)
        changed += keys
        pages += index_pages(bucket, folder, marked({**entries, **back}, keys, reason), None)
    return Yank(channel=channel, pages=tuple(pages), marked=tuple(changed), restored=tuple(restored))


def _label_of(channel: ReleaseChannel, folder: str) -> str:
    """The label whose index ``folder`` is, by the channel's layout (``whl/{label}/``)."""
    head, _, tail = channel.layout.partition("{label}")
    if not (folder.startswith(head) and folder.endswith(tail)):
        raise InputError([Problem(message=f"{folder} is no index folder of the {channel.name.value} channel")])
    return folder[len(head):len(folder) - len(tail)]


def _relisted(bucket: Bucket, folder: str, label: str, keys: Iterable[str],
              entries: Mapping[str, SiteEntry]) -> dict[str, SiteEntry]:
    """The files listed before the promotion that the pages no longer list (their objects still there)."""
    return {k: found for k in keys if k not in entries and (found := stored_entry(bucket, k, label)) is not None}


def apply(bucket: Bucket, change: Yank, *, at: datetime.datetime, what: Mapping[str, Any]) -> str:
    """The pages written (project pages first, the label's root after, as ``index_pages`` orders them), then a
    record of the change beside the publications; returns the record's key."""
    channel = change.channel.name.value
    for page in change.pages:
        bucket.upload(page.key, page.source, cache_control=cache_control(channel, page.key))
    data = {**what, "channel": channel, "at": at.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "marked": list(change.marked), "restored": list(change.restored)}
    return store_record(bucket, channel, data, at=at, kind="yank")
