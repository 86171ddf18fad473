"""A package index that stops answering: the targets that need it fail, naming it, within the stage's time.

A local HTTP server (a thread of this test) either never answers or answers every request with
500. It is the index of two things in a copy of the matrix with small time limits
(``project.timeouts``: provision and install 25 s): the cu132 toolkit's ``index_url``, which
provision installs the pinned toolkit from, and the cpu variant's ``toolkit.index_url``, where a
runtime requirement of cp312 wheels only (``python_version == "3.12"``) lives, which the smoke test
installs. cu132-cp312 must fail at provision, cpu-cp312 at smoke, each with an error that names the
index's URL, and cpu-cp313, which needs the index for nothing, must be built.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.helpers import builders

pytestmark = pytest.mark.slow

LIMIT = 25  # seconds: project.timeouts.provision and .install in the copy
TOOLKIT_PIN = '          requirements: ["cuda-toolkit[nvcc,cudart,cccl,crt,nvvm]==13.2.2"]'
CPU_VARIANT = "  cpu:\n    label: cpu\n"
PROVISION, SMOKE, UNTOUCHED = "cu132-cp312-linux-x86_64", "cpu-cp312-linux-x86_64", "cpu-cp313-linux-x86_64"


class BrokenIndex(ThreadingHTTPServer):
    """``mode`` ``hang``: every request waits until the server closes; ``500``: every request fails."""

    daemon_threads = True

    def __init__(self) -> None:
        self.mode, self.asked, self.closing = "hang", [], threading.Event()
        super().__init__(("127.0.0.1", 0), Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/simple"


class Handler(BaseHTTPRequestHandler):
    server: BrokenIndex

    def do_GET(self) -> None:
        self.server.asked.append(self.path)
        if self.server.mode == "500":
            self.send_error(500, "index broken on purpose")
            return
        self.server.closing.wait()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def index() -> Iterator[BrokenIndex]:
    server = BrokenIndex()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.closing.set()
    server.shutdown()
    server.server_close()


def project(root: Path, tmp: Path) -> Path:
    """The shipped matrix and demo source copied, with small time limits and the variables' indexes."""
    shutil.copytree(root / "examples/minifw", tmp / "src", ignore=shutil.ignore_patterns("build", "dist", "__pycache__"))
    text = (root / "matrix.yaml").read_text()
    assert TOOLKIT_PIN in text and CPU_VARIANT in text, "the shipped matrix changed: update this test's edits"
    text = text.replace("source: examples/minifw", "source: src").replace("script: examples/minifw/smoke.py",
                                                                          "script: src/smoke.py")
    text = text.replace("timeouts: {provision: 3600, build: 3600, repair: 1800, install: 1800}",
                        f"timeouts: {{provision: {LIMIT}, build: 3600, repair: 1800, install: {LIMIT}}}")
    text = text.replace(TOOLKIT_PIN, TOOLKIT_PIN + "\n          index_url: ${BROKEN_INDEX_URL}")
    text = text.replace(CPU_VARIANT, CPU_VARIANT + "    toolkit:\n      index_url: ${BROKEN_INDEX_URL}\n"
                        "    runtime_requirements: ['builders-index-probe==1.0; python_version == \"3.12\"']\n")
    (tmp / "matrix.yaml").write_text(text)
    return tmp / "matrix.yaml"


@pytest.fixture(scope="module")
def toolchains(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A toolchain cache of this module's own, so provision asks the broken index for the toolkit; both modes share
    it, and with it the compiler cache beside it (the second mode's core compile hits)."""
    return tmp_path_factory.mktemp("hanging-index") / "toolchains"


@pytest.mark.parametrize("mode", ["hang", "500"])
def test_a_broken_index_fails_only_the_targets_that_need_it(root: Path, tmp_path: Path, index: BrokenIndex,
                                                            toolchains: Path, mode: str) -> None:
    index.mode = mode
    matrix, out = project(root, tmp_path), tmp_path / "out"
    started = time.monotonic()
    proc = builders("build", "--matrix", str(matrix), "--output", str(out), "--cache", str(toolchains),
                    "--jobs", "2", *(a for t in (PROVISION, SMOKE, UNTOUCHED) for a in ("--target", t)), cwd=root,
                    env={**os.environ, "BROKEN_INDEX_URL": index.url}, timeout=900)
    seconds = time.monotonic() - started
    assert proc.returncode == 1, proc.stderr[-3000:]
    results = {r["id"]: r for r in json.loads((out / "results.json").read_text())["targets"]}
    provision, smoke = results[PROVISION], results[SMOKE]
    took = {tid: r["durations"].get(r["stage"], 0) for tid, r in results.items() if r["status"] == "failed"}
    print(f"\n{mode}: run {seconds:.0f} s\n  {PROVISION}: {provision['stage']} after {took.get(PROVISION, 0):.0f} s: "
          f"{provision['reason']}\n  {SMOKE}: {smoke['stage']} after {took.get(SMOKE, 0):.0f} s: {smoke['reason']}\n"
          f"  {UNTOUCHED}: {results[UNTOUCHED]['status']}")
    assert (provision["status"], provision["stage"]) == ("failed", "provision")
    assert (smoke["status"], smoke["stage"]) == ("failed", "smoke")
    assert index.url in provision["reason"] and index.url in smoke["reason"]
    if mode == "hang":
        assert "no answer within the stage's 25 s" in provision["reason"]
        assert "timed out after" in smoke["reason"]
    else:
        assert "timed out" not in provision["reason"] + smoke["reason"]
    assert took[PROVISION] < LIMIT + 10
    assert took[SMOKE] < 2 * LIMIT + 30  # uv, then venv + pip: each install bounded by the install limit
    assert results[UNTOUCHED]["status"] == "built"
    assert [p.name for p in out.glob("whl/*/*.whl")] == [Path(results[UNTOUCHED]["wheel"]).name]
    assert any("cuda-toolkit" in p for p in index.asked) and any("builders-index-probe" in p for p in index.asked)
