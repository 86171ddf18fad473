"""The RUNPATH arithmetic repair and verify share: from where an ELF file lies to a runtime folder and back."""

from __future__ import annotations

import posixpath

import pytest

from builders.matrix import runpath

DIRS = ["nvidia/cu13/lib", "_rocm_sdk_core/lib", "../..", "../../intel"]
PLACES = ["pkg", "pkg/lib", "pkg/sub/deep/lib", "", "../.."]


@pytest.mark.parametrize(("elf_dir", "folder", "entry"), [
    ("pkg", "nvidia/cu13/lib", "$ORIGIN/../nvidia/cu13/lib"),
    ("pkg/lib", "nvidia/cu13/lib", "$ORIGIN/../../nvidia/cu13/lib"),
    ("pkg", "../..", "$ORIGIN/../../.."),
    ("pkg/lib", "pkg/lib", "$ORIGIN"),
    ("", "nvidia/cu13/lib", "$ORIGIN/nvidia/cu13/lib"),
])
def test_the_entry_depends_on_where_the_elf_lies(elf_dir: str, folder: str, entry: str) -> None:
    assert runpath.origin_entry(elf_dir, folder) == entry


@pytest.mark.parametrize("elf_dir", PLACES)
@pytest.mark.parametrize("folder", DIRS)
def test_every_computed_entry_resolves_back_to_its_folder(elf_dir: str, folder: str) -> None:
    """Checked against plain path joining in a made-up venv, not against the module's own helper."""
    entry = runpath.origin_entry(elf_dir, folder)
    if elf_dir.startswith("..") and not folder.startswith(".."):
        assert entry is None  # from the environment's lib folder into site-packages names the Python version
        return
    assert entry is not None
    site = "/e/lib/python3.13/site-packages"
    here = posixpath.normpath(posixpath.join(site, elf_dir))
    assert posixpath.normpath(entry.replace("$ORIGIN", here)) == posixpath.normpath(posixpath.join(site, folder))
    assert runpath.reached(elf_dir, entry) == posixpath.normpath(folder)


def test_an_entry_one_level_short_reaches_another_folder() -> None:
    assert runpath.reached("pkg/lib", "$ORIGIN/../nvidia/cu13/lib") == "pkg/nvidia/cu13/lib"
    assert runpath.reached("pkg", "/usr/local/cuda/lib64") is None
    assert runpath.reached("pkg", "${ORIGIN}/../x") == "x"


@pytest.mark.parametrize(("member", "folder"), [
    ("pkg/_C.so", "pkg"), ("pkg/lib/libx.so", "pkg/lib"), ("top.so", ""),
    ("p-1.data/platlib/pkg/lib/x.so", "pkg/lib"), ("p-1.data/data/lib/libx.so", "../.."),
    ("p-1.data/headers/x.h", None),
])
def test_where_a_member_installs(member: str, folder: str | None) -> None:
    assert runpath.site_dir(member) == folder


def test_old_rpath_entries_name_folders_from_a_top_level_package() -> None:
    assert runpath.runtime_dirs_of(["nvidia/cu13/lib/"], ["$ORIGIN/../nvidia/cu13/lib", "$ORIGIN/../../.."]) == \
        ("nvidia/cu13/lib", "../..")
