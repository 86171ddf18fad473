"""``publish`` through the ledger: gather every fact once, plan as a pure function of them, then apply.

Apply's order is what makes a cut-short run harmless and its rerun a finish: the objects first, each
verified (the store's whole-object checksum or a read-back), then the ledger entry (the commit point:
before it a reader sees nothing new, since no page names an object the ledger does not hold), then the
pages, a pure rendering of the ledger, then the objects the ledger dropped deleted, and last every
link of every page written checked to bytes with the page's sha256 (through the web front where the command
is given one, ``--site-url``; else through the S3 API). A rerun gathers again: objects
already stored with the planned bytes are not written twice, an entry already committed is not
appended twice, pages already equal to the rendering are not rewritten; with nothing left it says
"already done". Pages written from a head that moved on are rendered again from the new head, so a
concurrent writer's files are never dropped from a page.
"""

from __future__ import annotations

import datetime
import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import quote, unquote

import requests
from packaging.utils import canonicalize_name, parse_wheel_filename

from builders.base.errors import AuditError, ObjectStoreError, PublishRefused
from builders.channels.evidence import LISTED, FileRecord, LedgerCorrupt, LedgerEntry, YankMark
from builders.channels.ledger import ChannelState, Ledger
from builders.channels.objectstore import Bucket, cache_control
from builders.channels.provenance import SUFFIX
from builders.channels.publication import RECORDS, SiteEntry, merged_bytes, sha256sums, yanked
from builders.index.pages import IndexedFile, project_html, project_json, root_html, root_json
from builders.index.remote import MAX_METADATA, Client
from builders.matrix.release_channels import ChannelName, ReleaseChannel

PAGE_NAMES = ("index.html", "index.json", "SHA256SUMS", "mirror.json")
SHOWN = 10
MAX_WHEEL = 1024**3  # a link the page gives no size: the most an index grants one file


@dataclass(frozen=True, kw_only=True)
class Listed(IndexedFile):
    """A file as the ledger holds it: its ``.metadata``'s sha256 from the ledger, not from bytes in memory."""

    core_sha256: str = ""

    @property
    def metadata_sha256(self) -> str:
        return self.core_sha256


@dataclass(frozen=True, kw_only=True)
class LocalFile:
    """One file this publication brings (a wheel or its ``.metadata``) and where its bytes are."""

    record: FileRecord
    source: object  # a Path (a wheel) or bytes (a .metadata)


@dataclass(frozen=True, kw_only=True)
class PublishFacts:
    """Everything publish reads, read once (:func:`gather`)."""

    channel: ReleaseChannel
    project: str
    folders: tuple[tuple[str, str], ...]  # (label, folder) of every label index of the channel
    local: Mapping[str, LocalFile]  # key -> the file to publish
    stored: Mapping[str, str | None]  # key of each local file -> the sha256 of the bytes the bucket holds (None: absent)
    objects: frozenset[str]  # every object under the channel's label folders
    pages: Mapping[str, bytes | None]  # every page key -> its bytes now
    mirror: Mapping[str, bytes]  # folder -> the mirror.json to serve (the bucket's merged with this publication's)
    state: ChannelState
    record_missing: str | None = None  # the publication record of the entry that holds these files, not in the bucket


@dataclass(frozen=True, kw_only=True)
class Plan:
    uploads: tuple[LocalFile, ...]  # objects to write (new, replaced, or stored with other bytes than the ledger's)
    entry: LedgerEntry | None  # None: the ledger holds every file already
    refused: tuple[str, ...] = ()  # keys whose published bytes would change where they never may
    replaced: tuple[str, ...] = ()
    restored: tuple[str, ...] = ()  # held by the ledger, stored with other bytes or lost: written again
    pruned: tuple[str, ...] = ()
    pages: Mapping[str, bytes] = field(default_factory=dict)  # the rendering after the entry
    writes: tuple[str, ...] = ()  # the page keys whose bytes differ from the bucket's
    deletes: tuple[str, ...] = ()  # objects the ledger dropped that the bucket still holds
    record: bool = False  # the publication record is still to be written (a run cut short before it)

    @property
    def done(self) -> bool:
        return not (self.uploads or self.entry or self.writes or self.deletes or self.record)


