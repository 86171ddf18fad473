"""``yank VERSION --channel C --reason TEXT --bucket URL`` (``--undo``: no reason): mark a version yanked on a
channel's pages (PEP 592)."""

from __future__ import annotations

from packaging.version import InvalidVersion, Version

from builders.base.console import Console
from builders.base.errors import SelectionError
from builders.channels import publishing, yanking
from builders.channels.evidence import LedgerEntry
from builders.channels.ledger import ChannelState, open_ledger
from builders.channels.objectstore import open_bucket
from builders.channels.yanking import of_version
from builders.cli import load
from builders.cli.arguments import Options

HELP = "mark a version yanked on every page of a channel (PEP 592), keeping its bytes"
DESCRIPTION = ("Rewrite every label's pages of --channel so that each file of VERSION is listed as yanked with "
               "--reason (data-yanked in the HTML, \"yanked\" in the JSON): installers then skip it unless it is "
               "pinned (uv: with its local version, ==2.15.0+cpu), and nothing that already resolved it breaks (no "
               "byte is deleted). --undo lists it as installable again. PyPI's own yank is made in its web UI (a version there is never "
               "uploaded again).")


def execute(opts: Options, console: Console) -> int:
    if not (opts.undo or opts.reason):
        raise SelectionError("yank needs --reason TEXT (installers show it to whoever pins the version); "
                             "--undo needs none")
    m = load.matrix(opts)
    try:
        version = Version(opts.version)
    except InvalidVersion:
        raise SelectionError(f"{opts.version!r} is not a version") from None
    channel = m.channels.channel(opts.channel)
    bucket = open_bucket(opts.bucket, dict(opts.env))
    ledger = open_ledger(bucket, channel.name.value, opts.env)
    evidence = publishing.gather(bucket, ledger, channel, project=m.project.name, local={}, targets={},
                                 labels=[v.label for v in m.variants], mirror_records={})
    reason = None if opts.undo else opts.reason
    at = publishing.now()

    def entry(state: ChannelState) -> LedgerEntry | None:
        return yanking.yank_entry(state, project=m.project.name, version=version, reason=reason, at=at,
                                  writer=ledger.writer)

    planned = yanking.marking(evidence, entry(evidence.state))
    verb = "un-yank" if opts.undo else "yank"
    for mark in planned.entry.yanks if planned.entry else ():
        console.line(f"{verb}  {mark.key}")
    if planned.done:
        console.line(f"{bucket.url}: already done: every file of {version} is {verb}ed on the {channel.name.value} "
                     "channel; nothing written")
        return 0
    if opts.dry_run:
        console.line(f"--dry-run: {len(planned.writes)} page(s) not written")
        return 0
    committed, state, written = publishing.commit_and_render(bucket, ledger, evidence, entry)
    finished = "" if committed else " (finished: the ledger held the marks already)"
    console.line(f"{bucket.url}: {len(of_version(state, m.project.name, version))} file(s) of {version} {verb}ed on "
                 f"the {channel.name.value} channel ({len(written)} page(s)){finished}; ledger entry "
                 f"{committed.id if committed else state.entries[-1].id}")
    return 0
