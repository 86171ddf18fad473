"""builders installed the way a user installs it: sdist, wheel from that sdist, a fresh venv.

Marked slow. The editable install the other tests use finds every file in the checkout, so
it cannot show that the package carries what it needs at run time (the Containerfiles and
their scripts, the smoke probe, the JSON Schemas, the report template). Here the sdist is
built from a copy of the working tree's files (what ``git ls-files`` lists, as a fresh clone
plus uncommitted work would hold; no ``*.egg-info``, since setuptools without a VCS plugin
reads a stale ``SOURCES.txt`` back into the sdist and would hide a file the package data
misses), the wheel from that sdist, and the wheel goes into a new venv (dependencies from
the package index as pip is configured here; pip's cache is reused). Then, from an empty
folder, the installed tool plans, prints the image commands, builds one cpu target of this
host and smoke-tests the wheel it made.
"""

from __future__ import annotations

import fnmatch
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from builders.families import loader as matrix_mod
from builders.matrix.targets import Target, expand
from builders.pipeline.host import detect, unbuildable
from tests import expected
from tests.helpers import accelerator

pytestmark = pytest.mark.slow

# What must be shipped as package data: (folder under builders/, glob).
PACKAGE_DATA = (("resources/containers", "*"), ("resources", "smoke_probe.py"), ("schema", "*.json"),
                ("templates", "*.j2"))


@dataclass(frozen=True)
class Installed:
    """The fresh venv with builders installed from its wheel, and the artifacts it came from."""

    python: Path
    purelib: Path
    sdist: Path
    wheel: Path
    package: frozenset[str]  # the package's files in the copy the sdist was built from


def run(argv: list[str | Path], *, cwd: Path, env: dict[str, str] | None = None,
        timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([str(a) for a in argv], cwd=cwd, env=env, text=True, capture_output=True, timeout=timeout)
    assert proc.returncode == 0, f"{argv} exited {proc.returncode}\n{proc.stdout[-4000:]}\n{proc.stderr[-6000:]}"
    return proc


def user_env() -> dict[str, str]:
    """This environment as a user's shell would have it: no test venv on PATH, nothing pointing into the checkout."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    if sys.prefix != sys.base_prefix:  # drop the test venv's bin folder, never a system one
        ours = str(Path(sys.executable).parent)
        env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != ours)
    return env


def venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def working_tree_files(root: Path) -> list[str]:
    """Tracked and untracked-but-not-ignored files: what a clone with this work in it would hold."""
    out = run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root).stdout
    return sorted(f for f in out.split("\0") if f and (root / f).is_file())


def build_frontend(tmp: Path) -> list[str | Path]:
    """``python -m build``: the test venv's if it has it, else one installed into a tool venv here."""
    if importlib.util.find_spec("build") is not None:
        return [sys.executable, "-m", "build"]
    run([sys.executable, "-m", "venv", tmp / "tool"], cwd=tmp)
    run([venv_python(tmp / "tool"), "-m", "pip", "install", "build"], cwd=tmp)
    return [venv_python(tmp / "tool"), "-m", "build"]


def build_dists(root: Path, tmp: Path) -> tuple[Path, Path, frozenset[str]]:
    """The sdist of a copy of the working tree, the wheel built from that sdist, and the package's files copied.

    The copy is the reference: others may add files to the checkout while this runs.
    """
    src, dist = tmp / "src", tmp / "dist"
    files = working_tree_files(root)
    for name in files:
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / name, src / name)
    frontend = build_frontend(tmp)
    run([*frontend, "--sdist", "--outdir", dist, src], cwd=tmp)
    (sdist,) = dist.glob("*.tar.gz")
    run([*frontend, "--wheel", "--outdir", dist, sdist], cwd=tmp)
    (wheel,) = dist.glob("*.whl")
    return sdist, wheel, frozenset(f for f in files if f.startswith("builders/"))


