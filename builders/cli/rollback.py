"""``rollback --promotion KEY --reason TEXT --bucket URL``: undo a promotion on the release channel."""

from __future__ import annotations

import re
from pathlib import Path

from builders.base.console import Console
from builders.base.errors import InputError, Problem
from builders.channels import publishing, yanking
from builders.channels.evidence import LedgerEntry, PromotionRecord
from builders.channels.ledger import ChannelState, open_ledger
from builders.channels.objectstore import Bucket, open_bucket
from builders.cli import load
from builders.cli.arguments import Options
from builders.matrix.release_channels import ChannelName

ENTRY_ID = re.compile(r"[0-9]{8}-[0-9a-f]{16}")  # a ledger entry's id (builders history lists them)
HELP = "undo a promotion: its files yanked on the release channel, the pages as they were restored"
DESCRIPTION = ("Find the promotion in the release channel's ledger, by its entry id (builders history --channel "
               "release lists them) or by either record file (promote-release --record's, or its publish record "
               "under publish-records/release/ in the bucket, or a local copy), then append a rollback entry: every "
               "file that promotion released is listed as yanked with --reason (its bytes stay: whoever pinned it "
               "with == still installs it), and the pages are rewritten from the ledger, so that an unpinned install "
               "resolves the previous release again. A second rollback of the same promotion writes nothing (already "
               "done). PyPI's files are yanked in PyPI's web UI; a version there is never uploaded again.")


def execute(opts: Options, console: Console) -> int:
    m = load.matrix(opts)
    release = m.channels.channel(ChannelName.RELEASE)
    bucket = open_bucket(opts.bucket, dict(opts.env))
    ledger = open_ledger(bucket, release.name.value, opts.env)
    evidence = publishing.gather(bucket, ledger, release, project=m.project.name, local={}, targets={},
                                 labels=[v.label for v in m.variants], mirror_records={})
    record = None if ENTRY_ID.fullmatch(opts.promotion) else read_record(bucket, opts.promotion)
    promoted = yanking.promotion_entry(evidence.state, opts.promotion, record)
    at = publishing.now()

    def entry(state: ChannelState) -> LedgerEntry | None:
        return yanking.rollback_entry(state, promoted, reason=opts.reason, at=at, writer=ledger.writer)

    planned = yanking.marking(evidence, entry(evidence.state))
    for mark in planned.entry.yanks if planned.entry else ():
        console.line(f"yank     {mark.key}")
    version = promoted.promotion.version if promoted.promotion else "?"
    if planned.done:
        console.line(f"{bucket.url}: already done: the promotion {promoted.id} of {version} is rolled back; "
                     "nothing written")
        return 0
    if opts.dry_run:
        console.line(f"--dry-run: {len(planned.writes)} page(s) not written")
        return 0
    committed, state, written = publishing.commit_and_render(bucket, ledger, evidence, entry)
    finished = "" if committed else " (finished: the ledger held the rollback already)"
    console.line(f"{bucket.url}: the promotion {promoted.id} of {version} rolled back "
                 f"({len(planned.entry.yanks) if planned.entry else 0} file(s) yanked, {len(written)} page(s))"
                 f"{finished}; ledger entry {committed.id if committed else state.entries[-1].id}")
    return 0


def read_record(bucket: Bucket, where: str) -> PromotionRecord:
    """The promotion's record: a local file if ``where`` is one, else the bucket's object of that key (exit 20
    naming the file and the key when it is not a promotion record)."""
    local = Path(where)
    data = local.read_bytes() if local.is_file() else bucket.read_if_there(where)
    if data is None:
        raise InputError([Problem(message=f"{where}: no such file, nor an object in {bucket.url}")])
    return PromotionRecord.from_json(data, where)
