"""A small release for the rehearsal's tests: a tiny workflow, a round-numbered profile and price table.

The expected figures in the tests are worked out by hand from these numbers, never by the code."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from builders.matrix.targets import Target
from builders.report import prices, scale_profile

PRICE = 0.01  # dollars a minute on ubuntu-24.04
DISK_GB = 14
FIGURES = {"wheel_mb": 100.0, "runtime_mb": 50.0, "core_cold_min": 60.0, "core_warm_min": 30.0,
           "per_python_min": 10.0, "toolkit_mb": 0.0, "image_mb": 6000.0, "image_min": 20.0, "build_tree_mb": 1000.0}
UPLOAD, DOWNLOAD = "actions/upload-artifact@v7", "actions/download-artifact@v8"


def profile(**change: float) -> scale_profile.Profile:
    """Checkout 100 MB, set-up 2 min, smoke 5 min, other jobs 3 min, 100 MB/s; every target :data:`FIGURES`."""
    extra = {k: change.pop(k) for k in list(change) if k in ("transfer_mb_s", "pypi_held_gb")}
    rule = {"targets": "*", **FIGURES, **change}
    return scale_profile.from_data({"name": "small", "source": "the test", "date": "2026-12-02", "checkout_mb": 100,
                                    "setup_min": 2, "smoke_min": 5, "other_min": 3, "transfer_mb_s": 100, **extra,
                                    "rules": [rule]}, "test")


def price_table(*runners: str) -> prices.Prices:
    """ubuntu-24.04 and ``runners`` (the targets' build runners) at :data:`PRICE` and :data:`DISK_GB`, hosted."""
    each = {"per_minute": PRICE, "disk_gb": DISK_GB, "hosted": True}
    return prices.from_data({"date": "2026-01-01", "source": "the test", "default_retention_days": 90,
                             "runners": dict.fromkeys(("ubuntu-24.04", *runners), each),
                             "self_hosted": {"per_minute": 0, "disk_gb": 100}, "artifact_gb_day": 0.01,
                             "bucket_gb_month": 0.02, "egress_gb": 0.1})


def upload(name: str, days: int | None = 5) -> dict[str, Any]:
    return {"uses": UPLOAD, "with": {"name": name, "path": "x", **({"retention-days": days} if days else {})}}


def download(pattern: str, **more: Any) -> dict[str, Any]:
    return {"uses": DOWNLOAD, "with": {"pattern": pattern, **more}}


def release_workflow() -> dict[str, Any]:
    """One build job per (variant, platform), a smoke job per target, and the nightly's bucket upload."""
    build = {"runs-on": "${{ matrix.runner }}", "timeout-minutes": 300,
             "strategy": {"matrix": "${{ fromJSON(needs.plan.outputs.builds) }}"},
             "steps": [{"run": "nox -s build -- --target x"}, upload("build-${{ matrix.id }}"),
                       upload("wheel-${{ fromJSON(matrix.ids)[0] }}"), upload("wheel-${{ fromJSON(matrix.ids)[1] }}")]}
    smoke = {"needs": "build", "runs-on": "ubuntu-24.04",
             "strategy": {"matrix": "${{ fromJSON(needs.plan.outputs.include) }}"},
             "steps": [download("wheel-${{ matrix.id }}"), {"run": "bash ci/smoke.sh run w t p"}]}
    nightly = {"needs": ["build", "smoke"], "if": "needs.plan.outputs.nightly == 'true'", "runs-on": "ubuntu-24.04",
               "steps": [download("build-*"), {"run": "python -m builders publish artifacts --channel nightly"}]}
    return {"name": "release", "on": {"schedule": [{"cron": "0 1 * * *"}]},
            "jobs": {"build": build, "smoke": smoke, "nightly": nightly}}


def write(folder: Path, release: dict[str, Any], promote: dict[str, Any] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "release.yml").write_text(yaml.safe_dump(release, sort_keys=False))
    if promote is not None:
        (folder / "promote.yml").write_text(yaml.safe_dump(promote, sort_keys=False))
    return folder / "release.yml"


def pypi_pair(targets: list[Target]) -> list[Target]:
    """Every target of the first (variant, platform) whose wheels go to PyPI, from the matrix."""
    first = next(t for t in targets if t.on_pypi and t.platform.os.value == "linux")
    return [t for t in targets if (t.variant.label, t.platform.name) == (first.variant.label, first.platform.name)]
