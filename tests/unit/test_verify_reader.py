"""verify on small wheels written here: the one-open reader, ELF rules, tags, channels, providers.

ELF members are either real files from this system (skipped where absent) or minimal ELF
images built below with ``struct`` (header, PT_LOAD, PT_INTERP, PT_DYNAMIC), so the rules are
tested on any host without a compiler or a subprocess. Targets are picked from the shipped
matrix by what they are (a CUDA build for Linux x86_64 published to PyPI, ...), never by id.
"""

from __future__ import annotations

import glob
import os
import random
import struct
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.tags import parse_tag
from packaging.utils import canonicalize_name

from builders.cli.verify import channel_of, check
from builders.families import loader as matrix
from builders.matrix.model import OS, Accelerator, Matrix
from builders.matrix.targets import Target, expand
from builders.wheel import elf
from builders.wheel.archive import Wheel
from builders.wheel.pypi_form import pypi_requirements
from builders.wheel.verify import (
    CHECKS,
    SPOOL_MAX,
    Check,
    Contents,
    Expectation,
    Finding,
    check_extension_modules,
    check_libraries,
    check_name_and_tags,
    check_providers,
    check_top_level,
    extension_suffixes,
    verify,
)
from builders.wheel.writer import write_wheel
from tests.helpers import accelerator

EM = {"x86_64": 62, "aarch64": 183}
LOADERS = {"x86_64": "ld-linux-x86-64.so.2", "aarch64": "ld-linux-aarch64.so.1"}


def make_elf(*, arch: str = "x86_64", needed: tuple[str, ...] = ("libc.so.6",), runpath: str | None = None,
             interpreter: str | None = None, pad: int = 0) -> bytes:
    """A minimal 64-bit little-endian ELF: one PT_LOAD mapping the file at address 0, optional
    PT_INTERP, and a PT_DYNAMIC with DT_NEEDED/DT_RUNPATH/DT_STRTAB/DT_STRSZ."""
    strtab = b"\0"
    offsets = {}
    for text in (*needed, *([runpath] if runpath else [])):
        offsets[text] = len(strtab)
        strtab += text.encode() + b"\0"
    phnum = 3 if interpreter else 2
    interp = (interpreter.encode() + b"\0") if interpreter else b""
    interp_off = 64 + 56 * phnum
    str_off = interp_off + len(interp)
    dyn_off = (str_off + len(strtab) + 7) // 8 * 8
    entries = [(1, offsets[n]) for n in needed] + ([(29, offsets[runpath])] if runpath else [])
    entries += [(5, str_off), (10, len(strtab)), (0, 0)]
    dynamic = b"".join(struct.pack("<qQ", tag, value) for tag, value in entries)
    size = dyn_off + len(dynamic) + pad
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + b"\0" * 8
    header = struct.pack("<16sHHIQQQIHHHHHH", ident, 2 if interpreter else 3, EM[arch], 1, 0, 64, 0, 0, 64, 56, phnum, 64, 0, 0)
    phdrs = struct.pack("<IIQQQQQQ", 1, 5, 0, 0, 0, size, size, 0x1000)
    if interpreter:
        phdrs += struct.pack("<IIQQQQQQ", 3, 4, interp_off, interp_off, interp_off, len(interp), len(interp), 1)
    phdrs += struct.pack("<IIQQQQQQ", 2, 6, dyn_off, dyn_off, dyn_off, len(dynamic), len(dynamic), 8)
    body = header + phdrs + interp + strtab
    # Padding is incompressible: a long run of zeros would be refused as a zip bomb (member-ratio).
    return body + b"\0" * (dyn_off - len(body)) + dynamic + random.Random(pad).randbytes(pad)


CUDA = accelerator("cuda")


def pick(m: Matrix, *, accelerator: Accelerator = CUDA, os: OS = OS.LINUX, arch: str = "x86_64",
         free_threaded: bool = False, on_pypi: bool | None = None) -> Target:
    """The first target of the matrix that is what a test needs."""
    targets, _excluded = expand(m)
    hits = [t for t in targets if t.variant.accelerator is accelerator and t.platform.os is os
            and elf.normalise_arch(t.platform.arch) == arch and t.python.free_threaded == free_threaded
            and on_pypi in (None, t.on_pypi)]
    if not hits:
        pytest.skip(f"the matrix has no {accelerator.value} target for {os.value} {arch} (free-threaded={free_threaded})")
    return hits[0]


