"""``merge-index NEW --into PUBLISHED``: add one release's indexes to the published ones."""

from __future__ import annotations

import argparse

from builders.base.console import Console
from builders.cli import input_dir, output_dir
from builders.release.index import IndexBuildError, find_wheels, merge_into


def configure_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("merge-index", help="add a release's indexes to the published ones (earlier releases kept)",
                       description="Copy the files of NEW (what `index` wrote for one release) into PUBLISHED (a "
                                   "checkout of the published indexes), then rewrite every project's and label's "
                                   "PEP 503/691 pages from the wheels PUBLISHED holds, and merge each label's "
                                   "mirror.json. Earlier releases stay installable. A file PUBLISHED already holds "
                                   "with other bytes is refused before anything is written (exit 16): a published "
                                   "file never changes. SHA256SUMS is not merged: rerun ci/checksums.sh.")
    p.add_argument("new", type=input_dir, metavar="NEW")
    p.add_argument("--into", type=output_dir, required=True, metavar="PUBLISHED",
                   help="the published indexes, updated in place (an empty folder for the first release)")
    p.set_defaults(execute=execute)


def execute(args: argparse.Namespace, console: Console) -> int:
    if not find_wheels(args.new):
        raise IndexBuildError(f"{args.new}: no wheels (*.whl) under this folder, nothing to add")
    args.into.mkdir(parents=True, exist_ok=True)
    added = merge_into(args.new, args.into)
    console.line(f"{args.into}: {len(added)} file(s) added, {len(find_wheels(args.into))} wheel(s) published in all")
    return 0
