"""``promote-release`` through the release ledger: gather every fact once, plan as a pure function of them, apply.

Apply's order is what makes a cut-short promotion harmless and its rerun a finish: the copies first (test to
release, server-side), each verified (the store's whole-object checksum or a read-back); then the promotion's
ledger entry (the commit point: its files, the manifest's sha256 and every validation record's); then the pages,
a pure rendering of the ledger; then every link of every page written checked to bytes with the page's sha256;
then the PyPI files the package server lacks (one twine upload each: a file served with the manifest's sha256 is
done, other bytes are refused by the preflight); last the promotion's record beside the channels. Before the
entry no page changes, so a reader sees the previous release or this one, never half of it. A rerun gathers
again and does only what is missing; with nothing missing it says "already done".
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from builders.base import redact
from builders.base.errors import InputError, ObjectStoreError, Problem
from builders.channels.evidence import (
    LISTED,
    FileRecord,
    InstallVerdict,
    LedgerEntry,
    PromotionDigests,
    PromotionRecord,
    TargetVerdict,
    ValidationRecord,
)
from builders.channels.ledger import ChannelState, Ledger, chained, fold
from builders.channels.manifest import LABELLED, PYPI, Manifest, ManifestFile
from builders.channels.objectstore import Bucket, cache_control
from builders.channels.promotion import Accepted, Copy, Promotion, PypiFile
from builders.channels.provenance import SUFFIX
from builders.channels.publication import merged_bytes
from builders.channels.publishing import (
    PublishFacts,
    current_pages,
    page_keys,
    record_key,
    render,
    require_links,
    settled,
    write_pages,
)
from builders.index.mirror import RECORD
from builders.matrix.promotion_policy import AcceptedNotRunnable
from builders.matrix.release_channels import ChannelName, ReleaseChannel

RELEASE = ChannelName.RELEASE.value


@dataclass(frozen=True, kw_only=True)
class PromoteFacts:
    """Everything promote-release reads, read once (:func:`gather`): the preflight's findings, and the release
    channel as publish sees it (its ledger, objects, pages and mirror records: ``site``)."""

    promotion: Promotion
    validations: tuple[bytes, ...]  # every validation record's bytes (the ledger keeps their sha256)
    site: PublishFacts
    stored: Mapping[str, str | None]  # each release key of this promotion -> the sha256 the bucket holds (None: absent)
    recorded: frozenset[str] = frozenset()  # the promotion's record beside the channels, where it exists already
    # each test-channel ``<file>.provenance`` the test page links and the bucket holds -> (its sha256, its size)
    provenance: Mapping[str, tuple[str, int]] = field(default_factory=dict)

    @property
    def state(self) -> ChannelState:
        return self.site.state


@dataclass(frozen=True, kw_only=True)
class PromotePlan:
    copies: tuple[Copy, ...]  # objects the release channel lacks (or holds with other bytes: refused by the preflight)
    entry: LedgerEntry | None  # None: the ledger holds this promotion already
    pages: Mapping[str, bytes] = field(default_factory=dict)  # the rendering after the entry
    writes: tuple[str, ...] = ()  # the page keys whose bytes differ from the bucket's
    pypi: tuple[PypiFile, ...] = ()  # PyPI files the package server lacks
    record: bool = False  # the promotion's record beside the channels is still to be written

    @property
    def done(self) -> bool:
        return not (self.copies or self.entry or self.writes or self.pypi or self.record)


# --- the validation records (the preflight's half that reads them) ------------------------------


def read_record(path: Path) -> ValidationRecord:
    """A validation record (``validate --record``); :class:`InputError` (exit 20) naming the file and the key when it
    is not one of this builders' version."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError([Problem(message=f"{path}: not a validation record: {exc}")]) from None
    return ValidationRecord.from_json(raw, str(path))


def verdicts(records: Iterable[ValidationRecord]) -> dict[str, list[TargetVerdict]]:
    """target id -> its verdicts across every record (several hosts validate parts of one release)."""
    out: dict[str, list[TargetVerdict]] = {}
    for record in records:
        for verdict in record.targets:
            out.setdefault(verdict.target, []).append(verdict)
    return out


def record_problems(records: Sequence[ValidationRecord], manifest: Manifest, channel: str, what: str) -> list[str]:
    """Why a record cannot speak for this manifest: another manifest (or none), version or channel."""
    out = []
    for number, record in enumerate(records, 1):
        name = f"{what} record {number} (host {record.host})"
        digest = record.manifest_sha256
        if digest != manifest.digest:
            out.append(f"{name} validated {'manifest ' + digest[:12] + '...' if digest else 'no manifest'}, not this "
                       f"one ({manifest.digest[:12]}...): validate --manifest with the candidate's manifest")
        if record.version != manifest.version or record.channel != channel:
            out.append(f"{name} is of {record.channel} {record.version}, not {channel} {manifest.version}")
    return out