# --- plan (pure) -------------------------------------------------------------------------------


def plan(evidence: PublishFacts, *, at: str, writer: str) -> Plan:
    """What publishing does, from ``evidence`` alone (no bucket)."""
    entry, refused, replaced = changes(evidence, evidence.state, at=at, writer=writer)
    after = evidence.state if entry is None else evidence.state.after(_placed(evidence.state, entry))
    uploads = tuple(f for k, f in evidence.local.items()
                    if evidence.stored.get(k) != f.record.sha256 and k not in set(refused))
    pages = render(after, evidence.folders, evidence.mirror)
    writes = tuple(k for k, data in pages.items() if evidence.pages.get(k) != data)
    deletes = tuple(sorted(k for k in evidence.objects if k in after.removed and k not in after.files))
    restored = tuple(f.record.key for f in uploads if evidence.state.files.get(f.record.key) == f.record)
    return Plan(uploads=uploads, entry=entry, refused=refused, replaced=replaced, restored=restored,
                pruned=tuple(entry.removed) if entry else (), pages=pages, writes=writes, deletes=deletes,
                record=entry is not None or evidence.record_missing is not None)


def changes(evidence: PublishFacts, state: ChannelState, *, at: str,
            writer: str) -> tuple[LedgerEntry | None, tuple[str, ...], tuple[str, ...]]:
    """The entry that makes ``state`` hold the local files (None: it holds them), the refused and replaced keys.
    Run again on a newer head after a lost race (the replan)."""
    added, refused, replaced = [], [], []
    for key, local in evidence.local.items():
        held = state.files.get(key)
        if held == local.record:
            continue
        if held is not None and held.sha256 != local.record.sha256:
            if not evidence.channel.replaces:
                refused.append(key)
                continue
            replaced.append(key)
        added.append(local.record)
    after = state.after(_placed(state, LedgerEntry(seq=0, parent=None, parent_sha256=None, kind="publish", at=at,
                                             writer=writer, added=tuple(added))))
    removed = tuple(sorted({*prune(after, evidence.channel, evidence.project),
                            *stale_provenance(state, replaced, evidence.local)}))
    if not added and not removed:
        return None, tuple(refused), tuple(replaced)
    entry = LedgerEntry(seq=0, parent=None, parent_sha256=None, kind="publish", at=at, writer=writer,
                  added=tuple(added), removed=removed)
    return entry, tuple(refused), tuple(replaced)


def stale_provenance(state: ChannelState, replaced: Iterable[str], local: Mapping[str, LocalFile]) -> set[str]:
    """The provenance of each replaced file that this publication brings none for: it names the old bytes."""
    return {f"{k}{SUFFIX}" for k in replaced if f"{k}{SUFFIX}" in state.files and f"{k}{SUFFIX}" not in local}


def _placed(state: ChannelState, entry: LedgerEntry) -> LedgerEntry:
    from builders.channels.ledger import chained

    return chained(state, entry)


def prune(state: ChannelState, channel: ReleaseChannel, project: str) -> tuple[str, ...]:
    """The project's wheels (and their ``.metadata``) past the channel's ``keep`` newest versions, per folder."""
    if channel.keep is None:
        return ()
    from packaging.version import Version

    own = canonicalize_name(project)
    out: list[str] = []
    by_folder: dict[str, dict[str, Version]] = {}
    for key, f in state.files.items():
        if f.form == "wheel" and _project_of(key) == own:
            by_folder.setdefault(key.rsplit("/", 2)[0], {})[key] = Version(str(parse_wheel_filename(key.rsplit("/", 1)[-1])[1]))
    for keys in by_folder.values():
        old = set(sorted(set(keys.values()), reverse=True)[channel.keep:])
        out += [k for key, v in keys.items() if v in old for k in (key, f"{key}.metadata", f"{key}{SUFFIX}")
                if k in state.files]
    return tuple(sorted(out))


