"""``history --channel C --bucket URL``: a channel's ledger, entry by entry."""

from __future__ import annotations

from builders.base.console import Console
from builders.channels.evidence import LISTED, LedgerEntry
from builders.channels.ledger import Ledger
from builders.channels.objectstore import open_bucket
from builders.cli import load
from builders.cli.arguments import Options

HELP = "list a channel's ledger entries: publishes, promotions, yanks, rollbacks, with their ids"
DESCRIPTION = ("Read the channel's ledger from the bucket (ledger/<channel>/: the head, then each entry back to the "
               "first, each checked against the digest its child names) and list every entry, oldest first: its id "
               "(what rollback --promotion takes), kind, time, writer, and what it added, removed and yanked; a "
               "promotion with its version and manifest sha256. Reads only.")


def execute(opts: Options, console: Console) -> int:
    m = load.matrix(opts)
    channel = m.channels.channel(opts.channel)
    bucket = open_bucket(opts.bucket, dict(opts.env))
    state = Ledger(bucket, channel.name.value, mode="lease", writer="history").read().state
    if not state.entries:
        console.line(f"{bucket.url}: the {channel.name.value} channel has no ledger yet (the next command that "
                     "writes it builds one from its pages)")
        return 0
    for entry in state.entries:
        console.line(line(entry))
    console.line(f"{len(state.entries)} entries; the channel holds "
                 f"{sum(1 for f in state.files.values() if f.form in LISTED)} wheel(s), {len(state.yanks)} yanked")
    return 0


def line(entry: LedgerEntry) -> str:
    """One entry, as a release engineer scans it."""
    what = [f"+{sum(1 for f in entry.added if f.form in LISTED)} wheel(s)"] if entry.added else []
    what += [f"-{sum(1 for k in entry.removed if not k.endswith(('.metadata', '.provenance')))} removed"] if entry.removed else []
    yanked = [y for y in entry.yanks if y.reason is not None]
    what += [f"{len(yanked)} yanked ({yanked[0].reason!r})"] if yanked else []
    what += [f"{len(entry.yanks) - len(yanked)} listed again"] if len(entry.yanks) > len(yanked) else []
    if entry.promotion:
        what.append(f"version {entry.promotion.version}, manifest {entry.promotion.manifest_sha256[:12]}..., "
                    f"{len(entry.promotion.validation_sha256)} validation record(s)")
    if entry.undoes:
        what.append(f"undoes {entry.undoes}")
    note = f" - {entry.note}" if entry.note else ""
    return f"{entry.id}  {entry.kind:9} {entry.at}  {', '.join(what) or 'no change'}{note}  [{entry.writer}]"
