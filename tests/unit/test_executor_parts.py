"""The executor's parts without a subprocess: provisioning once, the store, the results writer,
the source digest and the console's status lines."""

from __future__ import annotations

import io
import json
import os
import re
import threading
import time
from pathlib import Path

import pytest

from builders.base.console import Console
from builders.base.errors import ToolchainError
from builders.base.once import Once
from builders.base.process import Cancelled
from builders.pipeline import results, sourcetree
from builders.pipeline.store import Store, place, tree_digest


def test_once_runs_an_action_once_whoever_asks_first() -> None:
    once, calls = Once(), []

    def slow() -> None:
        time.sleep(0.2)
        calls.append(1)

    threads = [threading.Thread(target=once, args=("cuda-13.2.2", slow)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    once("cuda-13.4.3", slow)
    assert len(calls) == 2


def test_once_remembers_a_failure_but_not_an_interruption() -> None:
    once, calls = Once(), []

    def broken() -> None:
        calls.append("broken")
        raise ToolchainError("no such toolkit")

    for _ in range(3):
        with pytest.raises(ToolchainError):
            once("t", broken)
    assert calls == ["broken"]

    def interrupted() -> None:
        calls.append("interrupted")
        raise Cancelled

    for _ in range(2):
        with pytest.raises(Cancelled):
            once("i", interrupted)
    assert calls.count("interrupted") == 2


def test_build_slots_admit_jobs_builds_at_once_and_give_way_to_a_cancel() -> None:
    from builders.base import process
    from builders.pipeline.executor import BuildSlots

    slots, lock, inside, most = BuildSlots(2), threading.Lock(), [0], [0]

    def work() -> None:
        with slots.held():
            with lock:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            time.sleep(0.1)
            with lock:
                inside[0] -= 1

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most[0] == 2
    with slots.held(), slots.held():  # both taken: a third waits until the run is cancelled
        process.cancel_all()
        try:
            with pytest.raises(Cancelled), slots.held():
                pass
        finally:
            process.reset_cancel()


def test_the_store_keeps_a_wheel_under_its_digest(tmp_path: Path) -> None:
    wheel = tmp_path / "pkg-1.0-py3-none-any.whl"
    wheel.write_bytes(b"wheel bytes")
    store = Store(tmp_path / ".store")
    assert store.get("d" * 64) is None
    log = tmp_path / "build.log"
    log.write_text("$ build\n")
    stored = store.put("d" * 64, wheel, {"sha256": "x"}, log=log)
    again = store.get("d" * 64)
    assert again is not None and again.wheel.read_bytes() == b"wheel bytes" and again.record["sha256"] == "x"
    assert again.log.read_text() == "$ build\n" and stored.wheel == again.wheel
    assert not [p for p in (tmp_path / ".store").iterdir() if p.name.startswith(".")]  # no half-stored folder
    again.wheel.write_bytes(b"truncated")  # a damaged entry is a miss, never a wrong wheel
    assert store.get("d" * 64) is None


def test_place_links_all_at_once(tmp_path: Path) -> None:
    source = tmp_path / "a.whl"
    source.write_bytes(b"x")
    dest = place(source, tmp_path / "whl" / "cpu" / "a.whl")
    assert dest.read_bytes() == b"x" and os.stat(dest).st_ino == os.stat(source).st_ino
    assert sorted(p.name for p in dest.parent.iterdir()) == ["a.whl"]


def test_the_source_digest_is_content_not_time_or_build_outputs(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("x = 1\n")
    first = tree_digest(tmp_path)
    os.utime(tmp_path / "src" / "a.py", (0, 0))
    for junk in (".git/HEAD", "build/tmp.o", "src/__pycache__/a.cpython-312.pyc", "dist/x.whl", "sub/.git"):
        (tmp_path / junk).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / junk).write_text("junk")
    assert tree_digest(tmp_path, ("build", "dist")) == first  # left out by the run's list, VCS data and bytecode
    assert tree_digest(tmp_path) != first  # never by a folder's name alone
    (tmp_path / "src" / "a.py").write_text("x = 2\n")
    assert tree_digest(tmp_path, ("build", "dist")) != first
    (tmp_path / "src" / "a.py").write_text("x = 1\n")
    (tmp_path / "src" / "a.py").chmod(0o755)
    assert tree_digest(tmp_path, ("build", "dist")) != first


def test_packages_named_build_and_dist_are_source_at_any_depth(tmp_path: Path) -> None:
    for name in ("pkg/__init__.py", "pkg/build/__init__.py", "pkg/dist/__init__.py", "build/lib/pkg/__init__.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    left_out = sourcetree.declared(tmp_path, sourcetree.DEFAULT_EXCLUDE)
    assert left_out == ("build",)  # the top-level build/ of an earlier setuptools build, not pkg/build/
    first = tree_digest(tmp_path, left_out)
    for edited in ("pkg/build/__init__.py", "pkg/dist/__init__.py"):
        (tmp_path / edited).write_text("changed = True\n")
        assert tree_digest(tmp_path, left_out) != first
        (tmp_path / edited).write_text("")
    (tmp_path / "build/lib/pkg/__init__.py").write_text("stale = True\n")
    assert tree_digest(tmp_path, left_out) == first


def test_a_declared_list_and_the_output_folder_are_root_relative(tmp_path: Path) -> None:
    for name in ("a/build/x", "a/gen/y", "gen/z", "out/w"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    assert sourcetree.declared(tmp_path, ("gen", "*/gen", "missing")) == ("a/gen", "gen")
    assert sourcetree.inside(tmp_path, tmp_path / "out") == "out"
    assert sourcetree.inside(tmp_path, tmp_path.parent) is None and sourcetree.inside(tmp_path, tmp_path) is None


def test_one_writer_keeps_every_result_of_concurrent_targets(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    results.record(path, results.Result(id="cpu-cp311-linux-x86_64", status="failed", reason="earlier run"))
    writer = results.Writer(path)
    ids = [f"cpu-cp3{i}-linux-x86_64" for i in range(10, 20)]
    threads = [threading.Thread(target=writer.record, args=(results.Result(id=i, status="reused", digest="a" * 64),))
               for i in ids]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    found = results.read(path)
    assert set(found) == {*ids, "cpu-cp311-linux-x86_64"}
    assert found[ids[0]] == {"id": ids[0], "status": "reused", "digest": "a" * 64}
    assert not list(tmp_path.glob(".results-*"))


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_shows_one_status_line_per_running_target() -> None:
    stream = FakeTTY()
    console = Console(stream, env={"TERM": "xterm"})
    console.running("a", "[1/2] a started")
    console.running("b", "[2/2] b started")
    console.progress(1, 2, "a", "build", 12.0)
    console.finished("a", "[1/2] a built 12s")
    screen = render(stream.getvalue())
    assert screen == ["[1/2] a built 12s", "[2/2] b started"]


def test_elsewhere_each_stage_is_one_line() -> None:
    stream = io.StringIO()
    console = Console(stream, env={})
    console.running("a", "[1/1] a started")
    console.progress(1, 1, "a", "build", 3.0)
    console.finished("a", "[1/1] a built 3s")
    assert stream.getvalue().splitlines() == ["[1/1] a build 3s", "[1/1] a built 3s"]
    console.mirror("a", "compiling x.cu")
    assert stream.getvalue().splitlines()[-1] == "  a | compiling x.cu"


def render(text: str) -> list[str]:
    """What a terminal shows after ``text``: lines, with 'cursor up N lines, clear below' applied."""
    lines: list[str] = []
    parts = re.split(r"\x1b\[(\d+)F\x1b\[J", text)
    for i, part in enumerate(parts):
        if i % 2:
            del lines[len(lines) - int(part):]
        else:
            lines += [line for line in part.split("\n") if line]
    return lines


def test_results_schema_knows_reused_and_digest() -> None:
    schema = json.dumps(results.schema())
    assert '"reused"' in schema and '"digest"' in schema
    assert set(results.STATUSES) >= results.FINISHED