def _project_of(key: str) -> str:
    return key.rsplit("/", 2)[-2]


def render(state: ChannelState, folders: Iterable[tuple[str, str]], mirror: Mapping[str, bytes]) -> dict[str, bytes]:
    """Every page of every label index that holds a file: the ledger's files, yanks as PEP 592 says, nothing else."""
    out: dict[str, bytes] = {}
    for label, folder in folders:
        listed = listed_files(state, folder, label)
        if not listed:
            continue
        by_project: dict[str, list[IndexedFile]] = {}
        for info in listed.values():
            by_project.setdefault(info.project, []).append(info)
        for name, infos in sorted(by_project.items()):
            out[f"{folder}{name}/index.html"] = project_html(name, infos).encode()
            out[f"{folder}{name}/index.json"] = _dumps(project_json(name, infos))
        out[f"{folder}index.html"] = root_html(sorted(by_project)).encode()
        out[f"{folder}index.json"] = _dumps(root_json(sorted(by_project)))
        out[f"{folder}SHA256SUMS"] = sha256sums({k: SiteEntry(info=i) for k, i in listed.items()}, folder)
        if folder in mirror:
            out[f"{folder}mirror.json"] = mirror[folder]
    return out


def listed_files(state: ChannelState, folder: str, label: str) -> dict[str, Listed]:
    """The wheels of ``folder`` the ledger holds, as the pages describe them."""
    out: dict[str, Listed] = {}
    for key, f in sorted(state.files.items()):
        rest = key[len(folder):]
        if not key.startswith(folder) or f.form not in LISTED or rest.count("/") != 1:
            continue
        core = state.files.get(f"{key}.metadata")
        if core is None:
            raise LedgerCorrupt(f"the ledger holds {key} without its .metadata")
        name = rest.split("/")[1]
        out[key] = Listed(filename=name, project=rest.split("/")[0], label=label, sha256=f.sha256, size=f.size,
                          version=str(parse_wheel_filename(name)[1]), requires_python=f.requires_python,
                          metadata=b"", yanked=state.yanks.get(key), core_sha256=core.sha256,
                          provenance=f"{quote(name)}{SUFFIX}" if f"{key}{SUFFIX}" in state.files else None)
    return out


def _dumps(data: object) -> bytes:
    return (json.dumps(data, indent=2, sort_keys=True) + "\n").encode()


# --- gather ------------------------------------------------------------------------------------


def local_files(entries: Mapping[str, SiteEntry], project: str, targets: Mapping[str, str]) -> dict[str, LocalFile]:
    """Each wheel ``index`` laid out, and its ``.metadata``, as files for the ledger."""
    own = canonicalize_name(project)
    out: dict[str, LocalFile] = {}
    for key, e in sorted(entries.items()):
        form = "wheel" if e.info.project == own else "requirement"
        out[key] = LocalFile(record=FileRecord(key=key, sha256=e.info.sha256, size=e.info.size,
                                               target=targets.get(key, ""), form=form,
                                               requires_python=e.info.requires_python), source=e.source)
        out[f"{key}.metadata"] = LocalFile(record=FileRecord(key=f"{key}.metadata", sha256=e.info.metadata_sha256,
                                                             size=len(e.info.metadata), form="metadata"),
                                           source=e.info.metadata)
    return out


def provenance_files(provenance: Mapping[str, bytes]) -> dict[str, LocalFile]:
    """Each wheel's PEP 740 provenance (wheel key -> its bytes) as the ``<key>.provenance`` object the pages link."""
    return {f"{key}{SUFFIX}": LocalFile(record=FileRecord(key=f"{key}{SUFFIX}", sha256=hashlib.sha256(raw).hexdigest(),
                                                          size=len(raw), form="provenance"), source=raw)
            for key, raw in sorted(provenance.items())}


