"""One writer per output folder (:mod:`builders.base.folderlock`), in-process: ``flock`` locks belong to
an open file, so a second open in this process contends as another process would."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from builders.base import folderlock
from builders.base.errors import FolderBusy
from builders.cli import main
from tests.unit.test_promote_index import _reqs, make_wheel


def test_the_holder_writes_who_it_is_and_clears_it_when_done(tmp_path: Path) -> None:
    with folderlock.held(tmp_path / "out", argv=["python", "-m", "builders", "build", "--output", "out"]):
        record = json.loads(folderlock.lock_path(tmp_path / "out").read_text())
        assert record["pid"] == os.getpid()
        assert record["command"] == "python -m builders build --output out"
        assert time.strptime(record["since"], "%Y-%m-%dT%H:%M:%SZ")
    assert folderlock.lock_path(tmp_path / "out").read_text() == ""  # the file stays, the record goes


def test_no_wait_fails_at_once_naming_the_holder(tmp_path: Path) -> None:
    with folderlock.held(tmp_path, argv=["builders", "build", "--target", "cpu-cp312-linux-x86_64"]):
        start = time.monotonic()
        with pytest.raises(FolderBusy) as err:
            with folderlock.held(tmp_path, wait=False):
                pytest.fail("two holders at once")
        assert time.monotonic() - start < 30  # never waits for the holder (who holds it for the whole test)
    assert err.value.exit_code == 26
    assert f"pid {os.getpid()} (builders build --target cpu-cp312-linux-x86_64) since 20" in str(err.value)
    with folderlock.held(tmp_path, wait=False):  # released: the next one gets it at once
        pass


def test_a_second_writer_waits_saying_once_whose_run_it_waits_for(tmp_path: Path) -> None:
    taken, order, notes = threading.Event(), [], []

    def first() -> None:
        with folderlock.held(tmp_path, argv=["first-run"]):
            taken.set()
            time.sleep(0.5)
            order.append("first done")

    thread = threading.Thread(target=first)
    thread.start()
    taken.wait(5)
    with folderlock.held(tmp_path, note=notes.append, argv=["second-run"]):
        order.append("second in")
        assert json.loads(folderlock.lock_path(tmp_path).read_text())["command"] == "second-run"
    thread.join()
    assert order == ["first done", "second in"]
    assert len(notes) == 1 and "(first-run)" in notes[0] and "waiting" in notes[0]


def test_a_holder_that_has_not_written_its_record_yet_is_still_named(tmp_path: Path) -> None:
    assert folderlock.describe({}) == "another run (it has not written its pid yet)"
    long = folderlock.describe({"pid": 7, "command": "x" * 500, "since": "2026-11-30T00:00:00Z"})
    assert long.startswith("pid 7 (xxx") and long.endswith("...) since 2026-11-30T00:00:00Z")


def test_the_lock_file_is_not_inherited_by_commands_the_run_starts(tmp_path: Path) -> None:
    """A build's child left running (a daemon, a stuck compiler) must not keep the output locked."""
    with folderlock.held(tmp_path):
        lock = folderlock.lock_path(tmp_path).resolve()
        fds = [int(fd) for fd in os.listdir("/proc/self/fd")] if Path("/proc/self/fd").is_dir() else []
        mine = [fd for fd in fds if _points_at(fd, lock)]
        assert mine and all(not os.get_inheritable(fd) for fd in mine)


def _points_at(fd: int, path: Path) -> bool:
    try:
        return Path(os.readlink(f"/proc/self/fd/{fd}")) == path
    except OSError:
        return False


@pytest.mark.parametrize("command", ["promote", "index"])
def test_writers_of_publication_folders_leave_no_lock_and_no_one_else_s_partial_file(tmp_path: Path, root: Path, m,
                                                                                   command: str) -> None:
    """``promote`` and ``index`` write folders that are published as they are (PyPI's dist, an index's site), so
    they hold no lock file there; two at once cannot write into one half-written file, each writes its own."""
    label = dict(m.channels.pypi)["linux-x86_64"]
    wheel = make_wheel(tmp_path / "house", version=f"{m.project.version}+{label}", requires=_reqs(m, label), m=m).path
    out = tmp_path / "out"
    given = str(wheel) if command == "promote" else str(wheel.parent)
    folder = out if command == "promote" else out / m.channels.index_path(label) / m.project.name
    name = wheel.name.replace(f"+{label}", "") if command == "promote" else wheel.name
    folder.mkdir(parents=True)
    others = folder / f".{name}.partial", folder / f".{name}.{os.getpid() + 1}.partial"
    for other in others:
        other.write_bytes(b"another run's half-written file")
    argv = [command, "--matrix", str(root / "matrix.yaml"), given, "--output", str(out),
            *(["--no-mirror"] if command == "index" else [])]
    assert main(argv) == 0
    assert (folder / name).is_file()
    assert all(other.read_bytes() == b"another run's half-written file" for other in others)
    assert not (out / folderlock.LOCK_NAME).exists()
    assert {p.name for p in folder.iterdir() if p.name.startswith(".")} == {o.name for o in others}


def test_a_folder_that_cannot_be_locked_is_said_and_the_run_goes_on(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    def no_locks(fd: int, operation: int) -> None:
        raise OSError(37, "No locks available")

    monkeypatch.setattr(folderlock.fcntl, "flock", no_locks)
    notes: list[str] = []
    ran = []
    with folderlock.held(tmp_path, note=notes.append):
        ran.append(True)
    assert ran and len(notes) == 1 and "cannot be locked (No locks available)" in notes[0]
