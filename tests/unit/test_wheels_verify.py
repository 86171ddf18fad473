"""Wheel rewriting and the static checks that need no compiler: synthetic wheels in tmp."""

from __future__ import annotations

import zipfile
import zlib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from builders.families import loader as matrix
from builders.matrix.targets import Selection, select
from builders.wheel.archive import Wheel, record_hash
from builders.wheel.verify import (
    Check,
    Contents,
    Expectation,
    Finding,
    check_metadata,
    check_name_and_tags,
    check_record,
)
from builders.wheel.writer import label, rewrite, write_wheel

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
    from builders.wheel.verify import check_extension_modules, check_libraries, check_size

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


# --- the archive, read defensively (issue 9) ----------------------------------------------------
#
# Hostile archives come from tests/hostile/make_wheels.py, which writes zips byte by byte; the
# caps are module constants, lowered here where a test would otherwise need gigabytes.

from builders.base.errors import WheelError  # noqa: E402
from builders.wheel import archive as wheels_mod  # noqa: E402
from builders.wheel import zipcheck  # noqa: E402
from builders.wheel.verify import check_archive, integrity, verify  # noqa: E402
from tests.hostile import make_wheels as mw  # noqa: E402


def hostile(tmp: Path, name: str, **kw: object) -> Wheel:
    getattr(mw, name)(tmp, **kw)
    (path,) = (tmp / "house").glob("*.whl")
    return Wheel(path)


def problems(wheel: Wheel) -> set[tuple[str, str]]:
    """(code, member) of every archive finding: central directory, then inflating."""
    return {(f.code, f.file) for f in run(check_archive, wheel, None)}


PKG = "minifw"  # what make_wheels names members after: the shipped matrix's package


@pytest.mark.parametrize("maker, code, member", [
    ("zip_slip", "member-traversal", "../../evil.py"),
    ("absolute", "member-absolute", "/tmp/evil.py"),
    ("backslash", "member-backslash", f"{PKG}\\evil.py"),
    ("nul_name", "member-control-char", f"{PKG}/a.py\x00../../evil.py"),
    ("nul_name", "member-traversal", f"{PKG}/a.py\x00../../evil.py"),
    ("newline_name", "member-control-char", f"{PKG}/a.py\nerror: forged line"),
    ("duplicate", "member-duplicate", f"{PKG}/__init__.py"),
    ("symlink", "member-symlink", f"{PKG}/passwd"),
    ("fifo", "member-special", f"{PKG}/pipe"),
    ("encrypted", "member-encrypted", f"{PKG}/secret.py"),
    ("compression", "member-compression", f"{PKG}/data.bin"),
    ("bad_crc", "member-crc", f"{PKG}/data.py"),
])
def test_each_archive_problem_has_its_own_code(tmp_path: Path, maker: str, code: str, member: str) -> None:
    assert mw.pkg() == PKG
    assert (code, member) in problems(hostile(tmp_path, maker))


def test_a_good_wheel_has_no_archive_problem(tmp_path: Path) -> None:
    wheel = hostile(tmp_path, "good")
    assert problems(wheel) == set() and wheel.problems() == [] and integrity(wheel) == []


def test_refused_members_are_never_inflated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[str] = []
    real_open = zipfile.ZipFile.open
    monkeypatch.setattr(zipfile.ZipFile, "open", lambda self, name, *a, **kw: opened.append(getattr(name, "filename", name))
                        or real_open(self, name, *a, **kw))
    for maker in ("encrypted", "compression"):
        wheel = hostile(tmp_path / maker, maker)
        run(check_archive, wheel, None)
    assert f"{PKG}/secret.py" not in opened and f"{PKG}/data.bin" not in opened and f"{PKG}/__init__.py" in opened


def test_a_zip_bomb_is_refused_from_its_declared_sizes(tmp_path: Path) -> None:
    """64 MiB of zeros in 64 KB (the corpus has the 2 GiB one): over 200:1, never inflated."""
    wheel = hostile(tmp_path, "bomb", size=64 << 20)
    with wheel.open() as reader:
        found = {(f.code, f.file) for f in check_archive(Contents(reader), None)}  # type: ignore[arg-type]
        assert reader.inflated < 1 << 20
    assert (("member-ratio", f"{PKG}/weights.bin") in found and ("archive-ratio", "") in found)


def test_a_bomb_whose_sizes_lie_stops_at_the_declared_size(tmp_path: Path) -> None:
    wheel = hostile(tmp_path, "bomb_lying", size=64 << 20)
    with wheel.open() as reader:
        assert ("member-crc", f"{PKG}/weights.bin") in {(f.code, f.file) for f in check_archive(Contents(reader), None)}  # type: ignore[arg-type]
        assert reader.inflated < 2 << 20


def test_many_small_members_that_inflate_too_far_together(tmp_path: Path) -> None:
    wheel = hostile(tmp_path, "bomb_many", count=300)
    assert ("archive-ratio", "") in problems(wheel)


def test_declared_sizes_over_the_caps(tmp_path: Path) -> None:
    assert ("archive-too-large", "") in problems(hostile(tmp_path / "a", "too_large"))
    big = mw.Entry(name=b"big.bin", data=b"", method=0, crc=0, size=zipcheck.MAX_MEMBER_INFLATED + 1,
                   csize=zipcheck.MAX_MEMBER_INFLATED + 1)
    (tmp_path / "b.whl").write_bytes(mw.raw_zip([big]))
    assert ("member-too-large", "big.bin") in problems(Wheel(tmp_path / "b.whl"))