def page_keys(objects: Iterable[str], folders: Iterable[tuple[str, str]]) -> list[str]:
    """The pages among ``objects``: a folder's own and its projects' (never a wheel or a .metadata)."""
    out = []
    for key in objects:
        for _label, folder in folders:
            rest = key[len(folder):]
            if key.startswith(folder) and rest.count("/") <= 1 and rest.rsplit("/", 1)[-1] in PAGE_NAMES:
                out.append(key)
    return sorted(set(out))


def unrecorded(state: ChannelState, pages: Mapping[str, bytes | None], sizes: Mapping[str, int], *,
               folders: Sequence[tuple[str, str]], at: str, writer: str) -> LedgerEntry | None:
    """The ``adopt`` entry of what the pages list and the ledger does not hold: on a bucket from before the ledger,
    every listed file with its yank (a page that cannot be read: exit 40 naming it); on one whose pages another
    writer changed outside the ledger, each file they list that the bucket holds. None when there is nothing."""
    strict = state.head is None
    added: list[FileRecord] = []
    yanks: list[YankMark] = []
    for page_key, raw in sorted(pages.items()):
        if raw is None or not project_page(page_key, folders):
            continue
        for item in _page_files(page_key, raw, strict):
            key = page_key.removesuffix("index.json") + item.filename
            if key in state.files or key in state.removed or key not in sizes or f"{key}.metadata" not in sizes:
                continue
            added += [FileRecord(key=key, sha256=item.sha256, size=sizes[key], requires_python=item.requires_python),
                      FileRecord(key=f"{key}.metadata", sha256=item.metadata_sha256, size=sizes[f"{key}.metadata"],
                                 form="metadata")]
            if strict and item.yanked is not None:
                yanks.append(YankMark(key=key, reason=item.yanked))
    if not added:
        return None
    note = ("built from the pages the bucket held before its ledger" if strict
            else "listed by pages written outside the ledger")
    return LedgerEntry(seq=0, parent=None, parent_sha256=None, kind="adopt", at=at, writer=writer, added=tuple(added),
                 yanks=tuple(yanks), note=note)


def project_page(key: str, folders: Iterable[tuple[str, str]]) -> bool:
    """Whether ``key`` is a project's PEP 691 page, ``<folder><project>/index.json``: a folder's own ``index.json``
    lists the projects (``{"projects": [...]}``), not files, and lies one level higher."""
    return any(key.startswith(folder) and key[len(folder):].count("/") == 1 and key.endswith("/index.json")
               for _label, folder in folders)


@dataclass(frozen=True, kw_only=True)
class PageFile:
    filename: str
    sha256: str
    metadata_sha256: str
    requires_python: str | None
    yanked: str | None


def _page_files(key: str, raw: bytes, strict: bool) -> list[PageFile]:
    """The files a PEP 691 project page lists; a page that is not one is exit 40 (``strict``) or skipped (a page
    the ledger's rendering replaces anyway)."""
    try:
        return [PageFile(filename=str(item["filename"]), sha256=str(item["hashes"]["sha256"]),
                         metadata_sha256=str(item["core-metadata"]["sha256"]),
                         requires_python=item.get("requires-python"), yanked=yanked(item))
                for item in json.loads(raw)["files"]]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        if not strict:
            return []
        raise ObjectStoreError(f"{key}: the page cannot be read ({type(exc).__name__}: {exc}), so no ledger can be "
                               "built from it: run repair-index to rebuild the pages from the objects") from None


def stored_digests(bucket: Bucket, keys: Iterable[str], objects: frozenset[str]) -> dict[str, str | None]:
    """The sha256 of each key's stored bytes (None: absent)."""
    return {k: bucket.verified_sha256(k) if k in objects else None for k in keys}


def current_pages(bucket: Bucket, keys: Iterable[str]) -> dict[str, bytes | None]:
    return {k: bucket.read_if_there(k) for k in keys}


