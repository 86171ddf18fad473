"""Adding a Python, a CUDA version and a platform is a matrix edit only: the unit tests,
rerun on such a grown copy of matrix.yaml, must all still pass (they derive, never pin).
The rerun takes the unit tests that read the test matrix (half of them); the others cannot see it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from builders.families import loader as matrix

PLATFORM = """\
  windows-arm64:
    os: windows
    arch: arm64
    wheel_platform: win_arm64
    runner: windows-11-arm
"""
CUDA = """\
      "13.6":
        label: cu136
        arch_list:
          linux-x86_64: "8.0;9.0;10.0;12.0+PTX"
          linux-aarch64: "8.0;9.0;10.0;12.0+PTX"
        toolkit:
          requirements: ["cuda-toolkit[nvcc,cudart,cccl,crt,nvvm]==13.6.0"]
        runtime_requirements:
          - 'cuda-toolkit[cudart]==13.6.0; platform_system == "Linux"'
"""


def grow(text: str) -> str:
    """``text`` with Python 3.16, CUDA 13.6 and a windows-arm64 platform added, the rest of
    the text untouched (tests edit the shipped text by string replacement)."""
    last_python = yaml.safe_load(text)["pythons"][-1]
    text = _after(text, f'  - "{last_python}"\n', '  - "3.16"\n')
    text = _after(text, "platforms:\n", PLATFORM)
    text = _after(text, "\n    versions:\n", CUDA)  # the first family with versions is CUDA's
    return _after(text, "\nexclude:\n", '  - targets: "xpu-*-windows-arm64"\n    reason: oneAPI ships for x86_64 only\n')


def _after(text: str, anchor: str, insert: str) -> str:
    assert anchor in text, anchor
    return text.replace(anchor, anchor + insert, 1)


@pytest.mark.slow
def test_unit_suite_passes_on_a_grown_matrix(tmp_path: Path, root: Path, shipped_text: str) -> None:
    grown = root / ".grown-matrix.yaml"  # beside the original: relative paths keep their meaning
    grown.write_text(grow(shipped_text))
    try:
        before = len(matrix.loads(shipped_text, root / "matrix.yaml").pythons)
        assert len(matrix.load(grown).pythons) == before + 1
        env = {**os.environ, "BUILDERS_TEST_MATRIX": str(grown)}
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/unit"],
                              cwd=root, env=env, capture_output=True, text=True, timeout=600)
    finally:
        grown.unlink()
    # Only the unit tests that read the matrix run on the grown copy (tests/conftest.py); none is exit 5.
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    print(proc.stdout.strip().splitlines()[-1])