def file_refusals(files: Sequence[ManifestFile], found: Mapping[str, list[TargetVerdict]],
                  accept: Sequence[AcceptedNotRunnable], what: str) -> list[str]:
    """Why a manifest file stops the release: not validated, failed, validated with other bytes, or not runnable and
    not accepted. A pass counts only if every installer of it installed the manifest's bytes."""
    out = []
    for file in files:
        verdicts_of = found.get(file.target, [])
        passed = [v for v in verdicts_of if v.status == "passed"]
        failed = [v for v in verdicts_of if v.status == "failed"]
        if failed:  # a pass elsewhere does not outweigh it: a target passes only if every record of it passed
            also = f" (it passed in {len(passed)} other record(s): every record of a target must pass)" if passed else ""
            out.append(f"{file.target} failed {what}: {failed[0].reason}{also}")
        elif passed:
            out += [f"{file.target}: {what} installed {why}, the manifest's {file.name} is {file.sha256}"
                    for why in _other_bytes(passed, file)]
        elif not verdicts_of:
            out.append(f"{file.target} was never validated ({what}: no record names it)")
        elif _acceptance(file.target, accept) is None:
            out.append(f"{file.target} was not runnable where it was validated ({verdicts_of[0].reason}) and "
                       "nothing accepts it (the matrix's channels.promotion.accept_not_runnable, or "
                       "--accept-not-runnable)")
    return out


def _other_bytes(passed: Sequence[TargetVerdict], file: ManifestFile) -> list[str]:
    """Each install of a passing verdict that did not provably get the manifest's file."""
    out = []
    for verdict in passed:
        installs = verdict.installs or (InstallVerdict(installer="", status=verdict.status,
                                                       filename=verdict.filename, sha256=verdict.sha256),)
        for install in installs:
            if (install.filename, install.sha256) != (file.name, file.sha256):
                out.append(f"{install.filename or 'an unrecorded file'} (sha256 {install.sha256 or 'not recorded'}) "
                           f"with {install.installer or 'an installer'}")
    return out


def accepted_targets(files: Sequence[ManifestFile], found: Mapping[str, list[TargetVerdict]],
                     accept: Sequence[AcceptedNotRunnable]) -> list[Accepted]:
    """The manifest's files released unvalidated: validated nowhere, not runnable where tried, and accepted."""
    out = []
    for file in files:
        verdicts_of = found.get(file.target, [])
        by = _acceptance(file.target, accept)
        if by is not None and verdicts_of and all(v.status == "not-runnable" for v in verdicts_of):
            out.append(Accepted(target=file.target, not_runnable=verdicts_of[0].reason, by=by))
    return out


def _acceptance(target_id: str, accept: Sequence[AcceptedNotRunnable]) -> AcceptedNotRunnable | None:
    return next((a for a in accept if a.accepts(target_id)), None)


def weigh(promotion: Promotion, manifest: Manifest, targets: Iterable[str], records: Sequence[ValidationRecord],
          pypi_records: Sequence[ValidationRecord], accept: Sequence[AcceptedNotRunnable]) -> Promotion:
    """The preflight's findings with the validation records weighed (pure): each record is of this manifest, every
    planned target's file passed under every installer with its bytes, or is accepted as not runnable; the PyPI
    files likewise from staging, where this promotion uploads any."""
    planned = set(targets)
    files = tuple(f for f in manifest.of_form(LABELLED) if f.target in planned)
    found = verdicts(records)
    refusals = record_problems(records, manifest, ChannelName.TEST.value, "validation")
    refusals += file_refusals(files, found, accept, "validation")
    if promotion.pypi:
        refusals += record_problems(pypi_records, manifest, "pypi", "staging validation")
        refusals += file_refusals(manifest.of_form(PYPI), verdicts(pypi_records), accept, "staging validation")
    return dataclasses.replace(promotion, refusals=(*refusals, *promotion.refusals),
                               accepted=tuple(accepted_targets(files, found, accept)))


# --- plan (pure) -------------------------------------------------------------------------------