# --- apply ---------------------------------------------------------------------------------------


def refuse(evidence: PublishFacts, planned: Plan) -> None:
    if planned.refused:
        shown = "; ".join(f"{k} (published sha256 {evidence.state.files[k].sha256[:12]}..., new "
                          f"{evidence.local[k].record.sha256[:12]}...)" for k in planned.refused[:5])
        hint = ("a nightly's version is its commit date: that day's nightly is published already; publish the next "
                "day's" if evidence.channel.name is ChannelName.NIGHTLY else
                "a published file never changes: release a new version")
        raise PublishRefused(f"{len(planned.refused)} file(s) on the {evidence.channel.name.value} channel would "
                             f"change, nothing was written: {shown}; {hint}")


def upload(bucket: Bucket, evidence: PublishFacts, planned: Plan) -> None:
    """Each object written and verified against its sha256 before the ledger may name it."""
    name = evidence.channel.name.value
    for f in planned.uploads:
        key = f.record.key
        source = f.source
        assert isinstance(source, bytes) or hasattr(source, "open")
        bucket.upload(key, source, cache_control=cache_control(name, key))  # type: ignore[arg-type]
        got = bucket.verified_sha256(key)
        if got != f.record.sha256:
            raise ObjectStoreError(f"{bucket.url}{key}: stored with sha256 {got}, written {f.record.sha256}; "
                                   "nothing was committed (run the command again)")


def commit(ledger: Ledger, evidence: PublishFacts, planned: Plan, *, at: str) -> tuple[LedgerEntry | None, ChannelState]:
    """The entry appended (replanned on the head read where another writer moved it since gather)."""
    if planned.entry is None:
        return None, evidence.state
    written = {f.record.key for f in planned.uploads} | {k for k, s in evidence.stored.items()
                                                         if s == evidence.local[k].record.sha256}

    def replan(state: ChannelState) -> LedgerEntry | None:
        entry, refused, _ = changes(evidence, state, at=at, writer=ledger.writer)
        if refused:
            raise PublishRefused(f"another writer ({state.head.writer if state.head else '?'}) published "
                                 f"{', '.join(refused[:SHOWN])} with other bytes while this one ran; nothing was "
                                 "committed")
        lacking = [f.key for f in (entry.added if entry else ()) if f.key not in written]
        if lacking:
            raise ObjectStoreError(f"the ledger moved on while this publication ran and now needs "
                                   f"{', '.join(lacking[:SHOWN])}; run the command again")
        return entry

    return ledger.append(replan)


def write_pages(bucket: Bucket, ledger: Ledger, evidence: PublishFacts, state: ChannelState,
                known: dict[str, bytes | None]) -> dict[str, bytes]:
    """The pages rendered from ``state`` where they differ from what the bucket holds (projects' pages before the
    roots that name them); again from the newer head while another writer moved it. Returns each page written, with
    the bytes it holds now (what its links are checked against)."""
    written: dict[str, bytes] = {}
    for _ in range(8):
        pages = render(state, evidence.folders, evidence.mirror)
        for key in sorted(pages, key=_page_order):
            if known.get(key) != pages[key]:
                bucket.upload(key, pages[key], cache_control=cache_control(evidence.channel.name.value, key))
                known[key] = written[key] = pages[key]
        newer = ledger.read().state
        if newer.head == state.head:
            return written
        state = newer
    raise ObjectStoreError(f"{bucket.url}: the ledger kept moving while the pages were written; run the command again")


def commit_and_render(bucket: Bucket, ledger: Ledger, evidence: PublishFacts,
                      entry: Callable[[ChannelState], LedgerEntry | None]
                      ) -> tuple[LedgerEntry | None, ChannelState, list[str]]:
    """A marks-only entry (yank, rollback; replanned from each head it meets) committed, then the pages rendered
    from the ledger and their links checked: the entry (None where the ledger held it already: a rerun's finish),
    the state, and the pages written."""
    committed, state = ledger.append(entry)
    written = write_pages(bucket, ledger, evidence, state, dict(evidence.pages))
    require_links(bucket, written, written)
    return committed, state, list(written)


