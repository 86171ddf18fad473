"""The release workflow: linted for real, and in step with the plan it consumes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from builders import matrix
from builders.workflow import drift

WORKFLOW = Path(".github/workflows/release.yml")


def tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent))
    assert found, f"{name} is a test dependency (pyproject [test] extra)"
    return found


def builders(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "builders", *args], cwd=cwd, text=True, capture_output=True, timeout=120)


def test_actionlint_has_no_findings(root: Path) -> None:
    proc = subprocess.run([tool("actionlint"), str(WORKFLOW)], cwd=root, text=True, capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_zizmor_has_no_findings(root: Path) -> None:
    proc = subprocess.run([tool("zizmor"), "--offline", str(WORKFLOW)], cwd=root, text=True, capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "No findings" in proc.stdout + proc.stderr


def test_plan_job_command_produces_the_build_matrix(root: Path) -> None:
    # The plan job's command, as the workflow runs it (nox forwards to this).
    proc = builders("plan", "--format", "github", "--select", "*", cwd=root)
    assert proc.returncode == 0, proc.stderr
    include = json.loads(proc.stdout)["include"]
    assert len(include) == 84
    used = {"id", "runner", "engine", "python", "smoke_runner", "wheel"}
    assert all(used <= entry.keys() for entry in include)
    assert builders("workflow", "--check", cwd=root).returncode == 0


def test_adding_a_python_changes_the_plan_and_needs_no_workflow_edit(root: Path) -> None:
    text = (root / "matrix.yaml").read_text()
    last = yaml.safe_load(text)["pythons"][-1]
    copy = root / ".grown-plan-matrix.yaml"  # beside the original: its relative paths keep their meaning
    copy.write_text(text.replace(f'  - "{last}"\n', f'  - "{last}"\n  - "3.16"\n', 1))
    try:
        before = {e["id"] for e in json.loads(builders("plan", "--format", "github", cwd=root).stdout)["include"]}
        proc = builders("plan", "--format", "github", "--matrix", str(copy), cwd=root)
        ids = {e["id"] for e in json.loads(proc.stdout)["include"]}
        added = {i.replace("-cp315-", "-cp316-") for i in before if "-cp315-" in i}
        assert ids == before | added and "cu132-cp316-linux-x86_64" in ids
        assert drift(matrix.load(copy), root / WORKFLOW) == []
        assert builders("workflow", "--check", "--matrix", str(copy), cwd=root).returncode == 0
    finally:
        copy.unlink()


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("ENGINE: ${{ matrix.engine }}", "ENGINE: ${{ matrix.builder }}", "matrix.builder"),
        ("nox -s plan -- --format github --select", "nox -s plan -- --json --select", "plan job does not run"),
        ('run: nox -s build -- --target "$TARGET" --engine "$ENGINE" --output wheelhouse', "run: make wheels",
         "build job does not run"),
    ],
)
def test_drift_is_detected(root: Path, tmp_path: Path, old: str, new: str, expected: str) -> None:
    text = (root / WORKFLOW).read_text()
    assert old in text
    edited = tmp_path / "release.yml"
    edited.write_text(text.replace(old, new, 1))
    problems = drift(matrix.load(root / "matrix.yaml"), edited)
    assert any(expected in p for p in problems), problems
    proc = builders("workflow", "--check", "--workflow", str(edited), cwd=root)
    assert proc.returncode == 17


def test_report_merges_every_build_jobs_results(root: Path, tmp_path: Path) -> None:
    """The report job passes one --results per downloaded build artifact (ci/report.sh)."""
    from builders import results

    results.record(tmp_path / "a" / "results.json", results.Result(id="cu132-cp312-linux-x86_64", status="built",
                                                                   engine="container"))
    results.record(tmp_path / "b" / "results.json", results.Result(id="cpu-cp313-macos-arm64", status="failed",
                                                                   engine="cibw", stage="smoke", reason="x"))
    proc = builders("report", "--results", str(tmp_path / "a/results.json"), "--results", str(tmp_path / "b/results.json"),
                    "--output", str(tmp_path / "out"), cwd=root)
    assert proc.returncode == 0, proc.stderr
    cells = {c["id"]: c for c in json.loads((tmp_path / "out/compatibility.json").read_text())["cells"]}
    assert cells["cu132-cp312-linux-x86_64"]["status"] == "built"
    assert cells["cpu-cp313-macos-arm64"]["status"] == "failed"
    assert "--results" in (root / "ci/report.sh").read_text()
