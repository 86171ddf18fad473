"""Requirements per target, end to end (issue 42): a setup.py that writes a different pin under each building
interpreter (no markers) passes build and verify on every Python with nothing copied into its matrix; a matrix
that declares a dependency the source does not is reported before the compile. The project is the private-source
test's C extension (``tests/projects/cflags``), given the per-interpreter pin by the test; no smoke (the
requirements are what is under test, and the smoke would only install them).
"""

from __future__ import annotations

import json
import zipfile
from email.parser import BytesParser
from pathlib import Path

import pytest
import yaml

from builders.families import loader as matrix
from builders.matrix.targets import expand
from tests import helpers
from tests.integration.test_private_source import OPTIMISED, build, project_tree

pytestmark = pytest.mark.slow


def pin(minor: int) -> str:
    """What the project's setup.py writes under Python 3.<minor>."""
    return "cffi>=1.11" if minor < 13 else "cffi>=1.17"


def pinned_tree(where: Path) -> Path:
    """The project with ``install_requires`` chosen by the interpreter that runs setup.py, and no markers."""
    tree = project_tree(where, OPTIMISED)
    setup = (tree / "setup.py").read_text()
    setup = helpers.edit(setup, "import os\n", "import os\nimport sys\n")
    setup = helpers.edit(setup, "setup(ext_modules=[extension(os.environ)])",
                         'PIN = "cffi>=1.11" if sys.version_info < (3, 13) else "cffi>=1.17"\n'
                         "setup(ext_modules=[extension(os.environ)], install_requires=[PIN])")
    (tree / "setup.py").write_text(setup)
    project = (tree / "pyproject.toml").read_text()
    (tree / "pyproject.toml").write_text(helpers.edit(project, 'requires-python = ">=3.11"\n',
                                                       'requires-python = ">=3.11"\ndynamic = ["dependencies"]\n'))
    return tree


def requires_dist(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as z:
        (name,) = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
        return BytesParser().parsebytes(z.read(name)).get_all("Requires-Dist") or []


def test_pins_per_python_pass_with_no_dependencies_in_the_matrix(tmp_path: Path) -> None:
    tree = pinned_tree(tmp_path)
    targets = expand(matrix.load(tree / "matrix.yaml"))[0]
    assert not targets[0].project.declares_requirements and len({t.python.minor for t in targets}) >= 2
    out = tmp_path / "out"
    records = build(tree, out, "--no-smoke")
    for target in targets:
        record = records[target.id]
        assert not record.get("findings"), record
        assert record["requirements"]["requires_dist"] == [pin(target.python.minor)], record
        assert record["requirements"]["python"] == f"3.{target.python.minor}"
        assert requires_dist(out / record["wheel"]) == [pin(target.python.minor)]
    again = tmp_path / "again"  # another output folder: the wheel is built again, the metadata is not read again
    first = targets[0]
    record = build(tree, again, "--no-smoke", "--target", first.id)[first.id]
    assert record["requirements"]["requires_dist"] == [pin(first.python.minor)]
    assert "as read before" in (again / record["log"]).read_text()


def test_a_dependency_the_source_does_not_declare_fails_before_the_compile(tmp_path: Path) -> None:
    tree = pinned_tree(tmp_path)
    data = yaml.safe_load((tree / "matrix.yaml").read_text())
    data["project"]["dependencies"] = ["cffi>=1.11", "numpy>=2"]
    (tree / "matrix.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    (target, *_) = expand(matrix.load(tree / "matrix.yaml"))[0]
    where = target.project.requirements_location
    assert where is not None
    out = tmp_path / "out"
    proc = helpers.builders("build", "--matrix", str(tree / "matrix.yaml"), "--source", str(tree), "--output",
                            str(out), "--target", target.id, "--no-smoke", cwd=tmp_path)
    assert proc.returncode != 0
    (record,) = json.loads((out / "results.json").read_text())["targets"]
    assert record["status"] == "failed" and record["stage"] == "requirements", record
    assert "build" not in record["durations"], record
    assert f":{where.line}:" in record["reason"] and "project.dependencies" in record["reason"], record
    assert "numpy>=2" in record["reason"], record
    log = (out / record["log"]).read_text()
    assert "pip wheel" not in log and "FAILED at requirements" in log