def _page_order(key: str) -> tuple[int, str]:
    """Project pages (one folder deeper) before the label's root pages: a root never names a page not yet there."""
    return (-key.count("/"), key)


def check_links(bucket: Bucket, pages: Mapping[str, bytes], keys: Iterable[str], site: str | None = None) -> list[str]:
    """Every link of every project page among ``keys`` resolved to bytes with the page's sha256 (and PEP 658's):
    through the web front at ``site`` (the bucket's root as served) where one is given, else the S3 API."""
    problems: list[str] = []
    client = Client()
    for key in keys:
        if not key.endswith("/index.json") or "files" not in (page := json.loads(pages[key])):
            continue
        base = key.removesuffix("index.json")
        for item in page["files"]:
            problems += (_served_problems(client, site, key, f"{base}{item['filename']}", item) if site
                         else _link_problems(bucket, key, f"{base}{item['filename']}", item))
    return problems


def require_links(bucket: Bucket, pages: Mapping[str, bytes], written: Iterable[str], site: str | None = None) -> None:
    """Stop (exit 40, no record) when a page just written links a file the bucket (or the web front at ``site``)
    does not serve with the page's sha256: the ledger is committed, so a rerun (or repair-index) finishes from it."""
    problems = check_links(bucket, pages, written, site)
    if problems:
        more = f" and {len(problems) - SHOWN} more" if len(problems) > SHOWN else ""
        raise ObjectStoreError(f"{site or bucket.url}: {len(problems)} link(s) of the pages just written do not "
                               f"resolve: {'; '.join(problems[:SHOWN])}{more}; no record was written (run the command "
                               "again: it rewrites the pages from the ledger)")


def _link_problems(bucket: Bucket, page: str, key: str, item: Mapping[str, object]) -> list[str]:
    want = {key: item["hashes"]["sha256"], f"{key}.metadata": item["core-metadata"]["sha256"]}  # type: ignore[index]
    out = []
    for target, sha in want.items():
        if bucket.head(target) is None:
            out.append(f"{target}: linked by {page}, not in the bucket")
        elif bucket.verified_sha256(target) != sha:
            out.append(f"{target}: its bytes are not the sha256 {page} declares")
    link = item.get("provenance")
    if isinstance(link, str) and bucket.head(f"{key.rsplit('/', 1)[0]}/{unquote(link)}") is None:
        out.append(f"{key}{SUFFIX}: linked by {page}, not in the bucket")
    return out


def _served_problems(client: Client, site: str, page: str, key: str, item: Mapping[str, object]) -> list[str]:
    """``key``, its ``.metadata`` and its provenance as the web front serves them (bounded GETs: a wheel up to the
    page's size, the others up to :data:`MAX_METADATA`), each checked to the page's sha256 (provenance: served)."""
    size = item.get("size")
    want: list[tuple[str, str | None, int]] = [
        (key, item["hashes"]["sha256"], size if isinstance(size, int) else MAX_WHEEL),  # type: ignore[index]
        (f"{key}.metadata", item["core-metadata"]["sha256"], MAX_METADATA)]  # type: ignore[index]
    link = item.get("provenance")
    if isinstance(link, str):
        want.append((f"{key.rsplit('/', 1)[0]}/{unquote(link)}", None, MAX_METADATA))
    out = []
    for target, sha, limit in want:
        url = f"{site.rstrip('/')}/{quote(target)}"
        try:
            got = client.get(url, limit=limit, kind="files")
        except (AuditError, requests.RequestException) as exc:
            out.append(f"{url}: linked by {page}, not read ({exc})")
            continue
        if got is None:
            out.append(f"{url}: linked by {page}, not served")
        elif sha is not None and hashlib.sha256(got[1]).hexdigest() != sha:
            out.append(f"{url}: served bytes are not the sha256 {page} declares")
    return out