def package(t: Target) -> str:
    return t.project.import_name.replace(".", "/")


def linux_ext(t: Target, arch: str | None = None) -> str:
    """The first extension module's file, as CPython names it on glibc Linux (written out here)."""
    arch = arch or elf.normalise_arch(t.platform.arch)
    return f"{t.project.extension_modules[0].replace('.', '/')}.cpython-{t.python.abi[2:]}-{arch}-linux-gnu.so"


def build_wheel(tmp: Path, t: Target, members: dict[str, bytes], *, version: str | None = None,
                file_tag: str | None = None, wheel_tags: tuple[str, ...] | None = None,
                requires: tuple[str, ...] | None = None) -> Wheel:
    """``t``'s wheel with RECORD right, so that each test's finding comes from what it changed."""
    version = version or str(t.version)
    file_tag = file_tag or str(t.tag)
    requires = tuple(map(str, t.requirements)) if requires is None else requires
    dist = canonicalize_name(t.project.name).replace("-", "_")
    dist_info = f"{dist}-{version}.dist-info"
    meta = f"Metadata-Version: 2.4\nName: {t.project.name}\nVersion: {version}\nRequires-Python: {t.project.requires_python}\n"
    meta += "".join(f"Requires-Dist: {r}\n" for r in requires)
    tags = wheel_tags if wheel_tags is not None else tuple(str(tag) for tag in sorted(parse_tag(file_tag), key=str))
    wheel_file = "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\n" + "".join(f"Tag: {tag}\n" for tag in tags)
    files = {f"{package(t)}/__init__.py": b"", **members, f"{dist_info}/METADATA": meta.encode(),
             f"{dist_info}/WHEEL": wheel_file.encode()}
    path = tmp / f"{dist}-{version}-{file_tag}.whl"
    write_wheel(path, files, dist_info, {}, 315532800)
    return Wheel(path)


def good_members(t: Target, **extra: bytes) -> dict[str, bytes]:
    """The extension, linked as the variant's real build is: to its first runtime library through its RPATH."""
    arch = elf.normalise_arch(t.platform.arch)
    runtime = tuple(lib for lib, _provider in t.variant.lib_providers[:1])
    runpath = ":".join(t.variant.rpath) if runtime else None
    return {linux_ext(t): make_elf(arch=arch, needed=("libc.so.6", *runtime, LOADERS[arch]), runpath=runpath), **extra}


@pytest.fixture(scope="module")
def gpu(shipped: Matrix) -> Target:
    """A GPU build for Linux x86_64: it has excluded libraries, their providers and an RPATH."""
    return pick(shipped)


def findings(check_fn: Check, wheel: Wheel, target: Target) -> set[tuple[str, str]]:
    with wheel.open() as reader:
        return {(f.code, f.file) for f in check_fn(Contents(reader), Expectation(target=target, dropped=()))}


def system_elf(pattern: str) -> Path | None:
    hits = sorted(glob.glob(pattern))
    return Path(hits[0]) if hits else None


# --- the one-open reader ----------------------------------------------------------------------


def test_every_check_reads_through_one_open_archive(tmp_path: Path, shipped: Matrix, gpu: Target) -> None:
    """The wheel file is deleted once opened: every check still works, so nothing reopens it."""
    wheel = build_wheel(tmp_path, gpu, good_members(gpu))
    with wheel.open() as reader:
        size = wheel.path.stat().st_size
        os.unlink(wheel.path)
        contents = Contents(reader)
        expect = Expectation(target=gpu, dropped=shipped.dropped)
        assert [f for c in CHECKS for f in c(contents, expect)] == []
        assert reader.read(f"{package(gpu)}/__init__.py") == b"" and reader.size == size


def test_stream_is_chunked_and_large_elf_is_spooled(tmp_path: Path, gpu: Target) -> None:
    big = make_elf(needed=("libc.so.6",), runpath="/build/lib", pad=SPOOL_MAX + (1 << 20))
    name = f"{package(gpu)}/lib/libbig.so"
    wheel = build_wheel(tmp_path, gpu, good_members(gpu, **{name: big}))
    with wheel.open() as reader:
        (info,) = [i for i in reader.infos if i.filename == name]
        chunks = list(reader.stream(info, chunk_size=1 << 20))
    assert max(map(len, chunks)) <= 1 << 20 and b"".join(chunks) == big
    assert findings(check_libraries, wheel, gpu) == {("bad-rpath", name)}


