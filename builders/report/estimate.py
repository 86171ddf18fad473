"""What a release run costs in runner time, from the plan and (when given) measured stage times.

Two layouts of the same targets are compared: one build job per target (each compiles its
variant's ``build.core`` again) and one build job per (variant, platform) that builds the core
once and every Python after it (the release workflow's layout, :mod:`builders.ci.jobs`). Smoke jobs
are one per target in both. A job costs a fixed set-up (runner start, checkout, the locked tools,
nox's environment) plus its work; jobs of one stage run side by side, so the critical path is
the slowest job of each stage in turn.

Stage times come from :class:`Costs`: this project's defaults, replaced per variant by what
``results.json`` files measured (``core.seconds`` where the core was built, the other stages'
``durations`` per wheel). Everything here is pure.

A third figure is the release layout with a warm shared compile cache (docs/compile-cache.md): a core built
with ``compiler_cache.hit_rate`` of at least :data:`WARM` is a warm measurement, below it a cold one. A variant
measured warm costs its warm median; one with only cold figures costs its cold time scaled by the median
warm/cold ratio of the variants measured both ways (else by one minus the median warm hit rate); with no warm
measurement at all, warm is cold.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from builders.ci.jobs import build_groups, build_id, images
from builders.matrix.targets import Target
from builders.pipeline import results as results_mod

# Jobs outside the build and smoke matrices: plan, report, release files, publish, deploy, and
# one shard-matrix job per shard.
FIXED_JOBS = ("plan", "report", "release-files", "publish", "deploy")
WARM = 0.5  # a core built with at least this compiler-cache hit rate was built warm


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
    core_warm: Mapping[str, float] = field(default_factory=dict)  # by variant: a core built from a warm cache
    hit_rate: Mapping[str, float] = field(default_factory=dict)  # by variant: the warm builds' hit rate

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
    """``base`` with each variant's core (cold and warm) and per-wheel seconds replaced by the medians ``results``
    measured, and the hit rates of its warm core builds."""
    label_of = {t.id: t.variant.label for t in targets}
    found: dict[str, dict[str, list[float]]] = {"core": {}, "core_warm": {}, "hit_rate": {}, "wheel": {}}
    for record in results:
        label = label_of.get(str(record.get("id")))
        if label is None or record.get("status") != "built":
            continue
        core = record.get("core") or {}
        core_seconds = float(core.get("seconds", 0.0)) if core.get("status") == "built" else 0.0
        rate = (record.get("compiler_cache") or {}).get("hit_rate")
        hit_rate = float(rate) if rate is not None else 0.0
        if core_seconds:
            found["core_warm" if hit_rate >= WARM else "core"].setdefault(label, []).append(core_seconds)
            if hit_rate >= WARM:
                found["hit_rate"].setdefault(label, []).append(hit_rate)
        total = sum(float(v) for v in (record.get("durations") or {}).values())
        found["wheel"].setdefault(label, []).append(max(total - core_seconds, 0.0))
    medians = {kind: {k: statistics.median(v) for k, v in by.items()} for kind, by in found.items()}
    return replace(base, core={**base.core, **medians["core"]}, wheel={**base.wheel, **medians["wheel"]},
                   core_warm={**base.core_warm, **medians["core_warm"]}, hit_rate={**base.hit_rate, **medians["hit_rate"]})


def warm_costs(costs: Costs, labels: Iterable[str]) -> Costs:
    """``costs`` with each variant's core as a warm shared compile cache builds it (see the module's docstring)."""
    both = [costs.core_warm[k] / costs.core[k] for k in costs.core_warm if costs.core.get(k)]
    if both:
        scale = statistics.median(both)
    elif costs.hit_rate:
        scale = 1.0 - statistics.median(costs.hit_rate.values())
    else:
        scale = 1.0
    core = {label: costs.core_warm.get(label, costs.core_of(label) * scale) for label in labels}
    return replace(costs, core=core)


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
    """Today's layout against one build job per target, and the ratio of their runner-minutes; and today's layout
    with a warm shared compile cache (the measured hit rates), against the same cold."""
    before = estimate(targets, costs, per_target=True, shards=shards)
    after = estimate(targets, costs, per_target=False, shards=shards)
    warm = estimate(targets, warm_costs(costs, {t.variant.label for t in targets}), per_target=False, shards=shards)
    ratio = after.runner_minutes / before.runner_minutes if before.runner_minutes else 0.0
    warm_ratio = warm.runner_minutes / after.runner_minutes if after.runner_minutes else 0.0
    return {"before": before.record(), "after": after.record(), "runner_minutes_ratio": round(ratio, 3),
            "warm": {**warm.record(), "layout": "per (variant, platform), warm compile cache"},
            "warm_runner_minutes_ratio": round(warm_ratio, 3),
            "hit_rates": {k: round(v, 3) for k, v in sorted(costs.hit_rate.items())}}


def costs_from(paths: Sequence[Path], targets: Sequence[Target]) -> Costs:
    """The stage times the results files at ``paths`` measured, for ``targets`` (the defaults where none)."""
    records = [record for path in paths for record in results_mod.read(path).values()]
    return measured(records, targets)
