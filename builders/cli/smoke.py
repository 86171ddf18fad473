"""``smoke WHEEL --target ID``: install into a fresh venv and run the smoke test."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from builders.base.console import Console
from builders.base.errors import SmokeError, WheelError
from builders.cli import add_matrix_option
from builders.families import families, family_for
from builders.families.device import require
from builders.matrix import loader as matrix_mod
from builders.matrix.targets import Selection, Target, select
from builders.pipeline.host import detect
from builders.wheel.archive import Wheel
from builders.wheel.smoke import smoke


def configure_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("smoke", help="smoke-test a wheel in a fresh venv",
                       description="Create a venv with the target's interpreter, install WHEEL with its "
                                   "requirements and run builders' smoke probe from an empty directory: the "
                                   "distribution's version, extension modules and accelerator runtime libraries "
                                   "loaded from the venv, the GIL on free-threaded builds, then the project's "
                                   "smoke script (project.smoke.script). Prints the probe's record and the failed "
                                   "checks; exit 8 when a check failed. With --require-device, a GPU smoke job "
                                   "first fails (exit 23) on a machine that shows no device of its accelerator.")
    add_matrix_option(p)
    p.add_argument("wheel", type=Path, metavar="WHEEL")
    p.add_argument("--target", required=True, metavar="ID")
    p.add_argument("--python", type=Path, default=None, help="interpreter to use (default: discovered for the target)")
    p.add_argument("--installer", choices=("auto", "uv", "pip"), default="auto",
                   help="what makes the venv and installs: uv (builders' uv package; its cache keeps runtime "
                        "requirements), venv + pip, or uv where it runs, else pip with a note (default: auto)")
    p.add_argument("--require-device", action="store_true",
                   help="fail (exit 23) unless this machine shows a device of the target's accelerator, where the "
                        f"matrix names GPU smoke runners for its variant and platform ({device_rules()})")
    p.set_defaults(execute=execute)


def device_rules() -> str:
    """What counts as a device, family by family (their own words), for ``--help``."""
    rules = [f"{f.accelerator.value}: {f.device_help}" for f in families() if f.needs_device]
    spared = [f.accelerator.value for f in families() if not f.needs_device]
    return "; ".join(rules) + (f"; {', '.join(spared)} wheels never need one" if spared else "")


def execute(args: argparse.Namespace, console: Console) -> int:
    m = matrix_mod.load(args.matrix)
    (target,) = select(m, Selection(targets=(args.target,)))
    env = dict(os.environ)
    if args.require_device:
        require_device(target, env, console)
    problems = Wheel(args.wheel).problems()
    if problems:  # never install an archive that is unsafe to unpack
        raise WheelError(f"{args.wheel}: not installed, the archive is unsafe:\n  " + "\n  ".join(map(str, problems)))
    python = args.python or detect((target.python,), env).interpreter(target.python.abi)
    if python is None:
        raise SmokeError(f"no {target.python} interpreter on this host for {target.id}; pass --python")
    outcome = smoke(args.wheel.resolve(), target, python, env, None, dist_version=str(Wheel(args.wheel).version),
                    installer=args.installer)
    print(json.dumps({"target": target.id, "record": outcome.record, "problems": list(outcome.problems)}, indent=2))
    if not outcome.ok:
        raise SmokeError("; ".join(outcome.problems))
    return 0


def require_device(target: Target, env: dict[str, str], console: Console) -> None:
    """Before anything is installed: a GPU smoke job on a machine without its GPU fails here (exit 23)."""
    verdict = require(target, env)
    if verdict is None:
        accelerator = target.variant.accelerator
        why = (f"a {accelerator.value} wheel" if not family_for(accelerator).needs_device else
               f"the matrix names no GPU smoke runner for {target.variant.label} on {target.platform.name}")
        console.line(f"{target.id}: no device needed ({why})")
    else:
        console.line(f"{target.id}: {verdict.accelerator.value} device: {'; '.join(verdict.found)}")
