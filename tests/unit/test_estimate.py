"""Runner time of a release run, from the plan: one build job per (variant, platform) against one per target.

Expected figures are computed here from the targets and the costs, independently of
builders.report.estimate's arithmetic (sums written out per job)."""

from __future__ import annotations

import pytest

from builders.ci import jobs as ci
from builders.families import loader as matrix
from builders.matrix.targets import expand
from builders.report.estimate import Costs, compare, estimate, measured


@pytest.fixture(scope="module")
def expanded(shipped_text: str):
    m = matrix.loads(shipped_text, "matrix.yaml")
    targets, _ = expand(m)
    return m, targets


def test_one_core_build_per_variant_and_platform(expanded) -> None:
    _, targets = expanded
    pairs = {(t.variant.label, t.platform.name) for t in targets}
    after = estimate(targets, Costs(), per_target=False, shards=1)
    before = estimate(targets, Costs(), per_target=True, shards=1)
    assert after.core_builds == after.build_jobs == len(pairs)
    assert before.core_builds == before.build_jobs == len(targets)
    assert before.jobs - after.jobs == len(targets) - len(pairs)


def test_runner_minutes_are_the_sum_of_the_jobs(expanded) -> None:
    _, targets = expanded
    costs = Costs(setup=10, image=100, pull=5, default_core=50, default_wheel=7, smoke=3, tail=20)
    images = {(t.variant.label, t.platform.name) for t in targets if t.platform.os.value == "linux"}
    pairs = {(t.variant.label, t.platform.name) for t in targets}
    per_pair = {p: sum(1 for t in targets if (t.variant.label, t.platform.name) == p) for p in pairs}
    builds = sum(10 + (5 if p in images else 0) + 50 + n * 7 for p, n in per_pair.items())
    fixed = 10 * (5 + 2)  # plan, report, release files, publish, deploy and two shard jobs
    expected = len(images) * 110 + builds + len(targets) * 13 + fixed + 20
    assert estimate(targets, costs, per_target=False, shards=2).runner_minutes == pytest.approx(expected / 60)


def test_the_shipped_matrix_halves_its_runner_minutes(expanded) -> None:
    """Issue 18's goal, with the default costs: at most half of one build job per target."""
    _, targets = expanded
    found = compare(targets, Costs(), shards=len(ci.github_plan(targets)["shards"]))
    assert found["runner_minutes_ratio"] <= 0.5
    assert found["after"]["critical_path_minutes"] >= found["before"]["critical_path_minutes"]


def test_measured_costs_replace_the_defaults_per_variant(expanded) -> None:
    _, targets = expanded
    cu132 = [t for t in targets if t.variant.label == "cu132"][:3]
    records = [{"id": cu132[0].id, "status": "built", "core": {"status": "built", "seconds": 99.0},
                "durations": {"build": 105.0, "verify": 2.0, "smoke": 3.0}},
               {"id": cu132[1].id, "status": "built", "core": {"status": "reused", "seconds": 0.1},
                "durations": {"build": 8.0, "verify": 2.0}},
               {"id": cu132[2].id, "status": "failed", "durations": {"build": 1.0}}]
    costs = measured(records, targets)
    assert costs.core_of("cu132") == 99.0
    assert costs.wheel_of("cu132") == pytest.approx((11.0 + 10.0) / 2)
    assert costs.core_of("cpu") == Costs().default_core
