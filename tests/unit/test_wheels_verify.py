"""Wheel rewriting and the static checks that need no compiler: synthetic wheels in tmp."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from builders import matrix
from builders.targets import Selection, select
from builders.verify import Check, Contents, Expectation, Finding, check_metadata, check_name_and_tags, check_record
from builders.wheels import Wheel, label, record_hash, rewrite, write_wheel

DIST_INFO = "minifw-2.15.0.dist-info"


def make_wheel(tmp: Path, *, tag: str = "cp312-cp312-manylinux_2_28_x86_64", requires_python: str = ">=3.11",
               version: str = "2.15.0", requires: tuple[str, ...] = ()) -> Wheel:
    dist_info = f"minifw-{version}.dist-info"
    meta = f"Metadata-Version: 2.4\nName: minifw\nVersion: {version}\nRequires-Python: {requires_python}\n"
    meta += "".join(f"Requires-Dist: {r}\n" for r in requires)
    members = {
        "minifw/__init__.py": b"__version__ = '2.15.0'\n",
        f"{dist_info}/METADATA": meta.encode(),
        f"{dist_info}/WHEEL": f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: {tag}\n".encode(),
    }
    path = tmp / f"minifw-{version}-{tag}.whl"
    write_wheel(path, members, dist_info, {}, 315532800)
    return Wheel(path)


def run(check: Check, wheel: Wheel, expect: Expectation | None) -> list[Finding]:
    """One check over one wheel, read through a single open reader as verify does."""
    with wheel.open() as reader:
        return list(check(Contents(reader), expect))  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def target(shipped_text: str):
    m = matrix.loads(shipped_text)
    (t,) = select(m, Selection(targets=("cu132-cp312-linux-x86_64",)))
    return t, m.dropped


def test_write_wheel_is_deterministic(tmp_path: Path) -> None:
    a = make_wheel(tmp_path).path.read_bytes()
    (tmp_path / "again").mkdir()
    b = make_wheel(tmp_path / "again").path.read_bytes()
    assert a == b


def test_label_renames_version_dist_info_and_requirements(tmp_path: Path, target) -> None:
    t, _ = target
    raw = make_wheel(tmp_path)
    out = Wheel(label(raw, t.version, t.requirements, tmp_path / "out", 315532800))
    assert out.path.name == "minifw-2.15.0+cu132-cp312-cp312-manylinux_2_28_x86_64.whl"
    assert out.dist_info == "minifw-2.15.0+cu132.dist-info"
    assert out.metadata["Version"] == "2.15.0+cu132"
    assert [str(r) for r in out.requires_dist] == [str(r) for r in t.requirements]
    assert out.read("minifw/__init__.py") == raw.read("minifw/__init__.py")
    assert run(check_record, out, None) == []


def test_label_keeps_a_wheel_that_is_already_labelled(tmp_path: Path, target) -> None:
    t, _ = target
    raw = make_wheel(tmp_path, version="2.15.0+cu132", requires=tuple(map(str, t.requirements)))
    out = label(raw, t.version, t.requirements, tmp_path / "out", 0)
    assert out.read_bytes() == raw.path.read_bytes()


def test_rewrite_changes_only_version_bearing_files(tmp_path: Path) -> None:
    raw = make_wheel(tmp_path, version="2.15.0+cu132")
    (tmp_path / "x").mkdir()
    out = Wheel(rewrite(raw, tmp_path / "x", version=Version("2.15.0")))
    with zipfile.ZipFile(raw.path) as a, zipfile.ZipFile(out.path) as b:
        assert a.read("minifw/__init__.py") == b.read("minifw/__init__.py")
        assert a.read("minifw-2.15.0+cu132.dist-info/WHEEL") == b.read("minifw-2.15.0.dist-info/WHEEL")


def test_metadata_findings(tmp_path: Path, target) -> None:
    t, dropped = target
    wheel = make_wheel(tmp_path, version="2.15.0+cu132", requires_python=">=3.10",
                       requires=("cuda-toolkit[cudart]==13.4.3",))
    found = {f.code for f in run(check_metadata, wheel, Expectation(target=t, dropped=dropped))}
    assert found == {"requires-python-admits-dropped", "requirements-mismatch"}


def test_tag_findings(tmp_path: Path, target) -> None:
    t, dropped = target
    wheel = make_wheel(tmp_path, tag="cp312-cp312-linux_x86_64", version="2.15.0+cu132")
    found = {f.code for f in run(check_name_and_tags, wheel, Expectation(target=t, dropped=dropped))}
    assert found == {"tag-mismatch"}


def test_record_findings(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path)
    bad = tmp_path / "bad" / wheel.path.name
    bad.parent.mkdir()
    with zipfile.ZipFile(wheel.path) as src, zipfile.ZipFile(bad, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            dst.writestr(info, b"x = 1\n" if info.filename.endswith("__init__.py") else data)
        dst.writestr("minifw/extra.py", b"")
    found = {(f.code, f.file) for f in run(check_record, Wheel(bad), None)}
    assert found == {("record-mismatch", "minifw/__init__.py"), ("record-unlisted", "minifw/extra.py")}


def test_record_hash_format() -> None:
    assert record_hash(b"") == "sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU"
    assert Requirement("a==1")  # packaging is what parses requirements


def test_driver_library_and_size_budget_findings(tmp_path: Path, shipped_text: str) -> None:
    from builders.verify import check_extension_modules, check_libraries, check_size

    m = matrix.loads(shipped_text.replace("wheel_size_budget_mb: 64", "wheel_size_budget_mb: 0.0001"))
    (t,) = select(m, Selection(targets=("cu132-cp312-linux-x86_64",)))
    raw = make_wheel(tmp_path, version="2.15.0+cu132")
    with zipfile.ZipFile(raw.path) as zf:
        members = {n: zf.read(n) for n in zf.namelist() if not n.endswith("RECORD")}
    members["minifw.libs/libcuda.so.1"] = b"\x7fELF" + b"\0" * 60
    (tmp_path / "bad").mkdir()
    path = tmp_path / "bad" / raw.path.name
    write_wheel(path, members, raw.dist_info, {}, 315532800)
    expect = Expectation(target=t, dropped=m.dropped)
    codes = {f.code for f in run(check_libraries, Wheel(path), expect)}
    assert codes == {"driver-bundled", "bad-elf"}
    assert [f.code for f in run(check_extension_modules, Wheel(path), expect)] == ["extension-missing"]
    assert [f.code for f in run(check_size, Wheel(path), expect)] == ["size-budget"]
    assert m.project.wheel_size_budget_mb == 0.0001