def plan(evidence: PromoteFacts, *, at: str, writer: str) -> PromotePlan:
    """What promoting does, from ``evidence`` alone (no bucket, no package server)."""
    promo = evidence.promotion
    wanted = copies_of(promo, evidence.provenance)
    entry = promotion_entry(evidence, at=at, writer=writer)
    after = evidence.state if entry is None else evidence.state.after(chained(evidence.state, entry))
    pages = render(after, evidence.site.folders, evidence.site.mirror)
    committed = entry or committed_entry(evidence.state, promo)
    return PromotePlan(copies=tuple(c for c in wanted if evidence.stored.get(c.dest) != c.sha256), entry=entry,
                       pages=pages, writes=tuple(k for k, data in pages.items() if evidence.site.pages.get(k) != data),
                       pypi=tuple(f for f in promo.pypi if f.path.name not in set(promo.pypi_done)),
                       record=committed is None or record_key(RELEASE, committed) not in evidence.recorded)


def copies_of(promotion: Promotion, provenance: Mapping[str, tuple[str, int]]) -> tuple[Copy, ...]:
    """Every object this release holds on the release channel: each wheel, then its ``.metadata``, then its PEP 740
    ``.provenance`` where the test channel serves one (a copy cut short between them leaves an object no page
    links: harmless, and copied again)."""
    return tuple(c for r in promotion.release for c in (
        Copy(source=r.source, dest=r.dest, sha256=r.sha256),
        Copy(source=f"{r.source}.metadata", dest=f"{r.dest}.metadata", sha256=r.metadata_sha256),
        *([Copy(source=f"{r.source}{SUFFIX}", dest=f"{r.dest}{SUFFIX}", sha256=provenance[f"{r.source}{SUFFIX}"][0])]
          if f"{r.source}{SUFFIX}" in provenance else [])))


def digests(evidence: PromoteFacts) -> PromotionDigests:
    return PromotionDigests(version=evidence.promotion.version, manifest_sha256=evidence.promotion.manifest,
                            validation_sha256=tuple(hashlib.sha256(v).hexdigest() for v in evidence.validations))


def promotion_entry(evidence: PromoteFacts, *, at: str, writer: str) -> LedgerEntry | None:
    """The promotion as a ledger entry: each release file, its ``.metadata`` and its ``.provenance`` (where the test
    channel serves one); None when the ledger holds a promotion of this manifest and version already (a rerun).
    Run again on a newer head after a lost race."""
    if committed_entry(evidence.state, evidence.promotion) is not None:
        return None
    added: list[FileRecord] = []
    for r in evidence.promotion.release:
        added += [FileRecord(key=r.dest, sha256=r.sha256, size=r.size, target=r.target,
                             form="wheel" if r.target else "requirement", requires_python=r.requires_python),
                  FileRecord(key=f"{r.dest}.metadata", sha256=r.metadata_sha256, size=r.metadata_size,
                             form="metadata")]
        served = evidence.provenance.get(f"{r.source}{SUFFIX}")
        if served is not None:
            added.append(FileRecord(key=f"{r.dest}{SUFFIX}", sha256=served[0], size=served[1], form="provenance"))
    return LedgerEntry(seq=0, parent=None, parent_sha256=None, kind="promotion", at=at, writer=writer,
                       added=tuple(added), promotion=digests(evidence))


def committed_entry(state: ChannelState, promotion: Promotion) -> LedgerEntry | None:
    """The ledger's entry of a promotion of this manifest and version, if it holds one."""
    return next((e for e in reversed(state.entries) if e.kind == "promotion" and e.promotion is not None
                 and e.promotion.version == promotion.version
                 and e.promotion.manifest_sha256 == promotion.manifest), None)


def record_of_plan(promotion: Promotion) -> PromotionRecord:
    """The preflight's verdict as a promotion record (``--record``: no ledger entry yet; its refusals named)."""
    return PromotionRecord(version=promotion.version, manifest_sha256=promotion.manifest,
                           released=tuple(sorted(promotion.released.items())), unchanged=promotion.unchanged,
                           left_out=promotion.left_out, pypi=tuple((f.path.name, f.sha256) for f in promotion.pypi),
                           accepted=tuple((a.target, str(a)) for a in promotion.accepted), refusals=promotion.refusals,
                           before=tuple((folder, keys) for folder, keys in promotion.before))


def record_of(promotion: Promotion, state: ChannelState, entry: LedgerEntry) -> PromotionRecord:
    """The promotion's record beside the channels (what ``rollback`` reads): derived from the plan and the ledger
    alone (``unchanged`` and ``before``: what the ledger held before ``entry``, not what a run cut short left in
    the bucket), so that a rerun writes the same bytes."""
    before = fold(e for e in state.entries[:[e.id for e in state.entries].index(entry.id)])
    unchanged = tuple(sorted(r.dest for r in promotion.release
                             if (held := before.files.get(r.dest)) is not None and held.sha256 == r.sha256))
    listed = tuple((dest, tuple(sorted(k for k, f in before.files.items() if k.startswith(dest) and f.form in LISTED)))
                   for _src, dest in promotion.folders)
    return dataclasses.replace(record_of_plan(promotion), at=entry.at, ledger_entry=entry.id, unchanged=unchanged,
                               before=listed)


