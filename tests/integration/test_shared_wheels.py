"""Shared wheels built for real (issue 42): a ctypes library as a ``py3-none`` platform wheel and a stable-ABI
extension as a ``cp311-abi3`` wheel (``tests/projects/shapes``), each built once for its (variant, platform)
on this host, verified once and smoke-tested on every listed Python; the two ways an abi3 wheel goes wrong
(an extension built for one Python, one built with the full API under an ``.abi3.so`` name) fail verify.

The projects compile in seconds; the Pythons are the matrix's (3.11 to 3.13: pyenv on this host and CI's).
"""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest
import yaml
from packaging.tags import Tag
from packaging.utils import parse_wheel_filename

from builders.families import loader
from builders.matrix.targets import expand
from tests import helpers

pytestmark = pytest.mark.slow

PROJECTS = Path(__file__).resolve().parent.parent / "projects" / "shapes"


def build(tmp_path: Path, project: str, variables: dict[str, str] | None = None) -> tuple[dict, Path, object]:
    """``build --engine local`` of a copy of ``project`` (its ``build.variables`` changed by ``variables``):
    (the one result, the output folder, the matrix)."""
    tree = tmp_path / project
    shutil.copytree(PROJECTS / project, tree)
    if variables:
        data = yaml.safe_load((tree / "matrix.yaml").read_text())
        data["project"]["build"]["variables"] = variables
        (tree / "matrix.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    out = tmp_path / f"out-{project}"
    proc = helpers.builders("build", "--matrix", str(tree / "matrix.yaml"), "--source", str(tree), "--output", str(out),
                            "--engine", "local", cwd=tmp_path, timeout=600)
    records = json.loads((out / "results.json").read_text())["targets"]
    assert len(records) == 1, (proc.stdout[-2000:], proc.stderr[-2000:])
    return records[0], out, loader.load(tree / "matrix.yaml")


def smoked_on(record: dict) -> dict[str, dict]:
    return record["smoke"]["pythons"]


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[dict, Path, object]]:
    """Each project built as it is, once for the module."""
    return {p: build(tmp_path_factory.mktemp(p), p) for p in ("ctlib", "abi3")}


@pytest.mark.parametrize(("project", "abi"), [("ctlib", "none"), ("abi3", "abi3")])
def test_built_once_and_smoke_tested_on_every_listed_python(good: dict, project: str, abi: str) -> None:
    record, out, m = good[project]
    (target,) = expand(m)[0]
    assert record["id"] == target.id and record["status"] == "built", record
    _, _, _, tags = parse_wheel_filename(Path(record["wheel"]).name)
    assert tags == {Tag(target.shape.interpreter(), abi, target.platform.wheel_platform)}
    listed = [str(p) for p in m.pythons]
    assert sorted(smoked_on(record)) == sorted(listed)
    for python, summary in smoked_on(record).items():
        assert "skipped" not in summary and summary.get("project_ok") is True, (python, summary)
    log = (out / record["log"]).read_text()
    assert [line.split()[3] for line in log.splitlines() if line.startswith("# smoke: CPython")] == listed
    assert log.count("\n# plan ") == 1 and record["durations"]["build"] > 0


def test_the_abi3_wheel_holds_a_stable_abi_module(good: dict) -> None:
    record, out, _ = good["abi3"]
    with zipfile.ZipFile(out / record["wheel"]) as wheel:
        assert [n for n in wheel.namelist() if n.endswith(".so")] == ["stableshape.abi3.so"]


@pytest.mark.parametrize(("mode", "code", "member"), [("1", "abi-python-specific", "stableshape.cpython-311"),
                                                      ("named-abi3", "abi3-violation", "stableshape.abi3.so")])
def test_an_abi3_wheel_that_is_not_is_refused(tmp_path: Path, mode: str, code: str, member: str) -> None:
    record, out, _ = build(tmp_path, "abi3", {"STABLESHAPE_FULL_API": mode})
    assert record["status"] == "failed" and record["stage"] == "verify", record
    found = [f for f in record["findings"] if f["code"] == code]
    assert found and found[0]["file"].startswith(member), record["findings"]
    assert not list(out.glob("whl/**/*.whl")), "nothing refused reaches the wheelhouse"