def test_verify_is_whole_and_clean_for_a_good_wheel(tmp_path: Path, shipped: Matrix, gpu: Target) -> None:
    wheel = build_wheel(tmp_path, gpu, good_members(gpu))
    assert verify(wheel, Expectation(target=gpu, dropped=shipped.dropped)) == []


# --- ELF rules -----------------------------------------------------------------------------------


def test_elf_machine_mismatch_with_a_real_shared_object(tmp_path: Path, shipped: Matrix) -> None:
    """A real .so of this host inside a wheel claiming the other architecture."""
    real = system_elf(os.path.join(sysconfig.get_config_var("DESTSHARED") or "/nonexistent", "*.so"))
    if real is None:
        pytest.skip("no lib-dynload extension on this interpreter")
    with real.open("rb") as fh:
        host_arch = elf.parse(fh).arch
    other = {"x86_64": "aarch64", "aarch64": "x86_64"}.get(host_arch or "")
    if other is None:
        pytest.skip(f"host arch {host_arch} has no counterpart in the shipped matrix")
    t = pick(shipped, arch=other)
    wheel = build_wheel(tmp_path, t, {linux_ext(t): real.read_bytes()})
    assert ("elf-machine-mismatch", linux_ext(t)) in findings(check_libraries, wheel, t)


def test_elf_machine_mismatch_built_here(tmp_path: Path, shipped: Matrix) -> None:
    t = pick(shipped, arch="aarch64")
    stray = f"{package(t)}/lib/libx.so.1"
    wheel = build_wheel(tmp_path, t, good_members(t, **{stray: make_elf(arch="x86_64")}))
    assert findings(check_libraries, wheel, t) == {("elf-machine-mismatch", stray)}


def test_executables_are_found_by_magic_and_absolute_runpath_is_a_finding(tmp_path: Path, gpu: Target) -> None:
    exe = make_elf(needed=("libc.so.6",), runpath="$ORIGIN/../lib:/opt/build/lib", interpreter="/lib64/ld-linux-x86-64.so.2")
    helper = f"{package(gpu)}/bin/helper"
    wheel = build_wheel(tmp_path, gpu, good_members(gpu, **{helper: exe, f"{package(gpu)}/bin/README": b"not ELF"}))
    assert findings(check_libraries, wheel, gpu) == {("bad-rpath", helper)}


def test_a_real_executable_with_absolute_runpath(tmp_path: Path, gpu: Target) -> None:
    real = Path(os.path.realpath(sys.executable))
    with real.open("rb") as fh:
        info = elf.parse(fh) if fh.read(4) == elf.MAGIC else None
    if info is None or info.arch != "x86_64" or all(elf.is_origin_relative(p) for p in info.rpaths):
        pytest.skip("this interpreter is not an x86-64 ELF with an absolute RUNPATH")
    exe = f"{package(gpu)}/bin/python"
    wheel = build_wheel(tmp_path, gpu, good_members(gpu, **{exe: real.read_bytes()}))
    assert ("bad-rpath", exe) in findings(check_libraries, wheel, gpu)


@pytest.mark.parametrize("arch", sorted(LOADERS))
def test_the_loader_is_allowed(tmp_path: Path, shipped: Matrix, arch: str) -> None:
    t = pick(shipped, arch=arch)
    ext = make_elf(arch=arch, needed=("libc.so.6", "libstdc++.so.6", LOADERS[arch]))
    wheel = build_wheel(tmp_path, t, {linux_ext(t): ext})
    assert findings(check_libraries, wheel, t) == set()
    assert elf.is_loader("ld64.so.2") and elf.is_loader("ld-musl-x86_64.so.1") and not elf.is_loader("libld.so")


def test_an_unknown_library_is_unresolved(tmp_path: Path, gpu: Target) -> None:
    wheel = build_wheel(tmp_path, gpu, {linux_ext(gpu): make_elf(needed=("libc.so.6", "libfoo.so.3"))})
    assert findings(check_libraries, wheel, gpu) == {("unresolved-library", linux_ext(gpu))}


# --- tags, name and channels ---------------------------------------------------------------------


def _sibling(tag: str, platform: str) -> str:
    """``tag`` with its platform replaced: ``cp312-cp312-manylinux_2_28_x86_64`` -> ``cp312-cp312-<platform>``."""
    return tag.rsplit("-", 1)[0] + "-" + platform


