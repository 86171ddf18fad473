"""Real projects nobody here wrote, of build backends the rest of the suite does not use (issue 29),
each from its sdist fetched at test time (``--no-binary NAME`` only: the backends' own requirements
come as wheels), built on this host, verified, smoke-tested with its own checks (the project's
``smoke.py``), indexed and audited. Each has a matrix under ``tests/projects/<name>``.

- Levenshtein: scikit-build-core, C++17 (CMake, a pre-generated Cython module), no ``dependencies``
  key: its wheel keeps its own Requires-Dist (rapidfuzz) and gains the variant's.
- scikit-fmm: meson-python, C++ against numpy's headers; its metadata lists no requirement, so the
  variant's (numpy) is all its wheel has. Its matrix names no runner or base image (the defaults).

The wheels carry C++ symbols of this host's libstdc++, so the test's copy of each matrix tags the
Linux platform at this host's own glibc level (read here, never pinned), which repair reaches.
Measured on this 2-core machine (shared with other work): the whole test took 2.7 minutes for Levenshtein
and 1.2 minutes for scikit-fmm (fetch, build, smoke, index, audit).
"""

from __future__ import annotations

import json
import shutil
import zipfile
from email.parser import BytesParser
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement

from builders.pipeline.platform_policy import host_glibc
from builders.wheel.metadata_rules import requirement_key
from tests import helpers

pytestmark = [pytest.mark.slow, pytest.mark.skipif(host_glibc() is None, reason="tags at this glibc host's level")]

PROJECTS = Path(__file__).resolve().parent.parent / "projects"
TID = "cpu-cp312-linux-x86_64"


def prepared(name: str, where: Path) -> tuple[Path, Path, dict]:
    """The sdist unpacked, and the project's matrix copied beside its smoke script at this host's level."""
    data = yaml.safe_load((PROJECTS / name / "matrix.yaml").read_text())
    source = helpers.fetch_sdist(data["project"]["name"], str(data["project"]["version"]), where / "sdist")
    platform = data["platforms"]["linux-x86_64"]
    arch = platform["wheel_platform"].split("_", 3)[-1]
    platform["wheel_platform"] = f"manylinux_{host_glibc().replace('.', '_')}_{arch}"
    folder = where / "matrix"
    folder.mkdir()
    shutil.copy(PROJECTS / name / "smoke.py", folder / "smoke.py")
    (folder / "matrix.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return source, folder / "matrix.yaml", data


def requires(wheel: Path) -> set[tuple[object, ...]]:
    with zipfile.ZipFile(wheel) as z:
        (name,) = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
        meta = BytesParser().parsebytes(z.read(name))
    return {requirement_key(Requirement(r)) for r in meta.get_all("Requires-Dist") or ()}


def rapidfuzz_facts(smoke: dict) -> dict:
    return {"distance": 2, "rapidfuzz": smoke["project"].get("rapidfuzz")}


@pytest.mark.parametrize("name, own, facts", [
    ("levenshtein", ["rapidfuzz<4.0.0,>=3.9.0"], rapidfuzz_facts),
    ("scikit-fmm", [], lambda smoke: {"distance": [-1.5, -0.5, 0.5, 1.5]}),
])
def test_a_real_project_is_built_verified_smoked_indexed_and_audited(tmp_path: Path, name: str, own: list[str],
                                                                     facts) -> None:
    source, matrix, data = prepared(name, tmp_path)
    out = tmp_path / "out"
    proc = helpers.builders("build", "--matrix", str(matrix), "--source", str(source), "--target", TID, "--output",
                            str(out), cwd=tmp_path)
    (record,) = json.loads((out / "results.json").read_text())["targets"]
    assert proc.returncode == 0 and record["status"] == "built", (record, (out / record["log"]).read_text()[-4000:])
    assert not record.get("findings")
    smoke = record["smoke"]  # the project's own checks passed, and their facts came back
    expect_facts = facts(smoke)
    assert smoke["project_ok"] and not smoke["failed_checks"] and smoke["project"] == expect_facts, smoke
    variant = data["accelerators"]["cpu"].get("runtime_requirements", [])
    assert requires(out / record["wheel"]) == {requirement_key(Requirement(r)) for r in own + variant}
    index = tmp_path / "index"
    proc = helpers.builders("index", str(out / "whl"), "--matrix", str(matrix), "--output", str(index), "--no-mirror",
                            cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    label_url = (index / data["channels"]["index"]["layout"].format(label="cpu")).as_uri()
    proc = helpers.builders("audit", "--matrix", str(matrix), "--channel", "cpu", "--index-url", label_url,
                            "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-3000:])
