"""``repair-index --channel C --bucket URL``: a channel's pages rebuilt from the objects the bucket holds."""

from __future__ import annotations

from builders.base.console import Console
from builders.cli import load
from builders.cli.arguments import Options
from builders.index import repair
from builders.index.objectstore import open_bucket

HELP = "rebuild a channel's pages from the wheels the bucket holds (what publish's exit 40 asks for)"
DESCRIPTION = ("For every label's index of --channel: list the bucket's objects, describe each wheel from its own "
               "bytes (sha256 from the store's checksum or read back; its .metadata written from the wheel where it "
               "is missing), keep the yanks the old pages record where they can be read, and rewrite every page; "
               "pages of a project with no wheel left are deleted. Nothing else is changed: no wheel is written "
               "or deleted.")


def execute(opts: Options, console: Console) -> int:
    m = load.matrix(opts)
    channel = m.channels.channel(opts.channel)
    bucket = open_bucket(opts.bucket, dict(opts.env))
    fix = repair.plan(bucket, channel, [v.label for v in m.variants])
    for upload in fix.metadata:
        console.line(f"metadata {upload.key}")
    for key in fix.deleted:
        console.line(f"delete   {key}")
    if opts.dry_run:
        console.line(f"--dry-run: {len(fix.pages)} page(s) listing {len(fix.listed)} wheel(s) not written")
        return 0
    repair.apply(bucket, fix)
    console.line(f"{bucket.url}: the {channel.name.value} channel's pages list the {len(fix.listed)} wheel(s) it holds "
                 f"({len(fix.pages)} page(s), {len(fix.metadata)} .metadata written, {len(fix.deleted)} deleted)")
    return 0
