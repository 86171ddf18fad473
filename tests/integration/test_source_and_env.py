"""Issue 42, items 4 and 7, with real builds: nothing of the source tree is lost (packages named ``build`` and
``dist`` are in the wheel and in the digest), a variant's CMAKE_ARGS come from the matrix, and a shell's own
CMAKE_ARGS and CFLAGS reach no build unless ``build.environment_pass`` names them.

Two tiny projects compile in seconds: ``nested`` (written here: setuptools, a one-function C extension,
subpackages ``nested/build`` and ``nested/dist``) and ``tests/projects/switched`` (scikit-build-core and CMake,
switched by ``CMAKE_ARGS``; its CMakeLists and C source stop the build if the host's variables reach it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest
import yaml

from builders.pipeline import sourcetree
from builders.pipeline.store import tree_digest
from tests import helpers

pytestmark = pytest.mark.slow

SWITCHED = Path(__file__).resolve().parent.parent / "projects" / "switched"
TID = "cpu-cp312-linux-x86_64"
LEFTOVERS = {"CMAKE_ARGS": "-DSWITCHED_BROKEN=ON", "CFLAGS": "-DBROKEN", "CPPFLAGS": "-DBROKEN"}
NESTED_MATRIX = """\
schema_version: 1
project:
  name: nested
  import_name: nested
  version: 1.0.0
  source: .
  requires_python: ">=3.11"
  extension_modules: [nested._c]
  build:
    command: ["{python}", "-m", "pip", "wheel", "--no-deps", "--wheel-dir", "{outdir}", "{source}"]
pythons: ["3.12"]
platforms:
  linux-x86_64: {os: linux, arch: x86_64, wheel_platform: manylinux_2_28_x86_64, runner: ubuntu-24.04,
                 base_image: quay.io/pypa/manylinux_2_28_x86_64}
accelerators:
  cpu: {label: cpu}
channels:
  pypi: {linux-x86_64: cpu}
  index: {base_url: "https://download.nested.invalid/", layout: "whl/{label}/"}
"""
NESTED_SETUP = """\
from setuptools import Extension, find_packages, setup
setup(name="nested", version="1.0.0", python_requires=">=3.11", packages=find_packages(include=["nested", "nested.*"]),
      ext_modules=[Extension("nested._c", ["nested/_c.c"])])
"""
NESTED_C = """\
#include <Python.h>
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_c", NULL, -1, NULL};
PyMODINIT_FUNC PyInit__c(void) { return PyModule_Create(&module); }
"""


def nested_tree(where: Path) -> Path:
    """The project, with what a previous setuptools build leaves at the top (``build/lib``: a stale module)."""
    files = {"matrix.yaml": NESTED_MATRIX, "setup.py": NESTED_SETUP, "nested/_c.c": NESTED_C,
             "pyproject.toml": '[build-system]\nrequires = ["setuptools>=70"]\nbuild-backend = "setuptools.build_meta"\n',
             "nested/__init__.py": "", "nested/build/__init__.py": "WHERE = 'build'\n",
             "nested/dist/__init__.py": "WHERE = 'dist'\n", "build/lib/nested/stale.py": "STALE = True\n"}
    for name, text in files.items():
        (where / name).parent.mkdir(parents=True, exist_ok=True)
        (where / name).write_text(text)
    return where


def as_git_checkout(tree: Path) -> None:
    """A git checkout that ignores its top-level build outputs and its scratch files, and tracks the rest."""
    (tree / ".gitignore").write_text("/build/\n/dist/\n*.egg-info/\n*.tmp\n")
    (tree / "nested" / "build" / "scratch.tmp").write_text("ignored by git\n")
    git = ["git", "-C", str(tree), "-c", "user.email=t@example.invalid", "-c", "user.name=t"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run([*git, *args], check=True, capture_output=True, timeout=60)


def run(tree: Path, out: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return helpers.builders("build", "--matrix", str(tree / "matrix.yaml"), "--source", str(tree), "--output",
                            str(out), "--target", TID, *args, cwd=out.parent, env=env)


def plan(tree: Path, out: Path, env: dict[str, str] | None = None) -> dict:
    proc = run(tree, out, "--dry-run", "--json", env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (found,) = json.loads(proc.stdout)["plans"]
    return dict(found)


def built(tree: Path, out: Path, env: dict[str, str] | None = None) -> dict:
    proc = run(tree, out, env=env)
    (record,) = json.loads((out / "results.json").read_text())["targets"]
    assert proc.returncode == 0 and record["status"] == "built", (record, proc.stdout[-3000:], proc.stderr[-3000:])
    return dict(record)


def wheel_names(out: Path, record: dict) -> set[str]:
    with zipfile.ZipFile(out / record["wheel"]) as wheel:
        return set(wheel.namelist())


def source_digest(tree: Path) -> str:
    """The source digest as a run works it out (git asked for real), without a run's start-up per edit."""
    return tree_digest(tree, sourcetree.excluded(tree, os.environ))


