"""The release lifecycle on real servers on loopback: candidate -> test channel -> validate -> promote -> release.

One real wheel of the demo (cpu-cp312-linux-x86_64, built once for the module by ``builders build``),
``rclone serve s3`` as the download host's bucket with a static HTTP server in front of it, and two
package servers (pypiserver) as the staging index and as PyPI. Every check reads the servers'
folders or installs over HTTP; none asks the code under test what it did.

The shipped matrix makes cu132 the PyPI default of Linux; this module's copy makes cpu the
default everywhere, so that the one wheel this host builds quickly also exercises the PyPI path.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from builders.base.errors import PreflightRefused
from builders.release.index import find_wheels
from builders.wheel.archive import Wheel
from tests import expected, helpers
from tests.objectstore import ObjectStore, PackageServer, object_store, package_server

pytestmark = pytest.mark.slow
TARGET = "cpu-cp312-linux-x86_64"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture(scope="module")
def wheelhouse(root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheelhouse")
    proc = helpers.builders("build", "--target", TARGET, "--output", str(out), cwd=root, timeout=1800)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


@pytest.fixture(scope="module")
def matrix_path(root: Path, shipped_text: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped matrix with cpu as every platform's PyPI default, beside a link to the demo's sources (the PyPI
    wheels' Requires-Dist is the union over the defaults: one CUDA default on Linux would put its runtime there)."""
    folder = tmp_path_factory.mktemp("matrix")
    text = shipped_text
    for platform, old in expected.raw(shipped_text)["channels"]["pypi"].items():
        text = helpers.edit(text, f"    {platform}: {old}\n", f"    {platform}: cpu\n")
    (folder / "matrix.yaml").write_text(text, encoding="utf-8")
    (folder / "examples").symlink_to(root / "examples")
    return folder / "matrix.yaml"


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[tuple[ObjectStore, PackageServer, PackageServer]]:
    with object_store(tmp_path / "store") as s3, package_server(tmp_path / "staging") as staging, \
            package_server(tmp_path / "pypi") as pypi:
        s3.make_bucket("downloads")
        yield s3, staging, pypi


def run(root: Path, s3: ObjectStore, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **s3.env, "TWINE_USERNAME": "builders", "TWINE_PASSWORD": "unused", "PYTHONPATH": str(root)}
    return helpers.builders(*args, cwd=root, env=env, timeout=1800)


