"""Each limit the rehearsal checks, crossed by a profile or a workflow made to cross it: refused with the job
named and the fix; and ``workflow --check``'s scale rule on a mutated copy of the committed workflows."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from builders.families import loader
from builders.matrix.promotion_policy import PromotionPolicy
from builders.matrix.targets import Target, expand
from builders.report import limits, rehearsal
from builders.report.workflow_scale import scale_problems
from tests import rehearsal_fixtures as fx

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github" / "workflows"
POLICY = PromotionPolicy()  # PyPI's defaults: 100 MB a file, 10 GB a project


@pytest.fixture(scope="module")
def pair(shipped_text: str) -> list[Target]:
    return fx.pypi_pair(list(expand(loader.loads(shipped_text, "matrix.yaml"))[0]))[:2]


def found(tmp_path: Path, pair: list[Target], release: dict[str, Any] | None = None,
          promote: dict[str, Any] | None = None, held: float = 0.0, **change: float) -> list[limits.Crossed]:
    path = fx.write(tmp_path, release or fx.release_workflow(), promote)
    r = rehearsal.rehearse(pair, path, fx.profile(**change), fx.price_table(*{t.runner for t in pair}))
    return limits.check(r, POLICY, held_gb=held)


def only(findings: list[limits.Crossed], limit: str) -> limits.Crossed:
    hits = [f for f in findings if f.limit == limit]
    assert hits, [str(f) for f in findings]
    return hits[0]


def test_the_small_release_crosses_nothing(tmp_path: Path, pair: list[Target]) -> None:
    assert found(tmp_path, pair) == []


def test_a_matrix_of_more_than_256_jobs(tmp_path: Path, pair: list[Target]) -> None:
    release = fx.release_workflow()
    release["jobs"]["smoke"]["strategy"]["matrix"] = {"n": list(range(300))}
    f = only(found(tmp_path, pair, release), "jobs per matrix")
    assert "release.yml: smoke" in f.job and "300" in f.found and "shards" in f.fix


def test_a_job_over_6_hours_on_a_hosted_runner(tmp_path: Path, pair: list[Target]) -> None:
    f = only(found(tmp_path, pair, core_cold_min=400), "6 hours per job")
    assert "release.yml: build" in f.job and "self-hosted" in f.fix
    assert "release.yml: build" in only(found(tmp_path, pair, core_cold_min=400), "timeout-minutes").job


def test_a_job_over_its_runners_disk(tmp_path: Path, pair: list[Target]) -> None:
    f = only(found(tmp_path, pair, image_mb=20_000), "runner disk")
    assert "release.yml: build" in f.job and "runner_costs" in f.fix


def test_a_retention_shorter_than_the_promotion_window(tmp_path: Path, pair: list[Target]) -> None:
    promote = {"name": "promote", "on": {"workflow_dispatch": {}}, "jobs": {"promote": {
        "runs-on": "ubuntu-24.04", "steps": [fx.download("build-*", **{"run-id": "1"}), {"run": "true"}]}}}
    f = only(found(tmp_path, pair, promote=promote), "artifact retention")
    assert "promote.yml: promote" in f.job and "kept 5 days" in f.found and "retention-days of at least 30" in f.fix


def test_pypis_file_and_project_limits(tmp_path: Path, pair: list[Target]) -> None:
    assert only(found(tmp_path, pair, wheel_mb=150), "PyPI file limit").found.startswith("a 150 MB wheel")
    f = only(found(tmp_path, pair, held=9.9), "PyPI project limit")  # 9.9 GB held + two 100 MB wheels
    assert "9.9 GB held + 0.2 GB" in f.found and "raise" in f.fix


def test_a_file_over_the_single_put(tmp_path: Path, pair: list[Target]) -> None:
    f = only(found(tmp_path, pair, wheel_mb=6000), "S3 single PUT")
    assert "release.yml: nightly" in f.job and "multipart" in f.fix


def test_a_release_asset_over_2_gb(tmp_path: Path, pair: list[Target]) -> None:
    release = fx.release_workflow()
    release["jobs"]["github-release"] = {"needs": "build", "runs-on": "ubuntu-24.04", "steps": [
        fx.download("build-*"), {"run": "bash ci/github-release.sh v1 plan site attestations out"}]}
    f = only(found(tmp_path, pair, release, wheel_mb=2500), "GitHub Release asset")
    assert "release.yml: github-release" in f.job


def test_credentials_that_end_before_the_phase(tmp_path: Path, pair: list[Target]) -> None:
    release = fx.release_workflow()
    release["jobs"]["nightly"]["steps"].insert(1, {"run": "bash ci/bucket-credentials.sh",
                                                   "env": {"BUCKET_SESSION_SECONDS": "${{ vars.S || 900 }}"}})
    release["jobs"]["pypi"] = {"needs": "build", "runs-on": "ubuntu-24.04",
                               "steps": [{"uses": "pypa/gh-action-pypi-publish@v1"}]}
    findings = found(tmp_path, pair, release, transfer_mb_s=0.1)  # 200 MB at 0.1 MB/s: 33 minutes
    jobs = {f.job.split(" on ")[0] for f in findings if f.limit == "credential lifetime"}
    assert jobs == {"release.yml: nightly", "release.yml: pypi"}


def mutated(tmp_path: Path, edit: Any, name: str = "release.yml") -> Path:
    folder = tmp_path / "workflows"
    folder.mkdir(parents=True)
    for path in WORKFLOWS.glob("*.yml"):
        doc = copy.deepcopy(yaml.safe_load(path.read_text()))
        if path.name == name:
            edit(doc)
        (folder / path.name).write_text(yaml.safe_dump(doc, sort_keys=False))
    return folder / "release.yml"


def every_wheel(doc: dict[str, Any]) -> None:
    """The validate job made to download every build job's wheels besides its own."""
    doc["jobs"]["validate"]["steps"].insert(3, fx.download("build-*", path="everything", **{"merge-multiple": True}))


