"""Toolkit checks against the matrix, from nvcc's own output (captured text, no nvcc needed)."""

from __future__ import annotations

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
    assert list(tmp_path.iterdir()) == []  # nothing half-installed left
    with pytest.raises(ToolchainError, match=r"from http://mirror\.example/simple failed"):
        provision.pip_prefix("cuda-13.2.2", ["x"], tmp_path, {"PIP_INDEX_URL": "http://mirror.example/simple"}, None)
