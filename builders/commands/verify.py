"""``verify WHEEL --target ID``: static checks of any wheel against a target."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from packaging.version import Version

from .. import matrix as matrix_mod
from ..cli import add_matrix_option
from ..console import Console
from ..errors import VerifyError
from ..promote import pypi_requirements
from ..targets import Selection, select
from ..verify import Expectation, verify
from ..wheels import Wheel


def configure_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("verify", help="check a wheel against its target",
                       description="Check WHEEL's name, tags, version, METADATA, RECORD, ELF dependencies, RPATHs "
                                   "and size against what the matrix promises for --target. Exit 7 on any finding.")
    add_matrix_option(p)
    p.add_argument("wheel", type=Path, metavar="WHEEL")
    p.add_argument("--target", required=True, metavar="ID", help="the target the wheel claims to be")
    p.add_argument("--channel", choices=("index", "pypi"), default="index",
                   help="expect the labelled index wheel (default) or the promoted PyPI wheel")
    p.add_argument("--json", action="store_true", help="print findings as JSON")
    p.set_defaults(execute=execute)


def execute(args: argparse.Namespace, console: Console) -> int:
    m = matrix_mod.load(args.matrix)
    (target,) = select(m, Selection(targets=(args.target,)))
    expect = Expectation(target=target, dropped=m.dropped)
    if args.channel == "pypi":
        expect = Expectation(target=target, dropped=m.dropped, version=Version(m.project.version.public),
                             requirements=pypi_requirements(m))
    findings = verify(Wheel(args.wheel), expect)
    if args.json:
        print(json.dumps({"wheel": str(args.wheel), "target": target.id, "findings": [f.to_json() for f in findings]}, indent=2))
    for f in findings:
        console.error(str(f))
    if findings:
        raise VerifyError(f"{args.wheel.name}: {len(findings)} finding(s)")
    console.line(f"{args.wheel.name}: ok for {target.id}")
    return 0
