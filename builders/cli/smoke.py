"""``smoke WHEEL --target ID``: install into a fresh venv and run the smoke test."""

from __future__ import annotations

import json

from builders.base.console import Console
from builders.base.errors import SmokeError, WheelError
from builders.cli import load
from builders.cli.arguments import Options
from builders.cli.options import device_rules
from builders.families import family_for
from builders.families.device import require
from builders.matrix.targets import Target, one_target
from builders.pipeline.host import detect
from builders.wheel.archive import Wheel
from builders.wheel.smoke import smoke

__all__ = ["DESCRIPTION", "HELP", "device_rules", "execute", "require_device"]

HELP = "smoke-test a wheel in a fresh venv"
DESCRIPTION = ("Create a venv with the target's interpreter, install WHEEL with its "
                "requirements and run builders' smoke probe from an empty directory: the "
                "distribution's version, extension modules and accelerator runtime libraries "
                "loaded from the venv, the GIL on free-threaded builds, then the project's "
                "smoke script (project.smoke.script); with --channel nightly --commit-date, "
                "against a nightly's version. Prints the probe's record and the failed "
                "checks; exit 8 when a check failed. With --require-device, a GPU smoke job "
                "first fails (exit 23) on a machine that shows no device of its accelerator.")


def execute(opts: Options, console: Console) -> int:
    # A nightly wheel says it is the nightly version (2.16.0.dev20261201+cpu): the target as --channel built it.
    m = load.matrix(opts, builds=True, channel=True)
    target = one_target(m, opts.target)
    env = dict(opts.env)
    if opts.require_device:
        require_device(target, env, console)
    problems = Wheel(opts.wheel).problems()
    if problems:  # never install an archive that is unsafe to unpack
        raise WheelError(f"{opts.wheel}: not installed, the archive is unsafe:\n  " + "\n  ".join(map(str, problems)))
    python = opts.python or detect((target.python,), env).interpreter(target.python.abi)
    if python is None:
        raise SmokeError(f"no {target.python} interpreter on this host for {target.id}; pass --python")
    outcome = smoke(opts.wheel.resolve(), target, python, env, None, dist_version=str(Wheel(opts.wheel).version),
                    installer=opts.installer)
    console.out(json.dumps({"target": target.id, "record": outcome.record, "problems": list(outcome.problems),
                            "isolation": outcome.isolation}, indent=2))
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
