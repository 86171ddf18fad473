"""A real sdist whose METADATA setuptools folds, through label, repair, verify and smoke (issue 20).

mmh3 5.0.1's sdist is fetched from the package index at test time (through pip's own
configuration) and built by builders with ``tests/projects/mmh3``, whose variant adds a
runtime requirement as every GPU variant does. The wheel setuptools writes has a License
field folded over the whole licence text with whitespace-only continuation lines; label must
append Requires-Dist after the headers, not inside the fold. The target must build, repair,
verify with zero findings and pass its smoke test, and the licence must read as written.
"""

from __future__ import annotations

import email
import json
import sys
from pathlib import Path

import pytest
import yaml
from packaging.metadata import Metadata
from packaging.requirements import Requirement

from builders.families import loader as matrix
from builders.matrix.targets import expand
from builders.wheel.archive import Wheel
from builders.wheel.metadata_rules import requirement_key
from tests import helpers

pytestmark = pytest.mark.slow

PROJECT = Path(__file__).resolve().parent.parent / "projects" / "mmh3"
MATRIX = PROJECT / "matrix.yaml"


@pytest.fixture(scope="module")
def sdist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The pinned sdist, downloaded through pip's own configuration and unpacked."""
    project = yaml.safe_load(MATRIX.read_text())["project"]
    return helpers.fetch_sdist(project["name"], str(project["version"]), tmp_path_factory.mktemp("sdist"))


def test_the_sdists_own_metadata_folds_with_whitespace_only_lines(sdist: Path) -> None:
    """The input the bug needs, as the project's maintainers published it."""
    lines = (sdist / "PKG-INFO").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("License:"))
    fold = [line for line in lines[start + 1:] if line[:1] in (" ", "\t")]
    assert len(fold) > 5 and any(not line.strip() for line in fold), lines[start:start + 6]


def test_a_folded_license_survives_label_repair_verify_and_smoke(sdist: Path, tmp_path: Path) -> None:
    m = matrix.load(MATRIX)
    targets, _ = expand(m)
    here = f"{sys.version_info.major}.{sys.version_info.minor}"  # an interpreter this host surely has
    target = next(t for t in targets if t.variant.requirements and t.python.release == here)
    proc = helpers.builders("build", "--matrix", str(MATRIX), "--source", str(sdist), "--target", target.id,
                            "--output", str(tmp_path), cwd=tmp_path)
    record = {r["id"]: r for r in json.loads((tmp_path / "results.json").read_text())["targets"]}[target.id]
    assert proc.returncode == 0, (record, (tmp_path / record["log"]).read_text()[-5000:])
    assert record["status"] == "built" and not record.get("findings"), record
    smoke = record["smoke"]
    assert smoke["extension_loaded"] and smoke["project_ok"] and smoke["failed_checks"] == [], smoke
    assert smoke["version"] == str(target.version), smoke

    wheel = Wheel(tmp_path / record["wheel"])
    meta = Metadata.from_email(wheel.read(f"{wheel.dist_info}/METADATA"), validate=False)
    # The build's own Requires-Dist (mmh3's extras, as its sdist's PKG-INFO lists them) stays; the variant's is added.
    own = email.message_from_bytes((sdist / "PKG-INFO").read_bytes()).get_all("Requires-Dist") or []
    assert own, "mmh3 declares requirements behind extras"
    assert {requirement_key(r) for r in wheel.requires_dist} == {
        requirement_key(r) for r in (*map(Requirement, own), *target.variant.requirements)}
    licence = (sdist / "LICENSE").read_text()
    assert all(line.strip() in (meta.license or "") for line in licence.splitlines() if line.strip())
