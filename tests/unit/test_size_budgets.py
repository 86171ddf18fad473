"""Size budgets as matrix data (issue 45 item 6): per variant and platform over the project's, refused with the
key's place when bad, refused by verify, and crossed in the rehearsal and on the cost page.

The budgets are written into the shipped matrix here; every expectation is computed from those numbers.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from builders.base.errors import MatrixError, RehearsalError
from builders.families import loader
from builders.matrix.promotion_policy import PromotionPolicy
from builders.matrix.targets import Selection, Target, expand, select
from builders.report import limits, rehearsal, rehearsal_report, scale_profile
from builders.wheel.verify import Contents, Expectation, check_size
from builders.wheel.writer import write_wheel
from tests import rehearsal_fixtures as fx

CU132 = '      "13.2":\n        label: cu132\n'
BUDGET = "        wheel_size_budget_mb:\n          '*': 850\n          linux-aarch64: 900\n"


def budgeted(text: str, budget: str = BUDGET) -> str:
    assert CU132 in text
    return text.replace(CU132, CU132 + budget, 1)


def target_of(text: str, tid: str) -> Target:
    (t,) = select(loader.loads(text, "matrix.yaml"), Selection(targets=(tid,)))
    return t


def test_a_variants_budget_per_platform_is_over_the_projects(shipped_text: str) -> None:
    text = budgeted(shipped_text)
    assert target_of(text, "cu132-cp312-linux-x86_64").size_budget == (850.0, 'accelerators.cuda.versions."13.2"'
                                                                                ".wheel_size_budget_mb[*]")
    assert target_of(text, "cu132-cp312-linux-aarch64").size_budget[0] == 900.0
    project = float(re.search(r"wheel_size_budget_mb: (\S+)", shipped_text).group(1))
    assert target_of(text, "cu134-cp312-linux-x86_64").size_budget == (project, "project.wheel_size_budget_mb")


@pytest.mark.parametrize(("budget", "says"), [
    ("        wheel_size_budget_mb: 0\n", "above 0"),
    ("        wheel_size_budget_mb: 850MB\n", "wheel_size_budget_mb"),
    ("        wheel_size_budget_mb:\n          linux-x86-64: 850\n", "unknown platform 'linux-x86-64'"),
])
def test_a_bad_budget_is_refused_at_its_place(shipped_text: str, budget: str, says: str) -> None:
    line = shipped_text[:shipped_text.index(CU132)].count("\n") + 3  # the budget's first line
    with pytest.raises(MatrixError) as caught:
        loader.loads(budgeted(shipped_text, budget), "matrix.yaml")
    assert says in str(caught.value) and re.search(rf"matrix\.yaml:({line}|{line + 1})\b", str(caught.value)), caught.value
    assert 'cuda.versions."13.2".wheel_size_budget_mb' in str(caught.value)


def test_verify_refuses_a_wheel_over_its_variants_budget_and_names_it(tmp_path: Path, shipped_text: str) -> None:
    t = target_of(budgeted(shipped_text, "        wheel_size_budget_mb: 0.01\n"), "cu132-cp312-linux-x86_64")
    dist_info = f"minifw-{t.version}.dist-info"
    path = tmp_path / t.wheel_name
    members = {"minifw/data.bin": random.Random(0).randbytes(20_000), f"{dist_info}/METADATA": b"Name: minifw\n"}
    write_wheel(path, members, dist_info, {}, 315532800)
    assert path.stat().st_size > 0.01 * 2**20
    from builders.wheel.archive import Wheel
    with Wheel(path).open() as reader:
        (finding,) = check_size(Contents(reader), Expectation(target=t, dropped=()))
    assert finding.code == "size-budget" and t.wheel_name in finding.message
    assert "0.01 MiB" in finding.message and 'cuda.versions."13.2".wheel_size_budget_mb' in finding.message


def rehearsed(tmp_path: Path, text: str, measured_mb: float | None = None,
              **change: float) -> tuple[list[Target], rehearsal.Rehearsal]:
    """The small release; ``measured_mb``: a run's results.json measured every wheel at that size."""
    targets = fx.pypi_pair(list(expand(loader.loads(text, "matrix.yaml"))[0]))[:2]
    path = fx.write(tmp_path, fx.release_workflow())
    profile = fx.profile(**change)
    if measured_mb is not None:
        records = [{"id": t.id, "size": int(measured_mb * 1e6)} for t in targets]
        profile = scale_profile.from_results(records, targets, profile, "results.json")
    return targets, rehearsal.rehearse(targets, path, profile, fx.price_table(*{t.runner for t in targets}))


def test_the_rehearsal_crosses_a_measured_wheel_over_its_budget_at_the_build_job(tmp_path: Path,
                                                                                  shipped_text: str) -> None:
    """A profile's own sizes are another project's scale; a size measured for the target is held to its budget."""
    text = budgeted(shipped_text, "        wheel_size_budget_mb: 50\n")
    _, r = rehearsed(tmp_path, text)
    assert not [f for f in limits.check(r, PromotionPolicy()) if f.limit == "wheel size budget"]
    targets, r = rehearsed(tmp_path / "measured", text, measured_mb=60.0)  # 60 MB = 57.2 MiB > 50 MiB
    crossed = [f for f in limits.check(r, PromotionPolicy()) if f.limit == "wheel size budget"]
    over = sorted(t.id for t in targets if t.variant.label == "cu132")
    assert over and sorted(f.found.split("'s wheel")[0] for f in crossed) == over
    assert all("release.yml: build" in f.job and "arch_list" in f.fix for f in crossed)
    page = rehearsal_report.cost_markdown(r, None, limits.check(r, PromotionPolicy()))
    assert f"## Limits crossed: {len(limits.check(r, PromotionPolicy()))}" in page and over[0] in page
    _, fine = rehearsed(tmp_path / "fine", shipped_text)
    assert "Limits crossed: none." in rehearsal_report.cost_markdown(fine, None, limits.check(fine, PromotionPolicy()))


def test_a_fix_fits_the_job_it_names(tmp_path: Path, shipped_text: str) -> None:
    """A smoke job over 6 hours compiles nothing: no compile cache is offered it; the build job is offered one."""
    _, r = rehearsed(tmp_path, shipped_text, core_cold_min=400, runtime_mb=2_500_000)  # a smoke install: 417 min
    hours = {f.job.split(" on ")[0]: f.fix for f in limits.check(r, PromotionPolicy()) if f.limit == "6 hours per job"}
    assert "compile cache" in hours["release.yml: build"]
    assert "compile cache" not in hours["release.yml: smoke"] and "compiles nothing" in hours["release.yml: smoke"]


def test_an_unknown_profile_lists_the_real_ones() -> None:
    folder = Path(__file__).resolve().parents[2] / "builders" / "resources" / "scale"
    real = [p.stem for p in folder.glob("*.json") if p.stem not in ("prices", "artifacts")]
    with pytest.raises(RehearsalError) as caught:
        scale_profile.load("torch-0.0.1")
    assert real and all(name in str(caught.value) for name in real), caught.value
    assert "artifacts" not in str(caught.value) and "prices" not in str(caught.value)  # data, not profiles
