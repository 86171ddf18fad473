"""The pinned CUDA toolkit is the one that compiles, and CMake takes it as it is (issue 42).

``tests/projects/cudakit``: a scikit-build-core project whose CMake finds CUDA the ordinary way,
``project(... CUDA)`` and ``find_package(CUDAToolkit)`` with ``CUDA::cudart`` and ``CUDA::cublas``,
under a matrix that maps no toolkit root and names no CUDA path or library file. This host's PATH
has another CUDA's nvcc (13.0 in /usr/local/bin), which such a build would otherwise find first.
One cu132 build (one arch; about a minute here, the toolkit with cuBLAS installed once, about
30 s) is shared by every test of the module. Expectations come from the matrix's YAML and from
the other nvcc's own ``--version``, never from the code under test.

A wheel compiled by the other toolkit is made from the same sources with that nvcc and put
into the built wheel in place of the extension: verify must refuse it, naming both releases.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sysconfig
import zipfile
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement

from builders.families import fatbin
from builders.pipeline.platform_policy import host_glibc
from builders.wheel.archive import Wheel
from builders.wheel.elf import parse
from builders.wheel.writer import write_wheel
from tests import helpers

pytestmark = [pytest.mark.slow, pytest.mark.skipif(host_glibc() is None, reason="--local-only tags at this host's glibc")]

PROJECT = Path(__file__).resolve().parent.parent / "projects" / "cudakit"
DATA = yaml.safe_load((PROJECT / "matrix.yaml").read_text())
(VERSION, NODE), = DATA["accelerators"]["cuda"]["versions"].items()
TID = f"{NODE['label']}-cp{DATA['pythons'][0].replace('.', '')}-linux-x86_64"
MAJOR, MINOR = (int(p) for p in VERSION.split("."))
RUNTIME = MAJOR * 1000 + MINOR * 10  # cudaRuntimeGetVersion and CUDART_VERSION of CUDA MAJOR.MINOR


def release_of(nvcc: str) -> str | None:
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=False).stdout
    match = re.search(r"release (\d+\.\d+)", out)
    return match.group(1) if match else None


def other_nvcc() -> tuple[str, str] | None:
    """The nvcc this host's PATH finds, where it is another release than the matrix's."""
    nvcc = shutil.which("nvcc")
    release = release_of(nvcc) if nvcc else None
    return (nvcc, release) if nvcc and release and release != VERSION else None


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("cudakit")
    proc = helpers.builders("build", "--matrix", str(PROJECT / "matrix.yaml"), "--target", TID, "--local-only",
                            "--output", str(out), cwd=PROJECT)
    (record,) = json.loads((out / "results.json").read_text())["targets"]
    assert proc.returncode == 0 and record["status"] == "built", (record, (out / record["log"]).read_text()[-5000:])
    return out, record


def extension(wheel: Path) -> tuple[str, bytes]:
    with zipfile.ZipFile(wheel) as z:
        (name,) = [n for n in z.namelist() if n.endswith(".so")]
        return name, z.read(name)


def test_cmake_compiles_with_the_pinned_nvcc_though_path_has_another(built: tuple[Path, dict], tmp_path: Path) -> None:
    """The matrix maps no toolkit root; the compiled code says it was made by the matrix's CUDA: the headers'
    CUDART_VERSION (the project's own smoke check) and each cubin's ptxas (what verify read, so not vacuously)."""
    out, record = built
    smoke = record["smoke"]
    assert smoke["project_ok"] and not smoke["failed_checks"], smoke
    assert smoke["project"]["compiled_runtime"] == RUNTIME and smoke["cuda_runtime_version"] == RUNTIME
    _, data = extension(out / record["wheel"])
    (tmp_path / "ext.so").write_bytes(data)
    with (tmp_path / "ext.so").open("rb") as fh:
        made = fatbin.made_by(fh)
    assert made and {m.release for m in made} == {VERSION}, made
    assert "toolkit_root" not in json.dumps(DATA["project"]["build"])
    other = other_nvcc()
    log = (out / record["log"]).read_text()
    if other is not None:  # the trap was there: the build's PATH put the pinned nvcc ahead of it
        assert re.search(rf"PATH=\S*/nvidia/cu13/bin:\S*{re.escape(str(Path(other[0]).parent))}", log)


def test_find_package_cudatoolkit_links_cudart_and_cublas_loaded_from_the_runtime_wheels(built: tuple[Path, dict],
                                                                                        tmp_path: Path) -> None:
    out, record = built
    _, data = extension(out / record["wheel"])
    (tmp_path / "ext.so").write_bytes(data)
    with (tmp_path / "ext.so").open("rb") as fh:
        needed = set(parse(fh).needed)
    assert {"libcudart.so.13", "libcublas.so.13"} <= needed
    loaded = record["smoke"]["project"]["loaded"]
    for lib in ("libcudart.so", "libcublas.so"):
        (path,) = loaded[lib]
        assert "/smoke/venv/" in path and "site-packages/nvidia/cu13/lib/" in path, loaded
    with zipfile.ZipFile(out / record["wheel"]) as z:
        assert not [n for n in z.namelist() if re.search(r"lib(cuda|cudart|cublas)", n)]
        meta = z.read(next(n for n in z.namelist() if n.endswith("/METADATA"))).decode()
    declared = {str(Requirement(r)) for r in NODE["runtime_requirements"]}
    assert declared <= {str(Requirement(r.split(": ", 1)[1])) for r in meta.splitlines() if r.startswith("Requires-Dist")}


def test_the_toolkit_cmake_reads_has_dev_links_and_a_driver_stub_to_link_against(built: tuple[Path, dict],
                                                                                   tmp_path: Path) -> None:
    """A program calling the driver API links against ``lib/stubs`` (as CUDA::cuda_driver does) and then needs
    the driver's own ``libcuda.so.1``, which only the machine running it has."""
    out, record = built
    log = (out / record["log"]).read_text()
    root = Path(re.search(r"toolkit at (\S+/nvidia/cu13)\)", log).group(1))
    assert (root / "lib" / "libcublas.so").resolve() == (root / "lib" / "libcublas.so.13").resolve()
    assert (root / "lib" / "libcudart.so").is_symlink()
    (tmp_path / "driver.c").write_text('#include <cuda.h>\nint main(void) { return cuInit(0) == CUDA_SUCCESS; }\n')
    subprocess.run(["cc", f"-I{root}/include", "driver.c", f"-L{root}/lib/stubs", "-lcuda", "-o", "driver"],
                   check=True, cwd=tmp_path, capture_output=True)
    with (tmp_path / "driver").open("rb") as fh:
        assert "libcuda.so.1" in parse(fh).needed


@pytest.mark.skipif(other_nvcc() is None, reason="needs an nvcc of another CUDA release on PATH (this host's "
                                                  "/usr/local/bin/nvcc is CUDA 13.0)")
def test_a_wheel_compiled_by_another_toolkit_fails_verify_naming_both(built: tuple[Path, dict], tmp_path: Path) -> None:
    out, record = built
    nvcc, release = other_nvcc()  # type: ignore[misc]
    good = Wheel(out / record["wheel"])
    name, _ = extension(good.path)
    so = tmp_path / Path(name).name
    include = sysconfig.get_paths()["include"]
    subprocess.run([nvcc, "-shared", "-Xcompiler", "-fPIC", "-arch=sm_80", "--cudart=shared", "-Xlinker",
                    f"-rpath,{DATA['accelerators']['cuda']['rpath'][0]}", "-o", str(so), str(PROJECT / "kernels.cu")],
                   check=True, capture_output=True, cwd=tmp_path, env={"PATH": "/usr/bin:/bin", "CPATH": include})
    with zipfile.ZipFile(good.path) as z:
        members = {n: z.read(n) for n in z.namelist() if not n.endswith(("/RECORD", "/"))}
    members[name] = so.read_bytes()
    bad = tmp_path / "bad" / good.path.name
    bad.parent.mkdir()
    write_wheel(bad, members, good.dist_info, {}, 315532800)
    proc = helpers.builders("verify", str(bad), "--matrix", str(PROJECT / "matrix.yaml"), "--target", TID, "--json",
                            cwd=PROJECT)
    assert proc.returncode != 0, proc.stdout
    (finding,) = [f for f in json.loads(proc.stdout)["findings"] if f["code"] == "toolkit-mismatch"]
    assert f"CUDA {release}" in finding["message"] and f"CUDA {VERSION}" in finding["message"], finding
    assert finding["file"] == name
    # The wheel builders made, checked the same way (tagged at this host's level: --local-only), has no such finding.
    ok = helpers.builders("verify", str(good.path), "--matrix", str(PROJECT / "matrix.yaml"), "--target", TID,
                          "--json", cwd=PROJECT)
    assert "toolkit-mismatch" not in {f["code"] for f in json.loads(ok.stdout)["findings"]}, ok.stdout


def sbom_of(wheel: Path) -> tuple[str, dict]:
    with zipfile.ZipFile(wheel) as z:
        (name,) = [n for n in z.namelist() if n.endswith(".dist-info/sboms/builders.cdx.json")]
        return name, json.loads(z.read(name))


def test_the_wheels_sbom_names_its_cuda_runtime_wheels_and_the_nvcc_that_compiled_it(built: tuple[Path, dict]) -> None:
    """PEP 770 (issue 45): the runtime requirements the matrix declares, with their ranges, and the release the
    pinned nvcc itself reports (asked here, from the toolkit the log names)."""
    out, record = built
    _, doc = sbom_of(out / record["wheel"])
    props = [{p["name"]: p["value"] for p in c.get("properties", [])} for c in doc["components"]]
    listed = {p["builders:requirement"]: p.get("builders:version-range") for p in props if "builders:requirement" in p}
    for text in NODE["runtime_requirements"]:
        req = Requirement(text)
        assert listed[str(req)] == str(req.specifier), listed
    root = re.search(r"toolkit at (\S+/nvidia/cu13)\)", (out / record["log"]).read_text()).group(1)
    said = subprocess.run([f"{root}/bin/nvcc", "--version"], capture_output=True, text=True, check=True).stdout
    (nvcc,) = [c for c in doc["components"] if c["name"] == "nvcc"]
    assert nvcc["version"] == re.search(r", V(\S+)", said).group(1) and nvcc["version"].startswith(f"{VERSION}.")
    assert doc["metadata"]["component"]["version"] == record["wheel"].split("-")[1].replace("_", "+")


def test_verify_reports_an_sbom_that_drops_a_runtime_wheel_or_lists_a_library_the_wheel_lacks(
        built: tuple[Path, dict], tmp_path: Path) -> None:
    out, record = built
    good = Wheel(out / record["wheel"])
    name, doc = sbom_of(good.path)
    runtime = str(Requirement(NODE["runtime_requirements"][0]))
    dropped = [c for c in doc["components"] if not any(p["value"] == runtime for p in c.get("properties", []))]
    library = {"type": "library", "bom-ref": "file:cudakit.libs/libz.so.1", "name": "libz.so.1", "properties": [
        {"name": "builders:role", "value": "bundled"}, {"name": "builders:path", "value": "cudakit.libs/libz.so.1"}]}
    with zipfile.ZipFile(good.path) as z:
        members = {n: z.read(n) for n in z.namelist() if not n.endswith(("/RECORD", "/"))}
    for case, components, code in (("dropped", dropped, "sbom-requirement-unlisted"),
                                   ("added", [*doc["components"], library], "sbom-library-absent")):
        edited = tmp_path / case / good.path.name
        edited.parent.mkdir()
        write_wheel(edited, {**members, name: json.dumps({**doc, "components": components}).encode()},
                    good.dist_info, {}, 315532800)
        proc = helpers.builders("verify", str(edited), "--matrix", str(PROJECT / "matrix.yaml"), "--target", TID,
                                "--json", cwd=PROJECT)
        found = [f for f in json.loads(proc.stdout)["findings"] if f["code"].startswith("sbom-")]
        assert proc.returncode != 0 and [f["code"] for f in found] == [code], proc.stdout
        assert (runtime if case == "dropped" else "cudakit.libs/libz.so.1") in found[0]["message"]
    ok = helpers.builders("verify", str(good.path), "--matrix", str(PROJECT / "matrix.yaml"), "--target", TID,
                          "--json", cwd=PROJECT)
    assert not [f for f in json.loads(ok.stdout)["findings"] if f["code"].startswith("sbom-")], ok.stdout


def test_the_image_gives_cmake_the_same_toolkit(base_image: str, tmp_path: Path) -> None:
    """The container engine: the image's toolkit (bin first on its PATH, laid out by layout-cuda-toolkit.sh) and
    the variables naming it. The local base packages the newest Python only: the matrix's copy lists it."""
    helpers.require_tool("podman")
    data = {**DATA, "pythons": ["3.14"]}
    (tmp_path / "matrix.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    shutil.copy(PROJECT / "smoke.py", tmp_path / "smoke.py")
    tid = TID.replace(f"cp{DATA['pythons'][0].replace('.', '')}", "cp314")
    out = tmp_path / "out"
    proc = helpers.builders("build", "--engine", "container", "--base-image", base_image, "--matrix",
                            str(tmp_path / "matrix.yaml"), "--source", str(PROJECT), "--target", tid, "--output",
                            str(out), cwd=tmp_path)
    (record,) = json.loads((out / "results.json").read_text())["targets"]
    assert proc.returncode == 0 and record["status"] == "built", (record, (out / record["log"]).read_text()[-5000:])
    smoke = record["smoke"]
    assert smoke["project_ok"] and smoke["project"]["compiled_runtime"] == RUNTIME, smoke
    assert "CUDACXX=/opt/toolkit/nvidia/cu13/bin/nvcc" in (out / record["log"]).read_text()
