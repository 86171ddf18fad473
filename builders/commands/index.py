"""``index WHEELHOUSE --output DIR``: a static per-label package index of the wheels found."""

from __future__ import annotations

import argparse
from pathlib import Path

from .. import matrix as matrix_mod
from ..cli import add_matrix_option, input_dir, output_dir
from ..console import Console
from ..index import IndexBuildError, build_index, find_wheels, matrix_checker


def configure_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("index", help="write a static package index of a wheelhouse",
                       description="Lay out every *.whl under WHEELHOUSE as a static index per local version label "
                                   "(the matrix's index layout, whl/<label>/): PEP 503 HTML, PEP 691 JSON and "
                                   "PEP 658/714 .metadata files, served by any static file server or a file:// "
                                   "URL to pip --index-url. Unlabelled wheels are skipped; every labelled wheel is "
                                   "verified against its target first. Exit 16 on a wheel that does not verify, "
                                   "clashing files, a label the matrix does not have, or no labelled wheel at all.")
    add_matrix_option(p)
    p.add_argument("wheelhouse", type=input_dir, metavar="WHEELHOUSE")
    p.add_argument("--output", type=output_dir, required=True, metavar="DIR", help="where the index is written")
    p.set_defaults(execute=execute)


def execute(args: argparse.Namespace, console: Console) -> int:
    m = matrix_mod.load(args.matrix)
    wheels = find_wheels(args.wheelhouse)
    if not wheels:
        raise IndexBuildError(f"{args.wheelhouse}: no wheels (*.whl) under this folder, nothing to index")
    result = build_index(wheels, args.output, layout=m.channels.index_path, labels=[v.label for v in m.variants],
                         check=matrix_checker(m))
    for path in result.skipped:
        console.warning(f"{path.name}: unlabelled, not indexed")
    if not result.files:
        raise IndexBuildError(f"{args.wheelhouse}: none of its {len(wheels)} wheel(s) carries a variant label "
                              "(such as 2.15.0+cu132), nothing to index")
    for label in result.labels:
        count = sum(1 for f in result.files if f.label == label)
        console.line(f"{Path(args.output) / m.channels.index_path(label)}: {count} wheel(s)")
    return 0
