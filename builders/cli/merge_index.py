"""``merge-index NEW --into PUBLISHED``: add one release's indexes to the published ones."""

from __future__ import annotations

from builders.base.console import Console
from builders.cli.arguments import Options
from builders.index.pages import IndexBuildError, find_wheels, merge_into

HELP = "add a release's indexes to the published ones (earlier releases kept)"
DESCRIPTION = ("Copy the files of NEW (what `index` wrote for one release) into PUBLISHED (a "
                "checkout of the published indexes), then rewrite every project's and label's "
                "PEP 503/691 pages from the wheels PUBLISHED holds, and merge each label's "
                "mirror.json. Earlier releases stay installable. A file PUBLISHED already holds "
                "with other bytes is refused before anything is written (exit 16): a published "
                "file never changes. SHA256SUMS is not merged: rerun ci/checksums.sh.")


def execute(opts: Options, console: Console) -> int:
    if not find_wheels(opts.new):
        raise IndexBuildError(f"{opts.new}: no wheels (*.whl) under this folder, nothing to add")
    opts.into.mkdir(parents=True, exist_ok=True)
    added = merge_into(opts.new, opts.into)
    console.line(f"{opts.into}: {len(added)} file(s) added, {len(find_wheels(opts.into))} wheel(s) published in all")
    return 0
