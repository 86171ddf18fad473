"""The pure parts of the release's integrity: the manifest, the preflight's rules over records and PyPI files,
yank marks on the pages, and the staging index (the servers are in tests/integration/test_release_integrity.py)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from pathlib import Path

import pytest
from packaging.version import Version

from builders.base.errors import InputError
from builders.channels import manifest, promoting, promotion
from builders.channels import page_yanks as yank
from builders.channels.evidence import InstallVerdict, TargetVerdict, ValidationRecord
from builders.channels.manifest import LABELLED, PYPI, Manifest, ManifestFile
from builders.channels.publication import SiteEntry, yanked
from builders.index.pages import IndexedFile, project_html, project_json
from builders.index.staging import staging_index
from builders.matrix.model import Matrix
from builders.matrix.targets import Target, expand


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def candidate(m: Matrix, targets: list[Target], *, tag: str | None = None) -> Manifest:
    version = str(m.project.version.public)
    files = tuple(ManifestFile(name=t.wheel_name, sha256=sha(t.id), size=1, target=t.id, form=LABELLED)
                  for t in targets)
    return Manifest(project=m.project.name, version=version, channel="test", commit="c0ffee", tag=tag or f"v{version}-rc2",
                    run_id="7", files=files)


def record(release: Manifest, entries: list[TargetVerdict], channel: str = "test") -> ValidationRecord:
    return ValidationRecord(project=release.project, manifest_sha256=release.digest, version=release.version,
                            channel=channel, host="h", targets=tuple(entries))


def passed(file: ManifestFile, *installs: tuple[str, str]) -> TargetVerdict:
    return TargetVerdict(target=file.target, status="passed",
                         installs=tuple(InstallVerdict(installer=i, status="passed", filename=file.name, sha256=s)
                                        for i, s in installs))


def test_a_manifest_round_trips_and_its_digest_is_its_content(m: Matrix, tmp_path: Path) -> None:
    release = candidate(m, list(expand(m)[0][:3]))
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(release.to_json()), encoding="utf-8")  # another layout: the same digest
    assert manifest.load(path) == release and manifest.read_digest(path) == release.digest
    other = Manifest(**{**release.__dict__, "run_id": "8"})
    assert other.digest != release.digest


@pytest.mark.parametrize(("edit", "key"), [(("files", 0, "sha256"), "files[0].sha256"), (("tag",), "tag"),
                                           (("files", 0, "name"), "files[0].name"),
                                           (("manifest_version",), "manifest_version")])
def test_a_broken_manifest_names_the_key(m: Matrix, tmp_path: Path, edit: tuple, key: str) -> None:
    data = candidate(m, list(expand(m)[0][:1])).to_json()
    node = data
    for part in edit[:-1]:
        node = node[part]
    node[edit[-1]] = 5
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(InputError, match=re.escape(f"{path}: {key}:")):
        manifest.load(path)


def test_the_manifest_must_be_the_candidate_the_matrix_and_the_run_name(m: Matrix) -> None:
    release = candidate(m, list(expand(m)[0][:1]))
    assert manifest.identity_problems(release, m, {"version": release.version, "tag": release.tag}) == []
    next_version = Version(f"{m.project.version.major}.{m.project.version.minor}.{m.project.version.micro + 1}")
    bumped = Manifest(**{**release.__dict__, "version": str(next_version), "tag": f"v{next_version}-rc1"})
    (problem,) = manifest.identity_problems(bumped, m, {})
    assert f"the matrix ({m.path}) says {m.project.version.public}" in problem
    final = candidate(m, list(expand(m)[0][:1]), tag=f"v{release.version}")
    assert any("not a candidate tag" in p for p in manifest.identity_problems(final, m, {}))
    wrong = manifest.identity_problems(release, m, {"commit": "beef", "run_id": "9"})
    assert len(wrong) == 2 and all("the run to release has" in p for p in wrong)


def test_records_of_another_manifest_or_none_speak_for_nothing(m: Matrix) -> None:
    release = candidate(m, list(expand(m)[0][:1]))
    assert promoting.record_problems([record(release, [])], release, "test", "validation") == []
    old = dataclasses.replace(record(release, []), manifest_sha256="")
    (problem,) = promoting.record_problems([old], release, "test", "validation")
    assert "no manifest" in problem
    other = dataclasses.replace(record(release, []), version="0.0.1")
    assert "not test" in promoting.record_problems([other], release, "test", "validation")[0]


def test_a_pass_counts_only_when_every_installer_got_the_manifests_bytes(m: Matrix) -> None:
    """The uv record that carried no sha256, and bytes replaced after validation: both refused."""
    release = candidate(m, list(expand(m)[0][:2]))
    first, second = release.files
    found = promoting.verdicts([record(release, [passed(first, ("pip", first.sha256), ("uv", first.sha256)),
                                                 passed(second, ("pip", second.sha256), ("uv", ""))])])
    (refusal,) = promoting.file_refusals(release.files, found, (), "validation")
    assert second.target in refusal and "with uv" in refusal and "not recorded" in refusal
    replaced = promoting.verdicts([record(release, [passed(first, ("pip", "f" * 64))])])
    assert "f" * 64 in promoting.file_refusals((first,), replaced, (), "validation")[0]


def test_pypi_files_must_be_the_manifests_within_limits_and_the_server_asked(m: Matrix, tmp_path: Path) -> None:
    wheel = tmp_path / f"{m.project.name}-{m.project.version.public}-cp312-cp312-manylinux_2_28_x86_64.whl"
    wheel.write_bytes(b"w" * 2000)
    file = ManifestFile(name=wheel.name, sha256=hashlib.sha256(wheel.read_bytes()).hexdigest(), size=2000,
                        target="t", form=PYPI)
    release = Manifest(**{**candidate(m, []).__dict__, "files": (file,)})
    mine = promotion.PypiFile(path=wheel, sha256=file.sha256, size=file.size)
    ok = promotion.Evidence(manifest=release)
    version = str(m.project.version.public)
    assert promotion.pypi_refusals([mine], ok, version) == []
    stray = promotion.PypiFile(path=tmp_path / "x-1-py3-none-any.whl", sha256="a" * 64, size=1)
    assert any("does not name" in r for r in promotion.pypi_refusals([mine, stray], ok, version))
    held = promotion.Server(project_bytes=int(0.001 * 1e9))  # every earlier release counts towards the total
    full = promotion.Evidence(manifest=release, server=held,
                              limits=promotion.PypiLimits(total_gb=0.001))
    assert "MB already, every release counted" in " ".join(promotion.pypi_refusals([mine], full, version))
    granted = promotion.Evidence(manifest=release,
                                 limits=promotion.PypiLimits(file_mb=5000))
    assert "over the most PyPI grants" in " ".join(promotion.pypi_refusals([mine], granted, version))
    down = promotion.Evidence(manifest=release,
                              server=promotion.Server(problem="connection refused"))
    assert "could not be asked" in " ".join(promotion.pypi_refusals([mine], down, version))


def test_the_upload_is_checked_before_anything_is_written() -> None:
    assert "TWINE_USERNAME" in promotion.upload_problem({}, trusted_publishing=False)
    assert promotion.upload_problem({}, trusted_publishing=True) == ""
    assert promotion.upload_problem({"TWINE_USERNAME": "__token__", "TWINE_PASSWORD": "t"},
                                    trusted_publishing=False) == ""


def test_without_twine_the_preflight_says_so_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """twine is a dependency of builders now; an interpreter without it is told before the copy (it failed with
    exit 12 after the release channel was written)."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "twine" else real(name, *a))
    problem = promotion.upload_problem({"TWINE_USERNAME": "u", "TWINE_PASSWORD": "p"}, trusted_publishing=False)
    assert "twine is not importable" in problem


