"""``publish --channel NAME --bucket s3://... WHEELHOUSE``: a channel's per-variant indexes, added to a bucket."""

from __future__ import annotations

import datetime
import json
import tempfile
from pathlib import Path

from builders.base import redact, safe_output
from builders.base.console import Console
from builders.base.errors import ObjectStoreError, SelectionError
from builders.cli import load
from builders.cli.arguments import Options
from builders.index import publish
from builders.index.manifest import labelled_wheels
from builders.index.objectstore import Bucket, open_bucket
from builders.index.pages import index_with_requirements
from builders.matrix.release_channels import ChannelName

SHOWN = 10  # dead links named in the message
HELP = "publish a channel's per-variant indexes to an S3-compatible bucket"
DESCRIPTION = ("Lay out every labelled wheel under WHEELHOUSE as the channel's per-variant indexes (as `index` does, "
               "verified, with the mirrored requirements), then add them to the bucket: what is published stays "
               "listed; on the release channel a file that would get other bytes is refused before anything is "
               "written (exit 41); on test it is replaced and the publication record says so; on nightly each "
               "variant keeps the channel's newest `keep` versions. Files are uploaded first, pages last, pruned "
               "files deleted after. Endpoint and credentials: AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, "
               "AWS_SECRET_ACCESS_KEY (or AWS_PROFILE, OIDC) as for any AWS client. Exit 40 on a request the store "
               "refuses.")


def execute(opts: Options, console: Console) -> int:
    m = load.matrix(opts)
    channel = m.declared_channel(opts.channel)
    if channel.name is ChannelName.RELEASE:
        raise SelectionError("publish writes the nightly and test channels only: the release channel holds a "
                             "validated candidate's bytes, copied by promote-release (docs/channels.md)")
    wheels = labelled_wheels(opts.wheelhouse)  # nothing to publish without one
    on_channel = publish.channel_matrix(m, channel, wheels)
    bucket = open_bucket(opts.bucket, opts.env)
    with tempfile.TemporaryDirectory(prefix="builders-publish-") as tmp:
        site = Path(tmp)
        index_with_requirements(on_channel, wheels, site, opts.env, mirror=not opts.no_mirror,
                                layout=channel.index_path)
        plan = publish.plan(bucket, channel, site, [v.label for v in m.variants], project=m.project.name)
        show(console, plan)
        publish.refuse(plan)
        if not plan.files and not plan.pruned:
            console.line(f"{bucket.url}: every file is published already with the same bytes: nothing written")
            return 0
        if opts.dry_run:
            console.line("--dry-run: nothing was written")
            return 0
        publish.apply(bucket, plan)
        dead_links(bucket, plan)
        record = publish.write_record(bucket, plan, at=datetime.datetime.now(datetime.UTC),
                                      version=str(on_channel.project.version))
    if opts.record is not None:
        safe_output.write_text(opts.record, json.dumps(redact.scrub(record), indent=2, sort_keys=True) + "\n")
    console.line(f"{bucket.url}: the {channel.name.value} channel serves {len(plan.served)} wheel(s)")
    return 0


def dead_links(bucket: Bucket, plan: publish.Publication) -> None:
    """Stop (exit 40, no publication record) when a page just written links a file the bucket does not hold."""
    problems = publish.unresolved(bucket, plan)
    if problems:
        shown = "; ".join(problems[:SHOWN])
        more = f" and {len(problems) - SHOWN} more" if len(problems) > SHOWN else ""
        raise ObjectStoreError(f"{bucket.url}: {len(problems)} link(s) of the pages just written do not resolve: "
                               f"{shown}{more}; no publication record was written (repair-index rewrites the "
                               "pages from what the bucket holds)")


def show(console: Console, plan: publish.Publication) -> None:
    for key in plan.added:
        console.line(f"add      {key}")
    for change in plan.replaced:
        console.line(f"replace  {change.key} (sha256 {change.old_sha256[:12]}... -> {change.new_sha256[:12]}...)")
    for change in plan.refused:
        console.error(f"refused  {change.key}: published with sha256 {change.old_sha256}, this one is {change.new_sha256}")
    for key in plan.pruned:
        console.line(f"prune    {key}")
    console.line(f"{len(plan.unchanged)} file(s) already published with the same bytes, {len(plan.pages)} page(s)")
