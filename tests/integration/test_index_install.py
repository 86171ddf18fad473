"""Real wheels through ``index`` and ``promote``: pip installs from the static index.

Marked slow: builds the cpu and cu132 cp312 wheels of the demo framework and creates a
venv with pyenv's CPython 3.12. pip talks only to the index written here (a ``file://``
URL, then a loopback HTTP server started by the test).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from builders.wheels import Wheel

pytestmark = pytest.mark.slow

CPU = "cpu-cp312-linux-x86_64"
CU132 = "cu132-cp312-linux-x86_64"


def builders(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "builders", *args], cwd=cwd, text=True, capture_output=True,
                          timeout=1800)


def python312() -> Path:
    found = sorted(Path.home().glob(".pyenv/versions/3.12.*/bin/python3.12"))
    if not found:
        pytest.skip("needs pyenv's CPython 3.12")
    return found[-1]


@pytest.fixture(scope="module")
def wheelhouse(root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    python312()
    out = tmp_path_factory.mktemp("wheelhouse")
    proc = builders("build", "--target", CPU, "--target", CU132, "--output", str(out), cwd=root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


@pytest.fixture(scope="module")
def index(root: Path, wheelhouse: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("index")
    proc = builders("index", str(wheelhouse), "--output", str(out), cwd=root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


@pytest.fixture
def venv(tmp_path: Path) -> Path:
    env = tmp_path / "venv"
    subprocess.run([str(python312()), "-m", "venv", str(env)], check=True, timeout=300)
    return env / "bin" / "python"


@pytest.fixture(scope="module")
def server(index: Path) -> Iterator[str]:
    handler = partial(SimpleHTTPRequestHandler, directory=str(index))
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


def pip_install(python: Path, index_url: str, cwd: Path) -> None:
    env = {**os.environ, "PIP_CONFIG_FILE": os.devnull, "PIP_NO_INPUT": "1"}
    for key in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS"):
        env.pop(key, None)
    proc = subprocess.run([str(python), "-m", "pip", "install", "--disable-pip-version-check", "--no-cache-dir",
                           "--index-url", index_url, "--no-deps", "minifw==2.15.0+cpu"],
                          cwd=cwd, env=env, text=True, capture_output=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def check_import(python: Path, cwd: Path) -> None:
    proc = subprocess.run([str(python), "-c", "import minifw, minifw._C; print(minifw.__file__)"],
                          cwd=cwd, text=True, capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "site-packages" in proc.stdout


def test_index_has_both_labels(index: Path) -> None:
    for label in ("cpu", "cu132"):
        folder = index / "whl" / label / "minifw"
        wheels = list(folder.glob("*.whl"))
        assert len(wheels) == 1 and Wheel(wheels[0]).version.local == label
        assert (folder / f"{wheels[0].name}.metadata").is_file()
        assert (folder / "index.json").is_file()


def test_pip_installs_from_a_file_url(index: Path, venv: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    pip_install(venv, (index / "whl" / "cpu").as_uri() + "/", empty)
    check_import(venv, empty)


def test_pip_installs_over_http(server: str, venv: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    pip_install(venv, f"{server}/whl/cpu/", empty)
    check_import(venv, empty)


def test_promote_and_verify_for_pypi(root: Path, wheelhouse: Path, tmp_path: Path) -> None:
    (labelled,) = (wheelhouse / "whl" / "cu132").glob("*.whl")
    out = tmp_path / "pypi"
    proc = builders("promote", str(labelled), "--output", str(out), cwd=root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (promoted,) = out.glob("*.whl")
    assert promoted.name == "minifw-2.15.0-cp312-cp312-manylinux_2_28_x86_64.whl"
    proc = builders("verify", str(promoted), "--target", CU132, "--channel", "pypi", cwd=root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # the labelled channel's expectations do not hold for the PyPI wheel
    assert builders("verify", str(promoted), "--target", CU132, "--channel", "index", cwd=root).returncode == 7

    (cpu,) = (wheelhouse / "whl" / "cpu").glob("*.whl")
    proc = builders("promote", str(cpu), "--output", str(out), cwd=root)
    assert proc.returncode == 15 and "not the PyPI default" in proc.stderr


def test_promote_a_wheelhouse_takes_only_the_defaults(root: Path, wheelhouse: Path, tmp_path: Path) -> None:
    """What the publish job runs: every PyPI-default wheel of the downloaded artifacts."""
    out = tmp_path / "dist"
    proc = builders("promote", str(wheelhouse), "--output", str(out), cwd=root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [p.name for p in out.glob("*.whl")] == ["minifw-2.15.0-cp312-cp312-manylinux_2_28_x86_64.whl"]
