"""A release's scale: per target, how big its wheel is and how long and how much disk it takes to build.

``plan --rehearse`` (:mod:`builders.report.rehearsal`) needs, for every target, its wheel's size, the
minutes its variant's Python-independent core compiles cold and from a warm compile cache, the minutes
each further Python adds, the toolkit and image a build job holds, its build tree and the size of the
runtime requirements a smoke install downloads. A :class:`Profile` holds them as rules over target ids
(shell globs, the first match wins), so one profile applies to any matrix whose ids follow the
``{variant}-{python}-{platform}`` scheme. Three sources:

- a data file (builders/resources/scale/, one shipped from a real framework's published release,
  with its source and date);
- the matrix's declared weights (its wheel size budget, the estimate's default stage times);
- a run's ``results.json`` (wheel sizes, stage and core times, the compile cache's hit rate) or a
  published index's file sizes, each laid over a base profile for what they do not measure.
"""

from __future__ import annotations

import fnmatch
import json
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from importlib import resources
from pathlib import Path
from typing import Any

from packaging.utils import parse_wheel_filename

from builders.base.errors import RehearsalError
from builders.matrix.model import Matrix
from builders.matrix.targets import Target
from builders.report.estimate import Costs, measured

SHIPPED = "torch-2.15.0"
MB = 1_000_000


@dataclass(frozen=True, kw_only=True)
class Scale:
    """One target's figures (MB and minutes)."""

    wheel_mb: float
    runtime_mb: float = 0.0  # the runtime requirements a smoke or validate install downloads
    core_cold_min: float = 0.0  # the variant's build.core, compile cache cold
    core_warm_min: float = 0.0  # the same from a warm shared compile cache
    per_python_min: float = 0.0  # each Python's wheel after the core
    toolkit_mb: float = 0.0  # installed on the runner (a host build) or inside the image (a container build)
    image_mb: float = 0.0  # the build image, pulled by a container build job
    image_min: float = 0.0  # building and pushing that image
    build_tree_mb: float = 0.0


@dataclass(frozen=True, kw_only=True)
class Rule:
    """The figures of every target whose id matches ``targets``."""

    targets: str
    scale: Scale
    note: str = ""
    measured: bool = False  # its wheel_mb was measured for this very target (a run's results, an index)


@dataclass(frozen=True, kw_only=True)
class Profile:
    """A release's scale, with where its figures come from and when they were read."""

    name: str
    source: str
    date: str
    rules: tuple[Rule, ...]
    pypi_held_gb: float = 0.0  # what the project already holds on PyPI (every release's files)
    checkout_mb: float = 100.0
    setup_min: float = 2.5  # each job: runner start, checkout, the locked tools
    smoke_min: float = 5.0  # one smoke test, after its install
    other_min: float = 3.0  # a job's own work besides transfers (plan, report, publishing)
    transfer_mb_s: float = 100.0  # artifact and bucket transfers

    def of(self, target: Target) -> Scale:
        """The first rule matching ``target``'s id; a profile without one is refused."""
        for rule in self.rules:
            if fnmatch.fnmatchcase(target.id, rule.targets):
                return rule.scale
        raise RehearsalError(f"scale profile {self.name}: no rule matches target {target.id}; add a rule "
                             "(targets: \"*\" matches every target)")

    def measured_mb(self, target: Target) -> float | None:
        """``target``'s wheel size where it was measured for it (held to its budget); None: the profile's scale."""
        rule = next((r for r in self.rules if fnmatch.fnmatchcase(target.id, r.targets)), None)
        return rule.scale.wheel_mb if rule is not None and rule.measured else None


def from_data(data: Mapping[str, Any], where: str) -> Profile:
    """A profile from its JSON form; a missing or unknown key is refused naming the file."""
    known = {f.name for f in fields(Scale)}
    try:
        rules = tuple(Rule(targets=str(r["targets"]), note=str(r.get("note", "")),
                           scale=Scale(**{k: float(v) for k, v in r.items() if k in known}))
                      for r in data["rules"])
        extra = {k: float(data[k]) for k in ("pypi_held_gb", "checkout_mb", "setup_min", "smoke_min", "other_min",
                                              "transfer_mb_s") if k in data}
        return Profile(name=str(data["name"]), source=str(data["source"]), date=str(data["date"]), rules=rules,
                       **extra)
    except (KeyError, TypeError, ValueError) as exc:
        raise RehearsalError(f"{where}: not a scale profile ({type(exc).__name__}: {exc}); see "
                             "builders/resources/scale/ for the shape") from None


