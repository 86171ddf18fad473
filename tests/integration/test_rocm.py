"""ROCm for real: minifw's HIP sources through the container pipeline, on Debian's HIP 7.2.

TheRock's packages cannot be reached from these machines. Debian experimental packages AMD's
HIP 7.2.4 (hipcc, clang 22, rocm-device-libs-22, libamdhip64-7), and
tests/projects/minifw-rocm-debian/matrix.yaml describes exactly that toolchain: ROCm 7.2 (label
rocm7.2, not the release's rocm7.14), the HIP runtime from the image's system package, and the
release's longest arch list (rocm10.0's, gfx1250 included). ``BUILDERS_ROCM_SOURCE=debian`` makes
the rocm image install it. Expectations come from the YAML files and from the wheel read with
readelf, strings and zipfile, not from the code under test.

What cannot run here, and is therefore not tested: a HIP kernel on an AMD GPU (there is none:
hipGetDeviceCount answers hipErrorNoDevice, and the project's check says so), and TheRock's own
packages for the release's rocm7.14 and rocm10.0 (their image needs THEROCK_INDEX_URL); their arch
lists are checked against the real clang 22 instead.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from builders.base.errors import ToolchainError
from builders.engines import images
from builders.families import loader as matrix
from builders.families.rocm import check_hipcc
from builders.matrix.targets import Selection, select
from tests import helpers

pytestmark = pytest.mark.slow

TARGET = "rocm7.2-cp314-linux-x86_64"
STAND_IN = Path("tests/projects/minifw-rocm-debian/matrix.yaml")
HIP_PER_RELEASE = 100_000  # HIP_VERSION = major * 10**7 + minor * 10**5 + build


def builders(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return helpers.builders(*args, cwd=cwd, env=env())


def env() -> dict[str, str]:
    return images.engine_env(os.environ) | {"BUILDERS_ROCM_SOURCE": "debian"}


def build(root: Path, matrix_file: Path, base_image: str, out: Path) -> subprocess.CompletedProcess[str]:
    return builders("build", "--engine", "container", "--matrix", str(matrix_file), "--source", "examples/minifw",
                    "--base-image", base_image, "--target", TARGET, "--output", str(out), cwd=root)


def result_of(house: Path) -> dict:
    return {r["id"]: r for r in json.loads((house / "results.json").read_text())["targets"]}[TARGET]


@pytest.fixture(scope="session")
def declared(root: Path) -> dict:
    """The stand-in's rocm family, read as plain YAML."""
    rocm = yaml.safe_load((root / STAND_IN).read_text())["accelerators"]["rocm"]
    (version, fields), = rocm["versions"].items()
    return {**rocm, **fields, "version": version}


@pytest.fixture(scope="session")
def rocm_house(root: Path, base_image: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("rocm-house")
    proc = build(root, STAND_IN, base_image, out)
    assert proc.returncode == 0, proc.stderr[-5000:] + "\n" + proc.stdout[-3000:]
    return out


@pytest.fixture(scope="session")
def result(rocm_house: Path) -> dict:
    return result_of(rocm_house)


@pytest.fixture(scope="session")
def wheel(rocm_house: Path, result: dict) -> Path:
    return rocm_house / result["wheel"]


@pytest.fixture(scope="session")
def extension(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("rocm-extension")
    with zipfile.ZipFile(wheel) as zf:
        (name,) = [n for n in zf.namelist() if re.fullmatch(r"minifw/_C\..*\.so", n)]
        return Path(zf.extract(name, out))


@pytest.fixture(scope="session")
def image(root: Path, base_image: str) -> str:
    m = matrix.load(root / STAND_IN)
    (target,) = select(m, Selection(targets=(TARGET,)))
    return images.image_spec(target, images.image_pythons(m), env(), base_image).tag


def podman_run(image: str, script: str, *volumes: str) -> subprocess.CompletedProcess[str]:
    argv = ["podman", "run", "--rm", "--network", "none", *(a for v in volumes for a in ("--volume", v)), image,
            "sh", "-c", script]
    return subprocess.run(argv, env=env(), text=True, capture_output=True, timeout=600)


def test_built_through_every_stage(result: dict) -> None:
    assert (result["status"], result["engine"], result["policy"]) == ("built", "container", "manylinux_2_28_x86_64")
    assert set(result["durations"]) == {"provision", "check", "requirements", "build", "label", "repair", "sbom", "verify",
                                        "smoke", "store"}
    assert not result.get("findings")
    assert result["wheel"] == "whl/rocm7.2/minifw-2.15.0+rocm7.2-cp314-cp314-manylinux_2_28_x86_64.whl"


def test_verify_finds_nothing(root: Path, wheel: Path) -> None:
    proc = builders("verify", str(wheel), "--target", TARGET, "--matrix", str(STAND_IN), "--json", cwd=root)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_extension_needs_the_hip_runtime_through_origin_rpaths_only(extension: Path, declared: dict) -> None:
    dynamic = subprocess.run(["readelf", "-d", str(extension)], text=True, capture_output=True, check=True).stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.+)\]", dynamic)
    paths = [p for entry in re.findall(r"\((?:RPATH|RUNPATH)\)\s+Library \w+: \[(.*)\]", dynamic) for p in entry.split(":")]
    assert "libamdhip64.so.7" in needed
    assert paths == declared["rpath"] and all(p.startswith("$ORIGIN") for p in paths)


