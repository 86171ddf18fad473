"""builders.base.safe_output: what a rename into place may replace, and what it writes into or refuses."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from builders.base.errors import PathError
from builders.base.safe_output import destination, open_append, replace_into, write_text, write_whole


def test_a_file_is_replaced_whole_and_leaves_no_partial(tmp_path: Path) -> None:
    dest = tmp_path / "a.json"
    dest.write_text("old")
    assert write_whole(dest, b"new") == dest and dest.read_bytes() == b"new"
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]


def test_a_fifo_is_written_into(tmp_path: Path) -> None:
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # its reader is there first; the bytes fit the pipe
    tmp = tmp_path / ".f.partial"
    tmp.write_bytes(b"through the pipe")
    replace_into(tmp, fifo)
    assert _read_all(reader) == b"through the pipe" and stat.S_ISFIFO(os.lstat(fifo).st_mode) and not tmp.exists()


def _read_all(fd: int) -> bytes:
    os.set_blocking(fd, True)
    with os.fdopen(fd, "rb") as fh:
        return fh.read()


def test_a_fifo_nobody_reads_is_refused_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    with pytest.raises(PathError, match="FIFO nobody reads"):
        write_whole(fifo, b"x")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_dev_null_and_the_streams_are_written_into() -> None:
    assert destination(Path("/dev/null")) is None and destination(Path("/dev/stdout")) is None
    write_whole(Path("/dev/null"), b"gone")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


@pytest.mark.skipif(os.geteuid() != 0, reason="mknod needs root")
def test_any_other_device_node_is_refused_never_replaced(tmp_path: Path) -> None:
    node = tmp_path / "null"
    os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    with pytest.raises(PathError, match="character device"):
        write_whole(node, b"x")
    with pytest.raises(PathError, match="character device"), open_append(node):
        pass
    assert stat.S_ISCHR(os.lstat(node).st_mode)


def test_appending_refuses_a_symlink_out_and_reports_os_errors(tmp_path: Path) -> None:
    out, victim = tmp_path / "out", tmp_path / "victim.log"
    out.mkdir()
    victim.write_text("keep")
    (out / "a.log").symlink_to(victim)
    with pytest.raises(PathError, match="outside"), open_append(out / "a.log"):
        pass
    with open_append(out / "logs" / "b.log") as fh:
        fh.write("one\n")
    assert victim.read_text() == "keep" and (out / "logs" / "b.log").read_text() == "one\n"
    (out / "file").write_text("")
    with pytest.raises(PathError, match="cannot write"):
        write_text(out / "file" / "under-a-file.json", "{}")


def test_symlinks_inside_are_followed_and_outside_refused(tmp_path: Path) -> None:
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    (out / "in").symlink_to(out / "real")
    (out / "chain").symlink_to("in")
    (out / "away").symlink_to(elsewhere / "x")
    assert destination(out / "chain") == out / "real"
    tmp = out / ".t"
    tmp.write_bytes(b"data")
    with pytest.raises(PathError, match="outside"):
        replace_into(tmp, out / "away")
    assert not tmp.exists() and not (elsewhere / "x").exists() and (out / "away").is_symlink()
    assert destination(out / "away", root=tmp_path) == elsewhere / "x"  # inside a wider output folder


def test_a_loop_a_folder_and_a_socket_are_refused(tmp_path: Path) -> None:
    (tmp_path / "loop").symlink_to("loop")
    (tmp_path / "dir").mkdir()
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(tmp_path / "sock"))
        for name, phrase in (("loop", "symlink"), ("dir", "is a folder"), ("sock", "is a socket")):
            with pytest.raises(PathError, match=phrase):
                write_whole(tmp_path / name, b"x")


def test_a_targets_log_goes_through_the_same_rules(tmp_path: Path) -> None:
    """``logs/<id>.log`` (builders.base.process.Log, appended as output arrives) never follows a link out."""
    from builders.base.process import Log

    logs, victim = tmp_path / "logs", tmp_path / "victim.txt"
    logs.mkdir()
    victim.write_text("keep")
    (logs / "t.log").symlink_to(victim)
    with pytest.raises(PathError, match="outside"):
        Log(logs / "t.log").write("secret output\n")
    Log(logs / "u.log").write("line\n")
    assert victim.read_text() == "keep" and (logs / "u.log").read_text() == "line\n"
