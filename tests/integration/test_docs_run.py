"""Docs that run: every command line of the release wing's pages, as written, against the loopback servers.

Each ``python -m builders``, ``nox``, ``pip`` and ``uv`` line of a fenced shell block of docs/channels.md,
docs/release.md and docs/release-workflow.md runs in document order in one scratch folder, its placeholders filled
from ``FILL`` (the one table), against ``rclone serve s3`` with its static web front (the bucket and the site) and
two pypiserver instances (PyPI and the staging index). A line that fails fails the test; a line that cannot run
here is in ``CANNOT`` with the reason. The wheels are tiny prebuilt ones (a pure package under the demo's name,
one cpu-cp311 wheel and a nightly one), on a copy of the shipped matrix that makes cpu the PyPI default and drops the
compiled module and the project's smoke script, so the commands themselves are what the test spends its time on.
"""

from __future__ import annotations

import datetime
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from builders.families import loader as matrix
from builders.matrix.model import Matrix
from builders.wheel.writer import write_wheel
from tests import expected
from tests.helpers import edit
from tests.objectstore import ObjectStore, PackageServer, object_store, package_server

pytestmark = pytest.mark.slow
DOCS = ("docs/channels.md", "docs/release.md", "docs/release-workflow.md")
PROGRAMS = ("python -m builders ", "nox ", "pip ", "uv ")
TAG = "cp311-cp311-manylinux_2_28_x86_64"
PUBLISH = ["python", "-m", "builders", "publish"]

# The one table: a doc's placeholder -> what it is here (a callable reads what the run so far printed).
Servers = tuple[ObjectStore, PackageServer, PackageServer]
FILL: dict[str, Callable[[Servers, str], str]] = {
    "s3://BUCKET/": lambda s, _out: "s3://downloads/",
    "https://HOST/": lambda s, _out: s[0].http_url + "downloads/",
    "PYPI_UPLOAD_URL": lambda s, _out: s[1].url,
    "PYPI_SIMPLE_URL": lambda s, _out: s[1].simple_url,
    "NIGHTLY_WHEELHOUSE": lambda s, _out: "nightly-wheels/",
    "WHEELHOUSE": lambda s, _out: "candidate-wheels/",
    "SHA": lambda s, _out: "c0ffee",
    "ID": lambda s, _out: "7",
    "TARGET": lambda s, _out: "cpu-cp311-linux-x86_64",
    "PROMOTION_ID": lambda s, out: re.findall(r"^(\S+)\s+promotion\b", out, re.M)[-1],
}
# Lines that cannot run here, by their start, with the reason.
CANNOT = {
    "nox -s build -- --target": "compiles the demo (minutes on two cores): the test's wheelhouse/ stands in for "
                                "its output",
}


def command_lines(text: str) -> list[str]:
    """The command lines of ``text``'s fenced shell blocks, continuation lines joined, comments dropped."""
    lines: list[str] = []
    for block in re.findall(r"^```(?:sh|bash|shell)\n(.*?)^```", text, re.M | re.S):
        joined = re.sub(r"\\\n\s*", "", block)
        for line in joined.splitlines():
            line = line.split("  #")[0].strip()
            if line.startswith(PROGRAMS):
                lines.append(line)
    return lines


def tiny_wheel(folder: Path, m: Matrix, version: str, label: str) -> Path:
    """A pure wheel of the project under a cp311 Linux tag, which the copy's matrix takes for ``label``'s target."""
    folder.mkdir(parents=True, exist_ok=True)
    name, full = m.project.name, f"{version}+{label}"
    dist_info = f"{name}-{full}.dist-info"
    requires = [*map(str, m.project.requirements), *map(str, m.variant(label).requirements)]
    meta = (f"Metadata-Version: 2.4\nName: {name}\nVersion: {full}\nRequires-Python: {m.project.requires_python}\n"
            + "".join(f"Requires-Dist: {r}\n" for r in requires) + "\n")
    members = {
        f"{name}/__init__.py": f"__version__ = '{full}'\n".encode(),
        f"{dist_info}/METADATA": meta.encode(),
        f"{dist_info}/WHEEL": f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: {TAG}\n".encode(),
    }
    path = folder / f"{name}-{full}-{TAG}.whl"
    write_wheel(path, members, dist_info, {}, 1700000000)
    return path


def docs_matrix(shipped: str) -> str:
    """The shipped matrix with cpu as PyPI's default, no compiled module and no project smoke script."""
    for platform, old in expected.raw(shipped)["channels"]["pypi"].items():
        shipped = edit(shipped, f"    {platform}: {old}\n", f"    {platform}: cpu\n")
    shipped = edit(shipped, "extension_modules: [minifw._C]", "extension_modules: []")
    return edit(shipped, "  smoke:\n    script: examples/minifw/smoke.py\n", "  smoke:\n")


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[Servers]:
    with object_store(tmp_path / "store") as s3, package_server(tmp_path / "pypi") as pypi, \
            package_server(tmp_path / "staging") as staging:
        s3.make_bucket("downloads")
        yield s3, pypi, staging