def now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def gather(bucket: Bucket, ledger: Ledger, channel: ReleaseChannel, *, project: str,
           local: Mapping[str, SiteEntry], targets: Mapping[str, str], labels: Iterable[str],
           mirror_records: Mapping[str, bytes], provenance: Mapping[str, bytes] | None = None) -> PublishFacts:
    """Every read publish makes, once: the ledger (adopted from the pages on a bucket from before it), the objects
    under the channel's folders, the stored bytes' digests of the files it brings, the pages as they are."""
    folders = tuple((label, channel.index_path(label)) for label in sorted(labels))
    sizes = {k: o.size for _label, folder in folders for k, o in bucket.listing(folder).items()}
    objects = frozenset(sizes)
    pages = current_pages(bucket, page_keys(objects, folders))
    state = settled(ledger, pages, sizes, folders)
    files = local_files(local, project, targets) | provenance_files(provenance or {})
    mirror = {folder: merged for _label, folder in folders
              if (merged := merged_bytes(pages.get(f"{folder}mirror.json"), mirror_records.get(folder))) is not None}
    ours = publishing_entry(state, files)
    missing = None if ours is None or bucket.head(record_key(channel.name.value, ours)) else ours.id
    return PublishFacts(channel=channel, project=project, folders=folders, local=files,
                    stored=stored_digests(bucket, files, objects), objects=objects, pages=pages, mirror=mirror,
                    state=state, record_missing=missing)


def settled(ledger: Ledger, pages: Mapping[str, bytes | None], sizes: Mapping[str, int],
            folders: Sequence[tuple[str, str]]) -> ChannelState:
    """The ledger's state, with what the pages list beyond it adopted first (:func:`unrecorded`)."""
    state = ledger.read().state
    if unrecorded(state, pages, sizes, folders=folders, at=now(), writer=ledger.writer) is None:
        return state
    return ledger.append(lambda s: unrecorded(s, pages, sizes, folders=folders, at=now(), writer=ledger.writer))[1]


def publishing_entry(state: ChannelState, files: Mapping[str, LocalFile]) -> LedgerEntry | None:
    """The newest publish entry that added any of ``files`` as they are, where the ledger holds them all."""
    if any(state.files.get(k) != f.record for k, f in files.items()):
        return None
    records = {f.record for f in files.values()}
    return next((e for e in reversed(state.entries) if e.kind == "publish" and records & set(e.added)), None)


def record_key(channel: str, entry: LedgerEntry) -> str:
    """``publish-records/<channel>/<the entry's time>.json``: a rerun finds the record its entry needs."""
    return f"{RECORDS}{channel}/{_time(entry):%Y%m%dT%H%M%S%fZ}.json"


def _time(entry: LedgerEntry) -> datetime.datetime:
    return datetime.datetime.strptime(entry.at, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.UTC)


def publication_record(state: ChannelState, entry: LedgerEntry, local: Iterable[str], *, channel: str, bucket: str,
                       version: str) -> dict[str, object]:
    """The publication ``entry`` committed, as JSON (added, replaced with both digests, pruned, unchanged), derived
    from the chain alone so that a rerun writes the same record."""
    before = ChannelState()
    for e in state.entries:
        if e.id == entry.id:
            break
        before = before.after(e)
    held = {f.key: f for f in entry.added if f.key in before.files and before.files[f.key].sha256 != f.sha256}
    added = [f.key for f in entry.added]
    return {"channel": channel, "bucket": bucket, "version": version, "at": f"{_time(entry):%Y-%m-%dT%H:%M:%SZ}",
            "ledger_entry": entry.id, "added": [k for k in added if k not in held],
            "replaced": [{"key": k, "old_sha256": before.files[k].sha256, "new_sha256": f.sha256}
                         for k, f in held.items()],
            "pruned": list(entry.removed), "unchanged": sorted(set(local) - set(added))}
