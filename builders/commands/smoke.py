"""``smoke WHEEL --target ID``: install into a fresh venv and run the smoke test."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from .. import matrix as matrix_mod
from ..cli import add_matrix_option
from ..console import Console
from ..errors import SmokeError, WheelError
from ..host import detect
from ..smoke import smoke
from ..targets import Selection, select
from ..wheels import Wheel


def configure_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("smoke", help="smoke-test a wheel in a fresh venv",
                       description="Create a venv with the target's interpreter, install WHEEL with its "
                                   "requirements and run builders' smoke probe from an empty directory: the "
                                   "distribution's version, extension modules and accelerator runtime libraries "
                                   "loaded from the venv, the GIL on free-threaded builds, then the project's "
                                   "smoke script (project.smoke.script). Prints the probe's record and the failed "
                                   "checks; exit 8 when a check failed.")
    add_matrix_option(p)
    p.add_argument("wheel", type=Path, metavar="WHEEL")
    p.add_argument("--target", required=True, metavar="ID")
    p.add_argument("--python", type=Path, default=None, help="interpreter to use (default: discovered for the target)")
    p.set_defaults(execute=execute)


def execute(args: argparse.Namespace, console: Console) -> int:
    m = matrix_mod.load(args.matrix)
    (target,) = select(m, Selection(targets=(args.target,)))
    problems = Wheel(args.wheel).problems()
    if problems:  # never install an archive that is unsafe to unpack
        raise WheelError(f"{args.wheel}: not installed, the archive is unsafe:\n  " + "\n  ".join(map(str, problems)))
    env = dict(os.environ)
    python = args.python or detect((target.python,), env).interpreter(target.python.abi)
    if python is None:
        raise SmokeError(f"no {target.python} interpreter on this host for {target.id}; pass --python")
    outcome = smoke(args.wheel.resolve(), target, python, env, None, dist_version=str(Wheel(args.wheel).version))
    print(json.dumps({"target": target.id, "record": outcome.record, "problems": list(outcome.problems)}, indent=2))
    if not outcome.ok:
        raise SmokeError("; ".join(outcome.problems))
    return 0
