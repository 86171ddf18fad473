"""uv's index order in ``validate``, with the real uv on two local indexes: the situation of every release after
the first, where the PyPI form under validation is on a staging index and PyPI (the extra index, for the
requirements) already serves the project's earlier release.

uv takes each package from the first index that has it at all, and puts ``--extra-index-url`` before
``--index-url``; given pip's way (``--index-url STAGING --extra-index-url PYPI``) it finds the project on PyPI,
where the new version is not, and fails. ``validate.uv_steps`` puts the index under validation first."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from builders.channels import validate
from builders.wheel.writer import write_wheel


def wheel(index: Path, name: str, version: str, requires: tuple[str, ...] = ()) -> None:
    """A pure wheel of ``name`` ``version`` in ``index/<name>/`` (a PEP 503 folder, served as file://)."""
    info = f"{name}-{version}.dist-info"
    metadata = "".join([f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
                        *(f"Requires-Dist: {r}\n" for r in requires)])
    members = {f"{name}/__init__.py": b"", f"{info}/METADATA": metadata.encode(),
               f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    folder = index / name
    folder.mkdir(parents=True, exist_ok=True)
    write_wheel(folder / f"{name}-{version}-py3-none-any.whl", members, info, {}, 1_700_000_000)


def page(index: Path) -> None:
    """index.html for every project folder (uv reads a file:// simple index through its pages)."""
    projects = sorted(p for p in index.iterdir() if p.is_dir())
    (index / "index.html").write_text("".join(f'<a href="{p.name}/">{p.name}</a>\n' for p in projects))
    for project in projects:
        links = "".join(f'<a href="{w.name}">{w.name}</a>\n' for w in sorted(project.glob("*.whl")))
        (project / "index.html").write_text(links)


@pytest.fixture()
def indexes(tmp_path: Path) -> tuple[str, str]:
    """(staging, pypi): staging holds demo 2.0 (the new release's PyPI form), pypi demo 1.0 and its requirement."""
    staging, pypi = tmp_path / "staging", tmp_path / "pypi"
    wheel(staging, "demo", "2.0", requires=("helper",))
    wheel(pypi, "demo", "1.0", requires=("helper",))
    wheel(pypi, "helper", "1.0")
    for index in (staging, pypi):
        page(index)
    return staging.as_uri() + "/", pypi.as_uri() + "/"


def resolve(argv: list[str], target: Path) -> subprocess.CompletedProcess[str]:
    """A dry run into ``target`` (uv still takes a lock file there, so never the working folder)."""
    uv = str(Path(sys.executable).with_name("uv"))
    return subprocess.run([uv, "pip", "install", "--dry-run", "--no-config", "--no-cache", "--python", sys.executable,
                           "--target", str(target), *argv, "demo==2.0"], capture_output=True, text=True, timeout=120)


def test_the_new_release_resolves_from_the_staging_index_with_its_requirement_from_pypi(indexes, tmp_path: Path) -> None:
    staging, pypi = indexes
    source = validate.Source(index_url=staging, extra_index_urls=(pypi,), requirement="demo==2.0", dist_version="2.0")
    proc = resolve(validate.uv_index_args(source), tmp_path / "target")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "demo==2.0" in proc.stderr and "helper==1.0" in proc.stderr, proc.stderr


def test_pips_order_given_to_uv_finds_no_solution(indexes, tmp_path: Path) -> None:
    """The order validate gave uv before: what the test above guards against (it fails with it)."""
    staging, pypi = indexes
    proc = resolve(["--index-url", staging, "--extra-index-url", pypi], tmp_path / "target")
    assert proc.returncode != 0 and "No solution found" in proc.stderr, proc.stdout + proc.stderr
