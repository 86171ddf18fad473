"""The XPU path as far as it goes without a DPC++ compiler.

No SYCL/DPC++ compiler exists in any registry these machines reach (clang 22's own ``-fsycl``
cannot compile DPC++'s headers), and Intel's oneAPI package repository is not reachable, so no
xpu wheel is built here. What can be checked, is, against the oneAPI runtime wheels the matrix
names (fetched from the package index at test time):

- minifw's SYCL source is valid C++20 against that runtime's own SYCL headers (the host
  compiler's syntax check; device code is not compiled);
- every library the xpu variant excludes is shipped by its runtime requirement, where the
  declared RPATH finds it from the installed extension;
- the xpu image's build arguments come from the matrix and the environment.

The full build runs where ONEAPI_REPOSITORY (and its key) are set; elsewhere it is skipped,
with that reason.
"""

from __future__ import annotations

import os
import posixpath
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement

pytestmark = pytest.mark.slow

CORE = Path("examples/minifw/core")
SOURCES = tuple(CORE / "src/xpu" / name for name in ("runtime.cpp", "ops.cpp", "gemm.cpp"))
# The Level Zero loader and the OpenCL ICD loader come with the GPU driver stack (Debian's
# libze1 and ocl-icd-libopencl1, Intel's level-zero), not from pip: the matrix declares them as
# system_libs, and every library it says a wheel provides must really be in one.


@pytest.fixture(scope="session")
def xpu(root: Path) -> dict:
    return yaml.safe_load((root / "matrix.yaml").read_text())["accelerators"]["xpu"]


