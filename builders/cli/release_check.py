"""``release-check WHEELHOUSE --plan PLAN``: the wheels are exactly the ones the plan promised."""

from __future__ import annotations

import argparse

from builders.base import untrusted
from builders.base.console import Console
from builders.base.errors import InputError, ReleaseError
from builders.cli import input_dir, input_file
from builders.release.checks import wheel_set_problems
from builders.release.index import find_wheels

PLAN_LIMIT = 8 * untrusted.MIB


def configure_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("release-check", help="check that a run's wheels are exactly the plan's",
                       description="Compare the labelled wheels under WHEELHOUSE (every build job's artifact) with "
                                   "the wheel names of PLAN (`plan --format github`): a missing wheel (a build that "
                                   "never uploaded) or one the plan did not promise fails (exit 25), each named, so "
                                   "that a release never publishes a subset or a stray file.")
    p.add_argument("wheelhouse", type=input_dir, metavar="WHEELHOUSE")
    p.add_argument("--plan", type=input_file, required=True, metavar="PLAN", help="plan.json of the run")
    p.set_defaults(execute=execute)


def execute(args: argparse.Namespace, console: Console) -> int:
    try:
        plan = untrusted.load_json(args.plan, limit=PLAN_LIMIT, max_depth=16, what="plan")
    except InputError as exc:
        raise ReleaseError(str(exc)) from None
    wheels = plan.get("wheels") if isinstance(plan, dict) else None
    if not isinstance(wheels, list) or not all(isinstance(w, str) for w in wheels):
        raise ReleaseError(f"{args.plan}: no list of wheels (a plan from `plan --format github`)")
    found = {path.name for path in find_wheels(args.wheelhouse)}
    problems = wheel_set_problems(set(wheels), found)
    if problems:
        raise ReleaseError(f"{args.wheelhouse}: the wheels are not the plan's:\n  " + "\n  ".join(problems))
    console.line(f"{args.wheelhouse}: the {len(wheels)} wheel(s) of the plan, and nothing else")
    return 0
