"""``check-index --channel C``: the served index proves its contract and its coverage, after every publish."""

from __future__ import annotations

import json
import sys

from builders.base import redact, safe_output
from builders.base.console import Console
from builders.base.errors import CoverageMissing, IndexCheckFailed, SelectionError
from builders.channels.objectstore import cache_control, open_bucket
from builders.channels.validate import clean_env
from builders.cli import load
from builders.cli.arguments import Options
from builders.index import index_check
from builders.index.remote import Client
from builders.matrix.model import Matrix
from builders.matrix.release_channels import ReleaseChannel
from builders.matrix.targets import select
from builders.wheel.pypi_form import public_version
from builders.wheel.smoke import find_uv

HELP = "check a channel's served index: pages, hashes, links, provenance, variants.json, coverage per cell"
DESCRIPTION = ("Read each variant index of the channel as served (through --site-url, the web front): its PEP 691 "
               "JSON and PEP 503 HTML pages list the same files with the same hashes and provenance; every file of "
               "the version has its sha256, its PEP 658/714 core-metadata with a hash and its PEP 740 provenance "
               "(--no-provenance skips that last one, explicitly); every link, .metadata and provenance serves what "
               "the page lists; the release's variants.json is the one recorded when it was first checked. Then the "
               "coverage contract: every declared (variant x Python x platform) cell of the selection has a file "
               "that pip (--dry-run --report, the cell's --platform/--python-version/--abi) and uv (pip compile "
               "--python-platform/--python-version) each resolve from the variant's index; a cell a resolver cannot "
               "express is reported so. The coverage table (coverage.json, coverage.html) is written beside the "
               "channel's indexes with --bucket. Exit 48 on a finding, 49 on a missing cell.")


def execute(opts: Options, console: Console) -> int:
    m = load.matrix(opts)
    channel = m.declared_channel(opts.channel)
    if channel.prerelease and opts.commit_date is None:
        raise SelectionError("check-index --channel nightly needs --commit-date YYYY-MM-DD, the nightly's date")
    built = m.on_channel(channel.name, opts.commit_date)
    env = dict(opts.env)
    bucket = open_bucket(opts.bucket, env) if opts.bucket else None
    where = coverage_key(channel)
    plan = make_plan(built, channel, opts, index_check.recorded_variants(bucket.read_if_there(where + ".json")
                                                                         if bucket else None))
    resolvers = index_check.Resolvers(python=sys.executable, uv=find_uv(), env=clean_env(env), pre=channel.prerelease)
    checked = index_check.check(Client(), plan, resolvers, workers=index_check.WORKERS, show=console.line)
    data = index_check.record(plan, checked, channel.name.value)
    text = redact.redact(json.dumps(data, indent=2, sort_keys=True) + "\n")  # a finding names the URL it read
    if opts.record:
        safe_output.write_text(opts.record, text)
    if bucket is not None:
        bucket.upload(where + ".json", text.encode(), cache_control=cache_control("", where))
        bucket.upload(where + ".html", redact.redact(index_check.coverage_html(data)).encode(), cache_control=cache_control("", where))
        console.line(f"{bucket.url}: {where}.json and {where}.html written")
    return verdict(console, checked)


def coverage_key(channel: ReleaseChannel) -> str:
    """``coverage`` beside the channel's label folders: ``whl/test/coverage`` for ``whl/test/{label}/``."""
    return channel.layout.split("{label}", 1)[0] + "coverage"


def make_plan(m: Matrix, channel: ReleaseChannel, opts: Options, recorded: dict[str, str] | None) -> index_check.CheckPlan:
    """The channel's cells (the selection, or every target it publishes) and each variant's index as served."""
    site = (opts.site_url or m.channels.index_base_url).rstrip("/") + "/"
    targets = select(m, load.selection(opts))
    cells = index_check.cells(targets)
    variants = site + m.wheel_variants.layout if m.wheel_variants is not None else None
    return index_check.CheckPlan(project=m.project.name, version=str(public_version(m)),
                            indexes={c.label: site + channel.index_path(c.label) for c in cells},
                            cells=cells, provenance=not opts.no_provenance, variants_index=variants,
                            recorded_variants=recorded)


def verdict(console: Console, checked: index_check.Checked) -> int:
    """The findings and the coverage table shown; exit 49 on a missing cell, 48 on any other finding."""
    for f in checked.findings:
        console.line(f"{f.code}: {f.file}: {f.message}")
    rows = checked.rows
    unexpressed = sum(1 for row in rows for r in index_check.RESOLVERS if row.get(r) == index_check.CANNOT_EXPRESS)
    console.line(f"coverage: {len(rows)} cell(s), {len(checked.missing)} missing, {unexpressed} resolution(s) a "
                 "resolver cannot express")
    if checked.missing:
        raise CoverageMissing(f"{len(checked.missing)} declared cell(s) not resolved from the served index: "
                              f"{', '.join(checked.missing)}")
    if checked.findings:
        raise IndexCheckFailed(f"{len(checked.findings)} finding(s) in the served index (listed above)")
    return 0
