"""validate runs a candidate's import-time code with an allowlisted environment, and nothing it starts outlives it.

The candidate is a wheel made here (tests/hostile/make_wheels.py's way) whose package, on import, writes the
names of its environment to a file and starts a child that forks again, calls ``setsid``, drops every variable
(builders' marker included), closes its output as a daemon does, then sleeps for ten minutes under a name the
test looks for in /proc. It is installed from a loopback index as a user would install it, by ``python -m
builders validate`` given a caller's environment full of credentials. The names it saw are only allowlisted
ones; when validate has ended, no process of the candidate is left (or the record says the host gave no PID
namespace, and why).
"""

from __future__ import annotations

import http.server
import json
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

import pytest

from builders.base import sandbox
from builders.base.process import MARKER
from builders.channels import validate
from builders.families import loader as matrix
from builders.index.staging import serving_folder
from builders.matrix.model import Matrix
from builders.matrix.targets import Target, expand
from builders.pipeline.host import detect
from tests.hostile.make_wheels import raw_zip, wheel_entries

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
MATRIX = ROOT / "matrix.yaml"
CREDENTIALS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "TWINE_PASSWORD", "SCCACHE_DIST_TOKEN",
               "ACTIONS_ID_TOKEN_REQUEST_TOKEN", "SOME_TOOL_WE_NEVER_HEARD_OF")

HOSTILE = '''
import json, os, sys
with open(os.path.join({out!r}, "env-%d.json" % os.getpid()), "w") as fh:
    json.dump(sorted(os.environ), fh)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)  # as a daemon does: nothing waits for its output to end
        os.execve(sys.executable, [sys.executable, "-c", "import time; time.sleep(600)", {token!r}], {{}})
    os._exit(0)
'''


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        """pytest shows validate's output, not the server's."""


def runnable(m: Matrix) -> Target:
    host = detect(m.pythons, dict(os.environ), engines=False)
    targets, _ = expand(m)
    found = [t for t in targets if t.variant.label == "cpu"
             and validate.not_runnable(t, host, os.environ, require_device=False) is None]
    if not found:
        pytest.skip("no cpu target runs on this host")
    return found[0]


def candidate(t: Target, out: Path, token: str) -> tuple[str, bytes]:
    """The hostile wheel of ``t``: its package's ``__init__`` is :data:`HOSTILE`; no requirements."""
    dist = t.project.canonical_name.replace("-", "_")
    package = t.project.extension_modules[0].split(".")[0]
    info = f"{dist}-{t.version}.dist-info"
    members = {
        f"{package}/__init__.py": HOSTILE.format(out=str(out), token=token).encode(),
        f"{info}/METADATA": f"Metadata-Version: 2.4\nName: {t.project.name}\nVersion: {t.version}\n".encode(),
        f"{info}/WHEEL": f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: {t.tag}\n".encode(),
    }
    return f"{dist}-{t.version}-{t.tag}.whl", raw_zip(wheel_entries(members, info))


def alive(token: str) -> list[int]:
    """Processes whose command line holds ``token``."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if token.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(int(pid))
        except OSError:
            pass
    return found


def test_candidate_code_sees_only_allowlisted_names_and_leaves_nothing_running(tmp_path: Path) -> None:
    m = matrix.load(MATRIX, builds=False).on_channel("test")
    t = runnable(m)
    out, token = tmp_path / "seen", f"hostile-{secrets.token_hex(8)}"
    out.mkdir()
    name, data = candidate(t, out, token)
    project = tmp_path / "site" / "simple" / t.project.canonical_name
    project.mkdir(parents=True)
    (project / name).write_bytes(data)
    env = {**os.environ, "PYTHONPATH": str(ROOT), **{k: f"planted-{k.lower()}-{secrets.token_hex(4)}" for k in CREDENTIALS}}
    record = tmp_path / "validation.json"
    with serving_folder(tmp_path / "site", Quiet) as url:
        done = subprocess.run([sys.executable, "-m", "builders", "validate", "--matrix", str(MATRIX), "--channel",
                               "test", "--index-url", f"{url}simple/", "--target", t.id, "--installer", "pip",
                               "--record", str(record)], env=env, capture_output=True, text=True, timeout=600)
    time.sleep(1.0)  # a namespace's last processes are reaped by the kernel as its first one ends
    left = alive(token)
    for pid in left:  # never leave them to the next test, whatever the verdict
        os.kill(pid, 9)
    seen = [json.loads(p.read_text()) for p in out.glob("env-*.json")]
    assert seen, f"the candidate's code never ran:\n{done.stdout}\n{done.stderr}"
    names = {n for listing in seen for n in listing}
    assert {n for n in names if n != MARKER and not sandbox.allowed(n)} == set(), names
    assert not names & set(CREDENTIALS)
    target = json.loads(record.read_text())["targets"][0]
    if target["isolation"]["pid_namespace"]:
        assert left == [], f"the candidate's grandchild outlived validate: {left}"
    else:
        assert target["isolation"]["why"] and "no PID namespace" in done.stdout + done.stderr
