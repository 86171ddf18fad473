"""``report``: write the compatibility matrix (Markdown, JSON, HTML)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from .. import matrix as matrix_mod
from .. import report, results
from ..cli import add_matrix_option
from ..console import Console


def configure_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="write the compatibility matrix",
                       description="Write the compatibility matrix (Python x variant per platform) as Markdown, "
                                   "JSON and HTML. With build results, each built cell shows its real status.")
    add_matrix_option(p)
    p.add_argument("--output", type=Path, default=Path("report"), metavar="DIR",
                   help="folder for compatibility.{md,json,html} (default: report/)")
    p.add_argument("--results", type=Path, action="append", default=[], metavar="PATH",
                   help="build results to show, repeatable (default: wheelhouse/results.json, if it exists)")
    p.set_defaults(execute=execute)


def execute(args: argparse.Namespace, console: Console) -> int:
    m = matrix_mod.load(args.matrix)
    found: dict = {}
    for path in args.results or [Path("wheelhouse/results.json")]:
        found.update(results.read(path))
    args.output.mkdir(parents=True, exist_ok=True)
    md = report.to_markdown(m, found)
    written = {
        "compatibility.md": md,
        "compatibility.json": json.dumps(report.to_json(m, found), indent=2) + "\n",
        "compatibility.html": report.to_html(m, found),
    }
    for name, text in written.items():
        (args.output / name).write_text(text, encoding="utf-8")
        console.line(f"wrote {args.output / name}")
    console.job_summary(md)
    return 0