@pytest.fixture(scope="module")
def installed(root: Path, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    tmp = tmp_path_factory.mktemp("installed")
    sdist, wheel, package = build_dists(root, tmp)
    venv = tmp / "venv"
    run([sys.executable, "-m", "venv", venv], cwd=tmp)
    run([venv_python(venv), "-m", "pip", "install", wheel], cwd=tmp, env=user_env())
    purelib = run([venv_python(venv), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                  cwd=tmp, env=user_env()).stdout.strip()
    return Installed(python=venv_python(venv), purelib=Path(purelib), sdist=sdist, wheel=wheel, package=package)


@pytest.fixture
def empty(tmp_path: Path) -> Path:
    folder = tmp_path / "empty"
    folder.mkdir()
    return folder


def builders(installed: Installed, *args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run([installed.python, "-m", "builders", *args], cwd=cwd, env=user_env())


@pytest.fixture(scope="module")
def cpu_target(root: Path) -> Target:
    """A cpu target of this host's platform whose Python exists here (host facts, not a pinned id)."""
    m = matrix_mod.load(root / "matrix.yaml")
    cpu = [t for t in expand(m)[0] if t.variant.accelerator == accelerator("cpu")]
    host = detect({t.python for t in cpu}, user_env(), engines=False)
    reasons = {t.id: unbuildable(t, host) for t in cpu}
    buildable = [t for t in cpu if reasons[t.id] is None]
    if not buildable:
        pytest.skip(f"no cpu target of the matrix builds on this {host.platform} host: {reasons}")
    return buildable[0]


def test_sdist_carries_the_package_data(installed: Installed) -> None:
    with tarfile.open(installed.sdist) as tar:
        top = tar.getnames()[0].split("/")[0]
        names = {n.removeprefix(f"{top}/") for n in tar.getnames()}
    for folder, pattern in PACKAGE_DATA:
        wanted = {f for f in installed.package if fnmatch.fnmatchcase(f, f"builders/{folder}/{pattern}")}
        assert wanted, f"builders/{folder}/{pattern} matches nothing in the checkout"
        assert wanted <= names, f"missing from the sdist: {sorted(wanted - names)}"
    assert installed.package <= names, f"missing from the sdist: {sorted(installed.package - names)}"


def test_wheel_holds_the_package_and_nothing_else(installed: Installed) -> None:
    with zipfile.ZipFile(installed.wheel) as zf:
        names = [n for n in zf.namelist() if not n.endswith("/")]
    leaked = [n for n in names if n.split("/")[0] in ("tests", ".nox") or "/tests/" in n or "/.nox/" in n]
    assert not leaked, f"leaked into the wheel: {leaked}"
    assert {n.split("/")[0] for n in names} == {"builders", wheel_dist_info(installed.wheel)}
    shipped = {n for n in names if n.startswith("builders/")}
    assert shipped == installed.package, (f"not shipped: {sorted(installed.package - shipped)}; "
                                          f"shipped but not in the checkout: {sorted(shipped - installed.package)}")


def wheel_dist_info(wheel: Path) -> str:
    name, version = wheel.name.split("-")[:2]
    return f"{name}-{version}.dist-info"


def test_import_resolves_in_the_venv(root: Path, installed: Installed, empty: Path) -> None:
    found = run([installed.python, "-c", "import builders; print(builders.__file__)"], cwd=empty, env=user_env())
    module = Path(found.stdout.strip())
    assert module.is_relative_to(installed.purelib / "builders"), module
    assert not module.resolve().is_relative_to(root.resolve()), f"{module} is the checkout, not the install"


def test_plan_from_an_empty_folder(root: Path, installed: Installed, empty: Path, cpu_target: Target) -> None:
    proc = builders(installed, "plan", "--matrix", root / "matrix.yaml", "--format", "json", cwd=empty)
    plan = json.loads(proc.stdout)
    raw = expected.raw((root / "matrix.yaml").read_text())
    assert {t["id"] for t in plan["targets"]} == expected.live_ids(raw)
    (mine,) = [t for t in plan["targets"] if t["id"] == cpu_target.id]
    assert mine["buildable_here"], mine["reason"]
    assert not list(empty.iterdir())


def test_images_dry_run_uses_the_installed_containerfiles(root: Path, installed: Installed, empty: Path) -> None:
    proc = builders(installed, "images", "--dry-run", "--matrix", root / "matrix.yaml", cwd=empty)
    containerfiles = {Path(p) for p in re.findall(r"--file (\S+)", proc.stdout)}
    assert {p.name for p in containerfiles} == linux_families(root), proc.stdout
    for path in containerfiles:
        assert path.parent == installed.purelib / "builders" / "resources" / "containers", path
        assert path.is_file(), path
    assert not list(empty.iterdir())


def linux_families(root: Path) -> set[str]:
    """``<family>.Containerfile`` of every accelerator family with a Linux target (images are Linux only)."""
    raw = expected.raw((root / "matrix.yaml").read_text())
    linux_labels = {tid.split("-")[0] for tid in expected.live_ids(raw) if "-linux-" in tid}
    families = {name: set(expected.labels({"accelerators": {name: node}})) for name, node in raw["accelerators"].items()}
    return {f"{name}.Containerfile" for name, labels in families.items() if labels & linux_labels}


@pytest.fixture(scope="module")
def built(root: Path, installed: Installed, cpu_target: Target, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One target built by the installed tool from an empty folder (smoke runs once, in its own test)."""
    empty, out = tmp_path_factory.mktemp("empty-build"), tmp_path_factory.mktemp("out")
    builders(installed, "build", "--matrix", root / "matrix.yaml", "--target", cpu_target.id, "--engine", "local",
             "--output", out, "--no-smoke", cwd=empty)
    assert not list(empty.iterdir())
    (record,) = json.loads((out / "results.json").read_text())["targets"]
    assert (record["id"], record["status"]) == (cpu_target.id, "built"), record
    return out / record["wheel"]


def test_build_and_smoke_one_target(root: Path, installed: Installed, built: Path, cpu_target: Target,
                                    empty: Path) -> None:
    proc = builders(installed, "smoke", "--matrix", root / "matrix.yaml", "--target", cpu_target.id, built, cwd=empty)
    report = json.loads(proc.stdout)
    assert report["problems"] == []
    checks = report["record"]["checks"]
    assert checks and all(c["ok"] for c in checks), checks
    assert {"python", "version"} <= {c["name"] for c in checks}
    assert not list(empty.iterdir())
