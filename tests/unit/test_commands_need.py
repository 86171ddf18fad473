"""Only what a command needs: the commands that build nothing work with a matrix whose source tree
and smoke script are absent (a downloaded wheel verifies anywhere); ``build`` and ``smoke`` still
check them, and an absolute ``source`` is accepted when ``--source`` overrides it. In-process."""

from __future__ import annotations

from pathlib import Path

import pytest

from builders.base.errors import MatrixError
from builders.cli import main
from builders.families import loader as matrix
from tests import expected
from tests.conftest import shipped_matrix_path
from tests.unit.test_promote_index import _reqs, make_wheel


@pytest.fixture(autouse=True)
def _no_job_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)


def with_paths(text: str, *, source: str, script: str) -> str:
    data = expected.raw(text)["project"]
    text = text.replace(f"source: {data['source']}\n", f"source: {source}\n", 1)
    return text.replace(f"script: {data['smoke']['script']}\n", f"script: {script}\n", 1)


@pytest.mark.parametrize("source", ["does-not-exist", "/srv/elsewhere/src", "../outside"])
def test_a_command_that_builds_nothing_checks_neither_source_nor_smoke_script(shipped_text: str, tmp_path: Path,
                                                                             source: str) -> None:
    text = with_paths(shipped_text, source=source, script="nope.py")
    loaded = matrix.loads(text, tmp_path / "m.yaml", builds=False)
    assert loaded.project.name == expected.raw(shipped_text)["project"]["name"]
    with pytest.raises(MatrixError) as err:  # build and smoke use both, and say what is wrong with each
        matrix.loads(text, tmp_path / "m.yaml")
    assert {p.location.key for p in err.value.problems} == {"project.source", "project.smoke.script"}


def test_an_absolute_source_is_accepted_when_source_overrides_it(shipped_text: str, tmp_path: Path) -> None:
    script = expected.raw(shipped_text)["project"]["smoke"]["script"]
    text = with_paths(shipped_text, source="/srv/elsewhere/src", script=script)
    base = shipped_matrix_path().parent
    assert matrix.loads(text, base / "m.yaml", source=tmp_path).project.source == tmp_path
    with pytest.raises(MatrixError, match="is absolute") as err:  # used: refused, with the way out
        matrix.loads(text, base / "m.yaml")
    assert "--source DIR" in str(err.value)


@pytest.fixture
def lone_matrix(tmp_path: Path, shipped_text: str) -> Path:
    """The shipped matrix alone in a folder: its source tree and smoke script are not there."""
    path = tmp_path / "release" / "matrix.yaml"
    path.parent.mkdir()
    path.write_text(shipped_text)
    data = expected.raw(shipped_text)["project"]
    assert not (path.parent / data["source"]).exists() and not (path.parent / data["smoke"]["script"]).exists()
    return path


def test_verify_promote_index_report_plan_and_audit_work_without_the_source_tree(lone_matrix: Path, tmp_path: Path,
                                                                               m, capsys: pytest.CaptureFixture[str]) -> None:
    label = dict(m.channels.pypi)["linux-x86_64"]
    wheel = make_wheel(tmp_path / "house" / "whl" / label, version=f"{m.project.version}+{label}",
                       requires=_reqs(m, label), m=m).path
    tid = f"{label}-cp312-linux-x86_64"  # make_wheel's tag
    matrix_arg = ["--matrix", str(lone_matrix)]
    assert main(["verify", *matrix_arg, str(wheel), "--target", tid]) == 0
    assert main(["promote", *matrix_arg, str(wheel), "--output", str(tmp_path / "pypi")]) == 0
    assert main(["index", *matrix_arg, str(tmp_path / "house"), "--output", str(tmp_path / "index"), "--no-mirror"]) == 0
    assert main(["report", *matrix_arg, "--output", str(tmp_path / "report")]) == 0
    assert main(["plan", *matrix_arg, "--format", "github", "--output", str(tmp_path / "plan.json")]) == 0
    index = (tmp_path / "index" / m.channels.index_path(label)).as_uri() + "/"
    assert main(["audit", *matrix_arg, "--channel", label, "--index-url", index]) == 21  # read, and it drifted
    err = capsys.readouterr().err
    assert "source folder" not in err and "MatrixError" not in err
    assert main(["build", *matrix_arg, "--dry-run", "--output", str(tmp_path / "out")]) == 3  # build uses them
    assert "source folder" in capsys.readouterr().err
