"""The dummy engine of ``tests/dummy_engine.py`` (one module, registered on import, no edit anywhere else)
builds a real wheel of the demo: every stage runs through its own runner, which says each command in
the target's log, and the wheel is verified, smoke-tested and published as any engine's."""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from tests import dummy_engine, expected

pytestmark = pytest.mark.slow
ARCH = {"amd64": "x86_64", "arm64": "aarch64"}.get(platform.machine().lower(), platform.machine().lower())


def test_the_dummy_engine_builds_the_demo_through_its_runner(root: Path, data, tmp_path: Path) -> None:
    tid = f"cpu-cp312-linux-{ARCH}"
    if tid not in expected.live_ids(data):
        pytest.skip(f"the matrix has no {tid}")
    run = ("import sys, tests.dummy_engine; from builders.cli import main; "
           f"sys.exit(main(['build', '--engine', {dummy_engine.NAME!r}, '--target', {tid!r}, '--jobs', '1', "
           f"'--output', {str(tmp_path)!r}]))")
    proc = subprocess.run([sys.executable, "-c", run], cwd=root, text=True, capture_output=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-5000:]
    (result,) = json.loads((tmp_path / "results.json").read_text())["targets"]
    assert (result["id"], result["status"], result["engine"]) == (tid, "built", dummy_engine.NAME)
    assert (tmp_path / result["wheel"]).is_file() and result["smoke"]
    log = (tmp_path / result["log"]).read_text()
    said = [line.removeprefix(dummy_engine.SAID) for line in log.splitlines() if line.startswith(dummy_engine.SAID)]
    assert said[0] == f"provision {tid}"
    assert any(" -m auditwheel " in f" {line} " for line in said)  # repair, where the build ran
    assert any(line.startswith("copy ") and line.endswith(".whl") for line in said)  # the smoke's wheel copied in
