"""A long compile shows the build backend's progress at ``-v``: pip hides a backend's output unless asked, so the
build runs with what :func:`backend_output` adds, the log mirrors ninja's ``[n/N]`` lines, and the target's status
line shows the latest. Real pip and a real (in-tree, offline) PEP 517 backend that prints ninja-style lines."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import pytest

from builders.base.console import Console
from builders.base.process import Log, run
from builders.pipeline.executor import backend_output

pytestmark = pytest.mark.slow

PROJECT = Path(__file__).resolve().parents[1] / "projects" / "progress"


def build(tmp_path: Path, verbose: bool) -> tuple[Console, io.StringIO]:
    stream = io.StringIO()
    console = Console(stream=stream, env={})
    console.running("t", "[1/1] t started")
    log = Log(tmp_path / f"{verbose}.log", echo=(lambda line: console.mirror("t", line)) if verbose else None)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PIP_")}, **backend_output(verbose)}
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp_path / str(verbose)),
         str(PROJECT)], env=env, log=log, timeout=120)
    return console, stream


def test_verbose_shows_the_backend_s_progress(tmp_path: Path) -> None:
    console, stream = build(tmp_path, verbose=True)
    assert "[2/3] Building C object step2.o" in stream.getvalue()
    assert console.status("t") == "[1/1] t started  compiling [3/3]"
    console.finished("t", "done")
    assert console.status("t") is None


def test_without_it_pip_hides_the_backend_s_lines(tmp_path: Path) -> None:
    """The check above can fail: without backend_output's variable the lines never reach the log."""
    console, _stream = build(tmp_path, verbose=False)
    assert "[2/3]" not in (tmp_path / "False.log").read_text()
    assert console.status("t") == "[1/1] t started"
