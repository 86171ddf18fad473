"""The kinds of difference between a released wheel and its rebuild (builders.wheel.wheeldiff), on zips
written here: each kind made by the change that causes it in a real build."""

from __future__ import annotations

import io
import zipfile

from builders.wheel import wheeldiff as wd

SO = b"\x7fELF" + b"\0" * 16 + b"/work/out/.work/cpu-cp312/src/ext.c\0" + b"code" * 8
DIST = "demo-1.0.dist-info"


def zipped(members: list[tuple[str, bytes]], *, stamp: tuple[int, ...] = (2026, 1, 2, 3, 4, 6), mode: int = 0o644,
           comment: bytes = b"") -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.comment = comment
        for name, data in members:
            info = zipfile.ZipInfo(name, date_time=stamp)  # type: ignore[arg-type]
            info.external_attr = mode << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return buf.getvalue()


BASE = [("demo/_ext.so", SO), ("demo/__init__.py", b"x = 1\n"), (f"{DIST}/METADATA", b"Name: demo\nVersion: 1.0\n")]


def kinds(a: bytes, b: bytes) -> list[tuple[str, str]]:
    return [(d.member, d.kind) for d in wd.differences(a, b)]


def test_the_same_bytes_have_no_difference() -> None:
    assert wd.differences(zipped(BASE), zipped(BASE)) == ()


def test_a_zip_timestamp_is_timestamps_for_every_member() -> None:
    found = wd.differences(zipped(BASE), zipped(BASE, stamp=(1980, 1, 1, 0, 0, 0)))
    assert {d.kind for d in found} == {wd.TIMESTAMPS} and len(found) == len(BASE)
    assert "1980-01-01 00:00:00" in found[0].detail


def test_another_build_folder_in_a_binary_is_paths_naming_both() -> None:
    moved = [("demo/_ext.so", SO.replace(b"/work/out/", b"/tmp/rebuild-x1/out/"))] + BASE[1:]
    (found,) = wd.differences(zipped(BASE), zipped(moved))
    assert (found.member, found.kind) == ("demo/_ext.so", wd.PATHS)
    assert "/work/out/.work" in found.detail and "/tmp/rebuild-x1/out" in found.detail


def test_other_bytes_in_a_binary_are_code() -> None:
    changed = [("demo/_ext.so", SO.replace(b"code", b"CODE", 1))] + BASE[1:]
    assert kinds(zipped(BASE), zipped(changed)) == [("demo/_ext.so", wd.CODE)]


def test_dist_info_and_a_mode_are_metadata() -> None:
    meta = BASE[:2] + [(f"{DIST}/METADATA", b"Name: demo\nVersion: 1.0+local\n")]
    assert kinds(zipped(BASE), zipped(meta)) == [(f"{DIST}/METADATA", wd.METADATA)]
    (mode,) = wd.differences(zipped(BASE[:1]), zipped(BASE[:1], mode=0o755))
    assert mode.kind == wd.METADATA and "755" in mode.detail


def test_another_order_is_one_ordering_finding_naming_the_first_moved() -> None:
    found = wd.differences(zipped(BASE), zipped([BASE[1], BASE[0], BASE[2]]))
    assert [(d.member, d.kind) for d in found] == [("demo/_ext.so", wd.ORDERING)]


def test_members_on_one_side_only_are_named_by_side() -> None:
    extra = BASE + [(f"{DIST}/sboms/builders.cdx.json", b"{}")]
    assert kinds(zipped(extra), zipped(BASE)) == [(f"{DIST}/sboms/builders.cdx.json", wd.ONLY_RELEASED)]
    assert kinds(zipped(BASE), zipped(extra)) == [(f"{DIST}/sboms/builders.cdx.json", wd.ONLY_REBUILT)]


def test_equal_members_in_other_zip_bytes_are_one_archive_finding() -> None:
    (found,) = wd.differences(zipped(BASE), zipped(BASE, comment=b"made elsewhere"))
    assert (found.member, found.kind) == (wd.ARCHIVE, wd.METADATA)


def test_summary_counts_by_kind_in_kind_order() -> None:
    moved = [("demo/_ext.so", SO.replace(b"/work/", b"/srv/x/"))] + BASE[1:]
    found = wd.differences(zipped(BASE), zipped(moved[::-1], stamp=(1980, 1, 1, 0, 0, 0)))
    assert list(wd.summary(found)) == [wd.TIMESTAMPS, wd.PATHS, wd.ORDERING]


def test_a_folder_in_debug_info_with_the_build_id_hashing_it_is_paths() -> None:
    """As MarkupSafe's extension came out of two folders without a prefix map: DWARF names the folder, and the
    linker's build-id (a hash over everything) differs with it."""
    def elf(folder: bytes, build_id: bytes) -> bytes:
        note = b"\x04\0\0\0\x14\0\0\0\x03\0\0\0GNU\0" + build_id
        return b"\x7fELF" + b"\0" * 12 + note + b"code" * 4 + folder + b"/.work/cpu-cp312/src\0"
    a = [("m/_s.so", elf(b"/tmp/rb/ms-a", b"\x01" * 20))]
    b = [("m/_s.so", elf(b"/tmp/rb/ms-b", b"\x02" * 20))]
    (found,) = wd.differences(zipped(a), zipped(b))
    assert found.kind == wd.PATHS and "build-id" in found.detail and "/tmp/rb/ms-a" in found.detail
    other = [("m/_s.so", elf(b"/tmp/rb/ms-a", b"\x02" * 20).replace(b"code", b"CODE", 1))]
    assert kinds(zipped(a), zipped(other)) == [("m/_s.so", wd.CODE)]
