"""``yank`` and ``rollback`` through the ledger: the marks are a ledger entry, the pages its rendering.

Gather is :func:`builders.channels.publishing.gather` with no local files (the ledger, adopted from the
pages where there was none, the pages as they are); the plan is the entry of marks, pure; apply commits
it, writes the pages that differ from the rendering, and checks their links. A yank or rollback that
is already in the ledger writes nothing and says "already done"; one cut short after its commit
finishes the pages on the rerun. A rollback names its promotion by ledger entry id, or by either
record file (``promote-release --record``'s or the bucket's ``publish-records/release/...``): both
carry the manifest's sha256 and the version, which the promotion entry records.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import Version

from builders.base.errors import SelectionError
from builders.channels.evidence import LedgerEntry, PromotionRecord, YankMark
from builders.channels.ledger import ChannelState
from builders.channels.publishing import PublishFacts, render


@dataclass(frozen=True, kw_only=True)
class Marking:
    """What one yank or rollback does: its entry (None: the ledger has it already) and the pages to write."""

    entry: LedgerEntry | None
    pages: Mapping[str, bytes]
    writes: tuple[str, ...]

    @property
    def done(self) -> bool:
        return self.entry is None and not self.writes


def of_version(state: ChannelState, project: str, version: Version) -> list[str]:
    """The keys of ``project``'s wheels of ``version`` (its public part: every label's file)."""
    own = canonicalize_name(project)
    out = []
    for key, f in state.files.items():
        if f.form == "wheel":
            name, found, _build, _tags = parse_wheel_filename(key.rsplit("/", 1)[-1])
            if canonicalize_name(name) == own and found.public == version.public:
                out.append(key)
    return sorted(out)


def yank_entry(state: ChannelState, *, project: str, version: Version, reason: str | None, at: str,
               writer: str) -> LedgerEntry | None:
    """The entry marking every file of ``version`` (``reason`` None: listing it again); None when each is so."""
    keys = of_version(state, project, version)
    if not keys:
        raise SelectionError(f"the ledger holds no file of {project} {version} on this channel")
    marks = tuple(YankMark(key=k, reason=reason) for k in keys if state.yanks.get(k) != reason)
    if not marks:
        return None
    return LedgerEntry(seq=0, parent=None, parent_sha256=None, kind="yank", at=at, writer=writer, yanks=marks,
                 note=f"{'undo: ' if reason is None else ''}{version}")


def promotion_entry(state: ChannelState, which: str, record: PromotionRecord | None) -> LedgerEntry:
    """The promotion ``which`` names: a ledger entry id, or the record read from a file or object (its manifest's
    sha256 and version pick the entry)."""
    promotions = [e for e in state.entries if e.kind == "promotion" and e.promotion is not None]
    for entry in promotions:
        if entry.id == which or (record is not None and entry.promotion is not None
                                 and entry.promotion.manifest_sha256 == record.manifest_sha256
                                 and entry.promotion.version == record.version):
            return entry
    known = ", ".join(f"{e.id} ({e.promotion.version})" for e in promotions if e.promotion) or "none"
    raise SelectionError(f"{which}: no promotion of the release ledger is that id or record (promotions: {known}; "
                         "builders history --channel release lists them)")


def rollback_entry(state: ChannelState, promotion: LedgerEntry, *, reason: str, at: str, writer: str) -> LedgerEntry | None:
    """Every wheel the promotion added, yanked; None when a rollback of it is in the ledger already."""
    if any(e.kind == "rollback" and e.undoes == promotion.id for e in state.entries):
        return None
    keys = sorted(f.key for f in promotion.added if f.form == "wheel" and f.key in state.files)
    return LedgerEntry(seq=0, parent=None, parent_sha256=None, kind="rollback", at=at, writer=writer, undoes=promotion.id,
                 yanks=tuple(YankMark(key=k, reason=reason) for k in keys),
                 note=f"rollback of {promotion.promotion.version if promotion.promotion else promotion.id}")


def marking(evidence: PublishFacts, entry: LedgerEntry | None) -> Marking:
    """The pages after ``entry`` (pure): those whose bytes differ from the bucket's are written."""
    from builders.channels.ledger import chained

    after = evidence.state if entry is None else evidence.state.after(chained(evidence.state, entry))
    pages = render(after, evidence.folders, evidence.mirror)
    return Marking(entry=entry, pages=pages, writes=tuple(k for k, v in pages.items() if evidence.pages.get(k) != v))
