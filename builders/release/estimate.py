"""What a release run costs in runner time, from the plan and (when given) measured stage times.

Two layouts of the same targets are compared: one build job per target (each compiles its
variant's ``build.core`` again) and one build job per (variant, platform) that builds the core
once and every Python after it (the release workflow's layout, :mod:`builders.release.ci`). Smoke jobs
are one per target in both. A job costs a fixed set-up (runner start, checkout, the locked tools,
nox's environment) plus its work; jobs of one stage run side by side, so the critical path is
the slowest job of each stage in turn.

Stage times come from :class:`Costs`: this project's defaults, replaced per variant by what
``results.json`` files measured (``core.seconds`` where the core was built, the other stages'
``durations`` per wheel). Everything here is pure.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from builders.matrix.targets import Target
from builders.release.ci import build_groups, build_id, images

# Jobs outside the build and smoke matrices: plan, report, release files, publish, deploy, and
# one shard-matrix job per shard.
FIXED_JOBS = ("plan", "report", "release-files", "publish", "deploy")


@dataclass(frozen=True, kw_only=True)
class Costs:
    """Seconds of runner time per piece of a release run.

    The defaults are round figures for a hosted 4-core runner building the demo project
    (its images install a CUDA toolkit; its core compiles for minutes): replace them by
    measured ones (``plan --estimate --results results.json``) for a real project.
    """

    setup: float = 150.0  # each job: runner start, checkout, setup-python, locked tools, nox's environment
    image: float = 600.0  # one image job's build and push
    pull: float = 60.0  # a container build job pulling its image
    core: Mapping[str, float] = field(default_factory=dict)  # by variant label; else default_core
    wheel: Mapping[str, float] = field(default_factory=dict)  # by variant label; else default_wheel
    default_core: float = 600.0
    default_wheel: float = 90.0
    smoke: float = 60.0  # one smoke test after its job's set-up
    tail: float = 300.0  # report, release files, publish and deploy after the last smoke job

    def core_of(self, label: str) -> float:
        return self.core.get(label, self.default_core)

    def wheel_of(self, label: str) -> float:
        return self.wheel.get(label, self.default_wheel)


@dataclass(frozen=True, kw_only=True)
class Estimate:
    """One layout's jobs, core builds, runner-minutes and critical path."""

    layout: str
    jobs: int
    build_jobs: int
    core_builds: int
    runner_minutes: float
    critical_path_minutes: float

    def record(self) -> dict[str, Any]:
        return {"layout": self.layout, "jobs": self.jobs, "build_jobs": self.build_jobs,
                "core_builds": self.core_builds, "runner_minutes": round(self.runner_minutes, 1),
                "critical_path_minutes": round(self.critical_path_minutes, 1)}


def measured(results: Iterable[Mapping[str, Any]], targets: Sequence[Target], base: Costs = Costs()) -> Costs:
    """``base`` with each variant's core and per-wheel seconds replaced by the medians ``results`` measured."""
    label_of = {t.id: t.variant.label for t in targets}
    cores: dict[str, list[float]] = {}
    wheels: dict[str, list[float]] = {}
    for record in results:
        label = label_of.get(str(record.get("id")))
        if label is None or record.get("status") != "built":
            continue
        core = record.get("core") or {}
        core_seconds = float(core.get("seconds", 0.0)) if core.get("status") == "built" else 0.0
        if core_seconds:
            cores.setdefault(label, []).append(core_seconds)
        total = sum(float(v) for v in (record.get("durations") or {}).values())
        wheels.setdefault(label, []).append(max(total - core_seconds, 0.0))
    return Costs(setup=base.setup, image=base.image, pull=base.pull, default_core=base.default_core,
                 default_wheel=base.default_wheel, smoke=base.smoke, tail=base.tail,
                 core={**base.core, **{k: statistics.median(v) for k, v in cores.items()}},
                 wheel={**base.wheel, **{k: statistics.median(v) for k, v in wheels.items()}})


def _build_seconds(group: Sequence[Target], costs: Costs, container: bool) -> float:
    label = group[0].variant.label
    return costs.setup + (costs.pull if container else 0.0) + costs.core_of(label) + len(group) * costs.wheel_of(label)


def estimate(targets: Sequence[Target], costs: Costs, *, per_target: bool, shards: int) -> Estimate:
    """The run's cost with one build job per target (``per_target``) or per (variant, platform)."""
    image_jobs = images(targets)
    pulls = {i["name"] for i in image_jobs}  # an image job is named like the build job that pulls its image
    groups = [[t] for t in targets] if per_target else build_groups(targets)
    builds = [_build_seconds(g, costs, build_id(g[0]) in pulls) for g in groups]
    smoke = costs.setup + costs.smoke
    image = costs.setup + costs.image
    fixed = len(FIXED_JOBS) + shards
    seconds = (image * len(image_jobs) + sum(builds) + smoke * len(targets)
               + costs.setup * fixed + costs.tail)
    critical = (costs.setup * 2 + (image if image_jobs else 0.0) + max(builds, default=0.0) + smoke + costs.tail)
    return Estimate(layout="per target" if per_target else "per (variant, platform)",
                    jobs=len(image_jobs) + len(groups) + len(targets) + fixed, build_jobs=len(groups),
                    core_builds=len(groups), runner_minutes=seconds / 60, critical_path_minutes=critical / 60)


def compare(targets: Sequence[Target], costs: Costs, *, shards: int) -> dict[str, Any]:
    """Today's layout against one build job per target, and the ratio of their runner-minutes."""
    before = estimate(targets, costs, per_target=True, shards=shards)
    after = estimate(targets, costs, per_target=False, shards=shards)
    ratio = after.runner_minutes / before.runner_minutes if before.runner_minutes else 0.0
    return {"before": before.record(), "after": after.record(), "runner_minutes_ratio": round(ratio, 3)}
