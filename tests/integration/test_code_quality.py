"""The code's shape is a check: mypy and ruff pass with the project's config (pyproject.toml),
and no function in ``builders/`` is longer than 40 lines (measured with ``ast``)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAX_FUNCTION_LINES = 40


def function_lengths(package: Path) -> dict[str, int]:
    """Lines of every function and method (decorators excluded), by ``path:line name``."""
    out: dict[str, int] = {}
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                where = f"{path.relative_to(package.parent)}:{node.lineno} {node.name}"
                out[where] = (node.end_lineno or node.lineno) - node.lineno + 1
    return out


def test_no_function_is_longer_than_40_lines() -> None:
    lengths = function_lengths(ROOT / "builders")
    assert len(lengths) > 100
    assert {k: v for k, v in lengths.items() if v > MAX_FUNCTION_LINES} == {}


def test_mypy_passes() -> None:
    api = pytest.importorskip("mypy.api", reason="mypy is in the test extra: pip install -e '.[test]'")
    out, err, code = api.run(["--config-file", str(ROOT / "pyproject.toml"), str(ROOT / "builders")])
    assert code == 0, out + err


def test_ruff_passes() -> None:
    pytest.importorskip("ruff", reason="ruff is in the test extra: pip install -e '.[test]'")
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "builders", "benchmarks"], cwd=ROOT, text=True,
                          capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
