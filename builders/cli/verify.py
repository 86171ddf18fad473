"""``verify WHEEL --target ID``: static checks of any wheel against a target."""

from __future__ import annotations

import json

from builders.base.console import Console
from builders.base.errors import VerifyError
from builders.cli import load
from builders.cli.arguments import Options
from builders.matrix.model import Matrix
from builders.matrix.targets import Target, one_target
from builders.wheel.archive import Wheel
from builders.wheel.pypi_form import check_promoted
from builders.wheel.verify import Expectation, Finding, verify

HELP = "check a wheel against its target"
DESCRIPTION = ("Check WHEEL's name, tags, version, METADATA, RECORD, ELF dependencies, RPATHs "
                "and size against what the matrix promises for --target. Exit 7 on any finding.")


def execute(opts: Options, console: Console) -> int:
    m = load.matrix(opts)
    target = one_target(m, opts.target)
    findings = check(m, target, Wheel(opts.wheel), opts.channel)
    if opts.json:
        console.out(json.dumps({"wheel": str(opts.wheel), "target": target.id, "findings": [f.to_json() for f in findings]}, indent=2))
    for f in findings:
        console.error(str(f))
    if findings:
        raise VerifyError(f"{opts.wheel.name}: {len(findings)} finding(s)")
    console.line(f"{opts.wheel.name}: ok for {target.id}")
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