def scratch(tmp_path: Path, root: Path, shipped: str) -> Path:
    """The folder the lines run in: the matrix copy and the wheelhouses a build would leave."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "matrix.yaml").write_text(docs_matrix(shipped), encoding="utf-8")
    (work / "examples/minifw").mkdir(parents=True)  # nothing here builds: the source is never read
    m = matrix.load(work / "matrix.yaml")
    nightly = m.channels.channel("nightly").version(m.project.version, datetime.date(2026, 12, 1))
    tiny_wheel(work / "nightly-wheels", m, str(nightly), "cpu")
    for house in ("candidate-wheels", "wheelhouse"):
        tiny_wheel(work / house, m, str(m.project.version), "cpu")
    return work


def tools(tmp_path: Path) -> Path:
    """A bin folder first on PATH: ``python`` and ``nox``/``uv`` from the suite's venv, ``pip`` of a fresh venv
    (a doc's ``pip install`` must not install into the suite's own environment)."""
    venv = tmp_path / "user-venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    here = Path(sys.executable).parent
    for tool, program in (("python", here / "python"), ("nox", here / "nox"), ("uv", here / "uv"),
                          ("pip", venv / "bin" / "pip")):
        (bin_ / tool).write_text(f'#!/bin/sh\nexec {program} "$@"\n')  # a link would lose the venv
        (bin_ / tool).chmod(0o755)
    return bin_


def filled(line: str, s: Servers, out: str) -> str:
    """``line`` with each placeholder (a whole word) replaced by its value here."""
    for placeholder, value in FILL.items():
        pattern = rf"(?<!\w){re.escape(placeholder)}(?!\w)"
        if re.search(pattern, line):
            line = re.sub(pattern, value(s, out).replace("\\", r"\\"), line)
    return line


def test_every_command_line_of_the_release_docs_runs_as_written(root: Path, shipped_text: str, servers: Servers,
                                                                  tmp_path: Path) -> None:
    work = scratch(tmp_path, root, shipped_text)
    mine = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}  # the index alone counts
    env = {**mine, **servers[0].env, "PYTHONPATH": str(root), "TWINE_USERNAME": "builders",
           "TWINE_PASSWORD": "unused", "PATH": f"{tools(tmp_path)}:{os.environ['PATH']}",
           "PIP_CONFIG_FILE": os.devnull, "UV_NO_CONFIG": "1"}
    out, ran = "", 0
    for doc in DOCS:
        for line in command_lines((root / doc).read_text(encoding="utf-8")):
            if any(line.startswith(start) for start in CANNOT):
                continue
            command = filled(line, servers, out)
            proc = subprocess.run(["bash", "-c", command], cwd=work, env=env, capture_output=True, text=True,
                                  timeout=600)
            assert proc.returncode == 0, f"{doc}: {line}\n-> {command}\nexit {proc.returncode}\n{proc.stdout}{proc.stderr}"
            out += proc.stdout + proc.stderr
            ran += 1
    assert ran >= 10, ran
    again = subprocess.run([*PUBLISH, "candidate-wheels/", "--channel", "test", "--bucket", "s3://downloads/"],
                           cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 41 and "released already" in again.stderr, again.stdout + again.stderr  # not at promotion
    for installer in ("pip", "uv"):  # validate said each step as it started (pip's install is silent for 30 s)
        for step in ("a fresh venv", "installing minifw", "smoke test of minifw-2.15.0+cpu-"):
            assert f"cpu-cp311-linux-x86_64: {installer}: {step}" in out, out
    assert yanked_installs(tmp_path / "user-venv", servers[0].http_url + "downloads/whl/cpu/", env) == MEASURED


# What pip and uv do with the version channels.md yanks when it is the index's only one, as that page says (PEP 592:
# a yanked file still satisfies a requirement nothing else does): (installer, requirement) -> installs.
MEASURED = {(tool, req): True for tool in ("pip", "uv") for req in ("minifw", "minifw==2.15.0", "minifw==2.15.0+cpu")}


def yanked_installs(venv: Path, index: str, env: dict[str, str]) -> dict[tuple[str, str], bool]:
    """Whether each installer resolves each requirement from the release index (a dry run into ``venv``)."""
    python = str(venv / "bin" / "python")
    argv = {"pip": [python, "-m", "pip", "install", "--dry-run", "--no-deps"],
            "uv": [str(Path(sys.executable).parent / "uv"), "pip", "install", "--dry-run", "--no-deps", "--python", python]}
    return {(tool, req): subprocess.run([*argv[tool], "--index-url", index, req], env=env, capture_output=True,
                                        timeout=300).returncode == 0
            for tool, req in MEASURED}
