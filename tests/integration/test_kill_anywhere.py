"""Faults survived, measured: a real build SIGKILLed (its whole process group) at many points, then rerun.

Each kill point waits until the build's console or its target's log shows a stage (provision,
check, core, build, label, repair, verify, smoke, store, the results), then kills the
process group of ``python -m builders build`` with SIGKILL: no handler runs. Right after the
kill: ``results.json`` parses, every wheel in the wheel folders is whole, no command of the
killed run is still running. The rerun (no ``--force``) must then complete, and leave a store
with no partial entry (every ``.store/<digest>/`` has its wheel and record, no temporary
folder), a valid and complete ``results.json`` whose sha256 is the published file's, and
nothing half-written (no ``.partial``) in the wheel folders. The target's wheel is taken out of
the store before each killed run, so it builds every stage after the core, and the rerun builds
unless the killed run published; the killed runs up to the core's points use ``--force``, so the
core is built (and killed) too, while the later ones reuse the stored core, as a rerun would. The
compiler cache is shared; one output folder serves every point.

Publishing takes milliseconds, too short to hit from outside: three more points kill a process
exactly inside it (the store's copy, before the store's rename, before the wheel folder's
rename), with the functions it calls replaced by a SIGKILL of itself, before the rerun.

The test prints one line per kill point: where it landed and what the rerun found.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import helpers

pytestmark = pytest.mark.slow

TARGET = "cpu-cp312-linux-x86_64"


@dataclass(frozen=True)
class Point:
    stage: str  # where the kill should land
    where: str  # "console" or "log"
    pattern: str  # a line matching this ...
    delay: float = 0.0  # ... then this many seconds, then SIGKILL


POINTS = (
    Point("provision", "log", r"^# plan "),
    Point("check", "log", r"^# check:"),
    Point("core (configure)", "log", r"^# core .*: building", 0.3),
    Point("core (compile)", "log", r"^\[2/\d+\] Building"),
    Point("core (install)", "log", r"cmake --install"),
    Point("build (pip wheel)", "log", r"-m pip wheel", 1.5),
    Point("build (late)", "log", r"-m pip wheel", 5.0),
    Point("label", "console", rf"{TARGET} build \d+s"),
    Point("repair", "log", r"auditwheel repair", 0.2),
    Point("verify", "console", rf"{TARGET} repair \d+s"),
    Point("smoke (venv)", "log", r"uv venv"),
    Point("smoke (install)", "log", r"uv pip install", 0.1),
    Point("smoke (probe)", "log", r"smoke_probe\.py"),
    Point("store", "console", rf"{TARGET} smoke \d+s"),
    Point("results", "console", rf"{TARGET} store \d+s"),
    Point("after the last target", "console", rf"{TARGET} built"),
)


CORE_AND_BEFORE = ("provision", "check", "core")  # the points whose killed run must build the core


class Build:
    """``python -m builders build`` in its own process group, its console lines collected as they come."""

    def __init__(self, root: Path, out: Path, *extra: str) -> None:
        argv = [sys.executable, "-m", "builders", "build", "--target", TARGET, "--output", str(out), "--jobs", "1",
                *extra]
        self.proc = subprocess.Popen(argv, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     start_new_session=True)
        self.lines: list[str] = []
        self.log = out / "logs" / f"{TARGET}.log"
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def seen(self, point: Point) -> bool:
        if point.where == "console":
            return any(re.search(point.pattern, line) for line in list(self.lines))
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return False
        return re.search(point.pattern, text, re.MULTILINE) is not None

    def last_stage(self) -> str:
        """The last stage the console reported as finished (``started`` if none)."""
        done = [m.group(1) for line in self.lines if (m := re.search(rf"{TARGET} (\w+) \d+s", line))]
        return done[-1] if done else "started"

    def finish(self, timeout: float = 300) -> int:
        code = self.proc.wait(timeout)
        self.reader.join(5)
        return code


def alive(pids: set[int]) -> set[int]:
    out = set()
    for pid in pids:
        try:
            state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            out.add(pid)
    return out


def kill_group(build: Build, point: Point) -> tuple[str, set[int]]:
    """Wait for ``point``, SIGKILL the build's process group; where it landed and the commands that survived."""
    deadline = time.monotonic() + 240
    while not build.seen(point):
        if build.proc.poll() is not None:
            return "finished before the kill", set()
        assert time.monotonic() < deadline, f"{point} never came:\n" + "\n".join(build.lines[-20:])
        time.sleep(0.01)
    time.sleep(point.delay)
    below = helpers.descendants(build.proc.pid)
    landed = f"after {build.last_stage()}"
    os.killpg(build.proc.pid, signal.SIGKILL)
    build.finish(30)
    time.sleep(0.5)
    return landed, alive(below)


def whole_wheels(out: Path, *, temporary_ok: bool = False) -> list[str]:
    """Problems with the wheel folders: a wheel that is not a whole zip, or (unless ``temporary_ok``: right
    after a kill, a hidden temporary file is what an unfinished write leaves) a temporary file left there."""
    problems = []
    for path in sorted((out / "whl").rglob("*")) if (out / "whl").exists() else []:
        if path.is_dir():
            continue
        if path.name.startswith(".") or not path.name.endswith(".whl"):
            if not (temporary_ok and path.name.startswith(".")):
                problems.append(f"leftover {path.relative_to(out)}")
            continue
        try:
            with zipfile.ZipFile(path) as zf:
                if zf.testzip() is not None:
                    problems.append(f"corrupt {path.name}")
        except zipfile.BadZipFile:
            problems.append(f"not a zip: {path.name}")
    return problems