# --- gather ------------------------------------------------------------------------------------


def gather(bucket: Bucket, ledger: Ledger, promotion: Promotion, channel: ReleaseChannel, *, labels: Iterable[str],
           validations: Iterable[bytes]) -> PromoteFacts:
    """Every read of the release channel promote-release makes, once (the preflight's are in ``promotion``): the
    ledger (adopted from the pages on a bucket from before it), the objects under the release folders, the stored
    digests of this release's keys, the test channel's provenance of each file (its sha256 and size), the pages, the
    mirror records (the release's merged with the test channel's) and whether the promotion's record exists."""
    folders = tuple((label, channel.index_path(label)) for label in sorted(labels))
    sizes = {k: o.size for _label, folder in folders for k, o in bucket.listing(folder).items()}
    pages = current_pages(bucket, page_keys(sizes, folders))
    state = settled(ledger, pages, sizes, folders)
    provenance = served_provenance(bucket, promotion)
    stored = {c.dest: bucket.verified_sha256(c.dest) if c.dest in sizes else None
              for c in copies_of(promotion, provenance)}
    sources = {dest: bucket.read_if_there(f"{src}{RECORD}") for src, dest in promotion.folders}
    mirror = {folder: merged for _label, folder in folders
              if (merged := merged_bytes(pages.get(f"{folder}{RECORD}"), sources.get(folder))) is not None}
    entry = committed_entry(state, promotion)
    recorded = frozenset({record_key(RELEASE, entry)} if entry and bucket.head(record_key(RELEASE, entry)) else ())
    site = PublishFacts(channel=channel, project="", folders=folders, local={}, stored={}, objects=frozenset(sizes),
                        pages=pages, mirror=mirror, state=state)
    return PromoteFacts(promotion=promotion, validations=tuple(validations), site=site, stored=stored,
                        recorded=recorded, provenance=provenance)


def served_provenance(bucket: Bucket, promotion: Promotion) -> dict[str, tuple[str, int]]:
    """The PEP 740 provenance the test channel's pages link for each release file and the bucket holds: test key ->
    (its sha256 as stored, its size); the copy is checked against that sha256 and the ledger records both."""
    out = {}
    for r in promotion.release:
        key = f"{r.source}{SUFFIX}"
        if r.provenance and (found := bucket.head(key)) is not None:
            out[key] = (bucket.verified_sha256(key), found.size)
    return out


# --- apply ---------------------------------------------------------------------------------------


def copy(bucket: Bucket, planned: PromotePlan) -> None:
    """Each object copied server-side and verified against its sha256 before the ledger may name it."""
    for c in planned.copies:
        bucket.copy(c.source, c.dest, cache_control=cache_control(RELEASE, c.dest))
        got = bucket.verified_sha256(c.dest)
        if got != c.sha256:
            raise ObjectStoreError(f"{bucket.url}{c.dest}: copied with sha256 {got}, the test channel's is "
                                   f"{c.sha256}; nothing was committed (run the command again)")


def commit(ledger: Ledger, evidence: PromoteFacts, *, at: str) -> tuple[LedgerEntry | None, ChannelState]:
    """The promotion's entry appended (replanned on the head read where another writer moved it since gather)."""
    def replan(state: ChannelState) -> LedgerEntry | None:
        return promotion_entry(dataclasses.replace(evidence, site=dataclasses.replace(evidence.site, state=state)),
                               at=at, writer=ledger.writer)

    return ledger.append(replan)


def render_and_check(bucket: Bucket, ledger: Ledger, evidence: PromoteFacts, state: ChannelState,
                     site_url: str | None = None) -> list[str]:
    """The pages rendered from the ledger where they differ from the bucket's, then each link of each written page
    checked to bytes with the page's sha256, through the web front at ``site_url`` where one is given (exit 40
    otherwise: a rerun rewrites them from the ledger)."""
    site = evidence.site
    written = write_pages(bucket, ledger, site, state, dict(site.pages))
    require_links(bucket, written, written, site_url)
    return list(written)


def store_record(bucket: Bucket, record: PromotionRecord, entry: LedgerEntry) -> str:
    """The record beside the channels, its key from the ledger entry (a rerun finds it, writes the same bytes)."""
    key = record_key(RELEASE, entry)
    bucket.upload(key, redact.redact(record.to_json().decode()).encode(), cache_control=cache_control(RELEASE, key))
    return key