def test_the_total_is_enforced_while_streaming(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Declared sizes passed; what is actually inflated is counted too, and stops at the cap."""
    wheel = hostile(tmp_path, "good")
    with wheel.open() as reader:
        assert reader.problems == ()
        monkeypatch.setattr(wheels_mod, "MAX_TOTAL_INFLATED", 100)
        stream = reader.member_stream(next(i for i in reader.infos if i.file_size > 100))
        assert sum(map(len, stream)) == 0 and stream.problem is not None
        assert stream.problem.code == "archive-too-large"


def test_a_member_that_inflates_short_of_its_declared_size(tmp_path: Path) -> None:
    short = mw.Entry(name=b"a.txt", data=b"abc", method=0, crc=zlib.crc32(b"abc"), size=10, csize=3, plain=b"abc")
    (tmp_path / "s.whl").write_bytes(mw.raw_zip([short]))
    assert {c for c, _ in problems(Wheel(tmp_path / "s.whl"))} & {"member-size", "member-corrupt", "member-crc"}


@pytest.mark.parametrize("maker, phrase", [
    ("not_a_zip", "not a readable wheel"),
    ("truncated", "not a readable wheel"),
    ("empty", "not a readable wheel"),
])
def test_a_file_that_is_not_a_zip_is_a_wheel_error(tmp_path: Path, maker: str, phrase: str) -> None:
    wheel = hostile(tmp_path, maker)
    with pytest.raises(WheelError, match=phrase):
        with wheel.open():
            pass


def test_member_count_and_central_directory_are_capped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "m.whl").write_bytes(mw._many(2000))
    monkeypatch.setattr(zipcheck, "MAX_MEMBERS", 1000)
    with pytest.raises(WheelError, match="2000 members, more than 1,000"):
        with Wheel(tmp_path / "m.whl").open():
            pass
    monkeypatch.setattr(zipcheck, "MAX_CENTRAL_DIRECTORY", 50_000)
    with pytest.raises(WheelError, match="central directory is 110,000 bytes"):
        with Wheel(tmp_path / "m.whl").open():
            pass


def test_a_dist_info_file_is_read_whole_only_under_its_cap(tmp_path: Path) -> None:
    wheel = hostile(tmp_path, "metadata_bomb")
    with pytest.raises(WheelError, match="more than the 32 MiB"):
        wheel.read(f"{mw.facts().dist_info}/METADATA")


def test_verify_reports_an_unreadable_dist_info_as_a_finding(tmp_path: Path) -> None:
    wheel = hostile(tmp_path, "metadata_bomb")
    codes = {f.code for f in verify(wheel, Expectation(target=mw.target(), dropped=mw.shipped().dropped))}
    assert {"member-ratio", "wheel-unreadable"} <= codes and "label-contradicted" not in codes


def test_findings_print_control_characters_escaped(tmp_path: Path) -> None:
    found = run(check_archive, hostile(tmp_path, "newline_name"), None)
    assert found and all("\n" not in str(f) for f in found)
    assert any("a.py\\nerror: forged line" in str(f) for f in found)


# --- rewrite: streamed, refuses what it should not copy ------------------------------------------


def test_rewrite_streams_members(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 10 MiB member is never held whole: peak traced memory stays a few 1 MiB chunks."""
    import random
    import tracemalloc

    big = random.Random(0).randbytes(10 << 20)
    raw = make_wheel(tmp_path)
    with zipfile.ZipFile(raw.path) as zf:
        members = {n: zf.read(n) for n in zf.namelist() if not n.endswith("RECORD")}
    members["minifw/weights.bin"] = big
    write_wheel(raw.path, members, DIST_INFO, {}, 315532800)
    del members, big
    (tmp_path / "out").mkdir()
    tracemalloc.start()
    out = rewrite(Wheel(raw.path), tmp_path / "out", version=Version("2.15.0+cu132"))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 5 << 20, f"{peak / 2**20:.1f} MiB"
    assert run(check_record, Wheel(out), None) == []
    with zipfile.ZipFile(out) as zf:
        assert zlib.crc32(zf.read("minifw/weights.bin")) == zlib.crc32(random.Random(0).randbytes(10 << 20))


@pytest.mark.parametrize("maker", ["zip_slip", "symlink", "duplicate"])
def test_rewrite_refuses_a_wheel_with_archive_problems(tmp_path: Path, maker: str) -> None:
    wheel = hostile(tmp_path, maker)
    (tmp_path / "out").mkdir()
    with pytest.raises(WheelError, match="refused to rewrite"):
        rewrite(wheel, tmp_path / "out", version=Version("2.15.0"))
    assert list((tmp_path / "out").iterdir()) == []


def test_rewrite_keeps_metadata_bytes_it_does_not_change(tmp_path: Path) -> None:
    wheel = hostile(tmp_path, "non_ascii_metadata")
    (tmp_path / "out").mkdir()
    out = Wheel(rewrite(wheel, tmp_path / "out", version=Version("2.15.0"), requirements=[Requirement("numpy")]))
    before = wheel.read(f"{wheel.dist_info}/METADATA")
    after = out.read(f"{out.dist_info}/METADATA")
    assert "Author: Jürgen Müller\n".encode() in after and after.endswith("Ünïcödé description ✓\n".encode())
    assert b"Version: 2.15.0\n" in after and after.count(b"Requires-Dist") == 1
    def kept(data: bytes) -> list[bytes]:
        return [line for line in data.splitlines() if not line.startswith((b"Version:", b"Requires-Dist:"))]
    assert kept(before) == kept(after)
