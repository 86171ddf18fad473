"""``yank VERSION --channel C --reason TEXT --bucket URL``: mark a version yanked on a channel's pages (PEP 592)."""

from __future__ import annotations

import datetime

from packaging.version import InvalidVersion, Version

from builders.base.console import Console
from builders.base.errors import SelectionError
from builders.cli import load
from builders.cli.arguments import Options
from builders.index import yank
from builders.index.objectstore import open_bucket

HELP = "mark a version yanked on every page of a channel (PEP 592), keeping its bytes"
DESCRIPTION = ("Rewrite every label's pages of --channel so that each file of VERSION is listed as yanked with "
               "--reason (data-yanked in the HTML, \"yanked\" in the JSON): pip and uv then skip it unless it is "
               "pinned with ==, and nothing that already resolved it breaks (no byte is deleted). --undo lists "
               "it as installable again. PyPI's own yank is made in its web UI (a version there is never "
               "uploaded again).")


def execute(opts: Options, console: Console) -> int:
    m = load.matrix(opts)
    try:
        version = Version(opts.version)
    except InvalidVersion:
        raise SelectionError(f"{opts.version!r} is not a version") from None
    channel = m.channels.channel(opts.channel)
    bucket = open_bucket(opts.bucket, dict(opts.env))
    change = yank.yank(bucket, channel, [v.label for v in m.variants], project=m.project.name, version=version,
                       reason=None if opts.undo else opts.reason)
    verb = "un-yank" if opts.undo else "yank"
    for key in change.marked:
        console.line(f"{verb}  {key}")
    if opts.dry_run:
        console.line(f"--dry-run: {len(change.pages)} page(s) not written")
        return 0
    key = yank.apply(bucket, change, at=datetime.datetime.now(datetime.UTC),
                     what={"kind": verb, "version": str(version), "reason": opts.reason})
    console.line(f"{bucket.url}: {len(change.marked)} file(s) of {version} {verb}ed on the {channel.name.value} "
                 f"channel ({len(change.pages)} page(s)); record {key}")
    return 0
