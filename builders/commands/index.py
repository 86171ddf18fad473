"""``index WHEELHOUSE --output DIR``: a static per-label package index of the wheels found."""

from __future__ import annotations

import argparse
from pathlib import Path

from .. import matrix as matrix_mod
from ..cli import add_matrix_option
from ..console import Console
from ..errors import BuildersError
from ..index import build_index, find_wheels


def configure_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("index", help="write a static package index of a wheelhouse",
                       description="Lay out every *.whl under WHEELHOUSE as a static index per local version label "
                                   "(the matrix's index layout, whl/<label>/): PEP 503 HTML, PEP 691 JSON and "
                                   "PEP 658/714 .metadata files, served by any static file server or a file:// "
                                   "URL to pip --index-url. Unlabelled wheels are skipped. Exit 16 on clashing files.")
    add_matrix_option(p)
    p.add_argument("wheelhouse", type=Path, metavar="WHEELHOUSE")
    p.add_argument("--output", type=Path, required=True, metavar="DIR", help="where the index is written")
    p.set_defaults(execute=execute)


def execute(args: argparse.Namespace, console: Console) -> int:
    m = matrix_mod.load(args.matrix)
    if not args.wheelhouse.is_dir():
        raise BuildersError(f"{args.wheelhouse}: not a directory")
    wheels = find_wheels(args.wheelhouse)
    result = build_index(wheels, args.output, layout=m.channels.index_path, labels=[v.label for v in m.variants])
    for path in result.skipped:
        console.warning(f"{path.name}: unlabelled, not indexed")
    for label in result.labels:
        count = sum(1 for f in result.files if f.label == label)
        console.line(f"{args.output / m.channels.index_path(label)}: {count} wheel(s)")
    if not result.files:
        console.warning(f"no labelled wheels under {args.wheelhouse}")
    return 0