def ok(proc: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def twine(server: PackageServer, *files: Path) -> None:
    env = {**os.environ, "TWINE_USERNAME": "builders", "TWINE_PASSWORD": "unused"}
    subprocess.run([sys.executable, "-m", "twine", "upload", "--non-interactive", "--repository-url", server.url,
                    *map(str, files)], check=True, env=env, capture_output=True, timeout=300)


def candidate(root: Path, s3: ObjectStore, matrix: Path, wheelhouse: Path, tmp: Path) -> Path:
    """The wheelhouse published on test and validated over HTTP; returns the validation record."""
    ok(run(root, s3, "publish", str(wheelhouse), "--matrix", str(matrix), "--channel", "test",
           "--bucket", "s3://downloads/"))
    record = tmp / "validation.json"
    ok(run(root, s3, "validate", "--matrix", str(matrix), "--channel", "test", "--index-url", s3.http_url + "downloads/",
           "--select", "cpu-cp312-*", "--record", str(record)))
    return record


def test_validate_installs_the_published_wheel_over_http_and_names_what_cannot_run(
        root: Path, matrix_path: Path, wheelhouse: Path, servers, tmp_path: Path) -> None:
    s3, _staging, _pypi = servers
    record = json.loads(candidate(root, s3, matrix_path, wheelhouse, tmp_path).read_text())
    built = next(wheelhouse.rglob("*+cpu-cp312-*.whl"))
    by_id = {t["target"]: t for t in record["targets"]}
    mine = by_id.pop(TARGET)
    assert mine["status"] == "passed", mine
    assert {i["installer"]: i["status"] for i in mine["installs"]} == {"pip": "passed", "uv": "passed"}
    assert mine["filename"] == built.name and mine["sha256"] == sha256(built.read_bytes())
    assert mine["index_url"].startswith(s3.http_url) and "/test/" in mine["index_url"]
    assert by_id, "the other platforms' cp312 targets are named"
    for tid, entry in by_id.items():
        assert entry["status"] == "not-runnable" and f"needs a {tid.split('-', 2)[2]} host" in entry["reason"], entry
    assert record["passed"] == 1 and record["failed"] == 0


def test_validate_fails_a_target_the_index_does_not_serve(root: Path, matrix_path: Path, servers, tmp_path: Path) -> None:
    s3, _staging, _pypi = servers
    proc = run(root, s3, "validate", "--matrix", str(matrix_path), "--channel", "test", "--index-url",
               s3.http_url + "downloads/", "--target", TARGET, "--installer", "pip", "--record", str(tmp_path / "v.json"))
    assert proc.returncode == 42, proc.stdout + proc.stderr
    (entry,) = json.loads((tmp_path / "v.json").read_text())["targets"]
    assert entry["status"] == "failed" and "install from" in entry["reason"]


def test_promotion_releases_exactly_the_validated_bytes_and_a_refusal_changes_nothing(
        root: Path, matrix_path: Path, wheelhouse: Path, servers, tmp_path: Path) -> None:
    s3, staging, pypi = servers
    validation = candidate(root, s3, matrix_path, wheelhouse, tmp_path)
    pypi_dir = tmp_path / "pypi-wheels"
    ok(run(root, s3, "promote", str(wheelhouse), "--matrix", str(matrix_path), "--output", str(pypi_dir)))
    (pypi_wheel,) = pypi_dir.glob("*.whl")
    twine(staging, pypi_wheel)
    pypi_validation = tmp_path / "pypi-validation.json"
    ok(run(root, s3, "validate", "--matrix", str(matrix_path), "--pypi", "--index-url", staging.simple_url,
           "--target", TARGET, "--record", str(pypi_validation)))
    promote = ["promote-release", "--matrix", str(matrix_path), "--bucket", "s3://downloads/", "--target", TARGET,
               "--validation", str(validation), "--pypi-wheels", str(pypi_dir), "--pypi-validation", str(pypi_validation)]
    to_pypi = ["--repository-url", pypi.url, "--simple-url", pypi.simple_url]

    before = s3.files("downloads")
    refused = run(root, s3, *promote, *to_pypi, "--file-limit-mb", str(pypi_wheel.stat().st_size / 2e6))
    assert refused.returncode == PreflightRefused.exit_code and "over the project's PyPI file limit" in refused.stderr
    assert s3.files("downloads") == before and not list(pypi.root.iterdir())

    with package_server(tmp_path / "taken") as taken:
        twine(taken, pypi_wheel)
        held = {p.name: p.read_bytes() for p in taken.root.iterdir()}
        refused = run(root, s3, *promote, "--repository-url", taken.url, "--simple-url", taken.simple_url)
        assert refused.returncode == PreflightRefused.exit_code and "already on the package server" in refused.stderr
        assert s3.files("downloads") == before and {p.name: p.read_bytes() for p in taken.root.iterdir()} == held

    ok(run(root, s3, *promote, *to_pypi))
    validated = json.loads(validation.read_text())
    (target,) = [t for t in validated["targets"] if t["target"] == TARGET]
    release = {k: v for k, v in s3.files("downloads").items() if k.startswith("whl/cpu/") and k.endswith(".whl")}
    assert {k.rsplit("/", 1)[-1]: sha256(v) for k, v in release.items()} == {target["filename"]: target["sha256"]}
    (staged,) = [t for t in json.loads(pypi_validation.read_text())["targets"] if t["target"] == TARGET]
    assert {p.name: sha256(p.read_bytes()) for p in pypi.root.iterdir()} == {staged["filename"]: staged["sha256"]}
    assert Wheel(pypi_wheel).version.local is None

    again = run(root, s3, *promote, *to_pypi)
    assert again.returncode == PreflightRefused.exit_code, "a version is released once"


def test_a_nightly_is_built_with_its_dev_version_published_and_installed_with_pre(
        root: Path, matrix_path: Path, servers, tmp_path: Path, shipped_text: str) -> None:
    """The demo built for the nightly channel carries the dev version of the commit date, end to end: its wheel
    name, its metadata, the index it is published to and what pip --pre and uv install from it."""
    s3, _staging, _pypi = servers
    day = "2026-12-01"
    house = tmp_path / "nightly"
    ok(run(root, s3, "build", "--target", TARGET, "--channel", "nightly", "--commit-date", day,
           "--output", str(house)))
    (wheel,) = find_wheels(house)  # hidden folders (the build's store) are not looked into
    version = Wheel(wheel).version
    assert version.is_devrelease and version.dev == 20261201 and version.local == "cpu", wheel.name
    ok(run(root, s3, "publish", str(house), "--matrix", str(matrix_path), "--channel", "nightly",
           "--bucket", "s3://downloads/"))
    layout = expected.raw(shipped_text)["channels"]["nightly"]["layout"].replace("{label}", "cpu")
    assert f"{layout}minifw/{wheel.name}" in s3.files("downloads")
    record = tmp_path / "nightly.json"
    ok(run(root, s3, "validate", "--matrix", str(matrix_path), "--channel", "nightly", "--version", version.public,
           "--index-url", s3.http_url + "downloads/", "--target", TARGET, "--record", str(record)))
    (entry,) = json.loads(record.read_text())["targets"]
    assert entry["status"] == "passed" and entry["sha256"] == sha256(wheel.read_bytes()), entry
