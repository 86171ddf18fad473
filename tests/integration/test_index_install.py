"""Real wheels through ``index`` and ``promote``: pip installs from the static index.

Marked slow: builds the cpu and cu132 cp312 wheels of the demo framework and creates a
venv with pyenv's CPython 3.12. ``index`` mirrors each label's runtime requirements from
pip's configured package index; the installs then run pip with no configuration at all and
``--index-url`` alone, so pip talks only to the index written here (a ``file://`` URL, then
a loopback HTTP server started by the test), with no ``--no-deps``.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler
from pathlib import Path

import pytest

from builders.index.staging import serving_folder
from builders.wheel.archive import Wheel
from tests import helpers

pytestmark = pytest.mark.slow

CPU = "cpu-cp312-linux-x86_64"
CU132 = "cu132-cp312-linux-x86_64"


def builders(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return helpers.builders(*args, cwd=cwd, timeout=1800)


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
    with serving_folder(index, SimpleHTTPRequestHandler) as url:
        yield url.rstrip("/")


def pip_env() -> dict[str, str]:
    """pip with no configuration at all: no config file, no PIP_* variable (this host's pip.conf
    adds extra indexes and find-links), so the index under test is the only source."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    return {**env, "PIP_CONFIG_FILE": os.devnull, "PIP_NO_INPUT": "1"}


def pip_install(python: Path, index_url: str, cwd: Path, spec: str = "minifw==2.15.0+cpu") -> str:
    """``pip install --index-url URL SPEC`` and nothing else: the index must hold every requirement."""
    proc = subprocess.run([str(python), "-m", "pip", "install", "--disable-pip-version-check", "--no-cache-dir",
                           "--index-url", index_url, spec],
                          cwd=cwd, env=pip_env(), text=True, capture_output=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


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


def test_cu132_installs_from_its_index_alone_and_passes_the_smoke_checks(root: Path, index: Path, venv: Path,
                                                                       tmp_path: Path) -> None:
    """``pip install --index-url file://.../whl/cu132/ minifw``, no other option: the wheel and its
    runtime requirements (mirrored by ``index``, hash-checked) install, and builders' smoke probe
    passes on the installed venv: version, extension loaded from the venv, libcudart from the
    runtime wheel reporting the variant's CUDA version."""
    from builders.families import loader as matrix_mod
    from builders.matrix.targets import Selection, select
    from builders.wheel.smoke import expected_runtime_version, outcome, probe_argv, stage

    m = matrix_mod.load(root / "matrix.yaml")
    (target,) = select(m, Selection(targets=(CU132,)))
    label_dir = index / m.channels.index_path(target.variant.label)
    empty = tmp_path / "empty"
    empty.mkdir()
    out = pip_install(venv, label_dir.as_uri() + "/", empty, spec=m.project.name)
    assert f"Looking in indexes: {label_dir.as_uri()}/" in out and "http" not in out.replace(label_dir.as_uri(), "")
    installed = json.loads(subprocess.run([str(venv), "-m", "pip", "list", "--format", "json"], env=pip_env(),
                                          text=True, capture_output=True, timeout=120, check=True).stdout)
    versions = {p["name"].lower(): p["version"] for p in installed}
    assert versions[m.project.name] == str(target.version)
    for requirement in target.variant.requirements:
        assert requirement.name in versions, requirement

    staged = stage(tmp_path / "probe", [target])
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    proc = subprocess.run(probe_argv(str(venv), str(staged)), cwd=empty, env=env, text=True, capture_output=True,
                          timeout=600)
    result = outcome(proc.stdout)
    assert result.ok, (result.problems, proc.stderr[-3000:])
    summary = result.summary
    assert summary["cuda_runtime_version"] == expected_runtime_version(target.variant)
    assert "/site-packages/nvidia/" in summary["cudart_path"] and str(venv.parent.parent) in summary["cudart_path"]


def test_mirrored_requirements_are_recorded_with_their_hashes(index: Path) -> None:
    """``mirror.json`` names every requirement wheel with the sha256 of the file the index serves,
    and the project pages carry the same hash."""
    record = json.loads((index / "whl" / "cu132" / "mirror.json").read_text())
    assert record["label"] == "cu132" and record["files"]
    for f in record["files"]:
        path = index / "whl" / "cu132" / f["project"] / f["filename"]
        assert hashlib.sha256(path.read_bytes()).hexdigest() == f["sha256"]
        page = json.loads((path.parent / "index.json").read_text())
        assert {e["filename"]: e["hashes"]["sha256"] for e in page["files"]}[f["filename"]] == f["sha256"]
        assert CU132 in f["targets"]
    assert json.loads((index / "whl" / "cpu" / "mirror.json").read_text())["files"] == []


def test_audit_of_the_real_index_finds_only_the_targets_not_built_here(root: Path, index: Path) -> None:
    """``audit`` over the file:// index of real built wheels: the cp312 wheel's metadata is what
    the matrix promises; every other cu132 target (not built on this host) is missing."""
    url = (index / "whl" / "cu132").as_uri() + "/"
    proc = builders("audit", "--channel", "cu132", "--index-url", url, "--format", "json", cwd=root)
    assert proc.returncode == 21, proc.stderr
    report = json.loads(proc.stdout)
    assert {d["code"] for d in report["drift"]} == {"missing"}
    assert CU132 not in {d["message"].split()[0] for d in report["drift"]}
    assert report["listed"] == 1 and report["promised"] == len(report["drift"]) + 1
