"""Every path argument is checked before a command runs; a closed stdout ends quietly; an
empty selection is an error. All in-process (``main``), no subprocess."""

from __future__ import annotations

import errno
import io
import json
import tempfile
from pathlib import Path

import pytest

from builders import cli
from builders.cli import PIPE_CLOSED, PathError, main
from tests.conftest import shipped_matrix_path

MATRIX = str(shipped_matrix_path())
BAD_PATH = PathError.exit_code


@pytest.fixture(autouse=True)
def _no_job_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)


@pytest.fixture
def place(tmp_path: Path) -> Path:
    """A folder with a file, a sub-folder and nothing else."""
    (tmp_path / "afile").write_text("x")
    (tmp_path / "adir").mkdir()
    return tmp_path


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


# (argv with {d} for the case folder, phrase of the message). Every command that takes a path.
BAD = [
    (["plan", "--matrix", "{d}/missing.yaml"], "--matrix {d}/missing.yaml: no such file"),
    (["plan", "--matrix", "{d}/adir"], "is a folder, a file is expected"),
    (["images", "--matrix", "{d}/adir", "--dry-run"], "is a folder"),
    (["build", "--matrix", MATRIX, "--output", "{d}/afile", "--dry-run"], "--output {d}/afile: is a file"),
    (["build", "--matrix", MATRIX, "--output", "{d}/afile/sub", "--dry-run"], "{d}/afile is a file"),
    (["build", "--matrix", MATRIX, "--source", "{d}/missing", "--dry-run"], "--source {d}/missing: no such folder"),
    (["build", "--matrix", MATRIX, "--source", "{d}/afile", "--dry-run"], "a folder is expected"),
    (["build", "--matrix", MATRIX, "--cache", "{d}/afile", "--dry-run"], "--cache {d}/afile: is a file"),
    (["verify", "--matrix", MATRIX, "{d}/missing.whl", "--target", "x"], "WHEEL {d}/missing.whl: no such file"),
    (["verify", "--matrix", MATRIX, "{d}/adir", "--target", "x"], "is a folder, a file is expected"),
    (["smoke", "--matrix", MATRIX, "{d}/missing.whl", "--target", "x"], "no such file"),
    (["smoke", "--matrix", MATRIX, "{d}/afile", "--target", "x", "--python", "{d}/nopython"], "--python"),
    (["report", "--matrix", MATRIX, "--results", "{d}/missing.json", "--output", "{d}/o"], "--results"),
    (["report", "--matrix", MATRIX, "--results", "{d}/adir", "--output", "{d}/o"], "is a folder"),
    (["report", "--matrix", MATRIX, "--output", "{d}/afile"], "is a file, an output folder is expected"),
    (["report", "--matrix", MATRIX, "--output", "{d}/afile/sub/deeper"], "cannot create this folder"),
    (["promote", "--matrix", MATRIX, "{d}/missing"], "WHEEL {d}/missing: no such file or folder"),
    (["promote", "--matrix", MATRIX, "{d}/adir", "--output", "{d}/afile"], "--output"),
    (["index", "--matrix", MATRIX, "{d}/missing", "--output", "{d}/o"], "WHEELHOUSE {d}/missing: no such folder"),
    (["index", "--matrix", MATRIX, "{d}/afile", "--output", "{d}/o"], "is a file, a folder is expected"),
    (["index", "--matrix", MATRIX, "{d}/adir", "--output", "{d}/afile"], "--output"),
    (["workflow", "--matrix", MATRIX, "--workflow", "{d}/missing.yml", "--check"], "--workflow"),
    (["workflow", "--matrix", MATRIX, "--workflow", "{d}/adir", "--check"], "is a folder"),
]


