"""verify on a large wheel nobody here built: PyTorch 2.13.0's CPU wheel for CPython 3.11.

The wheel is fetched with ``pip download`` (pip's own configuration) into
``~/.cache/builders/test-wheels`` and reused from there. The expected findings are computed
independently of builders: the ELF members are found by their magic bytes and their dynamic
sections read with binutils' ``readelf``. What torch's wheel really has wrong is that 69 test
and tool executables under ``torch/bin`` and ``torch/test`` carry the absolute RUNPATH entries
``/lib/intel64:/lib/intel64_win:/lib/win-x64`` (Intel library folders under an empty prefix),
which make the loader search those system folders on the user's machine; everything else, the ELF loader that 8 files need included, is allowed.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

from tests.helpers import require_tool

ROOT = Path(__file__).resolve().parents[2]
MATRIX = ROOT / "tests" / "projects" / "torch" / "matrix.yaml"
TARGET = "cpu-cp311-linux-x86_64"
ABSOLUTE = ["/lib/intel64", "/lib/intel64_win", "/lib/win-x64"]

pytestmark = pytest.mark.slow


def _bench() -> ModuleType:
    """benchmarks/bench_verify.py, which owns fetching the wheel (one download helper, not two)."""
    spec = importlib.util.spec_from_file_location("bench_verify", ROOT / "benchmarks" / "bench_verify.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def torch_wheel() -> Path:
    bench = _bench()
    return bench.fetch(bench.default_cache())


@pytest.fixture(scope="module")
def readelf_truth(torch_wheel: Path) -> dict[str, list[str]]:
    """ELF member -> its RPATH/RUNPATH entries, by magic bytes and ``readelf -d``."""
    require_tool("readelf")  # binutils': the independent oracle
    truth: dict[str, list[str]] = {}
    with zipfile.ZipFile(torch_wheel) as zf, tempfile.TemporaryDirectory() as tmp:
        for info in zf.infolist():
            with zf.open(info) as fh:
                if fh.read(4) != b"\x7fELF":
                    continue
            local = Path(zf.extract(info, tmp))
            truth[info.filename] = _readelf_paths(local)
            local.unlink()
    return truth


def _readelf_paths(path: Path) -> list[str]:
    out = subprocess.run(["readelf", "-d", str(path)], check=True, capture_output=True, text=True).stdout
    paths = re.findall(r"\((?:RPATH|RUNPATH)\)\s+Library r(?:un)?path: \[(.*)\]", out)
    return [p for value in paths for p in value.split(":") if p]


def test_torch_cpu_wheel_has_exactly_its_true_findings(torch_wheel: Path, readelf_truth: dict[str, list[str]]) -> None:
    cmd = [sys.executable, "-m", "builders", "verify", str(torch_wheel), "--target", TARGET, "--matrix", str(MATRIX), "--json"]
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 7, proc.stderr
    findings = json.loads(proc.stdout)["findings"]

    absolute = {name for name, paths in readelf_truth.items() if any(not p.startswith("$ORIGIN") for p in paths)}
    assert {(f["code"], f["file"]) for f in findings} == {("bad-rpath", name) for name in absolute}
    assert len(findings) == len(absolute) == 69
    assert len(readelf_truth) == 136  # executables and libraries alike, whatever their names
    assert {name.split("/")[1] for name in absolute} == {"bin", "test"}
    assert all(str(ABSOLUTE) in f["message"] for f in findings)
    assert not any("ld-linux" in f["message"] for f in findings)


def test_torch_cpu_wheel_passes_smoke_with_its_own_script(torch_wheel: Path, tmp_path: Path) -> None:
    """builders' generic probe plus tests/projects/torch/smoke.py (a matmul, no CUDA in a cpu build)."""
    cmd = [sys.executable, "-m", "builders", "smoke", str(torch_wheel), "--target", TARGET, "--matrix", str(MATRIX)]
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, cwd=tmp_path, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for check in ("torch._C", "project:matmul", "project:no CUDA in a cpu build"):
        assert check in proc.stdout + proc.stderr


def test_verify_and_audit_give_torchs_metadata_one_verdict(torch_wheel: Path) -> None:
    """The shared METADATA rules on METADATA nobody here wrote: torch's own, accepted by both sides."""
    from builders.families import loader as matrix
    from builders.index import audit
    from builders.wheel.verify import Expectation
    from tests import helpers
    from tests.verdict import same_verdict

    m = matrix.load(MATRIX, builds=False)
    t = helpers.one(m, TARGET)
    promise = audit.promises(m, t.variant.label)[t.wheel_name]
    assert same_verdict(torch_wheel, m, Expectation(target=t, dropped=m.dropped), promise) == frozenset()
