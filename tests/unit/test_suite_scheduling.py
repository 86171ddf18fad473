"""The suite's parallel schedule keeps each module on one worker (noxfile.XDIST, tests/conftest.py).

A module-scoped build split over two workers runs twice, both at once: pytest 9.2 with
pytest-xdist 3.8 silently stopped honouring ``--dist loadgroup`` (xdist rewrites a private node
id attribute that pytest no longer reads), and the act module's first release was built twice
in parallel. This runs the installed pytest and xdist with the tests session's own arguments on
a throwaway suite and reads where each test ran.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import LONG_FIRST

ROOT = Path(__file__).resolve().parents[2]

MODULE = '''
import json, os, pytest
from pathlib import Path

@pytest.fixture(scope="module")
def built():
    return os.environ["PYTEST_XDIST_WORKER"]

@pytest.mark.parametrize("n", range(4))
def test_one(built, n):
    out = Path(os.environ["RECORD"]) / f"{__name__}-{n}.json"
    out.write_text(json.dumps({"module": __name__, "worker": os.environ["PYTEST_XDIST_WORKER"], "built": built}))
'''


def xdist_args() -> tuple[str, ...]:
    """The tests session's pytest-xdist arguments, read from the noxfile (nox need not be installed)."""
    tree = ast.parse((ROOT / "noxfile.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "XDIST" for t in node.targets):
            return tuple(ast.literal_eval(node.value))
    raise AssertionError("noxfile.py assigns no XDIST")


@pytest.mark.slow  # a whole pytest run with two xdist workers: 16 s on a loaded 2-core host (nox -s tests runs it)
def test_every_module_runs_on_one_worker_and_both_workers_work(tmp_path: Path) -> None:
    suite, record = tmp_path / "suite", tmp_path / "record"
    suite.mkdir()
    record.mkdir()
    for name in ("test_alpha", "test_beta", "test_gamma", "test_delta"):
        (suite / f"{name}.py").write_text(MODULE)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *xdist_args(), str(suite)],
                          cwd=tmp_path, env={**_env(), "RECORD": str(record)}, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    runs = [json.loads(p.read_text()) for p in record.iterdir()]
    assert len(runs) == 16
    by_module: dict[str, set[str]] = {}
    for run in runs:
        by_module.setdefault(run["module"], set()).update({run["worker"], run["built"]})
    assert all(len(workers) == 1 for workers in by_module.values()), by_module
    assert len(set().union(*by_module.values())) == 2, by_module


def test_the_long_modules_named_first_exist() -> None:
    """A renamed module would silently fall to the end of the schedule."""
    stems = {p.stem for p in (ROOT / "tests").rglob("test_*.py")}
    assert [name for name in LONG_FIRST if name not in stems] == []


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "BUILDERS_TEST"))}


def test_on_a_grown_matrix_only_the_tests_that_read_it_are_kept() -> None:
    """test_matrix_growth.py reruns the unit tests that can see BUILDERS_TEST_MATRIX, and no other."""
    from types import ModuleType, SimpleNamespace

    from tests.conftest import reads_the_test_matrix

    plain, calling = ModuleType("plain"), ModuleType("calling")
    calling.shipped_matrix_path = lambda: None  # type: ignore[attr-defined]
    assert reads_the_test_matrix(SimpleNamespace(module=plain, fixturenames=["m", "shipped_text"]))
    assert reads_the_test_matrix(SimpleNamespace(module=calling, fixturenames=["tmp_path"]))
    assert not reads_the_test_matrix(SimpleNamespace(module=plain, fixturenames=["tmp_path", "root"]))
