"""Helpers the test modules share (functions, not fixtures: those live in the conftest files)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from functools import cache
from pathlib import Path

import pytest

from builders.spec.model import Matrix
from builders.spec.targets import Selection, Target, select


def builders(*args: str, cwd: Path, env: Mapping[str, str] | None = None,
             timeout: float = 3600) -> subprocess.CompletedProcess[str]:
    """``python -m builders ARGS`` in ``cwd``, output captured; ``env`` is the whole environment (None: ours)."""
    return subprocess.run([sys.executable, "-m", "builders", *args], cwd=cwd, env=None if env is None else dict(env),
                          text=True, capture_output=True, timeout=timeout)


def one(m: Matrix, tid: str) -> Target:
    """The target ``tid`` of ``m`` (selected as ``--target`` selects it)."""
    (target,) = select(m, Selection(targets=(tid,)))
    return target


SETUP_SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "setup-test-host.sh"


@cache
def setup_installs() -> dict[str, str]:
    """command -> the Debian package ``scripts/setup-test-host.sh`` installs it from (its own table)."""
    table = re.search(r"declare -A package=\((.*?)\n\)", SETUP_SCRIPT.read_text(), re.DOTALL)
    assert table, f"{SETUP_SCRIPT} has no `declare -A package=(...)` table"
    return dict(re.findall(r"\[([\w.-]+)\]=([\w.+-]+)", table.group(1)))


def require_tool(tool: str, path: str | None = None) -> str:
    """The path of ``tool``; a tool the setup script installs that is missing fails the test, naming that step.

    The rule: what ``scripts/setup-test-host.sh`` installs must be there (``nox -s tests`` runs it first),
    so a missing one is a broken host, never a skip, and never a KeyError later on.
    """
    found = shutil.which(tool, path=path)
    if found:
        return found
    package = setup_installs().get(tool)
    assert package, f"{tool} is not installed by {SETUP_SCRIPT.name}: add it to its table, or skip with a reason"
    pytest.fail(f"{tool} is not installed: run scripts/setup-test-host.sh (as root), which installs it from "
                f"Debian's {package} package (nox -s tests runs it first)", pytrace=False)