@pytest.mark.parametrize(("argv", "phrase"), BAD, ids=[f"{a[0]}-{i}" for i, (a, _) in enumerate(BAD)])
def test_a_bad_path_is_one_line_and_exit_19(argv: list[str], phrase: str, place: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run([a.replace("{d}", str(place)) for a in argv], capsys)
    assert code == BAD_PATH, err
    assert phrase.replace("{d}", str(place)) in err
    assert err.startswith("error: PathError: ")
    assert sorted(p.name for p in place.iterdir()) == ["adir", "afile"]  # nothing made, no probe left


def test_every_path_argument_of_every_command_is_checked() -> None:
    """No command has a path argument outside the checks (a plain ``type=Path`` is an input file)."""
    from builders.cli.arguments import path_options
    from builders.cli.paths import CHECKS

    root = cli.parser()
    sub = next(a for a in root._actions if a.dest == "command")
    declared = {name: {a.dest for a in command._actions if a.type in CHECKS} for name, command in sub.choices.items()}
    assert declared == {name: {o.name for o in path_options(name)} for name in sub.choices}  # what main checks
    # Two commands read no matrix: release-check compares wheels with a plan, merge-index two indexes. cache
    # reads one if it is there (prune requires it, or --no-keep).
    assert all("matrix" in dests for name, dests in declared.items() if name not in {"release-check", "merge-index"})
    assert declared["release-check"] == {"wheelhouse", "plan"}
    assert declared["merge-index"] == {"new", "into"}
    assert declared["report"] == {"matrix", "output", "results", "compare"}
    assert declared["promote"] == {"matrix", "wheel", "output"}
    assert declared["index"] == {"matrix", "wheelhouse", "output"}
    assert declared["build"] == {"matrix", "output", "source", "cache"}
    assert declared["verify"] == {"matrix", "wheel"}
    assert declared["smoke"] == {"matrix", "wheel", "python"}
    assert declared["workflow"] == {"matrix", "workflow"}


def test_an_output_folder_is_tried_for_real(place: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Root ignores permission bits, so writability is a real attempt; here the attempt fails."""
    def refuse(*args: object, **kwargs: object) -> tuple[int, str]:
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    with pytest.raises(PathError, match=r"cannot write in .*adir: Permission denied"):
        cli.check_output_dir(place / "adir" / "new")


def test_a_new_output_folder_is_checked_without_being_made(place: Path) -> None:
    cli.check_output_dir(place / "adir" / "new" / "deeper")
    assert not (place / "adir" / "new").exists()
    assert list((place / "adir").iterdir()) == []


def test_a_device_is_not_a_regular_file(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run(["plan", "--matrix", "/dev/null"], capsys)
    assert code == BAD_PATH and "not a regular file" in err


class ClosedPipe(io.StringIO):
    """A stdout whose reader went away."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")

    def flush(self) -> None:
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")

    def fileno(self) -> int:
        raise io.UnsupportedOperation("fileno")


def test_a_closed_stdout_ends_quietly_with_141(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("sys.stdout", ClosedPipe())
    assert main(["plan", "--matrix", MATRIX, "--format", "github"]) == PIPE_CLOSED == 141
    assert capsys.readouterr().err == ""


def test_an_empty_selection_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run(["plan", "--matrix", MATRIX, "--format", "github", "--skip", "*"], capsys)
    assert code == 5 and "nothing selected by --skip '*'" in err
    code, err = run(["build", "--matrix", MATRIX, "--dry-run", "--target", "cpu-*"], capsys)
    assert code == 5 and "--target takes an exact id" in err


def test_promote_and_index_of_an_empty_folder_are_errors(place: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run(["promote", "--matrix", MATRIX, str(place / "adir"), "--output", str(place / "o")], capsys)
    assert code == 15 and "no wheels (*.whl) under this folder, nothing to promote" in err
    code, err = run(["index", "--matrix", MATRIX, str(place / "adir"), "--output", str(place / "o")], capsys)
    assert code == 16 and "nothing to index" in err
    assert not (place / "o").exists()


def test_a_workflow_that_is_not_a_workflow_is_drift(place: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for text, phrase in (("[1, 2]\n", "not a mapping"), ("jobs: {a: [\n", "not valid YAML"),
                         ("jobs: {build: {steps: [{run: [1]}]}}\n", "run: that is not a string")):
        (place / "w.yml").write_text(text)
        code, err = run(["workflow", "--matrix", MATRIX, "--workflow", str(place / "w.yml"), "--check"], capsys)
        assert code == 17 and phrase in err, err


def test_report_refuses_results_of_another_matrix(place: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = {"schema": 1, "targets": [{"id": f"cu999-cp312-linux-x86_64-{i}", "status": "built"} for i in range(7)]}
    (place / "r.json").write_text(json.dumps(other))
    code, err = run(["report", "--matrix", MATRIX, "--results", str(place / "r.json"), "--output", str(place / "o")],
                    capsys)
    assert code == 13 and "7 target id(s)" in err and "cu999-cp312-linux-x86_64-0" in err and "2 more" in err
    assert not (place / "o").exists()


def test_one_target_is_an_exact_id(capsys: pytest.CaptureFixture[str]) -> None:
    from builders.base.errors import SelectionError
    from builders.families import loader as matrix
    from builders.matrix.targets import one_target

    m = matrix.load(MATRIX)
    first = next(iter(m.variants)).label
    with pytest.raises(SelectionError, match="--target takes an exact id"):
        one_target(m, f"{first}-*")
    target = one_target(m, f"{first}-cp312-linux-x86_64")
    assert target.id == f"{first}-cp312-linux-x86_64"
