"""Toolkit checks against the matrix, from nvcc's own output (captured text, no nvcc needed)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from builders.base.errors import ToolchainError
from builders.families.cuda import _pin, arch_numbers, check_nvcc, runtime_version
from tests.helpers import one

NVCC_132 = "nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 13.2, V13.2.86\n"
ARCHS_132 = "\n".join(f"compute_{a}" for a in (75, 80, 86, 87, 88, 89, 90, 100, 110, 103, 120, 121))


def test_runtime_version_encoding() -> None:
    assert runtime_version("13.2") == 13020 and runtime_version("13.4") == 13040


def test_arch_numbers() -> None:
    assert arch_numbers("7.5;8.0;12.0+PTX") == ["75", "80", "120"]


def test_pin_is_the_cache_key() -> None:
    assert _pin(("cuda-toolkit[nvcc,cudart]==13.2.2",)) == "13.2.2"
    with pytest.raises(ToolchainError, match="pin no exact version"):
        _pin(("cuda-toolkit>=13.2",))


def test_matching_toolkit_passes(m) -> None:
    check_nvcc(one(m, "cu132-cp312-linux-x86_64"), NVCC_132, ARCHS_132)


def test_arch_the_toolkit_cannot_build_is_a_matrix_error(m) -> None:
    # cu134 declares 10.7 (Rubin); a 13.2 nvcc cannot build it.
    target = one(m, "cu134-cp312-linux-x86_64")
    with pytest.raises(ToolchainError, match=r"matrix.yaml:\d+:\d+: nvcc reports CUDA 13.2, matrix says 13.4"):
        check_nvcc(target, NVCC_132, ARCHS_132)
    with pytest.raises(ToolchainError, match="has 107 which nvcc 13.4 cannot build"):
        check_nvcc(target, NVCC_132.replace("13.2", "13.4"), ARCHS_132)


@pytest.mark.parametrize(("code", "tail", "said"), [
    (124, "Looking in indexes: http://127.0.0.1:9/simple\n[timed out after 20s]", "no answer within the stage's 20 s"),
    (1, "WARNING: Retrying ... 500\nERROR: No matching distribution found for cuda-toolkit", "exit code 1: ERROR: No "
                                                                                           "matching distribution"),
])
def test_a_failed_toolkit_install_names_the_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int,
                                                 tail: str, said: str) -> None:
    from builders.base.errors import ProcessError
    from builders.families import provision

    def fail(argv, **kwargs):
        raise ProcessError(argv, code, tail)

    monkeypatch.setattr(provision, "run", fail)
    with pytest.raises(ToolchainError, match=r"pip install of cuda-toolkit==13.2.2 from http://127.0.0.1:9/simple "
                                             rf"failed: {said}"):
        provision.pip_prefix("cuda-13.2.2", ["cuda-toolkit==13.2.2"], tmp_path, {}, None, "http://127.0.0.1:9/simple",
                             timeout=20)
    assert [p for p in tmp_path.iterdir() if p.suffix != ".lock"] == []  # nothing half-installed left (the lock stays)
    with pytest.raises(ToolchainError, match=r"from http://mirror\.example/simple failed"):
        provision.pip_prefix("cuda-13.2.2", ["x"], tmp_path, {"PIP_INDEX_URL": "http://mirror.example/simple"}, None)


def test_install_key_covers_extras_and_index_not_order() -> None:
    from builders.families.provision import install_key
    base = install_key(["cuda-toolkit[nvcc,cudart]==13.2.2"], None)
    assert install_key(["cuda-toolkit[nvcc,cudart,cublas]==13.2.2"], None) != base
    assert install_key(["cuda-toolkit[nvcc,cudart]==13.2.2"], "${OTHER_INDEX}") != base
    assert install_key(["b==1", "a==2"], None) == install_key(["a==2", "b==1"], None)


def test_a_stale_toolkit_folder_another_run_uses_is_never_replaced(tmp_path: Path) -> None:
    """Another run's shared lock (a second open file, as another process has) keeps a folder whose stamp says it
    holds something else; without it the stale folder is replaced."""
    import fcntl
    import json
    import os

    from builders.families import provision
    final, lock_file = tmp_path / "cuda-13.2.2-x", tmp_path / ".cuda-13.2.2-x.lock"
    final.mkdir()
    (final / ".builders-stamp.json").write_text(json.dumps({"requirements": ["old"], "index_url": None}))
    want = {"requirements": ["new"], "index_url": None}
    mine = provision.in_use(lock_file)
    other = os.open(lock_file, os.O_RDWR)
    fcntl.flock(other, fcntl.LOCK_SH)
    (tmp_path / "tmp").mkdir()
    with pytest.raises(ToolchainError, match="another run is using it; it is never replaced under a run"):
        provision._publish(tmp_path / "tmp", final, want, mine)
    assert json.loads((final / ".builders-stamp.json").read_text())["requirements"] == ["old"]
    os.close(other)
    (tmp_path / "tmp" / ".builders-stamp.json").write_text(json.dumps(want))
    provision._publish(tmp_path / "tmp", final, want, mine)
    assert json.loads((final / ".builders-stamp.json").read_text())["requirements"] == ["new"]
    other = os.open(lock_file, os.O_RDWR)  # the run still holds its shared lock after the swap
    with pytest.raises(BlockingIOError):
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
    os.close(other)


def test_dev_links_name_the_shortest_versioned_library(tmp_path: Path) -> None:
    from builders.families.cuda_layout import dev_links
    for name in ("libcudart.so.13", "libcublas.so.13", "libnvrtc-builtins.so.13.2", "libnvvm.so.4", "libcudadevrt.a",
                 "libfoo.so", "libfoo.so.1"):
        (tmp_path / name).write_bytes(b"")
    assert dev_links(tmp_path) == ["libcublas.so", "libcudart.so", "libnvrtc-builtins.so", "libnvvm.so"]
    assert os.readlink(tmp_path / "libcudart.so") == "libcudart.so.13"
    assert (tmp_path / "libfoo.so").is_file() and not (tmp_path / "libfoo.so").is_symlink()


def test_the_driver_stub_defines_what_cuda_h_declares() -> None:
    from builders.families.cuda_layout import driver_functions, stub_source
    text = ("typedef int CUresult;\nextern CUresult cuInit(unsigned int Flags);\n"
            "CUresult cuMemAlloc_v2(unsigned long long *p, unsigned long n);\nint cudaNotDriver(void);\n")
    assert driver_functions(text) == ["cuInit", "cuMemAlloc_v2"]
    assert stub_source(["cuInit"]) == "int cuInit(void) { return 999; }\n"


@pytest.mark.parametrize("family, root, first, named", [
    ("cuda", "/t/nvidia/cu13", "/t/nvidia/cu13/bin", {"CUDACXX": "/t/nvidia/cu13/bin/nvcc", "CUDA_HOME": "/t/nvidia/cu13"}),
    ("rocm", "/opt/rocm", "/opt/rocm/bin", {"ROCM_PATH": "/opt/rocm", "HIP_PATH": "/opt/rocm", "HIP_PLATFORM": "amd"}),
    ("xpu", "/opt/intel/oneapi/compiler/2026.1", "/opt/intel/oneapi/compiler/2026.1/bin",
     {"CMPLR_ROOT": "/opt/intel/oneapi/compiler/2026.1", "ONEAPI_ROOT": "/opt/intel/oneapi"}),
    ("xpu", "/usr", "", {}),  # a system prefix: nothing put ahead of the host's PATH, nothing named
    ("rocm", "/usr", "", {}),  # Debian's HIP: ROCM_PATH=/usr would hide its device libraries from clang
    ("cpu", "/usr", "", {}),
])
def test_each_family_names_its_toolkit_for_build_systems(family: str, root: str, first: str, named: dict) -> None:
    from builders.families import families
    (found,) = [f for f in families() if f.accelerator.value == family]
    env = found.toolkit_env(root)
    assert env.first_on_path == first
    assert named.items() <= dict(env.variables).items() and (named or not env.variables)