def edits_change_the_digest(tree: Path, first: str, kept: tuple[str, ...], left_out: tuple[str, ...]) -> None:
    assert source_digest(tree) == first
    for name in kept:
        path = tree / name
        original = path.read_text()
        path.write_text(original + "EDITED = True\n")
        assert source_digest(tree) != first, name
        path.write_text(original)
    for name in left_out:
        (tree / name).write_text("EDITED = True\n")
        assert source_digest(tree) == first, name


@pytest.mark.parametrize("vcs", [False, True], ids=["unpacked-sdist", "git-checkout"])
def test_packages_named_build_and_dist_are_in_the_wheel_and_the_digest(tmp_path: Path, vcs: bool) -> None:
    tree = nested_tree(tmp_path / "src")
    if vcs:
        as_git_checkout(tree)
    out = tmp_path / "out"
    names = wheel_names(out, built(tree, out))
    assert {"nested/build/__init__.py", "nested/dist/__init__.py"} <= names, sorted(names)
    assert "nested/stale.py" not in names and not any(n.endswith(".tmp") for n in names)  # the top-level build/ stays out
    shown = plan(tree, out)
    ignored = ["build", *(["nested/build/scratch.tmp"] if vcs else [])]  # git's list, or the default one
    assert shown["prepare"][0]["argv"][8:] == [*ignored, str(out)]  # the output folder is never copied
    left_out = ("build/lib/nested/stale.py", *(["nested/build/scratch.tmp"] if vcs else []))
    edits_change_the_digest(tree, shown["source_digest"], ("nested/build/__init__.py", "nested/dist/__init__.py"),
                            left_out)


def switched_tree(where: Path, **build: object) -> Path:
    tree = where / "src"
    shutil.copytree(SWITCHED, tree, dirs_exist_ok=True)
    data = yaml.safe_load((SWITCHED / "matrix.yaml").read_text())
    data["project"]["build"].update(build)
    (tree / "matrix.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return tree


def test_a_variants_cmake_args_come_from_the_matrix_and_a_shells_never_reach_it(tmp_path: Path) -> None:
    tree, out = switched_tree(tmp_path), tmp_path / "out"
    dirty = {**os.environ, **LEFTOVERS}
    record = built(tree, out, env=dirty)  # CMakeLists and switched.c stop a build the leftovers reach
    assert record["smoke"]["project_ok"] is True, record  # switched.switches() == (1, "cpu"): the variant's CMAKE_ARGS
    clean = {k: v for k, v in os.environ.items() if k not in LEFTOVERS}
    shown = plan(tree, out, env=dirty)
    assert shown["digest"] == plan(tree, out, env=clean)["digest"]
    assert shown["build"]["env"]["CMAKE_ARGS"] == "-DSWITCHED_FAST=ON -DSWITCHED_LABEL=cpu"
    assert not set(LEFTOVERS) & set(shown["host_variables"]["kept"]) and shown["host_variables"]["named"] == []


def test_a_host_variable_named_in_environment_pass_reaches_the_build(tmp_path: Path) -> None:
    tree, out = switched_tree(tmp_path, environment_pass=["CFLAGS"]), tmp_path / "out"
    dirty = {**os.environ, **LEFTOVERS}
    clean = {k: v for k, v in os.environ.items() if k not in LEFTOVERS}
    shown = plan(tree, out, env=dirty)
    assert shown["digest"] != plan(tree, out, env=clean)["digest"] and shown["host_variables"]["named"] == ["CFLAGS"]
    proc = run(tree, out, env=dirty)
    (record,) = json.loads((out / "results.json").read_text())["targets"]
    assert proc.returncode != 0 and record["stage"] == "build", record
    assert "this host's CFLAGS reached the build" in (out / record["log"]).read_text()
