"""The release lifecycle on real servers on loopback: candidate -> test channel -> validate -> promote -> release,
and what proves the released bytes are the validated ones: the manifest, immutable release objects, yank,
rollback and repair.

Two real wheels of the demo (cpu-cp312 and cpu-cp313 on linux-x86_64, built once for the module by ``builders
build``), ``rclone serve s3`` as the download host's bucket with a static HTTP server in front of it, and package
servers (pypiserver) as staging indexes and as PyPI. Every check reads the servers' folders or installs over HTTP;
none asks the code under test what it did.

The shipped matrix makes cu132 the PyPI default of Linux; this module's copy makes cpu the default everywhere, so
that the wheels this host builds quickly also exercise the PyPI path. rc1 is both wheels; rc2 (the candidate
released) is cp312's alone, so cp313's file is the leftover rc1 wheel the test channel still holds. One test
promotes cp312's wheel under a mixed layout instead (cpu on Linux x86_64, an accelerator variant on the other
Linux platforms), which must keep that variant's runtime off the x86_64 wheel.
"""

from __future__ import annotations

import email.parser
import hashlib
import json
import os
import re
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement

from builders.base.errors import PreflightRefused, PublishRefused, ReleaseUnverified, ValidationFailed
from builders.channels import provenance
from builders.channels.objectstore import open_bucket
from builders.index.pages import find_wheels
from builders.wheel.archive import ZIP_EPOCH, Wheel
from builders.wheel.writer import rewrite
from tests import attestations, expected, helpers
from tests.objectstore import ObjectStore, PackageServer, object_store, package_server

