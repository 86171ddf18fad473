"""Wheel variants (PEP 825) end to end: uv picks the variant by itself from a loopback variant index.

Marked slow: builds the demo framework's cp312 linux-x86_64 wheels of the null variant (cpu) and of
every CUDA variant of the matrix, runs ``variants --smoke`` (variant wheels made by variantlib,
checked, their twins smoke-tested, the requirement wheels mirrored), serves the variant index from a
loopback HTTP server and installs ``minifw==<version>`` with uv's ``--preview-features
wheel-variants`` and ``--index-url`` alone into fresh venvs:

- as this machine is (no NVIDIA GPU), uv picks the null variant;
- with the NVIDIA provider's answer forced (uv's built-in NVIDIA detection reads
  ``NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION`` together with
  ``NV_VARIANT_PROVIDER_FORCE_SM_ARCH``), it picks the CUDA variant the matrix says: the newest
  whose lower bound the driver meets and whose arch list has the GPU's.

The expectation is computed from the matrix's text (versions and arch lists), not from the code
under test; the installed wheel then passes builders' smoke probe in its venv.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from builders.index.staging import serving_folder
from builders.matrix.model import Matrix
from builders.wheel.smoke import expected_runtime_version, find_uv, outcome, probe_argv, stage
from tests import expected, helpers

pytestmark = pytest.mark.slow

PLATFORM = "linux-x86_64"
ABI = "cp312"
FORCE = ("NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION", "NV_VARIANT_PROVIDER_FORCE_SM_ARCH")


def python312() -> Path:
    found = sorted(Path.home().glob(".pyenv/versions/3.12.*/bin/python3.12"))
    if not found:
        pytest.skip("needs pyenv's CPython 3.12")
    return found[-1]


def uv() -> str:
    found = find_uv()
    if not found:
        pytest.skip("needs builders' uv package")
    return found


def raw(root: Path) -> dict[str, Any]:
    return expected.raw((root / "matrix.yaml").read_text())


def cuda_versions(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """CUDA version -> its entry (label, arch lists), from the matrix's text."""
    return dict(data["accelerators"]["cuda"]["versions"])


def null_label(data: dict[str, Any]) -> str:
    """The family without variant_properties (the cpu one): its wheel is the null variant."""
    (label,) = [f["label"] for f in data["accelerators"].values() if "label" in f and "variant_properties" not in f]
    return label


def expected_pick(data: dict[str, Any], driver: str, sm: str) -> str:
    """The CUDA label uv must pick for a forced driver and GPU: the newest version the driver meets whose
    x86_64 arch list has the GPU (as a real arch, or PTX of an older one is not modelled here); else null."""
    fits = [(Version(v), e["label"]) for v, e in cuda_versions(data).items()
            if Version(v) <= Version(driver) and sm in [a.removesuffix("+PTX") for a in e["arch_list"][PLATFORM].split(";")]]
    return max(fits)[1] if fits else "null"


@pytest.fixture(scope="module")
def data(root: Path) -> dict[str, Any]:
    return raw(root)


@pytest.fixture(scope="module")
def variant_index(root: Path, data: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Path:
    python312()
    labels = [null_label(data), *[e["label"] for e in cuda_versions(data).values()]]
    house = tmp_path_factory.mktemp("wheelhouse")
    targets = [arg for label in labels for arg in ("--target", f"{label}-{ABI}-{PLATFORM}")]
    proc = helpers.builders("build", *targets, "--output", str(house), cwd=root, timeout=3600)
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-5000:]
    proc = helpers.builders("variants", str(house), "--smoke", cwd=root, timeout=3600)
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-5000:]
    said = proc.stdout + proc.stderr  # the console's lines go to stderr
    assert said.count("smoke test passed on its twin") == len(labels), said
    return house / data["wheel_variants"]["layout"]


@pytest.fixture(scope="module")
def server(variant_index: Path) -> Iterator[str]:
    with serving_folder(variant_index, SimpleHTTPRequestHandler) as url:
        yield url