def info(filename: str, reason: str | None = None) -> IndexedFile:
    return IndexedFile(filename=filename, project="minifw", label="cpu", sha256="0" * 64, size=1, version="2.15.0+cpu",
                       requires_python=None, metadata=b"m", yanked=reason)


def test_yanked_files_carry_pep_592_in_both_forms() -> None:
    files = [info("minifw-2.15.0+cpu-py3-none-any.whl", "broken CUDA kernels"), info("minifw-2.14.0+cpu-py3-none-any.whl")]
    page = project_html("minifw", files)
    assert 'data-yanked="broken CUDA kernels"' in page and page.count("data-yanked") == 1
    data = project_json("minifw", files)
    by_name = {f["filename"]: f for f in data["files"]}
    assert yanked(by_name[files[0].filename]) == "broken CUDA kernels" and yanked(by_name[files[1].filename]) is None
    assert project_json("minifw", [info("a-1-py3-none-any.whl", "")])["files"][0]["yanked"] is True
    assert yanked({"yanked": True}) == "" and yanked({"yanked": False}) is None


def test_a_yank_marks_only_the_projects_files_of_that_version() -> None:
    entries = {f"whl/cpu/minifw/{n}": SiteEntry(info=IndexedFile(
        filename=n, project=p, label="cpu", sha256="0" * 64, size=1, version=v, requires_python=None, metadata=b""))
        for n, p, v in [("minifw-2.15.0+cpu-py3-none-any.whl", "minifw", "2.15.0+cpu"),
                        ("minifw-2.14.0+cpu-py3-none-any.whl", "minifw", "2.14.0+cpu"),
                        ("numpy-2.15.0-py3-none-any.whl", "numpy", "2.15.0")]}
    keys = yank.of_version(entries, "MiniFW", Version("2.15.0"))
    assert keys == ["whl/cpu/minifw/minifw-2.15.0+cpu-py3-none-any.whl"]
    after = yank.marked(entries, keys, "why")
    assert [k for k, e in after.items() if e.info.yanked is not None] == keys


def test_the_staging_index_serves_exactly_the_files_given(tmp_path: Path) -> None:
    import requests

    wheel = tmp_path / "Mini_FW-2.15.0-py3-none-any.whl"
    wheel.write_bytes(b"candidate")
    with staging_index([wheel]) as url:
        page = requests.get(url + "mini-fw/", timeout=10)
        assert page.status_code == 200 and wheel.name in page.text
        assert requests.get(url + "mini-fw/" + wheel.name, timeout=10).content == b"candidate"
    with pytest.raises(requests.ConnectionError):
        requests.get(url, timeout=5)