@pytest.fixture(scope="session")
def runtime_wheels(xpu: dict, tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The xpu runtime requirement and its dependencies, as wheels (pip's own configuration)."""
    out = tmp_path_factory.mktemp("oneapi-runtime")
    wanted = [str(Requirement(r)).split(";")[0].strip() for r in xpu["runtime_requirements"]]
    proc = subprocess.run([sys.executable, "-m", "pip", "download", "--only-binary", ":all:", "--platform",
                           "manylinux_2_28_x86_64", "--dest", str(out), "--no-input", *wanted],
                          text=True, capture_output=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return sorted(out.glob("*.whl"))


@pytest.fixture(scope="session")
def sycl_include(runtime_wheels: list[Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sycl-headers")
    (sycl,) = [w for w in runtime_wheels if w.name.startswith("intel_sycl_rt-")]
    with zipfile.ZipFile(sycl) as zf:
        headers = [n for n in zf.namelist() if re.match(r"[^/]+\.data/data/include/", n)]
        zf.extractall(out, headers)
    (include,) = out.glob("*.data/data/include")
    assert (include / "sycl/sycl.hpp").is_file()
    return include


def syntax_check(source: Path, include: Path, core: Path) -> subprocess.CompletedProcess[str]:
    cxx = os.environ.get("CXX") or shutil.which("c++") or "g++"
    return subprocess.run([cxx, "-std=c++20", "-fsyntax-only", "-Wall", "-Wextra", "-DSYCL_DISABLE_FSYCL_SYCLHPP_WARNING",
                           "-Wno-deprecated-declarations", "-DMINIFW_CORE_WEIGHT=2", f"-I{include}", f"-I{core / 'src'}",
                           f"-I{core / 'include'}", str(source)], text=True, capture_output=True, timeout=600)


def test_the_sycl_source_is_valid_against_the_runtime_s_sycl_headers(root: Path, sycl_include: Path,
                                                                      tmp_path: Path) -> None:
    for source in SOURCES:
        proc = syntax_check(root / source, sycl_include, root / CORE)
        assert proc.returncode == 0, (source, proc.stderr[-4000:])
    # The check has teeth: a SYCL call the headers do not declare is refused.
    core = tmp_path / "core"  # a copy: its relative includes resolve, the real tree stays untouched
    shutil.copytree(root / CORE, core)
    gemm = core / "src/xpu/gemm.cpp"
    text = gemm.read_text()
    assert "sycl::group_barrier(" in text
    gemm.write_text(text.replace("sycl::group_barrier(", "sycl::group_barier(", 1))
    refused = syntax_check(gemm, sycl_include, core)
    assert refused.returncode != 0 and "group_barier" in refused.stderr


def test_every_excluded_library_is_shipped_where_the_rpath_looks(xpu: dict, runtime_wheels: list[Path]) -> None:
    """The runtime folder ``../..`` from site-packages is the environment's lib/, where the wheels'
    ``.data/data/lib`` files are installed."""
    (folder,) = xpu["runtime_dirs"]
    assert posixpath.normpath("lib/python3.14/site-packages/" + folder) == "lib"
    shipped: dict[str, str] = {}
    for wheel in runtime_wheels:
        with zipfile.ZipFile(wheel) as zf:
            for name in zf.namelist():
                if re.fullmatch(r"[^/]+\.data/data/lib/[^/]+\.so(\.\d+)*", name):
                    shipped[posixpath.basename(name)] = wheel.name
    missing = {lib for lib in xpu["exclude_libs"] if lib not in shipped}
    assert not missing, f"not shipped by {[w.name for w in runtime_wheels]}: {sorted(missing)}"
    assert not set(xpu.get("system_libs", {})) & set(shipped), "a system library that a wheel ships"
    assert any(lib.startswith("libsycl.so.") for lib in xpu["exclude_libs"])


def test_the_xpu_image_arguments(root: Path) -> None:
    env = {**os.environ, "ONEAPI_REPOSITORY": "https://oneapi.example/deb",
           "ONEAPI_REPOSITORY_KEY": "https://oneapi.example/key.pub"}
    proc = subprocess.run([sys.executable, "-m", "builders", "images", "--select", "xpu-cp314-linux-x86_64",
                           "--container-engine", "podman", "--dry-run"], cwd=root, env=env, text=True,
                          capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "--build-arg TOOLKIT_SYSTEM_REPOSITORY=https://oneapi.example/deb" in proc.stdout
    assert "TOOLKIT_SYSTEM_PACKAGES=intel-oneapi-compiler-dpcpp-cpp-2026.1" in proc.stdout
    unset = {k: v for k, v in env.items() if not k.startswith("ONEAPI_")}
    proc = subprocess.run([sys.executable, "-m", "builders", "images", "--select", "xpu-cp314-linux-x86_64",
                           "--container-engine", "podman", "--dry-run"], cwd=root, env=unset, text=True,
                          capture_output=True, timeout=300)
    # A dry run shows the commands with the unset variables left as ${NAME}, and names them.
    assert proc.returncode == 0, proc.stderr
    assert "TOOLKIT_SYSTEM_REPOSITORY=${ONEAPI_REPOSITORY}'" in proc.stdout  # quoted for the shell
    assert "ONEAPI_REPOSITORY" in proc.stderr and "ONEAPI_REPOSITORY_KEY" in proc.stderr


def test_an_xpu_wheel_is_built_where_oneapi_can_be_installed(root: Path, request: pytest.FixtureRequest,
                                                              tmp_path: Path) -> None:
    if not (os.environ.get("ONEAPI_REPOSITORY") and os.environ.get("ONEAPI_REPOSITORY_KEY")):
        pytest.skip("no DPC++ compiler here: Intel's oneAPI repository (ONEAPI_REPOSITORY, ONEAPI_REPOSITORY_KEY) "
                    "is not reachable and no registry these machines reach has icpx; clang 22's -fsycl cannot "
                    "compile DPC++'s SYCL headers")
    base_image = request.getfixturevalue("base_image")
    proc = subprocess.run([sys.executable, "-m", "builders", "build", "--engine", "container", "--base-image", base_image,
                           "--target", "xpu-cp314-linux-x86_64", "--output", str(tmp_path)], cwd=root, text=True,
                          capture_output=True, timeout=3600)
    assert proc.returncode == 0, proc.stderr[-5000:]
