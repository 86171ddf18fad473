"""``verify WHEEL --target ID``: static checks of any wheel against a target."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from builders.base.console import Console
from builders.base.errors import VerifyError
from builders.cli import add_matrix_option
from builders.matrix import loader as matrix_mod
from builders.matrix.model import Matrix
from builders.matrix.targets import Selection, Target, select
from builders.release.promote import check_promoted
from builders.wheel.archive import Wheel
from builders.wheel.verify import Expectation, Finding, verify


def configure_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("verify", help="check a wheel against its target",
                       description="Check WHEEL's name, tags, version, METADATA, RECORD, ELF dependencies, RPATHs "
                                   "and size against what the matrix promises for --target. Exit 7 on any finding.")
    add_matrix_option(p)
    p.add_argument("wheel", type=Path, metavar="WHEEL")
    p.add_argument("--target", required=True, metavar="ID", help="the target the wheel claims to be")
    p.add_argument("--channel", choices=("auto", "index", "pypi"), default="auto",
                   help="expect the labelled index wheel or the promoted PyPI wheel; auto (default): the PyPI "
                        "wheel when WHEEL has no local label and the target is published to PyPI")
    p.add_argument("--json", action="store_true", help="print findings as JSON")
    p.set_defaults(execute=execute)


def execute(args: argparse.Namespace, console: Console) -> int:
    m = matrix_mod.load(args.matrix, builds=False)
    (target,) = select(m, Selection(targets=(args.target,)))
    findings = check(m, target, Wheel(args.wheel), args.channel)
    if args.json:
        print(json.dumps({"wheel": str(args.wheel), "target": target.id, "findings": [f.to_json() for f in findings]}, indent=2))
    for f in findings:
        console.error(str(f))
    if findings:
        raise VerifyError(f"{args.wheel.name}: {len(findings)} finding(s)")
    console.line(f"{args.wheel.name}: ok for {target.id}")
    return 0


def channel_of(target: Target, wheel: Wheel, channel: str = "auto") -> str:
    """Which wheel ``wheel`` should be: an unlabelled wheel of a PyPI target is the promoted one."""
    if channel != "auto":
        return channel
    return "pypi" if target.on_pypi and not wheel.version.local else "index"


def check(m: Matrix, target: Target, wheel: Wheel, channel: str = "auto") -> list[Finding]:
    """Findings for ``wheel`` as ``target``'s index wheel, or as its PyPI wheel (promote's own check)."""
    if channel_of(target, wheel, channel) == "pypi":
        return check_promoted(m, wheel, target)
    return verify(wheel, Expectation(target=target, dropped=m.dropped))