def test_no_rocm_library_is_inside_the_wheel(wheel: Path, declared: dict) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = [Path(n).name for n in zf.namelist()]
        elves = [n for n in zf.namelist() if zf.read(n)[:4] == b"\x7fELF"]
    assert len(elves) == 1 and elves[0].startswith("minifw/_C.")
    rocm = re.compile(r"lib(amdhip|hsa-runtime|amd_comgr|hiprtc|rocm|roc|hip).*\.so.*")
    assert not [n for n in names if rocm.fullmatch(n) or any(n.startswith(lib) for lib in declared["system_libs"])]


def test_the_fat_binary_holds_every_declared_arch(extension: Path, declared: dict) -> None:
    text = subprocess.run(["strings", "-n", "8", str(extension)], text=True, capture_output=True, check=True).stdout
    bundled = set(re.findall(r"hipv4-amdgcn-amd-amdhsa--(gfx[0-9a-f]+)", text))
    assert bundled == set(declared["arch_list"].split(";")) and "gfx1250" in bundled


def test_smoke_loaded_the_system_hip_runtime_and_read_its_version(result: dict, declared: dict) -> None:
    smoke = result["smoke"]
    major, minor = (int(p) for p in declared["version"].split("."))
    assert smoke["failed_checks"] == [] and smoke["extension_loaded"] is True and smoke["project_ok"] is True
    assert smoke["runtime_version"] // HIP_PER_RELEASE == major * 100 + minor
    hip = [p for p in smoke["system_libraries"] if Path(p).name.startswith("libamdhip64.so.7")]
    assert hip and all(p.startswith("/usr/lib/") for p in hip), smoke["system_libraries"]
    project = smoke["project"]
    assert project["hip_runtime_version"] == smoke["runtime_version"]
    # No AMD GPU here: the runtime says why, so kernels are not run (and that check is skipped).
    assert project["device_count"] == 0 and "hipErrorNoDevice" in project["probe_error"]


def test_a_fresh_container_without_network_loads_the_wheel_s_runtime(image: str, wheel: Path, rocm_house: Path) -> None:
    """The same facts, found without builders' probe: the installed extension pulls in the system's
    libamdhip64.so.7, whose hipRuntimeGetVersion() works without a device."""
    script = ("set -e; python3.14 -m venv /tmp/v && /tmp/v/bin/pip install -q --no-index --no-deps /w/*.whl && "
              "cd /tmp && /tmp/v/bin/python -I -c '"
              "import ctypes, json, minifw._C as c\n"
              "maps = [l.split()[-1] for l in open(\"/proc/self/maps\") if \"libamdhip64\" in l]\n"
              "v = ctypes.c_int(0); rc = ctypes.CDLL(\"libamdhip64.so.7\").hipRuntimeGetVersion(ctypes.byref(v))\n"
              "print(json.dumps({\"ext\": c.__file__, \"hip\": sorted(set(maps)), \"rc\": rc, \"version\": v.value}))'")
    proc = podman_run(image, script, f"{wheel.parent}:/w:ro")
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["ext"].startswith("/tmp/v/lib/python3.14/site-packages/minifw/")
    assert seen["hip"] and all(p.startswith("/usr/lib/x86_64-linux-gnu/libamdhip64.so.7") for p in seen["hip"])
    assert seen["rc"] == 0 and seen["version"] // HIP_PER_RELEASE == 702