def test_a_compressed_tag_set_with_the_target_tag_is_accepted(tmp_path: Path, gpu: Target) -> None:
    older = gpu.platform.wheel_platform.replace("_2_28_", "_2_27_")
    assert older != gpu.platform.wheel_platform
    wheel = build_wheel(tmp_path, gpu, {}, file_tag=f"{_sibling(str(gpu.tag), older)}.{gpu.platform.wheel_platform}")
    assert findings(check_name_and_tags, wheel, gpu) == set()


@pytest.mark.parametrize("platforms, only_in_wheel_file, codes", [
    (("manylinux_2_27_x86_64", "manylinux_2_28_x86_64"), True, {"wheel-file-tags"}),
    (("manylinux_2_28_aarch64", "manylinux_2_28_x86_64"), False, {"tag-mismatch"}),
    (("linux_x86_64", "manylinux_2_28_x86_64"), False, {"tag-mismatch"}),
    (("manylinux_2_27_x86_64",), False, {"tag-mismatch"}),
])
def test_tag_sets_that_are_refused(tmp_path: Path, shipped: Matrix, platforms: tuple[str, ...], only_in_wheel_file: bool,
                                   codes: set[str]) -> None:
    t = pick(shipped)
    if t.platform.wheel_platform != "manylinux_2_28_x86_64":
        pytest.skip("the cases are written for a manylinux_2_28_x86_64 target")
    file_tag = _sibling(str(t.tag), ".".join(platforms))
    wheel_tags = (str(t.tag),) if only_in_wheel_file else None
    wheel = build_wheel(tmp_path, t, {}, file_tag=file_tag, wheel_tags=wheel_tags)
    assert {code for code, _ in findings(check_name_and_tags, wheel, t)} == codes


def test_the_name_is_compared_pep503_normalised(tmp_path: Path, shipped: Matrix, shipped_text: str) -> None:
    name = shipped.project.name
    shouted = name.upper().replace("-", "_") if name.upper() != name else name.lower()
    m = matrix.loads(shipped_text.replace(f"  name: {name}\n", f"  name: {shouted}\n", 1))
    assert m.project.name == shouted
    t = pick(m)
    wheel = build_wheel(tmp_path, pick(shipped), {})
    assert findings(check_name_and_tags, wheel, t) == set()


def test_an_unlabelled_wheel_of_a_pypi_target_is_checked_as_the_pypi_wheel(tmp_path: Path, shipped: Matrix) -> None:
    t = pick(shipped, on_pypi=True)
    public = str(t.project.version.public)
    wheel = build_wheel(tmp_path, t, good_members(t), version=public, requires=tuple(map(str, pypi_requirements(shipped))))
    assert channel_of(t, wheel) == "pypi"
    assert check(shipped, t, wheel) == []
    assert "version-mismatch" in {f.code for f in check(shipped, t, wheel, "index")}


def test_an_unlabelled_wheel_of_an_index_only_target_is_refused(tmp_path: Path, shipped: Matrix) -> None:
    t = pick(shipped, on_pypi=False)
    wheel = build_wheel(tmp_path, t, good_members(t), version=str(t.project.version.public))
    assert channel_of(t, wheel) == "index"
    assert {f.code for f in check(shipped, t, wheel)} == {"version-mismatch"}


# --- extension modules ---------------------------------------------------------------------------


def test_a_missing_extension_module_is_named(tmp_path: Path, gpu: Target) -> None:
    module = gpu.project.extension_modules[0]
    base = module.replace(".", "/")
    wrong = {f"{base}.cpython-27-x86_64-linux-gnu.so": make_elf(), f"{base}x.abi3.so": make_elf()}
    with build_wheel(tmp_path, gpu, wrong).open() as reader:
        found = list(check_extension_modules(Contents(reader), Expectation(target=gpu, dropped=())))
    assert [f.code for f in found] == ["extension-missing"] and f"{module} " in found[0].message