def test_workflow_check_refuses_a_validate_job_that_downloads_every_wheel(tmp_path: Path) -> None:
    m = loader.load(ROOT / "matrix.yaml", builds=False)
    problems = scale_problems(m, mutated(tmp_path, every_wheel))
    assert any("release.yml: validate" in p and "runner disk" in p and "wheel-<id>" in p for p in problems), problems


def test_workflow_check_refuses_a_smoke_job_that_downloads_its_build_jobs_wheelhouse(tmp_path: Path) -> None:
    """A job the committed workflows keep lean (its own wheel-<id>), made to take every wheel: refused, named."""
    def wheelhouse(doc: dict[str, Any]) -> None:
        doc["jobs"]["smoke"]["steps"][1] = fx.download("build-*", path="wheelhouse")

    m = loader.load(ROOT / "matrix.yaml", builds=False)
    before = [p for p in scale_problems(m, mutated(tmp_path / "a", lambda doc: None)) if "release-shard.yml: smoke" in p]
    after = [p for p in scale_problems(m, mutated(tmp_path / "b", wheelhouse, "release-shard.yml"))
             if "release-shard.yml: smoke" in p]
    assert before == [] and after and all("runner disk" in p and "downloaded but not used" in p for p in after)


@pytest.mark.parametrize(("artifact", "refused"), [("release-wheels", True), ("pypi-files", False)])
def test_a_pypi_job_may_take_the_pypi_wheels_not_the_whole_release(tmp_path: Path, pair: list[Target], artifact: str,
                                                                   refused: bool) -> None:
    """Two 5 GB PyPI wheels: the whole release artifact (every wheel twice, the PyPI wheels once: 30 GB) outgrows
    the runner for the 10 GB the upload needs; the PyPI wheels alone (10 GB and the checkout) fit."""
    release = fx.release_workflow()
    release["jobs"]["assemble"] = {"needs": "build", "runs-on": "ubuntu-24.04", "steps": [
        fx.download("build-*"), {"run": "true"}, fx.upload("release-wheels"), fx.upload("pypi-files")]}
    release["jobs"]["pypi"] = {"needs": "assemble", "runs-on": "ubuntu-24.04", "steps": [
        {"uses": fx.DOWNLOAD, "with": {"name": artifact}}, {"uses": "pypa/gh-action-pypi-publish@v1"}]}
    path = fx.write(tmp_path, release)
    r = rehearsal.rehearse(pair, path, fx.profile(wheel_mb=5000), fx.price_table(*{t.runner for t in pair}))
    assert [f.job.split(" on ")[0] for f in limits.overdownloads(r)] == (["release.yml: pypi"] if refused else [])
