"""Hostile output paths (issue 29): no command replaces what is not a file. ``plan --output``
onto a character device (``/dev/null``, still a character device afterwards), a FIFO (read from a
thread), ``/dev/stdout``, a symlink into a place outside the output (refused, the place untouched),
a symlink inside it (followed, the link kept) and a folder (refused). The report's folder and the
index's files go through the same writer (builders.base.safe_output).
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import subprocess
import threading
import time
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


# --- issue 44: every writer against every hostile target ----------------------------------------------------------
#
# Each writer is a command and the file it writes; each hostile target is made at that file. Every pair must end
# with exit 19 (PathError) naming the output, leave the hostile thing as it was and what lies outside untouched,
# and return well inside the timeout (a FIFO nobody reads is refused, never waited on).

HOSTILE = ("symlink-out", "fifo", "character-device", "folder", "full-filesystem", "read-only-filesystem")
OWN_CHECK = {("index --output", "symlink-out"): 16}  # the index's own link check (IndexBuildError) refuses it first
TIMEOUT = 120  # a hang bound, generous on a loaded machine: the refusals take about a second


def _filler(tmp: Path) -> dict[str, tuple[str, ...]]:
    """What each command that writes an ``output_file`` option needs besides it (inputs that exist)."""
    house, empty = tmp / "house", tmp / "empty.json"
    house.mkdir(exist_ok=True)
    empty.write_text("{}")
    return {"publish": (str(house), "--channel", "nightly", "--bucket", "s3://bucket"),
            "validate": (),
            "manifest": (str(house),),
            "promote-release": ("--bucket", "s3://bucket", "--validation", str(empty), "--manifest", str(empty)),
            "check-index": ("--channel", "test", "--bucket", "s3://bucket")}


def _file_options() -> list[tuple[str, str]]:
    """Every (command, flag) the options table declares as a file to write."""
    from builders.cli import options, paths

    return [(c, o.flags[0]) for o in options.OPTIONS if o.parse is paths.output_file for c in o.commands]


def _wheelhouse(tmp: Path) -> Path:
    from tests.hostile import make_wheels

    make_wheels.good(tmp / "wheels")
    return tmp / "wheels" / "house"


def _writer_argv(writer: str, tmp: Path, out: Path) -> tuple[list[str], Path]:
    """``writer``'s command line writing under ``out``, and the file it writes there."""
    matrix = ("--matrix", str(ROOT / "matrix.yaml"))
    if writer == "plan --output":
        return [*PLAN, str(out / "jobs.json")], out / "jobs.json"
    if writer == "index --output":
        return ["index", str(_wheelhouse(tmp)), "--output", str(out), "--no-mirror", *matrix], \
            out / "whl" / "cu132" / "index.html"
    if writer == "build results.json":
        return ["build", *matrix, "--target", "cpu-cp314t-linux-x86_64", "--allow-skip", "--output", str(out)], \
            out / "results.json"
    if writer == "report --output":
        results = tmp / "results.json"
        results.write_text(json.dumps({"schema": 1, "targets": []}))
        return ["report", *matrix, "--results", str(results), "--output", str(out)], out / "compatibility.md"
    command, flag = writer.split(" ")
    return [command, *matrix, *_filler(tmp)[command], flag, str(out / "record.json")], out / "record.json"


WRITERS = ("plan --output", "index --output", "build results.json", "report --output",
           *(f"{c} {f}" for c, f in _file_options()))


@pytest.fixture
def tiny_tmpfs(tmp_path: Path):
    """A 64 KiB tmpfs mounted under ``tmp_path`` (skipped where mounting is not permitted); unmounted after."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


def _make_hostile(kind: str, target: Path, victim: Path, mnt: Path | None) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    if kind == "symlink-out":
        target.symlink_to(victim)
    elif kind == "fifo":
        os.mkfifo(target)
    elif kind == "character-device":
        os.mknod(target, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # /dev/null's numbers, in a test folder
    elif kind == "folder":
        target.mkdir()
    elif kind == "full-filesystem":
        assert mnt is not None
        with contextlib.suppress(OSError), (mnt / "filler").open("wb") as fh:
            while True:
                fh.write(b"x" * 4096)
                fh.flush()
    else:
        assert mnt is not None
        subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)


def _kind_of(path: Path) -> str:
    mode = os.lstat(path).st_mode if os.path.lexists(path) else 0
    return stat.filemode(mode)[0] if mode else "absent"


@pytest.mark.skipif(os.geteuid() != 0, reason="mknod and mount need root (this project's hosts run as root)")
@pytest.mark.parametrize("kind", HOSTILE)
@pytest.mark.parametrize("writer", WRITERS)
def test_every_writer_refuses_every_hostile_target(writer: str, kind: str, tmp_path: Path, request) -> None:
    mnt = request.getfixturevalue("tiny_tmpfs") if kind.endswith("filesystem") else None
    out = (mnt if mnt is not None else tmp_path) / "out"
    argv, target = _writer_argv(writer, tmp_path, out)
    victim = tmp_path / "precious.txt"
    victim.write_text("keep me")
    _make_hostile(kind, target, victim, mnt)
    before = _kind_of(target)
    start = time.monotonic()
    proc = helpers.builders(*argv, cwd=tmp_path, timeout=TIMEOUT)
    assert proc.returncode == OWN_CHECK.get((writer, kind), 19), (proc.returncode, proc.stderr[-2000:])
    assert str(out) in proc.stderr and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert victim.read_text() == "keep me" and _kind_of(target) == before, (before, _kind_of(target))
    assert time.monotonic() - start < TIMEOUT


@pytest.mark.parametrize("kind", ("symlink-out", "fifo", "folder"))
def test_the_job_summary_is_never_followed_out_replaced_or_waited_on(kind: str, tmp_path: Path) -> None:
    """A job summary that cannot be written is a warning naming it (a summary never fails a release)."""
    summary, victim = tmp_path / "summary" / "step.md", tmp_path / "precious.txt"
    victim.write_text("keep me")
    _make_hostile(kind, summary, victim, None)
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"schema": 1, "targets": []}))
    env = {**os.environ, "GITHUB_STEP_SUMMARY": str(summary)}
    proc = helpers.builders("report", "--matrix", str(ROOT / "matrix.yaml"), "--results", str(results), "--output",
                            str(tmp_path / "report"), cwd=tmp_path, env=env, timeout=TIMEOUT)
    assert proc.returncode == 0 and f"cannot write the job summary: {summary}" in proc.stderr, proc.stderr[-2000:]
    assert victim.read_text() == "keep me" and _kind_of(summary) == {"symlink-out": "l", "fifo": "p"}.get(kind, "d")