@pytest.mark.parametrize("accelerator, os, arch, free_threaded, suffix", [
    (accelerator("cuda"), OS.LINUX, "x86_64", True, ".cpython-{v}t-x86_64-linux-gnu.so"),
    (accelerator("cuda"), OS.LINUX, "aarch64", False, ".cpython-{v}-aarch64-linux-gnu.so"),
    (accelerator("cpu"), OS.WINDOWS, "x86_64", False, ".cp{v}-win_amd64.pyd"),
    (accelerator("cpu"), OS.WINDOWS, "x86_64", True, ".cp{v}t-win_amd64.pyd"),
    (accelerator("cpu"), OS.MACOS, "aarch64", False, ".cpython-{v}-darwin.so"),
    (accelerator("cpu"), OS.MACOS, "aarch64", False, ".abi3.so"),
])
def test_extension_suffixes_per_target(shipped: Matrix, accelerator: Accelerator, os: OS, arch: str,
                                       free_threaded: bool, suffix: str) -> None:
    t = pick(shipped, accelerator=accelerator, os=os, arch=arch, free_threaded=free_threaded)
    suffixes = extension_suffixes(t)
    assert suffix.format(v=f"{t.python.major}{t.python.minor}") in suffixes
    assert (".abi3.so" in suffixes) == (not free_threaded and os is not OS.WINDOWS)


# --- excluded libraries need a provider ---------------------------------------------------------


def _provider_cases() -> list[tuple[str, bool]]:
    """Requires-Dist templates over the provider's name {n} and extras {x}: provided or not."""
    return [
        ("{n}[{x}]>=0", True),
        ("{n}[{x},zz-other]>=0", True),
        ('{n}[{x}]>=0; platform_system == "Linux"', True),
        ('{n}[{x}]>=0; platform_system == "Windows"', False),
        ('{n}[{x}]>=0; extra == "gpu"', False),
        ("{n}>=0", False),
        ("", False),
    ]


@pytest.mark.parametrize("template, provided", _provider_cases())
def test_an_excluded_library_needs_a_declared_provider(tmp_path: Path, gpu: Target, template: str, provided: bool) -> None:
    lib, text = gpu.variant.lib_providers[0]
    provider = Requirement(text)
    if not provider.extras and "[" in template:
        pytest.skip(f"{text} names no extras")
    requires = (template.format(n=provider.name, x=",".join(sorted(provider.extras))),) if template else ()
    needs = make_elf(needed=("libc.so.6", lib), runpath=":".join(gpu.variant.rpath))
    wheel = build_wheel(tmp_path, gpu, {linux_ext(gpu): needs}, requires=requires)
    with wheel.open() as reader:
        found: list[Finding] = list(check_providers(Contents(reader), Expectation(target=gpu, dropped=())))
    assert [(f.code, f.file) for f in found] == ([] if provided else [("unprovided-library", linux_ext(gpu))])
    if not provided:
        assert lib in found[0].message and provider.name in found[0].message
    assert findings(check_libraries, wheel, gpu) == set()


def test_the_target_s_own_requirements_provide_its_excluded_libraries(tmp_path: Path, gpu: Target) -> None:
    needs = make_elf(needed=("libc.so.6", *gpu.variant.exclude_libs), runpath=":".join(gpu.variant.rpath))
    wheel = build_wheel(tmp_path, gpu, {linux_ext(gpu): needs})
    assert findings(check_providers, wheel, gpu) == set()


def test_an_excluded_library_without_its_rpath(tmp_path: Path, gpu: Target) -> None:
    lib, _provider = gpu.variant.lib_providers[0]
    wheel = build_wheel(tmp_path, gpu, {linux_ext(gpu): make_elf(needed=(lib,))})
    assert findings(check_libraries, wheel, gpu) == {("missing-rpath", linux_ext(gpu))}


def test_a_bad_elf_is_reported_not_raised(tmp_path: Path, gpu: Target) -> None:
    broken = f"{package(gpu)}/lib/broken.so"
    wheel = build_wheel(tmp_path, gpu, good_members(gpu, **{broken: b"\x7fELF\x02\x01\x01" + b"\xff" * 9}))
    assert findings(check_libraries, wheel, gpu) == {("bad-elf", broken)}
    with zipfile.ZipFile(wheel.path) as zf:
        assert broken in zf.namelist()


# --- hostile wheels: refused with their own codes, never a traceback (issue 9) -------------------

from tests.hostile import make_wheels as mw  # noqa: E402


def hostile_codes(tmp: Path, maker: str) -> set[str]:
    getattr(mw, maker)(tmp)
    (path,) = (tmp / "house").glob("*.whl")
    return {f.code for f in verify(Wheel(path), Expectation(target=mw.target(), dropped=mw.shipped().dropped))}


@pytest.mark.parametrize("maker, code", [("tampered", "record-mismatch"), ("relabelled", "label-contradicted"),
                                         ("zip_slip", "member-traversal")])