pytestmark = pytest.mark.slow
TARGET, LEFTOVER = "cpu-cp312-linux-x86_64", "cpu-cp313-linux-x86_64"
BUCKET = "s3://downloads/"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture(scope="module")
def wheelhouse(root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheelhouse")
    proc = helpers.builders("build", "--target", TARGET, "--target", LEFTOVER, "--output", str(out), cwd=root,
                            timeout=1800)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


@pytest.fixture(scope="module")
def matrix_path(root: Path, shipped_text: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped matrix with cpu as every platform's PyPI default, beside a link to the demo's sources (the PyPI
    wheels' Requires-Dist is the union over the defaults: one CUDA default on Linux would put its runtime there)."""
    folder = tmp_path_factory.mktemp("matrix")
    (folder / "matrix.yaml").write_text(cpu_default(shipped_text), encoding="utf-8")
    (folder / "examples").symlink_to(root / "examples")
    return folder / "matrix.yaml"


def cpu_default(text: str) -> str:
    for platform, old in expected.raw(text)["channels"]["pypi"].items():
        text = helpers.edit(text, f"    {platform}: {old}\n", f"    {platform}: cpu\n")
    return text


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[tuple[ObjectStore, PackageServer, PackageServer]]:
    with object_store(tmp_path / "store") as s3, package_server(tmp_path / "staging") as staging, \
            package_server(tmp_path / "pypi") as pypi:
        s3.make_bucket("downloads")
        yield s3, staging, pypi


CREDENTIALS = {"TWINE_USERNAME": "builders", "TWINE_PASSWORD": "unused"}


def run(root: Path, s3: ObjectStore, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    whole = {**os.environ, **s3.env, **CREDENTIALS, "PYTHONPATH": str(root)} if env is None else env
    return helpers.builders(*args, cwd=root, env=whole, timeout=1800)


def ok(proc: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def refused(proc: subprocess.CompletedProcess[str], reason: str, code: int = PreflightRefused.exit_code) -> None:
    assert proc.returncode == code and reason in proc.stderr, proc.stdout + proc.stderr


def twine(server: PackageServer, *files: Path) -> None:
    env = {**os.environ, **CREDENTIALS}
    subprocess.run([sys.executable, "-m", "twine", "upload", "--non-interactive", "--repository-url", server.url,
                    *map(str, files)], check=True, env=env, capture_output=True, timeout=300)


def only(wheelhouse: Path, target: str, dest: Path) -> Path:
    """A wheelhouse holding ``target``'s wheel alone (a candidate that built only it)."""
    python = target.split("-")[1]
    (wheel,) = [w for w in find_wheels(wheelhouse) if f"-{python}-" in w.name]
    dest.mkdir()
    (dest / wheel.name).write_bytes(wheel.read_bytes())
    return dest


@dataclass(frozen=True, kw_only=True)
class Candidate:
    wheels: Path  # its labelled wheels
    pypi: Path  # its PyPI-form wheels
    manifest: Path
    validation: Path
    bundles: Path | None = None  # the attest step's Sigstore bundles of its wheels and PyPI wheels


def make_candidate(root: Path, s3: ObjectStore, matrix: Path, wheels: Path, tmp: Path, tag: str, *,
                   installers: tuple[str, ...] = ("pip",), run_id: str = "7", attested: bool = False) -> Candidate:
    """A candidate run as release.yml makes it: its PyPI form, its manifest, published on test (``attested``:
    with its wheels' provenance), validated."""
    tmp.mkdir(parents=True, exist_ok=True)
    pypi, manifest, validation = tmp / "dist", tmp / "manifest.json", tmp / "validation.json"
    ok(run(root, s3, "promote", str(wheels), "--matrix", str(matrix), "--output", str(pypi)))
    ok(run(root, s3, "manifest", str(wheels), "--matrix", str(matrix), "--pypi-wheels", str(pypi), "--output",
           str(manifest), "--tag", tag, "--commit", "c0ffee" + tag, "--run-id", run_id))
    bundles = attest(tmp / "bundles", [*find_wheels(wheels), *find_wheels(pypi)], ref=f"refs/tags/{tag}") if attested else None
    ok(run(root, s3, "publish", str(wheels), "--matrix", str(matrix), "--channel", "test", "--bucket", BUCKET,
           *(("--attestations", str(bundles)) if bundles else ())))
    ok(run(root, s3, "validate", "--matrix", str(matrix), "--channel", "test", "--site-url", s3.http_url + "downloads/",
           "--target", TARGET, "--manifest", str(manifest), "--record", str(validation),
           *(a for i in installers for a in ("--installer", i))))
    return Candidate(wheels=wheels, pypi=pypi, manifest=manifest, validation=validation, bundles=bundles)


def test_validate_installs_the_manifests_bytes_over_http_with_both_installers(
        root: Path, matrix_path: Path, wheelhouse: Path, servers, tmp_path: Path) -> None:
    s3, _staging, _pypi = servers
    rc = make_candidate(root, s3, matrix_path, wheelhouse, tmp_path / "rc1", "v2.15.0-rc1", installers=("pip", "uv"))
    record = json.loads(rc.validation.read_text())
    manifest = json.loads(rc.manifest.read_text())
    assert record["manifest_sha256"] == sha256(rc.manifest.read_bytes())
    built = next(wheelhouse.rglob("*+cpu-cp312-*.whl"))
    (mine,) = record["targets"]
    assert mine["target"] == TARGET and mine["status"] == "passed", mine
    assert {i["installer"]: (i["status"], i["filename"], i["sha256"]) for i in mine["installs"]} == {
        installer: ("passed", built.name, sha256(built.read_bytes())) for installer in ("pip", "uv")}
    assert {f["target"] for f in manifest["files"] if f["form"] == "labelled"} == {TARGET, LEFTOVER}

    # bytes replaced on the test channel after the manifest was made: uv, which keeps no report, refuses them too
    key = s3.root / "downloads" / "whl/test/cpu/minifw" / built.name
    key.write_bytes(b"not the candidate's")
    for installer in ("pip", "uv"):
        proc = run(root, s3, "validate", "--matrix", str(matrix_path), "--channel", "test", "--site-url",
                   s3.http_url + "downloads/", "--target", TARGET, "--manifest", str(rc.manifest), "--installer",
                   installer, "--record", str(tmp_path / f"{installer}.json"))
        assert proc.returncode == ValidationFailed.exit_code, proc.stdout + proc.stderr
        (entry,) = json.loads((tmp_path / f"{installer}.json").read_text())["targets"]
        assert entry["status"] == "failed", entry


def test_validate_fails_a_target_the_index_does_not_serve(root: Path, matrix_path: Path, servers, tmp_path: Path) -> None:
    s3, _staging, _pypi = servers
    proc = run(root, s3, "validate", "--matrix", str(matrix_path), "--channel", "test", "--site-url",
               s3.http_url + "downloads/", "--target", TARGET, "--installer", "pip", "--record", str(tmp_path / "v.json"))
    assert proc.returncode == 42, proc.stdout + proc.stderr
    (entry,) = json.loads((tmp_path / "v.json").read_text())["targets"]
    assert entry["status"] == "failed" and "install from" in entry["reason"]


def staged(root: Path, s3: ObjectStore, matrix: Path, rc: Candidate, tmp: Path) -> Path:
    """rc's PyPI form validated from a staging index of its own files (``--pypi-wheels``)."""
    record = tmp / "pypi-validation.json"
    ok(run(root, s3, "validate", "--matrix", str(matrix), "--pypi", "--pypi-wheels", str(rc.pypi), "--target", TARGET,
           "--manifest", str(rc.manifest), "--installer", "pip", "--record", str(record)))
    return record


def test_each_candidates_pypi_form_is_validated_from_its_own_staging_index(
        root: Path, matrix_path: Path, wheelhouse: Path, servers, tmp_path: Path) -> None:
    """rc2's PyPI-form file has rc1's name: a long-lived staging server keeps rc1's bytes (the upload of rc2 is
    refused with 400), and validating from it must fail against rc2's manifest; a staging index per run passes."""
    s3, staging, _pypi = servers
    rc2 = make_candidate(root, s3, matrix_path, only(wheelhouse, TARGET, tmp_path / "rc2-wheels"), tmp_path / "rc2",
                         "v2.15.0-rc2")
    (pypi_wheel,) = rc2.pypi.glob("*.whl")
    (tmp_path / "rc1-dist").mkdir()
    rc1_bytes = rewrite(Wheel(pypi_wheel), tmp_path / "rc1-dist", epoch=ZIP_EPOCH + 86400)  # same name, other bytes
    assert rc1_bytes.name == pypi_wheel.name
    assert sha256(rc1_bytes.read_bytes()) != sha256(pypi_wheel.read_bytes())
    twine(staging, rc1_bytes)
    with pytest.raises(subprocess.CalledProcessError):
        twine(staging, pypi_wheel)  # the same name again: the server refuses it
    stale = run(root, s3, "validate", "--matrix", str(matrix_path), "--pypi", "--index-url", staging.simple_url,
                "--target", TARGET, "--manifest", str(rc2.manifest), "--installer", "pip", "--record",
                str(tmp_path / "stale.json"))
    assert stale.returncode == ValidationFailed.exit_code, stale.stdout + stale.stderr
    (entry,) = json.loads((tmp_path / "stale.json").read_text())["targets"]
    assert "the index serves other bytes than the candidate built" in entry["reason"]
    record = json.loads(staged(root, s3, matrix_path, rc2, tmp_path).read_text())
    (entry,) = record["targets"]
    assert entry["status"] == "passed" and entry["sha256"] == sha256(pypi_wheel.read_bytes())


def hidden_twine(folder: Path) -> Path:
    """A sitecustomize that makes ``import twine`` fail, as on an interpreter without it."""
    folder.mkdir()
    (folder / "sitecustomize.py").write_text("import sys\nsys.modules['twine'] = None\n", encoding="utf-8")
    return folder


def test_promotion_releases_exactly_the_manifests_validated_files_and_each_refusal_writes_nothing(
        root: Path, matrix_path: Path, wheelhouse: Path, servers, tmp_path: Path) -> None:
    s3, _staging, pypi = servers
    make_candidate(root, s3, matrix_path, wheelhouse, tmp_path / "rc1", "v2.15.0-rc1")  # leaves cp313 on test
    rc2 = make_candidate(root, s3, matrix_path, only(wheelhouse, TARGET, tmp_path / "rc2-wheels"), tmp_path / "rc2",
                         "v2.15.0-rc2", attested=True)
    on_test = pages_provenance(s3, "whl/test/cpu/")
    pypi_validation = staged(root, s3, matrix_path, rc2, tmp_path)
    (pypi_wheel,) = rc2.pypi.glob("*.whl")
    promote = ["promote-release", "--matrix", str(matrix_path), "--bucket", BUCKET, "--target", TARGET,
               "--manifest", str(rc2.manifest), "--validation", str(rc2.validation), "--pypi-wheels", str(rc2.pypi),
               "--pypi-validation", str(pypi_validation), "--expect-tag", "v2.15.0-rc2", "--expect-version", "2.15.0",
               "--attestations", str(rc2.bundles)]
    to_pypi = ["--repository-url", pypi.url, "--simple-url", pypi.simple_url]
    base_env = {**os.environ, **s3.env, "PYTHONPATH": str(root)}
    before = s3.files("downloads")

    def unchanged() -> None:
        assert s3.files("downloads") == before and not list(pypi.root.iterdir())

    refused(run(root, s3, *promote, *to_pypi, "--file-limit-mb", str(pypi_wheel.stat().st_size / 2e6)),
            "over the project's PyPI file limit")
    unchanged()
    refused(run(root, s3, *promote, *to_pypi, env=base_env), "no upload credentials")
    unchanged()
    shim = hidden_twine(tmp_path / "no-twine")
    refused(run(root, s3, *promote, *to_pypi, env={**base_env, **CREDENTIALS, "PYTHONPATH": f"{shim}:{root}"}),
            "twine is not importable")
    unchanged()
    refused(run(root, s3, *promote, *to_pypi, "--expect-tag", "v2.15.0-rc1"), "the run to release has 'v2.15.0-rc1'")
    unchanged()
    bumped = matrix_path.parent / "bumped.yaml"
    bumped.write_text(matrix_path.read_text().replace("  version: 2.15.0\n", "  version: 2.15.1\n", 1))
    refused(run(root, s3, "promote-release", "--matrix", str(bumped), *promote[3:], *to_pypi), "says 2.15.1")
    unchanged()
    old_record = tmp_path / "old-record.json"
    old_record.write_text(json.dumps({**json.loads(rc2.validation.read_text()), "manifest_sha256": ""}))
    refused(run(root, s3, *promote, *to_pypi, "--validation", str(old_record)), "validated no manifest")
    unchanged()

    done = ok(run(root, s3, *promote, *to_pypi, "--site-url", s3.http_url + "downloads/"))  # links read over HTTP
    counts = re.search(r"preflight passed: (\d+) file\(s\) to copy \((\d+) wheel\(s\), (\d+) \.metadata, (\d+) "
                       r"provenance\)", done.stdout + done.stderr)
    assert counts, done.stdout + done.stderr
    total, wheels, metadata, attested = map(int, counts.groups())
    assert (total, metadata, attested) == (wheels + metadata + attested, wheels, 1), counts.group(0)
    manifest = json.loads(rc2.manifest.read_text())
    (labelled,) = [f for f in manifest["files"] if f["form"] == "labelled"]
    release = {k: v for k, v in s3.files("downloads").items() if k.startswith("whl/cpu/") and k.endswith(".whl")}
    assert {k.rsplit("/", 1)[-1]: sha256(v) for k, v in release.items()} == {labelled["name"]: labelled["sha256"]}
    assert not any(LEFTOVER.split("-")[1] in k for k in release), "the leftover rc1 wheel is not released"
    (pypi_file,) = [f for f in manifest["files"] if f["form"] == "pypi"]
    # twine sent the PEP 740 attestation (--attestations); pypiserver accepts the upload and keeps the wheel alone
    assert {p.name: sha256(p.read_bytes()) for p in pypi.root.iterdir()} == {pypi_file["name"]: pypi_file["sha256"]}
    records = [k for k in s3.files("downloads") if k.startswith("publish-records/release/")]
    (promotion_record,) = records
    assert json.loads(s3.files("downloads")[promotion_record])["released"] == {
        f"whl/cpu/minifw/{labelled['name']}": labelled["sha256"]}
    finished = s3.files("downloads")
    again = ok(run(root, s3, *promote, *to_pypi))  # a rerun of a finished promotion: done, not refused
    assert "already done" in again.stdout + again.stderr and s3.files("downloads") == finished
    provenance_served_and_verified(root, s3, matrix_path, wheelhouse, rc2, on_test, tmp_path)


def test_a_release_key_holding_other_bytes_is_never_overwritten(
        root: Path, matrix_path: Path, wheelhouse: Path, servers, tmp_path: Path) -> None:
    """A rollback that restored the pages used to leave the copied objects; a later promotion then overwrote them
    unnoticed. The object's own bytes decide, whatever the pages list."""
    s3, _staging, _pypi = servers
    rc = make_candidate(root, s3, matrix_path, only(wheelhouse, TARGET, tmp_path / "w"), tmp_path / "rc", "v2.15.0-rc3")
    name = next(rc.wheels.glob("*.whl")).name
    open_bucket(BUCKET, s3.env).upload(f"whl/cpu/minifw/{name}", b"an earlier release's bytes")  # through the S3 API
    before = s3.files("downloads")
    refused(run(root, s3, "promote-release", "--matrix", str(matrix_path), "--bucket", BUCKET, "--target", TARGET,
                "--manifest", str(rc.manifest), "--validation", str(rc.validation)),
            "a released file never changes")
    assert s3.files("downloads") == before


def pip_install(index: str, requirement: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    """pip's own resolution of ``requirement`` from ``index`` alone, for the cp312 manylinux wheel (downloaded,
    not installed: this interpreter need not be 3.12)."""
    dest = tmp / "downloads" / str(len(list((tmp / "downloads").glob("*"))) if (tmp / "downloads").exists() else 0)
    return subprocess.run([sys.executable, "-m", "pip", "download", "--isolated", "--no-deps", "--only-binary=:all:",
                           "--python-version", "3.12", "--platform", "manylinux_2_28_x86_64", "--index-url", index,
                           "--dest", str(dest), requirement], capture_output=True, text=True, timeout=300)


def test_a_rollback_yanks_what_the_promotion_released_and_a_new_candidate_of_it_is_refused(
        root: Path, matrix_path: Path, wheelhouse: Path, servers, tmp_path: Path) -> None:
    s3, _staging, _pypi = servers
    rc = make_candidate(root, s3, matrix_path, only(wheelhouse, TARGET, tmp_path / "w"), tmp_path / "rc", "v2.15.0-rc1")
    promoted = ok(run(root, s3, "promote-release", "--matrix", str(matrix_path), "--bucket", BUCKET, "--target",
                      TARGET, "--manifest", str(rc.manifest), "--validation", str(rc.validation),
                      "--record", str(tmp_path / "promotion.json")))
    (key,) = [k for k in s3.files("downloads") if k.startswith("publish-records/release/")]
    assert key in promoted.stdout + promoted.stderr
    index = s3.http_url + "downloads/whl/cpu/"
    assert pip_install(index, "minifw", tmp_path).returncode == 0
    bytes_before = {k: v for k, v in s3.files("downloads").items() if k.endswith(".whl")}
    ok(run(root, s3, "rollback", "--matrix", str(matrix_path), "--bucket", BUCKET, "--promotion", key, "--reason",
           "rolled back: broken kernels"))
    files = s3.files("downloads")
    assert {k: v for k, v in files.items() if k.endswith(".whl")} == bytes_before, "no byte was deleted"
    page = json.loads(files["whl/cpu/minifw/index.json"])
    assert {f["filename"]: f.get("yanked") for f in page["files"]} == {
        next(rc.wheels.glob("*.whl")).name: "rolled back: broken kernels"}
    assert 'data-yanked="rolled back: broken kernels"' in files["whl/cpu/minifw/index.html"].decode()
    unpinned = pip_install(index, "minifw", tmp_path)
    assert unpinned.returncode != 0, "pip skips a yanked file unless it is pinned"
    pinned = pip_install(index, "minifw==2.15.0+cpu", tmp_path)
    assert pinned.returncode == 0 and "yanked" in (pinned.stdout + pinned.stderr).lower(), pinned.stdout + pinned.stderr
    history = ok(run(root, s3, "history", "--matrix", str(matrix_path), "--channel", "release", "--bucket", BUCKET))
    lines = (history.stdout + history.stderr).splitlines()
    (promotion_id,) = [line.split()[0] for line in lines if " promotion " in line]
    assert any(" rollback " in line and f"undoes {promotion_id}" in line for line in lines), lines
    rolled = s3.files("downloads")
    for which in (promotion_id, str(tmp_path / "promotion.json"), key):  # by id, or by either record file
        again = ok(run(root, s3, "rollback", "--matrix", str(matrix_path), "--bucket", BUCKET, "--promotion", which,
                       "--reason", "another reason"))
        assert "already done" in again.stdout + again.stderr and s3.files("downloads") == rolled
    again = run(root, s3, "publish", str(wheelhouse), "--matrix", str(matrix_path), "--channel", "test", "--bucket", BUCKET)
    assert again.returncode == 41 and "released already" in again.stderr, again.stdout + again.stderr
    assert s3.files("downloads") == rolled  # a rolled-back version stays released: its next candidate is a new version


def test_publish_never_writes_the_release_channel(root: Path, matrix_path: Path, wheelhouse: Path, servers) -> None:
    s3, _staging, _pypi = servers
    proc = run(root, s3, "publish", str(wheelhouse), "--matrix", str(matrix_path), "--channel", "release",
               "--bucket", BUCKET)
    assert proc.returncode == 5 and "promote-release" in proc.stderr, proc.stdout + proc.stderr
    assert s3.files("downloads") == {}


def test_repair_and_publish_make_a_lost_metadata_again_from_the_ledger(
        root: Path, matrix_path: Path, wheelhouse: Path, servers) -> None:
    s3, _staging, _pypi = servers
    ok(run(root, s3, "publish", str(wheelhouse), "--matrix", str(matrix_path), "--channel", "test", "--bucket", BUCKET))
    folder = s3.root / "downloads" / "whl/test/cpu/minifw"
    (gone,) = [p for p in folder.glob("*.whl.metadata") if "-cp313-" in p.name]
    open_bucket(BUCKET, s3.env).delete([f"whl/test/cpu/minifw/{gone.name}"])  # through the S3 API, as a hand would
    assert not gone.exists()
    ok(run(root, s3, "repair-index", "--matrix", str(matrix_path), "--channel", "test", "--bucket", BUCKET))
    assert gone.is_file()  # made again from its wheel, with the sha256 the ledger holds
    open_bucket(BUCKET, s3.env).delete([f"whl/test/cpu/minifw/{gone.name}"])
    finished = ok(run(root, s3, "publish", str(wheelhouse), "--matrix", str(matrix_path), "--channel", "test",
                      "--bucket", BUCKET))
    assert gone.is_file() and f"restore  whl/test/cpu/minifw/{gone.name}" in finished.stderr  # a rerun finishes
    page = json.loads((folder / "index.json").read_text())
    assert {f["filename"]: f["hashes"]["sha256"] for f in page["files"]} == {
        w.name: sha256(w.read_bytes()) for w in find_wheels(wheelhouse)}
    ok(run(root, s3, "publish", str(wheelhouse), "--matrix", str(matrix_path), "--channel", "test", "--bucket", BUCKET))


def test_a_nightly_is_built_with_its_dev_version_published_and_installed_with_pre(
        root: Path, matrix_path: Path, servers, tmp_path: Path, shipped_text: str) -> None:
    """The demo built for the nightly channel carries the dev version of the commit date, end to end: its wheel
    name, its metadata, the index it is published to and what pip --pre and uv install from it. The same nightly
    again writes nothing; other bytes under that version are refused."""
    s3, _staging, _pypi = servers
    day = "2026-12-01"
    house = tmp_path / "nightly"
    ok(run(root, s3, "build", "--target", TARGET, "--channel", "nightly", "--commit-date", day,
           "--output", str(house)))
    (wheel,) = find_wheels(house)  # hidden folders (the build's store) are not looked into
    version = Wheel(wheel).version
    assert version.is_devrelease and version.dev == 20261201 and version.local == "cpu", wheel.name
    publish = ["publish", str(house), "--matrix", str(matrix_path), "--channel", "nightly", "--bucket", BUCKET]
    ok(run(root, s3, *publish))
    layout = expected.raw(shipped_text)["channels"]["nightly"]["layout"].replace("{label}", "cpu")
    assert f"{layout}minifw/{wheel.name}" in s3.files("downloads")
    record = tmp_path / "nightly.json"
    ok(run(root, s3, "validate", "--matrix", str(matrix_path), "--channel", "nightly", "--version", version.public,
           "--site-url", s3.http_url + "downloads/", "--target", TARGET, "--record", str(record)))
    (entry,) = json.loads(record.read_text())["targets"]
    assert entry["status"] == "passed" and entry["sha256"] == sha256(wheel.read_bytes()), entry

    before = s3.files("downloads")
    again = ok(run(root, s3, *publish))
    assert "nothing written" in again.stdout + again.stderr and s3.files("downloads") == before
    other = tmp_path / "other"
    other.mkdir()
    changed = rewrite(Wheel(wheel), other, epoch=ZIP_EPOCH + 86400)
    assert changed.name == wheel.name and changed.read_bytes() != wheel.read_bytes()
    refused(run(root, s3, "publish", str(other), *publish[2:]), "published already", PublishRefused.exit_code)
    assert s3.files("downloads") == before


def mixed_defaults(text: str) -> str:
    """``text`` with cpu the PyPI default of Linux x86_64 and the shipped Linux x86_64 default (an accelerator
    variant) that of every other Linux platform: PyTorch's layout before CUDA became its x86 default."""
    data = expected.raw(text)
    pypi, platforms = data["channels"]["pypi"], data["platforms"]
    x86 = next(p for p, d in platforms.items() if d["os"] == "linux" and d["arch"] == "x86_64")
    for platform, old in pypi.items():
        if platforms[platform]["os"] == "linux":
            text = helpers.edit(text, f"    {platform}: {old}\n", f"    {platform}: {'cpu' if platform == x86 else pypi[x86]}\n")
    return text


def linux_environment(arch: str) -> dict[str, str]:
    """PEP 508 marker values of CPython 3.12 on Linux ``arch`` (written out here, not asked of builders)."""
    return {"platform_system": "Linux", "sys_platform": "linux", "os_name": "posix", "platform_machine": arch,
            "python_version": "3.12", "python_full_version": "3.12.0", "implementation_name": "cpython",
            "platform_python_implementation": "CPython", "extra": ""}


def test_promote_with_mixed_defaults_keeps_the_accelerator_runtime_off_the_x86_64_cpu_wheel(
        root: Path, shipped_text: str, wheelhouse: Path, tmp_path: Path) -> None:
    """The real cp312 CPU wheel promoted under a matrix whose Linux aarch64 default is an accelerator variant: its
    one Requires-Dist (every PyPI wheel's) installs that runtime on aarch64 and nothing of it on x86_64."""
    (tmp_path / "matrix.yaml").write_text(mixed_defaults(shipped_text), encoding="utf-8")
    (tmp_path / "examples").symlink_to(root / "examples")
    data = expected.raw(shipped_text)
    x86 = next(p for p, d in data["platforms"].items() if d["os"] == "linux" and d["arch"] == "x86_64")
    gpu = data["channels"]["pypi"][x86]
    family = next(f for f in data["accelerators"].values() if gpu in {v["label"] for v in f.get("versions", {}).values()})
    version = next(v for v in family["versions"].values() if v["label"] == gpu)
    runtime = {Requirement(r).name for r in version["runtime_requirements"]}
    others = {d["arch"] for p, d in data["platforms"].items() if d["os"] == "linux" and p != x86}
    assert runtime and others

    matrix = str(tmp_path / "matrix.yaml")
    ok(helpers.builders("promote", str(only(wheelhouse, TARGET, tmp_path / "in")), "--matrix", matrix,
                        "--output", str(tmp_path / "pypi"), cwd=root, timeout=300))
    (promoted,) = (tmp_path / "pypi").glob("*.whl")
    with zipfile.ZipFile(promoted) as zf:
        (meta,) = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
        requires = [Requirement(r) for r in email.parser.Parser().parsestr(zf.read(meta).decode()).get_all("Requires-Dist")]

    def installed(arch: str) -> set[str]:
        return {r.name for r in requires if r.marker is None or r.marker.evaluate(linux_environment(arch))}

    assert not installed("x86_64") & runtime, requires
    for arch in others:
        assert runtime <= installed(arch), (arch, requires)
    ok(helpers.builders("verify", str(promoted), "--target", TARGET, "--matrix", matrix, cwd=root, timeout=300))


class Killed(BaseException):
    """promote-release stopped dead at a write (no handler of builders catches it): what a SIGKILL between two
    requests leaves in the bucket and on the package server."""


def counting_writes(monkeypatch: pytest.MonkeyPatch, kill_at: int | None) -> list[str]:
    """Every write promote-release makes, in order: each object copy, upload (the ledger's entry, lease and head on
    rclone, each page, the record) and deletion, each conditional head move, each PyPI file's twine upload; with
    ``kill_at`` the command dies as that write starts."""
    from builders.channels import ledger as ledger_mod
    from builders.channels import promotion as promotion_mod
    from builders.channels.objectstore import Bucket

    writes: list[str] = []

    def wrap(name: str, original: Any, *, bound: bool = True) -> Any:
        def write(*args: Any, **kwargs: Any) -> Any:
            what = args[1] if bound else next((a for a in args[0] if a.endswith(".whl")), "")
            if not bound and "twine" not in args[0]:
                return original(*args, **kwargs)
            if kill_at is not None and len(writes) == kill_at:
                raise Killed(f"killed at write {kill_at}: {name} {what}")
            writes.append(f"{name} {what}")
            return original(*args, **kwargs)
        return write

    for name in ("upload", "delete", "copy"):
        monkeypatch.setattr(Bucket, name, wrap(name, getattr(Bucket, name)))
    monkeypatch.setattr(ledger_mod.Ledger, "_put_conditional", wrap("head", ledger_mod.Ledger._put_conditional))
    monkeypatch.setattr(promotion_mod, "run", wrap("pypi", promotion_mod.run, bound=False))
    return writes


def release_state(s3: ObjectStore, pypi: PackageServer) -> dict[str, Any]:
    """What a reader of the release channel and of the package server gets, without what carries a time or a
    writer (the ledger entry's and the record's ``at``, the entry ids, the lease)."""
    files = s3.files("downloads")
    out: dict[str, Any] = {k: sha256(v) for k, v in files.items() if k.startswith("whl/cpu/")}
    head = json.loads(files["ledger/release/head.json"])
    entry = json.loads(files[f"ledger/release/entries/{head['entry']}.json"])
    out["ledger"] = (entry["seq"], entry["kind"], sorted((f["key"], f["sha256"]) for f in entry["added"]),
                     entry["promotion"])
    out["records"] = sorted(json.dumps({k: v for k, v in json.loads(v).items() if k not in ("at", "ledger_entry")},
                                       sort_keys=True) for k, v in files.items() if k.startswith("publish-records/release/"))
    out["pypi"] = {p.name: sha256(p.read_bytes()) for p in pypi.root.iterdir()}
    return out


def restore(s3: ObjectStore, before: dict[str, bytes], pypi: PackageServer) -> None:
    """The bucket as it was before the promotion, through the S3 API (rclone caches what its folder holds: a change
    behind its back is served wrong), and the package server without the files uploaded since."""
    promote_writes = sorted(set(s3.files("downloads")) - set(before))
    open_bucket(BUCKET, s3.env).delete(promote_writes)
    assert s3.files("downloads") == before
    for path in pypi.root.iterdir():
        path.unlink()


def test_a_promotion_killed_at_each_write_reruns_to_the_same_end(
        root: Path, matrix_path: Path, wheelhouse: Path, servers, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 43's kill-anywhere for promote-release with its PyPI upload (an attested candidate: each file's
    provenance copied, the PyPI file's attestation sent with it): the uninterrupted run's writes counted,
    then the bucket and the package server put back as they were before it and the command killed at each write in
    turn. Right after each kill pip installs from the release channel the new release, or finds no release at all
    (the old state: no page lists it yet), never a 404 or a hash error; the rerun exits 0 and reaches the
    uninterrupted run's end state (objects, pages, ledger, record, package server files); one more says "already
    done" and writes nothing."""
    from builders.cli import main

    s3, _staging, pypi = servers
    rc = make_candidate(root, s3, matrix_path, only(wheelhouse, TARGET, tmp_path / "w"), tmp_path / "rc", "v2.15.0-rc1",
                        attested=True)
    pypi_validation = staged(root, s3, matrix_path, rc, tmp_path)
    argv = ["promote-release", "--matrix", str(matrix_path), "--bucket", BUCKET, "--target", TARGET, "--manifest",
            str(rc.manifest), "--validation", str(rc.validation), "--pypi-wheels", str(rc.pypi), "--pypi-validation",
            str(pypi_validation), "--repository-url", pypi.url, "--simple-url", pypi.simple_url, "--audit-timeout", "30",
            "--attestations", str(rc.bundles)]
    for key, value in {**s3.env, **CREDENTIALS}.items():
        monkeypatch.setenv(key, value)
    bucket, before = s3.root / "downloads", s3.files("downloads")
    assert not list(pypi.root.iterdir())

    def fresh(kill_at: int | None) -> list[str]:
        monkeypatch.undo()
        for key, value in {**s3.env, **CREDENTIALS}.items():
            monkeypatch.setenv(key, value)
        helpers.one_writer_at_a_time(monkeypatch, 1.0)
        return counting_writes(monkeypatch, kill_at)

    started = time.monotonic()
    writes = fresh(None)
    assert main(argv) == 0
    whole, points = release_state(s3, pypi), len(writes)
    print(f"\n{points} kill points: {writes}")
    assert sum(w.startswith("copy ") for w in writes) == 3 and sum(w.startswith("pypi ") for w in writes) == 1, writes
    assert any(w.startswith("copy ") and w.endswith(".whl.provenance") for w in writes), "the provenance is copied"
    assert any(f.endswith(".whl.provenance") for f in whole), "and released with the wheel (the kill points' end)"
    assert any("publish-records/release/" in w for w in writes) and any("ledger/release/entries/" in w for w in writes)
    after = s3.files("downloads")
    capsys.readouterr()
    assert main(argv) == 0  # a rerun of a finished promotion
    again = capsys.readouterr()
    assert "already done" in again.out + again.err and s3.files("downloads") == after
    index, landed, spent = s3.http_url + "downloads/whl/cpu/", [], {"killed": 0.0, "pip": 0.0, "rerun": 0.0}
    for kill in range(points):
        restore(s3, before, pypi)
        fresh(kill)
        clock = time.monotonic()
        with pytest.raises(Killed):
            main(argv)
        fresh(None)
        spent["killed"] += time.monotonic() - clock
        clock = time.monotonic()
        got = pip_install(index, "minifw==2.15.0+cpu", tmp_path / f"pip{kill}")
        spent["pip"] += time.monotonic() - clock
        listed = (bucket / "whl/cpu/minifw/index.html").is_file()
        assert got.returncode == 0 if listed else "No matching distribution" in got.stderr, (writes[kill], got.stderr)
        assert "404" not in got.stderr and "hash" not in got.stderr.lower(), (writes[kill], got.stderr)
        landed.append("new" if got.returncode == 0 else "old")
        capsys.readouterr()
        clock = time.monotonic()
        assert main(argv) == 0, writes[kill]
        spent["rerun"] += time.monotonic() - clock
        said = capsys.readouterr()
        assert "finished a promotion cut short" in said.out + said.err or kill == 0, (writes[kill], said)
        assert release_state(s3, pypi) == whole, f"kill at write {kill} of {points}: {writes[kill]}"
    seconds = time.monotonic() - started
    print(f"{points} kill points in {seconds:.0f} s ({', '.join(f'{k} {v:.0f} s' for k, v in spent.items())}); "
          f"pip installed: {' '.join(landed)}")
    assert landed[0] == "old" and landed[-1] == "new", landed


def check_index(root: Path, s3: ObjectStore, matrix: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run(root, s3, "check-index", "--matrix", str(matrix), "--channel", "test", "--bucket", BUCKET,
               "--site-url", s3.http_url + "downloads/", *args)


def variant_index(folder: Path, name: str, body: bytes) -> None:
    """A PEP 825 variant index's project page listing one ``variants.json`` (the layout builders writes, at the
    matrix's ``wheel_variants.layout`` on the site)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(body)
    (folder / "index.json").write_text(json.dumps({"meta": {"api-version": "1.1"}, "name": folder.name, "files": [
        {"filename": name, "url": name, "hashes": {"sha256": sha256(body)}}]}))
    (folder / "index.html").write_text(f'<a href="{name}#sha256={sha256(body)}">{name}</a>')


def test_check_index_passes_a_clean_channel_and_reports_each_broken_promise(
        root: Path, matrix_path: Path, wheelhouse: Path, servers) -> None:
    """After a publish: the clean test channel passes (every cell resolved by pip and uv, the coverage table beside
    the index); then a file in JSON but not HTML, a missing hash, a changed variants.json and no provenance are
    each reported (exit 48), and a wheel gone from the pages is a missing cell (exit 49)."""
    s3, _staging, _pypi = servers
    ok(run(root, s3, "publish", str(wheelhouse), "--matrix", str(matrix_path), "--channel", "test", "--bucket", BUCKET))
    site = s3.root / "downloads"
    (project,) = {p.parent for p in site.glob("whl/test/*/*/*.whl")}
    wheels = sorted(p.name for p in project.glob("*.whl"))
    version = wheels[0].split("-")[1].split("+")[0]
    variants_name = f"{project.name}-{version}-variants.json"
    variant_index(site / "variants" / project.name, variants_name, b'{"default-priorities": {}}\n')
    clean = ok(check_index(root, s3, matrix_path, "--no-provenance", "--target", TARGET, "--target", LEFTOVER))
    coverage = json.loads((site / "whl/test/coverage.json").read_text())
    assert {(row["target"], row["file"], row["pip"], row["uv"]) for row in coverage["cells"]} == {
        (t, w, "resolved", "resolved") for t, w in zip((TARGET, LEFTOVER), sorted(wheels, key=lambda n: "cp313" in n))}
    assert coverage["variants_json"] == {variants_name: sha256(b'{"default-priorities": {}}\n')}
    assert "0 missing" in clean.stderr + clean.stdout and (site / "whl/test/coverage.html").is_file()

    page_json, page_html = project / "index.json", project / "index.html"
    saved = page_json.read_bytes(), page_html.read_bytes()
    data = json.loads(saved[0])
    del data["files"][0]["hashes"]
    page_json.write_text(json.dumps(data))
    page_html.write_text("\n".join(line for line in saved[1].decode().splitlines() if wheels[1] not in line))
    variant_index(site / "variants" / project.name, variants_name, b'{"default-priorities": {"changed": 1}}\n')
    broken = check_index(root, s3, matrix_path, "--target", TARGET)
    out = broken.stdout + broken.stderr
    assert broken.returncode == 48, out
    assert f"json-only: {wheels[1]}" in out and f"no-hash: {data['files'][0]['filename']}" in out, out
    assert f"variants-json-changed: {variants_name}" in out and "no-provenance" in out, out

    page_json.write_text(json.dumps({**data, "files": [f for f in json.loads(saved[0])["files"]
                                                      if f["filename"] != wheels[1]]}))
    page_html.write_text("\n".join(line for line in saved[1].decode().splitlines() if wheels[1] not in line))
    bare = check_index(root, s3, matrix_path, "--no-provenance", "--target", LEFTOVER)
    assert bare.returncode == 49 and "cpu-3.13-linux-x86_64" in bare.stderr, bare.stdout + bare.stderr
    missing = json.loads((site / "whl/test/coverage.json").read_text())["missing"]
    assert len(missing) == 1 and "3.13" in missing[0]


def attest(folder: Path, wheels: list[Path], *, ref: str = "refs/tags/v2.15.0-rc2", **identity: str) -> Path:
    """Bundles as the attest step writes them (tests/attestations.py: self-signed, offline), one per wheel."""
    return attestations.write(folder, {w.name: sha256(w.read_bytes()) for w in wheels}, ref=ref, **identity)


def pages_provenance(s3: ObjectStore, folder: str) -> dict[str, tuple[str | None, bytes | None]]:
    """file -> (the JSON page's provenance link, the object it resolves to over HTTP) of ``folder``'s project page;
    the HTML page links the same."""
    base = f"{s3.http_url}downloads/{folder}minifw/"
    page = json.loads(urllib.request.urlopen(base + "index.json", timeout=30).read())
    html = urllib.request.urlopen(base + "index.html", timeout=30).read().decode()
    out = {}
    for item in page["files"]:
        link = item.get("provenance")
        assert (f'data-provenance="{link}"' in html) == (link is not None), html
        out[item["filename"]] = (link, urllib.request.urlopen(base + link, timeout=30).read() if link else None)
    return out


def provenance_served_and_verified(root: Path, s3: ObjectStore, matrix: Path, wheelhouse: Path, rc: Candidate,
                                   on_test: dict[str, tuple[str | None, bytes | None]], tmp: Path) -> None:
    """After an attested candidate's promotion: both pages of test linked every file's PEP 740 provenance,
    promotion copied it to release, and verify-release passes there, then fails on a swapped file, a page's hash
    changed, another file's provenance and a provenance naming another workflow (each put back after)."""
    (wheel,) = find_wheels(rc.wheels)
    link, raw = on_test[wheel.name]  # rc1's leftover wheel was published without provenance: its pages link none
    assert link == f"{urllib.parse.quote(wheel.name)}.provenance" and raw, on_test
    assert pages_provenance(s3, "whl/cpu/") == {wheel.name: on_test[wheel.name]}, "promotion copies it"
    verify = ["verify-release", "2.15.0", "--matrix", str(matrix), "--channel", "release", "--site-url",
              s3.http_url + "downloads/", "--manifest", str(rc.manifest), "--repository", attestations.REPOSITORY]
    passed = ok(run(root, s3, *verify))
    said = passed.stdout + passed.stderr
    assert f"ok   {wheel.name}" in said and "not checked: the certificate's chain" in said
    key = f"whl/cpu/minifw/{wheel.name}"
    (tmp / "swapped").mkdir()
    swapped = rewrite(Wheel(wheel), tmp / "swapped", epoch=ZIP_EPOCH + 86400).read_bytes()  # same name, other bytes
    page = s3.files("downloads")["whl/cpu/minifw/index.json"]
    other = [p for p in find_wheels(wheelhouse) if p.name != wheel.name]
    cases = [(key, swapped, "served bytes have sha256"),
             ("whl/cpu/minifw/index.json", page.replace(sha256(wheel.read_bytes()).encode(), b"0" * 64),
              "the JSON page declares"),
             (f"{key}.provenance", provenance_bytes(attest(tmp / "other", other), other), "not this file's sha256"),
             (f"{key}.provenance", provenance_bytes(attest(tmp / "nightly", [wheel], workflow="nightly.yml"), [wheel]),
              "the certificate's workflow is 'nightly.yml'")]
    bucket = open_bucket(BUCKET, s3.env)
    for changed, data, reason in cases:
        kept = s3.files("downloads")[changed]
        bucket.upload(changed, data)
        refused(run(root, s3, *verify), reason, ReleaseUnverified.exit_code)
        bucket.upload(changed, kept)
    ok(run(root, s3, *verify))


def provenance_bytes(bundles: Path, wheels: list[Path]) -> bytes:
    """The one provenance object those bundles make for one of ``wheels``."""
    made = provenance.provenances(provenance.read_bundles(bundles), {w.name: sha256(w.read_bytes()) for w in wheels})
    (raw,) = made.values()
    return raw
