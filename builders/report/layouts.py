"""Three ways to lay a release's builds out in jobs, side by side at a profile's scale.

- one job per target: each compiles its variant's core again;
- one core job per (variant, platform), then one job per Python on its core: the core once, every
  Python in parallel, each job paying its set-up (and image pull) again;
- one job per (variant, platform) that builds every Python after the core (the release workflow's,
  :func:`builders.ci.jobs.build_groups`): the fewest runner-minutes, the longest wall-clock
  (PyTorch measured 57 to 62 % fewer runner-minutes at 2.5 times the wall-clock, pytorch/pytorch#183931).

Minutes are cold (no compile cache); dollars at the build runner's price.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from builders.ci import jobs as ci
from builders.matrix.targets import Target
from builders.report.prices import Prices
from builders.report.scale_profile import Profile

PER_TARGET = "one job per target"
FAN_OUT = "core job, then one job per Python"
LOOPED = "one job per (variant, platform), every Python in it"


@dataclass(frozen=True, kw_only=True)
class Layout:
    """One layout's build jobs, runner-minutes, wall-clock (the slowest job chain) and dollars."""

    name: str
    jobs: int
    minutes: float
    wall_minutes: float
    dollars: float
    used: bool = False  # the layout the release workflow's plan uses


def _group(group: Sequence[Target], profile: Profile) -> dict[str, tuple[int, float, float]]:
    """(jobs, minutes, wall) of one (variant, platform) in each layout."""
    s = profile.of(group[0])
    setup = profile.setup_min + s.image_mb / profile.transfer_mb_s / 60
    n = len(group)
    return {PER_TARGET: (n, n * (setup + s.core_cold_min + s.per_python_min), setup + s.core_cold_min + s.per_python_min),
            FAN_OUT: (n + 1, setup + s.core_cold_min + n * (setup + s.per_python_min),
                      2 * setup + s.core_cold_min + s.per_python_min),
            LOOPED: (1, setup + s.core_cold_min + n * s.per_python_min, setup + s.core_cold_min + n * s.per_python_min)}


def compare(targets: Sequence[Target], profile: Profile, prices: Prices) -> list[Layout]:
    """The three layouts for ``targets``, the release workflow's marked."""
    sums = {name: [0, 0.0, 0.0, 0.0] for name in (PER_TARGET, FAN_OUT, LOOPED)}
    for group in ci.build_groups(targets):
        price = prices.runner(group[0].runner).per_minute
        for name, (jobs, minutes, wall) in _group(group, profile).items():
            total = sums[name]
            total[0] += jobs
            total[1] += minutes
            total[2] = max(total[2], wall)
            total[3] += minutes * price
    used = len(ci.build_groups(targets))
    return [Layout(name=name, jobs=int(j), minutes=m, wall_minutes=w, dollars=d, used=(name == LOOPED and j == used))
            for name, (j, m, w, d) in sums.items()]
