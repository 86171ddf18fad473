"""The platform policy before the compile (issue 29): on a host newer than a target's manylinux
policy, ``plan`` says before any compile that repair may refuse it and names both ways out;
``build --local-only`` builds such a project with wheels tagged at the host's own level, and promote
and index refuse those wheels (they are for testing, never published). The project is the
private-source test's C extension; the host's glibc level is read here, never pinned.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from builders.pipeline import platform_policy
from builders.wheel import pypi_form
from tests import helpers
from tests.integration.test_private_source import OPTIMISED, build, project_tree

pytestmark = pytest.mark.slow

TID = "cpu-cp312-linux-x86_64"
GLIBC = platform_policy.host_glibc()


@pytest.mark.skipif(GLIBC is None, reason="the local-only level is a glibc host's")
def test_plan_warns_and_local_only_builds_a_wheel_nobody_publishes(tmp_path: Path) -> None:
    tree = project_tree(tmp_path, OPTIMISED)
    proc = helpers.builders("plan", "--matrix", str(tree / "matrix.yaml"), "--target", TID, "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (record,) = json.loads(proc.stdout)["targets"]
    major, minor, arch = pypi_form.manylinux(record["tags"][0].rsplit("-", 1)[-1])
    if tuple(map(int, GLIBC.split("."))) <= (major, minor):
        assert record["repair_risk"] is None
    else:
        assert f"host glibc {GLIBC} > {major}.{minor}" in record["repair_risk"]
        assert "--engine container" in record["repair_risk"] and "--local-only" in record["repair_risk"]
    out = tmp_path / "out"
    built = build(tree, out, "--target", TID, "--local-only")[TID]
    level = f"manylinux_{GLIBC.replace('.', '_')}_{arch}"
    assert built["wheel"].endswith(f"-{level}.whl") and built["policy"] == level
    wheel = out / built["wheel"]
    refused = helpers.builders("promote", str(wheel), "--matrix", str(tree / "matrix.yaml"), "--output",
                               str(tmp_path / "pypi"), cwd=tmp_path)
    assert refused.returncode == 15 and "--local-only" in refused.stderr and "never published" in refused.stderr
    assert not (tmp_path / "pypi").exists() or not list((tmp_path / "pypi").iterdir())
    indexed = helpers.builders("index", str(out / "whl"), "--matrix", str(tree / "matrix.yaml"), "--output",
                               str(tmp_path / "index"), "--no-mirror", cwd=tmp_path)
    assert indexed.returncode == 16 and "never published" in indexed.stderr, indexed.stderr
