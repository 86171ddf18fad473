"""``runner_costs``: what the project's own runners cost and hold, as matrix data (docs/rehearsal.md).

GitHub's hosted runners are priced from builders/resources/scale/prices.json; a self-hosted or GPU
runner has no list price, so the matrix declares it, keyed by its labels joined with commas as the
plan writes ``runs-on`` (``self-hosted,linux,x64,gpu-nvidia``). Only ``plan --rehearse`` reads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

KEY = "runner_costs"


@dataclass(frozen=True, kw_only=True)
class RunnerCost:
    """One runner: dollars per minute, free disk (GB; None: the price table's) and whether GitHub hosts it."""

    labels: tuple[str, ...]
    per_minute: float
    disk_gb: float | None = None
    hosted: bool = False


def parse(raw: Mapping[str, Any]) -> tuple[RunnerCost, ...]:
    """The frozen values of a schema-valid ``runner_costs`` mapping."""
    return tuple(RunnerCost(labels=tuple(name.split(",")), per_minute=float(v["per_minute"]),
                            disk_gb=float(v["disk_gb"]) if "disk_gb" in v else None, hosted=bool(v.get("hosted", False)))
                 for name, v in raw.items())
