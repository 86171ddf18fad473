"""Requirements merged, never lost (issue 29): a project whose matrix lists no ``dependencies``
keeps every Requires-Dist its build wrote, extras included, and gains its variant's runtime
requirements; the PyPI wheel promote writes keeps them too. The project is the private-source
test's C extension (``tests/projects/cflags``) given requirements of its own by the test.
"""

from __future__ import annotations

import json
import zipfile
from email.parser import BytesParser
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement

from builders.wheel.metadata_rules import requirement_key
from tests import helpers
from tests.integration.test_private_source import DEBUG, build, project_tree

pytestmark = pytest.mark.slow

TID = "cpu-cp312-linux-x86_64"
OWN = ["packaging>=24", 'idna>=3; extra == "net"', 'typing-extensions>=4; python_version >= "3.12" and extra == "typed"']
VARIANT = ['six>=1.16; platform_system == "Linux"']


def with_requirements(tree: Path) -> None:
    """The project declares its own requirements (pyproject); the matrix lists none and adds a runtime one."""
    text = (tree / "pyproject.toml").read_text()
    text = text.replace('requires-python = ">=3.11"\n', 'requires-python = ">=3.11"\ndependencies = ["packaging>=24"]\n'
                        '\n[project.optional-dependencies]\nnet = ["idna>=3"]\n'
                        'typed = [\'typing-extensions>=4; python_version >= "3.12"\']\n')
    (tree / "pyproject.toml").write_text(text)
    data = yaml.safe_load((tree / "matrix.yaml").read_text())
    assert "dependencies" not in data["project"] and "optional_dependencies" not in data["project"]
    data["accelerators"]["cpu"]["runtime_requirements"] = VARIANT
    (tree / "matrix.yaml").write_text(yaml.safe_dump(data, sort_keys=False))


def metadata(wheel: Path) -> tuple[set[tuple[object, ...]], list[str]]:
    with zipfile.ZipFile(wheel) as z:
        (name,) = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
        meta = BytesParser().parsebytes(z.read(name))
    return {requirement_key(Requirement(r)) for r in meta.get_all("Requires-Dist") or ()}, meta.get_all("Provides-Extra")


def keys(requirements: list[str]) -> set[tuple[object, ...]]:
    return {requirement_key(Requirement(r)) for r in requirements}


def test_the_builds_own_requirements_stay_and_the_variants_are_added(tmp_path: Path) -> None:
    tree = project_tree(tmp_path, DEBUG)
    with_requirements(tree)
    out = tmp_path / "out"
    record = build(tree, out, "--target", TID)[TID]
    assert not record.get("findings"), record
    requires, extras = metadata(out / record["wheel"])
    assert requires == keys(OWN + VARIANT) and sorted(extras) == ["net", "typed"]
    proc = helpers.builders("promote", str(out / record["wheel"]), "--matrix", str(tree / "matrix.yaml"),
                            "--output", str(tmp_path / "pypi"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (promoted,) = (tmp_path / "pypi").glob("*.whl")
    assert metadata(promoted)[0] == keys(OWN + VARIANT)
    checked = helpers.builders("verify", str(promoted), "--matrix", str(tree / "matrix.yaml"), "--target", TID,
                             "--channel", "pypi", cwd=tmp_path)
    assert checked.returncode == 0, (checked.stdout, checked.stderr)
    assert json.loads((out / "results.json").read_text())["targets"][0]["status"] == "built"