def clean_env(forced: dict[str, str]) -> dict[str, str]:
    """No uv or pip configuration and no forced answer but ``forced``: the index under test is the only source."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("UV_", "PIP_", "NV_VARIANT_")) and k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    return {**env, **forced}


def uv_install(server: str, spec: str, tmp: Path, forced: dict[str, str]) -> Path:
    """``uv pip install --preview-features wheel-variants --index-url SERVER SPEC`` into a fresh venv; its python."""
    venv = tmp / "venv"
    env = clean_env(forced)
    subprocess.run([uv(), "venv", "--no-config", "--no-project", "--python", str(python312()), str(venv)],
                   env=env, check=True, capture_output=True, timeout=300)
    proc = subprocess.run([uv(), "pip", "install", "--no-config", "--no-cache", "--preview-features", "wheel-variants",
                           "--python", str(venv / "bin" / "python"), "--index-url", server, spec],
                          env=env, text=True, capture_output=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return venv / "bin" / "python"


def installed_label(python: Path, project: str) -> str:
    """The label in the installed distribution's variant.json (PEP 825 keeps it in .dist-info)."""
    (found,) = python.parent.parent.glob(f"lib/python3.12/site-packages/{project}-*.dist-info/variant.json")
    (label,) = json.loads(found.read_text())["variants"]
    return label


def smoke_installed(m: Matrix, label: str, python: Path, tmp: Path) -> dict[str, Any]:
    """builders' smoke probe in the venv uv installed into, for the chosen variant's target."""
    target = helpers.one(m, f"{label}-{ABI}-{PLATFORM}")
    staged = stage(tmp / "probe", [target], dist_version=str(m.project.version.public))  # the variant's version
    empty = tmp / "empty"
    empty.mkdir()
    proc = subprocess.run(probe_argv(str(python), str(staged)), cwd=empty, env=clean_env({}), text=True,
                          capture_output=True, timeout=900)
    result = outcome(proc.stdout)
    assert result.ok, (result.problems, proc.stderr[-3000:])
    return result.summary


def test_the_variant_index_has_variantlibs_json(m: Matrix, variant_index: Path, data: dict[str, Any]) -> None:
    folder = variant_index / m.project.canonical_name
    (found,) = folder.glob("*-variants.json")
    assert found.name == f"{m.project.name}-{m.project.version.public}-variants.json"
    assert found.name in (folder / "index.html").read_text()
    labels = set(json.loads(found.read_text())["variants"])
    assert labels == {"null", *[e["label"] for e in cuda_versions(data).values()]}


def test_uv_picks_the_null_variant_without_a_gpu(m: Matrix, server: str, data: dict[str, Any], tmp_path: Path) -> None:
    python = uv_install(server, f"{m.project.name}=={m.project.version}", tmp_path, {})
    assert installed_label(python, m.project.name) == "null"
    smoke_installed(m, null_label(data), python, tmp_path)


def forced_cases() -> list[tuple[str, str]]:
    """Each CUDA version of the matrix as the driver's, with a GPU every variant builds for (9.0), and one GPU only
    the newest builds for, read from the matrix's text."""
    data = raw(Path(__file__).resolve().parents[2])
    versions = cuda_versions(data)
    cases = [(v, "9.0") for v in versions]
    newest = max(versions, key=Version)
    others = {a for v, e in versions.items() if v != newest for a in e["arch_list"][PLATFORM].split(";")}
    only = [a for a in versions[newest]["arch_list"][PLATFORM].split(";") if a not in others and "+" not in a]
    return cases + [(newest, only[0])] if only else cases


@pytest.mark.parametrize(("driver", "sm"), forced_cases())
def test_uv_picks_the_cuda_variant_the_matrix_says(m: Matrix, server: str, data: dict[str, Any], driver: str, sm: str,
                                                   tmp_path: Path) -> None:
    want = expected_pick(data, driver, sm)
    python = uv_install(server, f"{m.project.name}=={m.project.version}", tmp_path, dict(zip(FORCE, (driver, sm))))
    assert installed_label(python, m.project.name) == want
    summary = smoke_installed(m, want, python, tmp_path)
    if want != "null":
        assert summary["cuda_runtime_version"] == expected_runtime_version(m.variant(want))


def test_one_forced_answer_alone_changes_nothing(m: Matrix, server: str, data: dict[str, Any], tmp_path: Path) -> None:
    newest = max(cuda_versions(data), key=Version)
    python = uv_install(server, f"{m.project.name}=={m.project.version}", tmp_path, {FORCE[0]: newest})
    assert installed_label(python, m.project.name) == "null"
