"""``rollback --promotion KEY --reason TEXT --bucket URL``: undo a promotion on the release channel."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

from builders.base.console import Console
from builders.base.errors import InputError, Problem
from builders.cli import load
from builders.cli.arguments import Options
from builders.index import yank
from builders.index.objectstore import Bucket, open_bucket
from builders.matrix.release_channels import ChannelName

HELP = "undo a promotion: its files yanked on the release channel, the pages as they were restored"
DESCRIPTION = ("Read the promotion's publish record (the key promote-release printed, under "
               "publish-records/release/ in the bucket, or a local copy), then rewrite the release channel's "
               "pages: every file that promotion released is listed as yanked with --reason (its bytes stay: "
               "whoever pinned it with == still installs it), and every file the pages listed before the "
               "promotion is listed again, so that an unpinned install resolves the previous release. PyPI's "
               "files are yanked in PyPI's web UI; a version there is never uploaded again.")


def execute(opts: Options, console: Console) -> int:
    m = load.matrix(opts)
    bucket = open_bucket(opts.bucket, dict(opts.env))
    record = read_record(bucket, opts.promotion)
    change = yank.rollback(bucket, m.channels.channel(ChannelName.RELEASE), record, reason=opts.reason)
    for key in change.marked:
        console.line(f"yank     {key}")
    for key in change.restored:
        console.line(f"restore  {key}")
    if opts.dry_run:
        console.line(f"--dry-run: {len(change.pages)} page(s) not written")
        return 0
    key = yank.apply(bucket, change, at=datetime.datetime.now(datetime.UTC),
                     what={"kind": "rollback", "version": record.get("version"), "reason": opts.reason,
                           "promotion": opts.promotion})
    console.line(f"{bucket.url}: the promotion of {record.get('version')} rolled back ({len(change.marked)} file(s) "
                 f"yanked, {len(change.restored)} restored); record {key}")
    return 0


def read_record(bucket: Bucket, where: str) -> dict:
    """The promotion's record: a local file if ``where`` is one, else the bucket's object of that key."""
    local = Path(where)
    data = local.read_bytes() if local.is_file() else bucket.read_if_there(where)
    if data is None:
        raise InputError([Problem(message=f"{where}: no such file, nor an object in {bucket.url}")])
    try:
        record = json.loads(data)
    except ValueError as exc:
        raise InputError([Problem(message=f"{where}: not a publish record: {exc}")]) from None
    if not isinstance(record, dict):
        raise InputError([Problem(message=f"{where}: not a publish record")])
    return record
