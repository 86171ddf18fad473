"""``repair-index --channel C --bucket URL``: a channel's pages rebuilt from the objects the bucket holds."""

from __future__ import annotations

from builders.base.console import Console
from builders.base.errors import ObjectStoreError
from builders.channels import publishing, repairing
from builders.channels.evidence import LISTED
from builders.channels.ledger import ChannelState, open_ledger
from builders.channels.objectstore import cache_control, open_bucket
from builders.cli import load
from builders.cli.arguments import Options

HELP = "rebuild a channel's pages from its ledger, yanks kept, strays named and never listed"
DESCRIPTION = ("Render every page of every label's index of --channel from the channel's ledger (yanks included) and "
               "write each that differs from the bucket's; delete the pages of projects the ledger does not hold. "
               "Every object under the channel's folders that the ledger never held is named as a stray and never "
               "listed (--dry-run names them too). A file the ledger holds whose object is gone or has other bytes is "
               "named and stops the repair (exit 40): no rendering brings bytes back. A bucket from before the ledger "
               "gets one first, from its readable pages and its publication records, each file kept only where its "
               "bytes are stored as recorded; the rest is reported. No wheel is written or deleted.")


def execute(opts: Options, console: Console) -> int:
    m = load.matrix(opts)
    channel = m.channels.channel(opts.channel)
    bucket = open_bucket(opts.bucket, dict(opts.env))
    ledger = open_ledger(bucket, channel.name.value, opts.env)
    evidence = repairing.gather(bucket, ledger, channel, [v.label for v in m.variants])
    fix = repairing.plan(evidence)
    show(console, fix)
    if fix.lost:
        raise ObjectStoreError(f"{bucket.url}: {len(fix.lost)} file(s) the {channel.name.value} ledger holds are "
                               f"missing or stored with other bytes: {', '.join(fix.lost[:10])}; publish them "
                               "again (or restore them from the store's versions), then repair")
    if fix.done:
        console.line(f"{bucket.url}: already done: the {channel.name.value} channel's pages are the ledger's "
                     f"rendering ({len(fix.strays)} stray object(s), not listed)")
        return 0
    if opts.dry_run:
        console.line(f"--dry-run: {len(fix.writes)} page(s) not written, {len(fix.deletes)} not deleted")
        return 0
    if fix.adopt is not None:
        ledger.append(lambda s: None if s.head else fix.adopt)
    for key, data in fix.remade.items():
        bucket.upload(key, data, cache_control=cache_control(channel.name.value, key))
    state = ledger.read().state
    written = publishing.write_pages(bucket, ledger, _as_publish(evidence, state), state, dict(evidence.pages))
    if fix.deletes:
        bucket.delete(fix.deletes)
    publishing.require_links(bucket, written, written)
    console.line(f"{bucket.url}: the {channel.name.value} channel's pages rebuilt from its ledger ({len(written)} "
                 f"written, {len(fix.deletes)} deleted, {len(fix.strays)} stray object(s) not listed)")
    return 0


def show(console: Console, fix: repairing.PageRepair) -> None:
    if fix.adopt is not None:
        console.line(f"ledger   a first one, of {sum(1 for f in fix.adopt.added if f.form in LISTED)} wheel(s) "
                     f"({fix.adopt.note})")
    for key in fix.remade:
        console.line(f"metadata {key}: made again from its wheel (the sha256 the ledger holds)")
    for key in fix.writes:
        console.line(f"write    {key}")
    for key in fix.deletes:
        console.line(f"delete   {key}")
    for key in fix.strays:
        console.line(f"stray    {key}: the ledger never held it, no page lists it")
    for key in fix.lost:
        console.error(f"lost     {key}: the ledger holds it, the bucket lacks its bytes")


def _as_publish(evidence: repairing.RepairFacts, state: ChannelState) -> publishing.PublishFacts:
    """The repair's facts in the shape the page writer takes (no local file)."""
    mirror = {folder: raw for _label, folder in evidence.folders
              if (raw := evidence.pages.get(f"{folder}mirror.json")) is not None}
    return publishing.PublishFacts(channel=evidence.channel, project="", folders=evidence.folders, local={}, stored={},
                               objects=frozenset(evidence.sizes), pages=evidence.pages, mirror=mirror, state=state)