def test_the_release_arch_lists_against_the_real_compiler(root: Path, image: str, rocm_house: Path) -> None:
    """clang 22 builds every arch of rocm7.14 and rocm10.0 (gfx1250 too); only their release differs."""
    proc = podman_run(image, "hipcc --version && echo @@ && "
                      "$(hipcc --version | sed -n 's/^InstalledDir: //p')/clang --target=amdgcn-amd-amdhsa "
                      "--print-supported-cpus 2>&1")
    assert proc.returncode == 0, proc.stderr
    version_out, cpus_out = proc.stdout.split("@@")
    release = matrix.load(root / "matrix.yaml")
    targets = select(release, Selection(select=("rocm*-cp313-linux-x86_64",)))
    assert {t.variant.label for t in targets} >= {"rocm7.14", "rocm10.0"}
    for target in targets:
        archs = set((target.arch_list or "").split(";"))
        assert archs <= set(cpus_out.split()), archs - set(cpus_out.split())
        with pytest.raises(ToolchainError, match=r"matrix\.yaml:\d+:\d+: hipcc reports HIP 7\.2, matrix says ROCm "):
            check_hipcc(target, version_out, cpus_out)


def test_an_arch_the_compiler_cannot_build_fails_the_check_stage(root: Path, base_image: str, rocm_house: Path,
                                                                  tmp_path: Path) -> None:
    """The same image and matrix, with an arch clang 22 does not know: a matrix error at its line."""
    project = tmp_path / "project"
    project.mkdir()
    text = (root / STAND_IN).read_text()
    assert ";gfx1250\"" in text
    (project / "matrix.yaml").write_text(text.replace(";gfx1250\"", ";gfx1250;gfx1300\""))
    shutil.copy(root / STAND_IN.parent / "smoke.py", project / "smoke.py")
    proc = build(root, project / "matrix.yaml", base_image, tmp_path / "out")
    assert proc.returncode == 1, proc.stderr[-3000:]
    failed = result_of(tmp_path / "out")
    line = text.splitlines().index('      "7.2":') + 1
    assert (failed["status"], failed["stage"]) == ("failed", "check")
    assert f"matrix.yaml:{line}:" in failed["reason"] and "has gfx1300 which hipcc 7.2 cannot build" in failed["reason"]
    assert not list((tmp_path / "out").rglob("*.whl"))


def test_the_release_rocm_wheel_is_built_where_therock_can_be_reached(root: Path, request: pytest.FixtureRequest,
                                                                      tmp_path: Path) -> None:
    if not os.environ.get("THEROCK_INDEX_URL"):
        pytest.skip("TheRock's packages (rocm[libraries,devel]==7.14.*) are not reachable here: THEROCK_INDEX_URL "
                    "is not set; Debian's HIP 7.2 stands in above (rocm7.2), and no AMD GPU runs its kernels")
    base_image = request.getfixturevalue("base_image")
    plain = {k: v for k, v in env().items() if k != "BUILDERS_ROCM_SOURCE"}
    proc = subprocess.run([sys.executable, "-m", "builders", "build", "--engine", "container", "--base-image", base_image,
                           "--target", "rocm7.14-cp314-linux-x86_64", "--output", str(tmp_path)], cwd=root, env=plain,
                          text=True, capture_output=True, timeout=3600)
    assert proc.returncode == 0, proc.stderr[-5000:]
