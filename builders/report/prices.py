"""What a runner minute, a stored gigabyte and a downloaded one cost: the price table, as data with its date.

GitHub's hosted runners are priced from builders/resources/scale/prices.json (its ``date`` and
``source`` say from when and where); the matrix's ``runner_costs`` prices the project's own runners
(self-hosted, GPU) and wins over the table. A self-hosted runner neither names costs ``self_hosted``
(no dollars: its owner pays another way) and is listed as unpriced.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from builders.base.errors import RehearsalError
from builders.matrix.runner_costs import RunnerCost

SELF_HOSTED = "self-hosted"


@dataclass(frozen=True, kw_only=True)
class PricedRunner:
    """One runner as the rehearsal prices it."""

    name: str
    per_minute: float
    disk_gb: float
    hosted: bool
    priced: bool = True  # False: a self-hosted runner nobody declared (counted at no cost, listed as unpriced)


@dataclass(frozen=True, kw_only=True)
class Prices:
    """The price table and the matrix's own runners."""

    date: str
    source: str
    runners: Mapping[str, PricedRunner]
    self_hosted: PricedRunner
    artifact_gb_day: float
    default_retention_days: int
    bucket_gb_month: float
    egress_gb: float

    def runner(self, labels: str | Sequence[str]) -> PricedRunner:
        """The runner a job's ``runs-on`` names; an unknown hosted label is refused with the fix."""
        names = [labels] if isinstance(labels, str) else list(labels)
        key = ",".join(names)
        if key in self.runners:
            return self.runners[key]
        if SELF_HOSTED in names:
            return PricedRunner(name=key, per_minute=self.self_hosted.per_minute, disk_gb=self.self_hosted.disk_gb,
                          hosted=False, priced=False)
        raise RehearsalError(f"runner {key}: not in the price table ({self.source}, {self.date}); add it to the "
                             "matrix's runner_costs with its per_minute and disk_gb")


def _runner(name: str, raw: Mapping[str, Any]) -> PricedRunner:
    return PricedRunner(name=name, per_minute=float(raw["per_minute"]), disk_gb=float(raw["disk_gb"]),
                  hosted=bool(raw.get("hosted", False)))


def from_data(data: Mapping[str, Any], declared: Sequence[RunnerCost] = ()) -> Prices:
    """The table's JSON form, with the matrix's ``runner_costs`` over it."""
    try:
        fallback = _runner(SELF_HOSTED, data["self_hosted"])
        runners = {name: _runner(name, raw) for name, raw in data["runners"].items()}
        for cost in declared:
            name = ",".join(cost.labels)
            runners[name] = PricedRunner(name=name, per_minute=cost.per_minute, hosted=cost.hosted,
                                   disk_gb=cost.disk_gb if cost.disk_gb is not None else fallback.disk_gb)
        return Prices(date=str(data["date"]), source=str(data["source"]), runners=runners, self_hosted=fallback,
                      artifact_gb_day=float(data["artifact_gb_day"]),
                      default_retention_days=int(data["default_retention_days"]),
                      bucket_gb_month=float(data["bucket_gb_month"]), egress_gb=float(data["egress_gb"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise RehearsalError(f"price table: {type(exc).__name__}: {exc} (see builders/resources/scale/prices.json)"
                             ) from None


def shipped(declared: Sequence[RunnerCost] = ()) -> Prices:
    """builders/resources/scale/prices.json with the matrix's runners."""
    text = (resources.files("builders") / "resources" / "scale" / "prices.json").read_text(encoding="utf-8")
    return from_data(json.loads(text), declared)
