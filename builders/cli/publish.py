"""``publish --channel NAME --bucket s3://... WHEELHOUSE``: a channel's per-variant indexes, added to a bucket."""

from __future__ import annotations

import contextlib
import json
import tempfile
from pathlib import Path

from packaging.utils import canonicalize_name

from builders.base import redact, safe_output
from builders.base.console import Console
from builders.base.errors import BuildersError, InputError, Problem, PublishRefused, SelectionError
from builders.channels import provenance, publishing
from builders.channels import publication as publish
from builders.channels.evidence import LISTED, LedgerEntry
from builders.channels.ledger import ChannelState, Ledger, open_ledger
from builders.channels.manifest import labelled_wheels
from builders.channels.objectstore import Bucket, cache_control, open_bucket
from builders.channels.publication import SiteEntry
from builders.channels.yanking import of_version
from builders.cli import load
from builders.cli.arguments import Options
from builders.index.mirror import RECORD
from builders.index.pages import index_with_requirements
from builders.matrix.model import Matrix
from builders.matrix.release_channels import ChannelName, ReleaseChannel
from builders.wheel.archive import Wheel
from builders.wheel.pypi_form import target_of

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
    if channel.name is ChannelName.TEST:
        refuse_released(bucket, on_channel)
    with tempfile.TemporaryDirectory(prefix="builders-publish-") as tmp:
        site = Path(tmp)
        index_with_requirements(on_channel, wheels, site, opts.env, mirror=not opts.no_mirror,
                                layout=channel.index_path)
        labels = [v.label for v in m.variants]
        local, records = site_files(site, channel, labels)
        ledger = open_ledger(bucket, channel.name.value, opts.env)
        evidence = publishing.gather(bucket, ledger, channel, project=m.project.name, local=local,
                                     targets=targets(on_channel, local), labels=labels, mirror_records=records,
                                     provenance=provenance_of(opts, local, console))
        at = publishing.now()
        planned = publishing.plan(evidence, at=at, writer=ledger.writer)
        show(console, planned)
        publishing.refuse(evidence, planned)
        if planned.done:
            console.line(f"{bucket.url}: already done: every file is published already with the same bytes: "
                         "nothing written")
            return 0
        if opts.dry_run:
            console.line("--dry-run: nothing was written")
            return 0
        entry, state = apply(bucket, ledger, evidence, planned, at=at, console=console, site=opts.site_url)
    ours = entry or publishing.publishing_entry(state, evidence.local)
    if ours is not None and planned.record:
        write_record(opts, bucket, state, ours, evidence, version=str(on_channel.project.version))
    console.line(f"{bucket.url}: the {channel.name.value} channel serves "
                 f"{sum(1 for f in state.files.values() if f.form in LISTED)} wheel(s)")
    return 0


def refuse_released(bucket: Bucket, m: Matrix) -> None:
    """A candidate of a version the release channel holds can never be promoted (a released file never changes):
    refused here, before its files reach the test channel, rather than first at promotion after its validation."""
    state = Ledger(bucket, ChannelName.RELEASE.value, mode="lease", writer="publish").read().state
    released = of_version(state, m.project.name, m.project.version)
    if released:
        raise PublishRefused(f"{m.project.name} {m.project.version} is released already ({len(released)} file(s) on "
                             f"the release channel, e.g. {released[0]}): a candidate of it can never be promoted; "
                             "release a new version (bump project.version, tag its -rc1)")


def write_record(opts: Options, bucket: Bucket, state: ChannelState, ours: LedgerEntry,
                 evidence: publishing.PublishFacts, *, version: str) -> None:
    """The publication record beside the channels (its key from the ledger entry: a rerun finds it) and in
    ``--record``."""
    channel = evidence.channel.name.value
    record = publishing.publication_record(state, ours, evidence.local, channel=channel, bucket=str(bucket.url),
                                           version=version)
    key = publishing.record_key(channel, ours)
    text = json.dumps(redact.scrub(record), indent=2, sort_keys=True) + "\n"
    bucket.upload(key, text.encode(), cache_control=cache_control(channel, key))
    if opts.record is not None:
        safe_output.write_text(opts.record, text)


