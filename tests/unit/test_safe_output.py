"""builders.base.safe_output: what a rename into place may replace, and what it writes into or refuses."""

from __future__ import annotations

import os
import socket
import stat
import threading
from pathlib import Path

import pytest

from builders.base.errors import PathError
from builders.base.safe_output import destination, replace_into, write_whole


def test_a_file_is_replaced_whole_and_leaves_no_partial(tmp_path: Path) -> None:
    dest = tmp_path / "a.json"
    dest.write_text("old")
    assert write_whole(dest, b"new") == dest and dest.read_bytes() == b"new"
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]


def test_a_fifo_is_written_into(tmp_path: Path) -> None:
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    tmp = tmp_path / ".f.partial"
    tmp.write_bytes(b"through the pipe")
    replace_into(tmp, fifo)
    reader.join(timeout=10)
    assert got == [b"through the pipe"] and stat.S_ISFIFO(os.lstat(fifo).st_mode) and not tmp.exists()


def test_a_character_device_is_written_into() -> None:
    assert destination(Path("/dev/null")) is None and destination(Path("/dev/stdout")) is None
    write_whole(Path("/dev/null"), b"gone")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


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
