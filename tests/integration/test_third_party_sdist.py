"""A project nobody here wrote, through the whole pipeline: MarkupSafe's sdist (a plain C
extension, mixed-case distribution name, no C++, no ``_C`` module) fetched from the package
index at test time, built with the matrix in ``tests/projects/markupsafe``, on this host and
in a container. Its wheel must be ``+cpu`` labelled and verify with zero findings.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from builders.engines.images import engine_env
from builders.wheel.archive import Wheel
from builders.wheel.elf import parse
from tests import helpers

pytestmark = pytest.mark.slow

PROJECT = Path(__file__).resolve().parent.parent / "projects" / "markupsafe"
MATRIX = PROJECT / "matrix.yaml"


def builders(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return helpers.builders(*args, cwd=cwd, env=engine_env(os.environ))


@pytest.fixture(scope="module")
def sdist_source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The pinned sdist, downloaded through pip's own configuration and unpacked."""
    project = yaml.safe_load(MATRIX.read_text())["project"]
    return helpers.fetch_sdist(project["name"], str(project["version"]), tmp_path_factory.mktemp("sdist"))


def build(tid: str, source: Path, out: Path, *extra: str) -> dict:
    proc = builders("build", "--matrix", str(MATRIX), "--source", str(source), "--target", tid, "--output", str(out),
                    *extra, cwd=out)
    record = {r["id"]: r for r in json.loads((out / "results.json").read_text())["targets"]}[tid]
    assert proc.returncode == 0, (record, (out / record["log"]).read_text()[-5000:])
    return record


def check_wheel(record: dict, out: Path) -> None:
    assert record["status"] == "built" and not record.get("findings")
    wheel = Wheel(out / record["wheel"])
    assert wheel.name == "markupsafe" and wheel.version.local == "cpu"
    assert wheel.metadata["Name"] == "MarkupSafe"
    (ext,) = [n for n in wheel.names() if n.startswith("markupsafe/_speedups.") and n.endswith(".so")]
    facts = parse(io.BytesIO(wheel.read(ext)))
    assert all(p.startswith("$ORIGIN") for p in facts.rpaths), facts.rpaths


def test_local_build_of_a_third_party_sdist(sdist_source: Path, tmp_path: Path) -> None:
    record = build("cpu-cp312-linux-x86_64", sdist_source, tmp_path)
    check_wheel(record, tmp_path)


def test_container_build_of_a_third_party_sdist(sdist_source: Path, tmp_path: Path, base_image: str) -> None:
    record = build("cpu-cp314-linux-x86_64", sdist_source, tmp_path, "--engine", "container", "--base-image", base_image)
    assert record["engine"] == "container"
    check_wheel(record, tmp_path)