def load(name_or_path: str | Path) -> Profile:
    """A profile file, or the name of a shipped one (``torch-2.15.0``)."""
    path = Path(name_or_path)
    if path.is_file():
        text, where = path.read_text(encoding="utf-8"), str(path)
    else:
        shipped = resources.files("builders") / "resources" / "scale" / f"{name_or_path}.json"
        if not shipped.is_file():
            raise RehearsalError(f"scale profile {name_or_path}: neither a file nor a shipped profile "
                                 f"(shipped: {', '.join(shipped_names())})")
        text, where = shipped.read_text(encoding="utf-8"), f"builders/resources/scale/{name_or_path}.json"
    try:
        return from_data(json.loads(text), where)
    except json.JSONDecodeError as exc:
        raise RehearsalError(f"{where}: not valid JSON: {exc}") from None


NOT_PROFILES = ("prices.json", "artifacts.json")  # the price table and the artifact kinds share the folder


def shipped_names() -> list[str]:
    """The shipped profiles' names (what ``--rehearse NAME`` takes), the folder's other data left out."""
    folder = resources.files("builders") / "resources" / "scale"
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".json") and p.name not in NOT_PROFILES)


def from_matrix(matrix: Matrix, costs: Costs | None = None) -> Profile:
    """The matrix's declared weights: every wheel at its size budget (its variant's for its platform, else the
    project's), the estimate's default stage times."""
    costs = costs or Costs()
    scale = Scale(wheel_mb=float(matrix.project.wheel_size_budget_mb or 0), core_cold_min=costs.default_core / 60,
                  core_warm_min=costs.default_core / 60, per_python_min=costs.default_wheel / 60,
                  image_min=costs.image / 60)
    own = tuple(Rule(targets=f"{v.label}-*-{p.name}", scale=replace(scale, wheel_mb=found[0]), note=found[1])
                for v in matrix.variants for p in matrix.platforms if (found := v.size_budget(p.name)) is not None)
    return Profile(name=f"{matrix.project.name} (declared)", source=f"{matrix.path}: the wheel size budgets "
                   "and builders.report.estimate.Costs' default stage times", date=str(matrix.project.released or ""),
                   rules=(*own, Rule(targets="*", scale=scale)), setup_min=costs.setup / 60, smoke_min=costs.smoke / 60)


def _by_target(targets: Sequence[Target], base: Profile, change: Mapping[str, Mapping[str, float]],
               name: str, source: str) -> Profile:
    """``base`` with one rule per target in ``change`` (its measured figures over the base's) before its own."""
    own = tuple(Rule(targets=t.id, scale=replace(base.of(t), **change[t.id]), note=source,
                     measured="wheel_mb" in change[t.id]) for t in targets if change.get(t.id))
    return replace(base, name=name, source=f"{source}, over {base.name}", rules=(*own, *base.rules))


def from_results(records: Iterable[Mapping[str, Any]], targets: Sequence[Target], base: Profile,
                 where: str) -> Profile:
    """Wheel sizes, core (cold and warm) and per-wheel minutes a run's results.json measured, over ``base``."""
    records = list(records)
    costs = measured(records, targets, Costs(core={}, wheel={}))
    sizes = {str(r.get("id")): float(r["size"]) / MB for r in records if r.get("size")}
    change: dict[str, dict[str, float]] = {}
    for t in targets:
        label = t.variant.label
        found = {"wheel_mb": sizes.get(t.id), "core_cold_min": _minutes(costs.core.get(label)),
                 "core_warm_min": _minutes(costs.core_warm.get(label)), "per_python_min": _minutes(costs.wheel.get(label))}
        change[t.id] = {k: v for k, v in found.items() if v is not None}
    return _by_target(targets, base, change, f"{base.name} + {where}", f"measured in {where}")


def _minutes(seconds: float | None) -> float | None:
    return None if seconds is None else seconds / 60


def from_index(sizes: Mapping[str, int], targets: Sequence[Target], base: Profile, where: str) -> Profile:
    """Wheel sizes a published index serves (file name to bytes), matched to targets by their tags.

    A target takes the median size of the index's files with its wheel's tags and variant label (any
    version: a published release sizes the next one); a target the index has no file for keeps ``base``'s.
    """
    by_tags: dict[tuple[str, str], list[float]] = {}
    for filename, size in sizes.items():
        _, version, _, tags = parse_wheel_filename(filename)
        label = version.local or ""
        for tag in tags:
            by_tags.setdefault((str(tag), label), []).append(size / MB)
    change = {}
    for t in targets:
        _, _, _, tags = parse_wheel_filename(t.wheel_name)
        found = ([s for tag in tags for s in by_tags.get((str(tag), t.variant.label), ())]
                 or [s for tag in tags for s in by_tags.get((str(tag), ""), ())])
        if found:
            change[t.id] = {"wheel_mb": statistics.median(found)}
    return _by_target(targets, base, change, f"{base.name} + {where}", f"file sizes served by {where}")