def test_verify_refuses_tampered_relabelled_and_zip_slip_wheels(tmp_path: Path, maker: str, code: str) -> None:
    assert code in hostile_codes(tmp_path, maker)
    assert hostile_codes(tmp_path / "good", "good") == set()


def test_a_renamed_cpu_wheel_contradicts_its_label_on_every_count(tmp_path: Path) -> None:
    assert hostile_codes(tmp_path, "relabelled") == {"dist-info-mismatch", "version-mismatch", "requirements-mismatch",
                                                     "label-contradicted"}


def test_a_cpu_build_relabelled_consistently_is_still_contradicted(tmp_path: Path, shipped: Matrix, gpu: Target) -> None:
    """Version, dist-info, RECORD and Requires-Dist all say the CUDA label; no ELF file needs its runtime."""
    arch = elf.normalise_arch(gpu.platform.arch)
    wheel = build_wheel(tmp_path, gpu, {linux_ext(gpu): make_elf(arch=arch, needed=("libc.so.6", LOADERS[arch]))})
    assert {f.code for f in verify(wheel, Expectation(target=gpu, dropped=shipped.dropped))} == {"label-contradicted"}


@pytest.mark.parametrize("maker, code", [("bad_requires_python", "requires-python-invalid"),
                                         ("bad_tag_line", "wheel-unreadable"),
                                         ("bad_marker", "requirements-mismatch")])
def test_malformed_dist_info_is_a_finding(tmp_path: Path, maker: str, code: str) -> None:
    assert hostile_codes(tmp_path, maker) == {code}


def test_odd_but_right_wheels_verify(tmp_path: Path) -> None:
    assert hostile_codes(tmp_path / "a", "non_ascii_metadata") == set()
    assert hostile_codes(tmp_path / "b", "bad_timestamp") == set()


def test_the_verify_command_exits_7_with_the_finding(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from builders.cli import main

    mw.zip_slip(tmp_path)
    (path,) = (tmp_path / "house").glob("*.whl")
    assert main(["verify", str(path), "--target", mw.target().id, "--matrix", str(mw.MATRIX)]) == 7
    assert "member-traversal" in capsys.readouterr().err


def test_a_runtime_library_must_resolve_from_where_each_elf_lies(tmp_path: Path, gpu: Target) -> None:
    """A library in ``pkg/lib/`` with the entry right for ``pkg/`` reaches nothing in a venv; the entry one level
    deeper does (the entries are derived from the matrix's runtime folders here, not from verify's helper)."""
    lib, _provider = gpu.variant.lib_providers[0]
    folder = gpu.variant.runtime_dirs[0]
    deep = f"{package(gpu)}/lib/libdeep.so"
    shallow_entry, deep_entry = f"$ORIGIN/../{folder}", f"$ORIGIN/../../{folder}"
    (tmp_path / "wrong").mkdir()
    (tmp_path / "right").mkdir()
    wrong = build_wheel(tmp_path / "wrong", gpu, {linux_ext(gpu): make_elf(needed=(lib,), runpath=shallow_entry),
                                                  deep: make_elf(needed=(lib,), runpath=shallow_entry)})
    assert findings(check_libraries, wrong, gpu) == {("missing-rpath", deep)}
    right = build_wheel(tmp_path / "right", gpu, {linux_ext(gpu): make_elf(needed=(lib,), runpath=shallow_entry),
                                                  deep: make_elf(needed=(lib,), runpath=f"$ORIGIN:{deep_entry}")})
    assert findings(check_libraries, right, gpu) == set()


def test_a_top_level_folder_outside_the_project_s_packages_is_flagged(tmp_path: Path, gpu: Target) -> None:
    """CMake install rules that write lib/ and include/ at the wheel's root; the project's own folders,
    auditwheel's .libs and the dist-info/.data folders pass."""
    top = package(gpu)
    members = {**good_members(gpu), "lib/libstray.so": make_elf(), "include/stray.h": b"int f(void);\n",
               f"{top}.libs/libz-abc.so.1": make_elf(), f"{top}/include/ok.h": b"\n"}
    wheel = build_wheel(tmp_path, gpu, members)
    assert findings(check_top_level, wheel, gpu) == {("stray-top-level", "lib/"), ("stray-top-level", "include/")}
    (tmp_path / "ok").mkdir()
    assert findings(check_top_level, build_wheel(tmp_path / "ok", gpu, good_members(gpu)), gpu) == set()