def store_problems(out: Path) -> list[str]:
    """A store entry without its wheel and record (of the right size), or a temporary folder."""
    problems = []
    store = out / ".store"
    for entry in sorted(store.iterdir()) if store.exists() else []:
        if entry.name == "core":
            problems += [f"leftover .store/core/{c.name}" for c in entry.iterdir() if c.name.startswith(".")]
            continue
        if entry.name.startswith("."):
            problems.append(f"leftover .store/{entry.name}")
            continue
        try:
            record = json.loads((entry / "record.json").read_text())
            if (entry / record["wheel"]).stat().st_size != record["size"]:
                problems.append(f"{entry.name[:12]}: wheel size differs from its record")
        except (OSError, ValueError, KeyError) as exc:
            problems.append(f"{entry.name[:12]}: partial entry ({exc})")
    return problems


def results_problems(out: Path, *, complete: bool) -> list[str]:
    """``results.json`` unreadable, or (``complete``) without the target, or naming a wheel it does not match."""
    path = out / "results.json"
    if not path.exists():
        return ["no results.json"] if complete else []
    try:
        targets = {r["id"]: r for r in json.loads(path.read_text())["targets"]}
    except (ValueError, KeyError, TypeError) as exc:
        return [f"results.json unreadable: {exc}"]
    if not complete:
        return []
    record = targets.get(TARGET)
    if record is None or record["status"] not in ("built", "reused"):
        return [f"results.json: {TARGET} is {record and record['status']}"]
    wheel = out / record["wheel"]
    if not wheel.is_file() or hashlib.sha256(wheel.read_bytes()).hexdigest() != record["sha256"]:
        return [f"results.json: {record['wheel']} is not the recorded file"]
    return []


# Killed exactly inside publishing: the store's write or the wheel folder's placing, in a process that
# SIGKILLs itself where the named function is called (argv: what, output folder, digest, wheel, log, where the
# wheel is published).
INSIDE_PUBLISH = """
import os, shutil, signal, sys
from pathlib import Path
from builders.pipeline.store import Store, place
what, out, digest, wheel, log, dest = sys.argv[1:]
die = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)
if what == "place":
    os.replace = die
    place(Path(wheel), Path(out) / dest)
else:
    setattr(os if what == "replace" else shutil, what, die)
    Store(Path(out) / ".store").put(digest, Path(wheel), {"id": "killed"}, log=Path(log))
"""
EXACT = (("store (store: copying)", "copyfile"), ("store (store: before its rename)", "replace"),
         ("store (wheel folder: before its rename)", "place"))


def kill_inside_publish(root: Path, out: Path, what: str) -> tuple[str, set[int]]:
    """The target's stored wheel written again by a process killed inside publishing (``what``)."""
    record = {r["id"]: r for r in json.loads((out / "results.json").read_text())["targets"]}[TARGET]
    wheel = out / ".work" / "killed.whl"
    wheel.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(out / record["wheel"], wheel)
    if what != "place":
        shutil.rmtree(out / ".store" / record["digest"])
    else:
        (out / record["wheel"]).unlink()
    proc = subprocess.run([sys.executable, "-c", INSIDE_PUBLISH, what, str(out), record["digest"], str(wheel),
                           str(out / record["log"]), record["wheel"]], cwd=root, capture_output=True, text=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    return f"inside {what}", set()


def rerun(root: Path, out: Path) -> tuple[str, list[str], str]:
    """The rerun after a kill: its status for the target, what is wrong with the output after it, its console."""
    build = Build(root, out)
    code = build.finish()
    status = next((m.group(1) for line in build.lines if (m := re.search(rf"{TARGET} (built|reused) ", line))),
                  "no result")
    problems = ([f"rerun exit {code}"] if code else []) + store_problems(out) + whole_wheels(out)
    return status, problems + results_problems(out, complete=True), "\n".join(build.lines[-15:])


def test_a_build_killed_anywhere_reruns_to_a_whole_output(root: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    findings, started = [], time.monotonic()
    for point in POINTS:
        # The rerun must build unless the killed run published: take the wheel out of the store first
        # (the core stays: the core's points rebuild it with --force, and a rerun may reuse it).
        for entry in (out / ".store").glob("[0-9a-f]*"):
            shutil.rmtree(entry)
        (out / "logs" / f"{TARGET}.log").unlink(missing_ok=True)  # the log's triggers are this run's
        killed = Build(root, out, *(["--force"] if point.stage.startswith(CORE_AND_BEFORE) else []))
        landed, survivors = kill_group(killed, point)
        after_kill = whole_wheels(out, temporary_ok=True) + results_problems(out, complete=False)
        after_kill += [f"{len(survivors)} command(s) of the killed run still running"] if survivors else []
        for pid in survivors:  # never let them disturb the next point
            os.kill(pid, signal.SIGKILL)
        findings.append((point, landed, after_kill, *rerun(root, out)))
    for stage, what in EXACT:
        landed, _ = kill_inside_publish(root, out, what)
        after_kill = whole_wheels(out, temporary_ok=True) + results_problems(out, complete=False)
        findings.append((Point(stage, "exact", what), landed, after_kill, *rerun(root, out)))
    seconds = time.monotonic() - started
    print(f"\n{len(findings)} kill points in {seconds:.0f} s:")
    for point, landed, after_kill, status, problems, _ in findings:
        print(f"  {point.stage:<22} killed {landed:<18} right after: {'; '.join(after_kill) or 'clean'}; "
              f"rerun: {status}, {'; '.join(problems) or 'whole'}")
    assert not [f for f in findings if f[2] or f[4]], "\n".join(f"{f[0].stage}: {f[2] + f[4]}\n{f[5]}"
                                                        for f in findings if f[2] or f[4])
    assert sum(f[1] != "finished before the kill" for f in findings) >= len(findings) - 1
