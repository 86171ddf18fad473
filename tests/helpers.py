"""Helpers the test modules share (functions, not fixtures: those live in the conftest files)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

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
