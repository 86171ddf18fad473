"""Every hostile input of the corpus: the documented exit code, a location where the input
has lines, no traceback, under 10 s and 512 MB, nothing written outside the case folder.

Each case is its own process running ``python -m builders``, forked from one that imported builders already
(tests/hostile/launch.py): the corpus's hundreds of starts were most of its time."""

from __future__ import annotations

import importlib
import multiprocessing
import os
import time
from multiprocessing.context import ForkServerContext
from pathlib import Path

import pytest

from tests.hostile import launch
from tests.hostile.corpus import Case

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
MODULES = sorted(p.stem for p in HERE.glob("cases_*.py"))
CASES: list[Case] = [c for m in MODULES for c in importlib.import_module(f"tests.hostile.{m}").CASES]
# A hang bound, not a speed goal (those live in benchmarks/): a loaded machine (load 15-30 on 2 cores) took 14 s
# for a case that takes 1 s idle. RLIMIT_CPU (launch.CPU_SECONDS) bounds the work itself.
WALL = 120.0


@pytest.fixture(scope="module")
def forks() -> ForkServerContext:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(launch.PRELOAD)
    return context


def _write(folder: Path, case: Case) -> None:
    for name, content in case.files.items():
        if callable(content):
            content(folder)
        else:
            (folder / name).write_bytes(content.encode() if isinstance(content, str) else content)


def _fill(arg: str, folder: Path) -> str:
    return arg.replace("{dir}", str(folder)).replace("{out}", str(folder / "out"))


def _snapshot(root: Path) -> set[Path]:
    return {p for p in root.rglob("*")} if root.exists() else set()


def test_the_corpus_is_large_and_ids_are_unique() -> None:
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))
    assert len(ids) >= 150


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_input(case: Case, tmp_path: Path, forks: ForkServerContext) -> None:
    folder, work, streams = tmp_path / "case", tmp_path / "cwd", tmp_path / "streams"
    for made in (folder, work, streams):
        made.mkdir()
    _write(folder, case)
    (streams / "stdin").write_text(case.stdin or "")
    (streams / "stdout").touch()
    (streams / "stderr").touch()
    before = _snapshot(tmp_path)
    call = launch.Invocation(argv=tuple(_fill(a, folder) for a in case.argv), cwd=str(work),
                             env={**os.environ, "PYTHONPATH": str(HERE.parent.parent)}, stdin=str(streams / "stdin"),
                             stdout=None if case.stdout_closed else str(streams / "stdout"),
                             stderr=str(streams / "stderr"))
    start = time.monotonic()
    proc = forks.Process(target=launch.run, args=(call,))
    proc.start()
    proc.join(2 * WALL)
    if proc.is_alive():
        proc.kill()
        proc.join()
        pytest.fail(f"still running after {2 * WALL:.0f} s")
    elapsed = time.monotonic() - start
    output = ((streams / "stdout").read_bytes() + (streams / "stderr").read_bytes()).decode(errors="replace")
    assert "Traceback" not in output, output[-3000:]
    assert proc.exitcode == case.exit_code, output[-3000:]
    assert case.message.lower() in output.lower(), output[-3000:]
    if case.location:
        assert case.location in output, output[-3000:]
    assert elapsed < WALL, f"{elapsed:.1f}s"
    outside = {p for p in _snapshot(tmp_path) - before if not p.is_relative_to(folder) and not p.is_relative_to(work)}
    assert not outside
    assert not list(work.iterdir()), "wrote into the working directory"
