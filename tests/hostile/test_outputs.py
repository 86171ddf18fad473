"""Hostile output paths (issue 29): no command replaces what is not a file. ``plan --output``
onto a character device (``/dev/null``, still a character device afterwards), a FIFO (read from a
thread), ``/dev/stdout``, a symlink into a place outside the output (refused, the place untouched),
a symlink inside it (followed, the link kept) and a folder (refused). The report's folder and the
index's files go through the same writer (builders.base.safe_output).
"""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

import pytest

from tests import helpers

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent.parent
PLAN = ("plan", "--matrix", str(ROOT / "matrix.yaml"), "--format", "github", "--output")


def plan(output: str, cwd: Path):
    return helpers.builders(*PLAN, output, cwd=cwd)


@pytest.mark.skipif(os.geteuid() != 0, reason="only root could replace /dev/null; as anyone else a rename fails anyway")
def test_a_character_device_is_written_into(tmp_path: Path) -> None:
    proc = plan("/dev/null", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode), "/dev/null must still be a character device"
    assert not list(Path("/dev").glob(".null.*partial"))


def test_a_fifo_is_written_into(tmp_path: Path) -> None:
    fifo = tmp_path / "jobs.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    proc = plan(str(fifo), tmp_path)
    reader.join(timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(got[0])["builds"] > 0 and stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_dev_stdout_is_written_into(tmp_path: Path) -> None:
    proc = plan("/dev/stdout", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["builds"] > 0


def test_a_symlink_out_of_the_output_is_refused(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "out").mkdir()
    victim = tmp_path / "elsewhere" / "precious.txt"
    victim.write_text("keep me")
    (tmp_path / "out" / "jobs.json").symlink_to(victim)
    proc = plan(str(tmp_path / "out" / "jobs.json"), tmp_path)
    assert proc.returncode == 19, (proc.returncode, proc.stderr)
    assert "outside" in proc.stderr and str(victim) in proc.stderr
    assert victim.read_text() == "keep me" and (tmp_path / "out" / "jobs.json").is_symlink()
    assert not list((tmp_path / "out").iterdir())[1:] and not list((tmp_path / "elsewhere").glob(".*"))


def test_a_symlink_inside_the_output_is_followed(tmp_path: Path) -> None:
    (tmp_path / "real.json").write_text("old")
    (tmp_path / "jobs.json").symlink_to("real.json")
    proc = plan(str(tmp_path / "jobs.json"), tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "jobs.json").is_symlink() and json.loads((tmp_path / "real.json").read_text())["builds"] > 0


def test_a_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "jobs.json").mkdir()
    proc = plan(str(tmp_path / "jobs.json"), tmp_path)
    assert proc.returncode == 19 and "is a folder" in proc.stderr, proc.stderr


def test_the_report_refuses_a_symlink_out_of_its_folder(tmp_path: Path) -> None:
    out, victim = tmp_path / "report", tmp_path / "precious.html"
    out.mkdir()
    victim.write_text("keep me")
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"schema": 1, "targets": []}))
    proc = helpers.builders("report", "--matrix", str(ROOT / "matrix.yaml"), "--results", str(results), "--output",
                            str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    written = sorted(p.name for p in out.iterdir())
    for p in out.iterdir():
        p.unlink()
    (out / written[0]).symlink_to(victim)
    proc = helpers.builders("report", "--matrix", str(ROOT / "matrix.yaml"), "--results", str(results), "--output",
                            str(out), cwd=tmp_path)
    assert proc.returncode == 19 and "outside" in proc.stderr, proc.stderr
    assert victim.read_text() == "keep me"
