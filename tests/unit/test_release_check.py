"""`release-check`: a run's wheels are exactly the plan's, or nothing is released."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from builders import cli
from builders.ci import jobs as ci
from builders.families import loader as matrix
from builders.matrix.targets import expand


@pytest.fixture
def plan(tmp_path: Path, shipped_text: str) -> tuple[Path, list[str]]:
    targets, _ = expand(matrix.loads(shipped_text, "matrix.yaml"))
    chosen = [t for t in targets if t.variant.label in {"cpu", "cu132"} and t.platform.os.value == "linux"][:4]
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(ci.github_plan(chosen)))
    return path, [t.wheel_name for t in chosen]


def wheelhouse(folder: Path, names: list[str]) -> Path:
    for name in names:
        (folder / "whl" / name.split("+")[1].split("-")[0]).mkdir(parents=True, exist_ok=True)
        (folder / "whl" / name.split("+")[1].split("-")[0] / name).write_bytes(b"w")
    return folder


def run(*args: str) -> int:
    return cli.main(["release-check", *args])


def test_the_plans_wheels_and_nothing_else_pass(plan, tmp_path: Path) -> None:
    path, names = plan
    assert run(str(wheelhouse(tmp_path / "artifacts", names)), "--plan", str(path)) == 0


def test_a_missing_wheel_and_a_stray_one_are_each_named(plan, tmp_path: Path, capsys) -> None:
    path, names = plan
    stray = names[0].replace("2.15.0", "2.14.0")
    folder = wheelhouse(tmp_path / "artifacts", [*names[1:], stray])
    assert run(str(folder), "--plan", str(path)) == 25
    err = capsys.readouterr().err
    assert names[0] in err and stray in err


def test_a_file_that_is_not_a_plan_is_refused(tmp_path: Path, capsys) -> None:
    (tmp_path / "plan.json").write_text('{"shards": []}')
    (tmp_path / "artifacts").mkdir()
    assert run(str(tmp_path / "artifacts"), "--plan", str(tmp_path / "plan.json")) == 25
    assert "no list of wheels" in capsys.readouterr().err
