"""``release-check WHEELHOUSE --plan PLAN``: the wheels are exactly the ones the plan promised."""

from __future__ import annotations

from builders.base import untrusted
from builders.base.console import Console
from builders.base.errors import InputError, ReleaseError
from builders.ci.checks import wheel_set_problems
from builders.cli.arguments import Options
from builders.index.pages import find_wheels

PLAN_LIMIT = 8 * untrusted.MIB


HELP = "check that a run's wheels are exactly the plan's"
DESCRIPTION = ("Compare the labelled wheels under WHEELHOUSE (every build job's artifact) with "
                "the wheel names of PLAN (`plan --format github`): a missing wheel (a build that "
                "never uploaded) or one the plan did not promise fails (exit 25), each named, so "
                "that a release never publishes a subset or a stray file.")


def execute(opts: Options, console: Console) -> int:
    try:
        plan = untrusted.load_json(opts.plan, limit=PLAN_LIMIT, max_depth=16, what="plan")
    except InputError as exc:
        raise ReleaseError(str(exc)) from None
    wheels = plan.get("wheels") if isinstance(plan, dict) else None
    if not isinstance(wheels, list) or not all(isinstance(w, str) for w in wheels):
        raise ReleaseError(f"{opts.plan}: no list of wheels (a plan from `plan --format github`)")
    found = {path.name for path in find_wheels(opts.wheelhouse)}
    problems = wheel_set_problems(set(wheels), found)
    if problems:
        raise ReleaseError(f"{opts.wheelhouse}: the wheels are not the plan's:\n  " + "\n  ".join(problems))
    console.line(f"{opts.wheelhouse}: the {len(wheels)} wheel(s) of the plan, and nothing else")
    return 0