def provenance_of(opts: Options, local: dict[str, SiteEntry], console: Console) -> dict[str, bytes]:
    """wheel key -> its PEP 740 provenance, from ``--attestations``' bundles; a wheel of the project's that no
    bundle attests is named (it is published without provenance)."""
    if opts.attestations is None:
        return {}
    try:
        found = provenance.provenances(provenance.read_bundles(opts.attestations),
                                       {k.rsplit("/", 1)[-1]: e.info.sha256 for k, e in local.items()})
    except provenance.ProvenanceProblem as exc:
        raise InputError([Problem(message=f"--attestations: {exc}", hint="pass the attest step's bundle-path "
                                  "files (Sigstore bundles)")]) from None
    keys = {k.rsplit("/", 1)[-1]: k for k in local}
    own = canonicalize_name(load.matrix(opts).project.name)
    for key in sorted(k for k, e in local.items() if e.info.project == own and k.rsplit("/", 1)[-1] not in found):
        console.error(f"no attestation names {key} (by its sha256): published without provenance")
    return {keys[name]: raw for name, raw in found.items()}


def site_files(site: Path, channel: ReleaseChannel, labels: list[str]) -> tuple[dict[str, SiteEntry], dict[str, bytes]]:
    """The wheels ``index`` laid out under ``site`` by key, and each label folder's mirror record."""
    local: dict[str, SiteEntry] = {}
    records: dict[str, bytes] = {}
    for label, folder in publish.label_folders(site, channel, labels):
        local.update(publish.local_entries(site, folder, label))
        if (site / folder / RECORD).is_file():
            records[folder] = (site / folder / RECORD).read_bytes()
    return local, records


def targets(m: Matrix, local: dict[str, SiteEntry]) -> dict[str, str]:
    """The target id of each of the project's own wheels (a requirement has none)."""
    out = {}
    for key, entry in local.items():
        if entry.source is not None and entry.info.project == canonicalize_name(m.project.name):
            with contextlib.suppress(BuildersError):
                out[key] = target_of(m, Wheel(entry.source)).id
    return out


def apply(bucket: Bucket, ledger: Ledger, evidence: publishing.PublishFacts, planned: publishing.Plan, *, at: str,
          console: Console, site: str | None = None) -> tuple[LedgerEntry | None, ChannelState]:
    """Objects, the ledger entry, the pages, the deletions, then every link checked, through the web front at
    ``site`` where one is given (module docstring of :mod:`builders.channels.publishing`); says what a rerun
    finished."""
    publishing.upload(bucket, evidence, planned)
    entry, state = publishing.commit(ledger, evidence, planned, at=at)
    written = publishing.write_pages(bucket, ledger, evidence, state, dict(evidence.pages))
    gone = sorted(k for k in evidence.objects if k in state.removed and k not in state.files)
    if gone:
        bucket.delete(gone)
    publishing.require_links(bucket, written, written, site)
    if entry is None:
        console.line(f"{bucket.url}: finished a publication cut short: {len(planned.uploads)} object(s), "
                     f"{len(written)} page(s) written, {len(gone)} object(s) deleted{', its record' if planned.record else ''} "
                     "(the ledger held it already)")
    else:
        console.line(f"{bucket.url}: ledger entry {entry.id} ({ledger.mode} writes)")
    return entry, state


def show(console: Console, plan: publishing.Plan) -> None:
    replaced, restored = set(plan.replaced), set(plan.restored)
    for f in plan.uploads:
        verb = "replace" if f.record.key in replaced else "restore" if f.record.key in restored else "add"
        console.line(f"{verb:8} {f.record.key}")
    for key in plan.refused:
        console.error(f"refused  {key}: published with other bytes")
    for key in plan.pruned:
        console.line(f"prune    {key}")
    console.line(f"{len(plan.writes)} page(s) to write, {len(plan.deletes)} object(s) to delete")
