"""``workflow --check`` at scale: the workflows rehearsed at the shipped profile (docs/rehearsal.md).

One rule, so that a workflow edit that would fail on the real run is refused like any other drift: no job
whose work is some wheels (those it installs, the PyPI wheels it uploads) may download more and so outgrow
its runner's disk (a validate job that downloads every wheel of the release to test the few of its runner).
The other limits the rehearsal finds depend on the profile and the runners more than on the workflow:
``plan --rehearse`` reports them.
"""

from __future__ import annotations

from pathlib import Path

from builders.base.errors import RehearsalError
from builders.matrix.model import Matrix
from builders.matrix.targets import expand
from builders.report import limits, prices, rehearsal, scale_profile


def scale_problems(matrix: Matrix, workflow: Path) -> list[str]:
    """Each job of ``workflow`` (and the workflows it calls, and promote.yml beside it) that downloads more than
    it uses and then exceeds its runner's disk at the shipped profile, as drift naming the job and the fix."""
    profile = scale_profile.load(scale_profile.SHIPPED)
    try:
        r = rehearsal.rehearse(expand(matrix)[0], workflow, profile, prices.shipped(matrix.runner_costs))
    except RehearsalError as exc:
        return [f"{workflow.name}: not rehearsed at {profile.name}: {exc}"]
    return [f"at {profile.name}'s scale: {f}" for f in limits.overdownloads(r)]
