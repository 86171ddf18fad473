"""Two runs, one output folder: the second waits for the first (or, with ``--no-wait``, stops at once
with exit 26 naming the holder), and together they leave every record and every stored wheel intact.

Real builds with the local engine: the demo's cpu variant for two of this host's Pythons, the
lightest core (``MINIFW_CORE_WEIGHT=1``), no smoke (its venvs prove nothing here), a copy of the
source and a compiler cache of this test's own. Before the output lock, two such runs failed in
CMake configure and in a shared core build folder, and ``results.json`` kept one run's targets.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from builders.families import loader as matrix_mod
from tests import helpers

pytestmark = pytest.mark.slow

LOCK = ".builders.lock"  # written out here, not imported: the file name is part of the contract


@pytest.fixture(scope="module")
def setup(root: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    m = matrix_mod.load(root / "matrix.yaml")
    tmp = tmp_path_factory.mktemp("concurrent")
    source = tmp / "src"
    shutil.copytree(m.project.source, source, ignore=shutil.ignore_patterns("build", "_skbuild", "*.egg-info"))
    env = {**os.environ, "MINIFW_CORE_WEIGHT": "1", "CCACHE_DIR": str(tmp / "ccache")}
    probe = subprocess.run([sys.executable, "-m", "builders", "build", "--dry-run", "--json", "--source", str(source),
                            "--output", str(tmp / "probe"), "--select", "cpu-*-linux-x86_64", "--allow-skip"],
                           cwd=root, env=env, capture_output=True, text=True, timeout=600)
    assert probe.returncode == 0, probe.stderr[-3000:]
    ids = sorted(p["id"] for p in json.loads(probe.stdout)["plans"])[:2]
    if len(ids) < 2:
        pytest.skip(f"this host builds fewer than two Pythons of the cpu variant: {ids}")
    return {"root": root, "source": source, "env": env, "ids": ids, "tmp": tmp}


def start(setup: dict, out: Path, *args: str) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "builders", "build", "--no-smoke", "--jobs", "1", "--source", str(setup["source"]),
            "--output", str(out), *args]
    return subprocess.Popen(argv, cwd=setup["root"], env=setup["env"], text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)


def targets(*ids: str) -> list[str]:
    return [a for tid in ids for a in ("--target", tid)]


def finish(proc: subprocess.Popen[str], timeout: float = 1800) -> tuple[int, str]:
    out, _ = proc.communicate(timeout=timeout)
    return proc.returncode, out


def results_of(out: Path) -> dict[str, dict]:
    return {r["id"]: r for r in json.loads((out / "results.json").read_text())["targets"]}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def check_intact(out: Path, ids: list[str]) -> dict[str, dict]:
    """Every target's record says built, and its published and stored wheels are the bytes it records."""
    records = results_of(out)
    assert sorted(records) == sorted(ids)
    for tid in ids:
        r = records[tid]
        assert r["status"] == "built", r
        assert sha256(out / r["wheel"]) == r["sha256"]
        stored = json.loads((out / ".store" / r["digest"] / "record.json").read_text())
        assert stored["sha256"] == r["sha256"] and sha256(out / ".store" / r["digest"] / stored["wheel"]) == r["sha256"]
    assert not [p for p in (out / ".store").iterdir() if p.name.startswith(".")]  # no half-stored entry
    assert not list(out.glob(".work/*")) and not list(out.rglob("*.partial"))
    assert (out / LOCK).read_text() == ""  # no holder left
    return records


def test_two_runs_into_one_output_both_succeed_and_keep_every_record(setup: dict) -> None:
    """Started together: one holds the output, the other says whose run it waits for, then builds."""
    one, both = setup["ids"][1:], setup["ids"]
    out = setup["tmp"] / "together"
    first, second = start(setup, out, "--force", *targets(*one)), start(setup, out, "--force", *targets(*both))
    (code_a, said_a), (code_b, said_b) = finish(first), finish(second)
    assert code_a == 0, said_a[-4000:]
    assert code_b == 0, said_b[-4000:]
    waited = [(said, other) for said, other in ((said_a, second), (said_b, first)) if "is in use by pid" in said]
    assert len(waited) == 1, (said_a[-2000:], said_b[-2000:])
    ((said, holder),) = waited
    assert f"is in use by pid {holder.pid} (" in said and "waiting for it to finish" in said
    check_intact(out, both)


def test_no_wait_stops_at_once_naming_the_holder_and_the_holder_s_run_is_untouched(setup: dict) -> None:
    out = setup["tmp"] / "no-wait"
    holder = start(setup, out, "--force", *targets(setup["ids"][0]))
    try:
        record = wait_for_holder(out / LOCK, holder)
        assert record["pid"] == holder.pid and "--no-smoke" in record["command"]
        start_time = time.monotonic()
        refused = subprocess.run([sys.executable, "-m", "builders", "build", "--no-wait", "--no-smoke", "--source",
                                  str(setup["source"]), "--output", str(out), *targets(setup["ids"][1])],
                                 cwd=setup["root"], env=setup["env"], capture_output=True, text=True, timeout=600)
        assert refused.returncode == 26, refused.stdout[-2000:] + refused.stderr[-2000:]
        assert f"FolderBusy: {out.resolve()} is in use by pid {holder.pid} (" in refused.stderr
        assert time.monotonic() - start_time < 120  # no build waited for (planning only)
    finally:
        code, said = finish(holder)
    assert code == 0, said[-4000:]
    check_intact(out, setup["ids"][:1])


def test_a_killed_holder_s_lock_is_released_and_the_next_run_completes(setup: dict) -> None:
    """SIGKILL to the whole run (it and every command it started) mid-build: no unlock ran, the kernel dropped
    the lock."""
    out = setup["tmp"] / "killed"
    victim = start(setup, out, "--force", *targets(setup["ids"][0]))
    wait_for_holder(out / LOCK, victim)
    time.sleep(3)  # into its build
    kill_tree(victim.pid)
    victim.communicate(timeout=60)
    assert json.loads((out / LOCK).read_text())["pid"] == victim.pid  # its record is still there, stale
    rerun = start(setup, out, "--no-wait", *targets(*setup["ids"]))
    code, said = finish(rerun)
    assert code == 0, said[-4000:]
    check_intact(out, setup["ids"])


def wait_for_holder(lock: Path, proc: subprocess.Popen[str], timeout: float = 300) -> dict:
    """The holder's record once ``proc`` has taken the lock and written it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the run ended before it took the lock"
        try:
            record = json.loads(lock.read_text())
        except (OSError, ValueError):
            record = {}
        if record.get("pid") == proc.pid:
            return record
        time.sleep(0.2)
    raise AssertionError(f"{lock}: no holder record from pid {proc.pid} after {timeout}s")


def kill_tree(pid: int) -> None:
    """SIGKILL ``pid`` and all its descendants (each command runs in a session of its own, so no process group
    holds them all): every one stopped first, so none is orphaned out of reach, then killed."""
    stopped: set[int] = set()
    while True:
        tree = {pid} | helpers.descendants(pid)
        new = tree - stopped
        if not new:
            break
        for p in new:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p, signal.SIGSTOP)
        stopped |= new
    for p in stopped:
        with contextlib.suppress(ProcessLookupError):
            os.kill(p, signal.SIGKILL)


