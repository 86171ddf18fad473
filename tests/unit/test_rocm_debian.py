"""ROCm without TheRock: the hipcc check, the image's ROCm source, system-provided HIP runtime.

Compiler output below is captured from Debian experimental's HIP 7.2.4 (hipcc 7.2.4+dfsg-1~exp1,
clang 22.1.8), the toolchain tests/projects/minifw-rocm-debian builds with; the slow test
(tests/integration/test_rocm.py) runs the same checks against the real compiler.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from builders.base.errors import EngineError, ToolchainError
from builders.engines import images
from builders.families import loader as matrix
from builders.families.rocm import ROCM, check_hipcc, installed_dir, offload_archs, runtime_release
from builders.matrix.model import Matrix
from builders.matrix.targets import Selection, Target, select
from builders.resources import smoke_probe
from builders.wheel.smoke import facts
from builders.wheel.verify import check_label, check_libraries, check_providers
from tests.helpers import one, settled_env
from tests.unit.test_verify_reader import build_wheel, findings, linux_ext, make_elf

DEBIAN = Path(__file__).resolve().parents[1] / "projects/minifw-rocm-debian/matrix.yaml"
HIPCC_72 = ("HIP version: 7.2.53211-9999\nDebian clang version 22.1.8 (3)\nTarget: x86_64-pc-linux-gnu\n"
            "Thread model: posix\nInstalledDir: /usr/lib/llvm-22/bin\n")
CLANG_22_CPUS = "Available CPUs for this target:\n\n" + "".join(f"\t{cpu}\n" for cpu in ["bonaire", "carrizo", "fiji", "generic", "generic-hsa", "gfx10-1-generic", "gfx10-3-generic", "gfx1010", "gfx1011", "gfx1012", "gfx1013", "gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036", "gfx11-generic", "gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153", "gfx12-generic", "gfx1200", "gfx1201", "gfx1250", "gfx1251", "gfx600", "gfx601", "gfx602", "gfx700", "gfx701", "gfx702", "gfx703", "gfx704", "gfx705", "gfx801", "gfx802", "gfx803", "gfx805", "gfx810", "gfx9-4-generic", "gfx9-generic", "gfx900", "gfx902", "gfx904", "gfx906", "gfx908", "gfx909", "gfx90a", "gfx90c", "gfx942", "gfx950", "hainan", "hawaii", "iceland", "kabini", "kaveri", "mullins", "oland", "pitcairn", "polaris10", "polaris11", "stoney", "tahiti", "tonga", "tongapro", "verde"])
ENV = {"THEROCK_INDEX_URL": "https://rocm.example/v2/gfx-all/"}
PYTHONS = ("3.13", "3.14", "3.15")


@pytest.fixture(scope="module")
def debian() -> Matrix:
    return matrix.load(DEBIAN)


def rocm_targets(m: Matrix) -> list[Target]:
    return select(m, Selection(select=("rocm*-cp313-linux-x86_64",)))


# --- the toolkit check (hipcc --version, clang --print-supported-cpus) ----------------------------


def test_hip_release_encoding() -> None:
    assert [runtime_release(v) for v in ("7.2", "7.14", "10.0")] == [702, 714, 1000]
    assert runtime_release("7.2") == 70253211 // 100_000  # what Debian's libamdhip64.so.7 reports


def test_offload_archs_drop_target_features() -> None:
    assert offload_archs("gfx90a:xnack+;gfx942;gfx1250") == ["gfx90a", "gfx942", "gfx1250"]
    assert installed_dir(HIPCC_72) == "/usr/lib/llvm-22/bin" and installed_dir("HIP version: 7.2") is None


def test_debian_hip_builds_every_arch_of_the_stand_in(debian: Matrix) -> None:
    (target,) = rocm_targets(debian)
    check_hipcc(target, HIPCC_72, CLANG_22_CPUS)
    assert "gfx1250" in offload_archs(target.arch_list or "")


def test_clang_22_knows_every_arch_the_release_matrix_lists(shipped: Matrix) -> None:
    """gfx1250 (rocm10.0's addition) included; only the release differs, and the check says so."""
    for target in rocm_targets(shipped):
        assert set(offload_archs(target.arch_list or "")) <= set(CLANG_22_CPUS.split())
        with pytest.raises(ToolchainError, match=rf"hipcc reports HIP 7\.2, matrix says ROCm {target.variant.version}"):
            check_hipcc(target, HIPCC_72, CLANG_22_CPUS)


def test_an_arch_the_compiler_cannot_build_names_it_and_the_matrix_line(debian: Matrix) -> None:
    (target,) = rocm_targets(debian)
    without = CLANG_22_CPUS.replace("\tgfx1250\n", "")
    with pytest.raises(ToolchainError) as err:
        check_hipcc(target, HIPCC_72, without)
    message = str(err.value)
    line = DEBIAN.read_text().splitlines().index('      "7.2":') + 1
    assert f"matrix.yaml:{line}:" in message.split(" ")[0]  # the variant's line in the matrix
    assert "has gfx1250 which hipcc 7.2 cannot build" in message
    assert " gfx10-1-generic " in message and " gfx10 " not in message  # whole names, never a prefix


def test_a_missing_hip_version_line_is_an_error(debian: Matrix) -> None:
    (target,) = rocm_targets(debian)
    with pytest.raises(ToolchainError, match="hipcc reports HIP unknown"):
        check_hipcc(target, "clang version 22\n", CLANG_22_CPUS)


# --- the rocm image: TheRock by default, Debian's packages when asked -------------------------------


def test_therock_stays_the_default(shipped: Matrix) -> None:
    """The options table settles the source (the command line hands it down); an image's arguments never guess it."""
    args = dict(images.image_spec(one(shipped, "rocm10.0-cp313-linux-x86_64"), PYTHONS, settled_env(ENV)).args)
    assert args["ROCM_SOURCE"] == "therock" and args["TOOLKIT_SYSTEM_PACKAGES"] == ""
    assert args["TOOLKIT_REQUIREMENTS"] == "rocm[libraries,devel]==10.0.*"
    explicit = dict(images.image_spec(one(shipped, "rocm10.0-cp313-linux-x86_64"), PYTHONS,
                                      {**ENV, "BUILDERS_ROCM_SOURCE": "therock"}).args)
    assert explicit == args


def test_debian_source_installs_the_matrix_s_system_packages(debian: Matrix) -> None:
    (target,) = rocm_targets(debian)
    spec = images.image_spec(target, PYTHONS, {"BUILDERS_ROCM_SOURCE": "debian"}, "localhost/builders-base:sid")
    args = dict(spec.args)
    assert args["ROCM_SOURCE"] == "debian" and args["TOOLKIT_SYSTEM_PACKAGES"] == "hipcc\nlibamdhip64-dev"
    assert args["TOOLKIT_INDEX_URL"] == "" and args["TOOLKIT_REQUIREMENTS"] == ""  # no TheRock index needed
    assert images.declared_args(spec.containerfile) == set(args)
    assert "install-rocm.sh" in images.copied_files(spec.containerfile)
    assert images.toolkit_root(target.variant.toolkit) == "/usr"
    assert spec.tag.startswith("localhost/builders-rocm:")


def test_the_source_is_never_guessed(shipped: Matrix, debian: Matrix) -> None:
    (stand_in,) = rocm_targets(debian)
    with pytest.raises(EngineError, match="BUILDERS_ROCM_SOURCE=debian"):
        images.image_spec(stand_in, PYTHONS, settled_env({}))  # system packages, but TheRock was not asked to step aside
    with pytest.raises(EngineError, match="BUILDERS_ROCM_SOURCE is not in the environment .* options table settles it"):
        images.image_spec(stand_in, PYTHONS, {})  # a caller past the command line that settled nothing
    release = one(shipped, "rocm7.14-cp313-linux-x86_64")
    with pytest.raises(EngineError, match="names none"):
        images.image_spec(release, PYTHONS, {**ENV, "BUILDERS_ROCM_SOURCE": "debian"})
    with pytest.raises(EngineError, match="'ubuntu' is not a ROCm source; use one of therock, debian"):
        images.image_spec(release, PYTHONS, {**ENV, "BUILDERS_ROCM_SOURCE": "ubuntu"})



# --- the stand-in matrix: the HIP runtime from the system, declared -------------------------------


def test_the_stand_in_declares_what_is_installed(shipped: Matrix, debian: Matrix) -> None:
    (target,) = rocm_targets(debian)
    variant = target.variant
    assert (variant.version, variant.label, target.id) == ("7.2", "rocm7.2", "rocm7.2-cp313-linux-x86_64")
    assert variant.runtime_requirements == () and variant.lib_providers == ()
    assert variant.system_package_for("libamdhip64.so.7") == "libamdhip64-7"
    assert "libamdhip64.so.7" in variant.exclude_libs  # never bundled: repair excludes it
    assert variant.provider_for("libamdhip64.so.7") is None
    assert variant.rpath == one(shipped, "rocm7.14-cp313-linux-x86_64").variant.rpath  # the release's RUNPATH


def test_a_system_library_needs_no_requirement_and_passes_verify(tmp_path: Path, debian: Matrix) -> None:
    (target,) = rocm_targets(debian)
    ext = make_elf(needed=("libc.so.6", "libamdhip64.so.7"), runpath=":".join(target.variant.rpath))
    wheel = build_wheel(tmp_path, target, {linux_ext(target): ext}, requires=())
    assert findings(check_providers, wheel, target) == set()
    assert findings(check_libraries, wheel, target) == set()
    assert findings(check_label, wheel, target) == set()


def test_a_bundled_system_library_is_refused(tmp_path: Path, debian: Matrix) -> None:
    (target,) = rocm_targets(debian)
    ext = make_elf(needed=("libc.so.6", "libamdhip64.so.7"), runpath=":".join(target.variant.rpath))
    bundled = "minifw.libs/libamdhip64.so.7"
    wheel = build_wheel(tmp_path, target, {linux_ext(target): ext, bundled: make_elf()}, requires=())
    assert ("accelerator-bundled", bundled) in findings(check_libraries, wheel, target)


# --- smoke: what the probe is told, and how it judges ---------------------------------------------


def test_smoke_facts_for_rocm(shipped: Matrix, debian: Matrix) -> None:
    (target,) = rocm_targets(debian)
    f = facts(target)
    assert f["runtime_libraries"] == [] and f["system_libraries"] == ["libamdhip64.so.7", "libhsa-runtime64.so.1"]
    assert f["expected_runtime_version"] == 702 and f["runtime_probe"] == ROCM.runtime_probe
    assert f["runtime_probe"]["symbol"] == "hipRuntimeGetVersion"
    release = facts(one(shipped, "rocm7.14-cp313-linux-x86_64"))
    assert release["expected_runtime_version"] == 714 and release["system_libraries"] == []
    assert "libamdhip64.so.7" in release["runtime_libraries"]


def test_a_soname_matches_the_file_it_links_to() -> None:
    loaded = ["/usr/lib/x86_64-linux-gnu/libamdhip64.so.7.2.53211", "/venv/lib/libamdhip64.so.70"]
    assert smoke_probe.matching_libraries(["libamdhip64.so.7"], loaded) == [("libamdhip64.so.7", loaded[0])]


def test_system_libraries_must_come_from_the_system() -> None:
    system = "/usr/lib/x86_64-linux-gnu/libamdhip64.so.7.2.53211"
    ok = smoke_probe.check_system_libraries(["libamdhip64.so.7"], [system], "/tmp/smoke/venv")
    assert [(c["name"], c["ok"]) for c in ok] == [("system library libamdhip64.so.7.2.53211", True)]
    shadow = "/tmp/smoke/venv/lib/python3.14/site-packages/minifw.libs/libamdhip64.so.7"
    bad = smoke_probe.check_system_libraries(["libamdhip64.so.7"], [shadow], "/tmp/smoke/venv")
    assert not bad[0]["ok"] and "not from the system's package" in bad[0]["detail"]


def test_hip_runtime_version_is_compared_by_release() -> None:
    probe = ROCM.runtime_probe
    loaded = ["/usr/lib/x86_64-linux-gnu/libamdhip64.so.7.2.53211"]
    for reported, ok in ((70253211, True), (71400000, False)):
        found, path, got = smoke_probe.check_runtime_version(
            {"runtime_probe": probe, "expected_runtime_version": 702, "accelerator": "rocm"}, loaded,
            query=lambda _path, _symbol, value=reported: value)
        assert (found["ok"], path, got) == (ok, loaded[0], reported)
    assert "hipRuntimeGetVersion() = 71400000 (// 100000 = 714), expected 702" in found["detail"]
