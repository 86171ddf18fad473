"""Hostile wheels, made from scratch: each maker is a function ``(folder: Path) -> None`` that
writes one wheel into ``folder/house/`` (a :class:`~tests.hostile.corpus.Case` ``files`` value).

Archives are written byte by byte by :func:`raw_zip` (local headers, central directory, end
record), so everything zipfile refuses to express is plain data here: a wrong CRC, the
encryption flag, an unknown compression method, a symlink's ``external_attr``, a NUL or a
newline inside a name, sizes that lie. The zip bomb is 2 GiB of zeros in about 2 MB: one 16 MiB
deflate piece ending in a full flush, repeated (a full flush resets the compressor, so every
piece is the same bytes).

The good wheel is the shipped matrix's own: a CUDA target published to PyPI, with its extension
module (a minimal ELF that needs the variant's runtime library through the variant's RPATH),
METADATA with the target's Requires-Dist, WHEEL and a RECORD that matches. Every hostile wheel
changes one thing of it. ``python tests/hostile/make_wheels.py DIR`` writes them all into DIR.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import stat
import struct
import sys
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from builders.matrix.model import Matrix
    from builders.matrix.targets import Target

ROOT = Path(__file__).resolve().parents[2]
MATRIX = ROOT / "matrix.yaml"
GIB = 1 << 30
BOMB_PIECE = 1 << 24

Maker = Callable[[Path], None]


# --- facts from the shipped matrix ------------------------------------------------------------


@dataclass(frozen=True)
class Facts:
    """What a wheel of one target is: its file name, dist-info, members and requirements."""

    target_id: str
    project: str
    version: str
    tag: str
    requires_python: str
    requires: tuple[str, ...]
    extension: str
    runtime_libs: tuple[str, ...]
    rpath: str

    @property
    def dist(self) -> str:
        return self.project.lower().replace("-", "_").replace(".", "_")

    @property
    def dist_info(self) -> str:
        return f"{self.dist}-{self.version}.dist-info"

    @property
    def filename(self) -> str:
        return f"{self.dist}-{self.version}-{self.tag}.whl"


@functools.cache
def shipped() -> Matrix:
    from builders.families import loader as matrix

    return matrix.load(MATRIX)


@functools.cache
def target(variant: str = "pypi") -> Target:
    """The first Linux x86_64 CUDA target that PyPI gets (``pypi``), or the CPU target of the same Python."""
    from builders.matrix.model import OS
    from builders.matrix.targets import expand
    from tests.helpers import accelerator

    targets, _excluded = expand(shipped())
    cuda = next(t for t in targets if t.on_pypi and t.platform.os is OS.LINUX and t.platform.arch == "x86_64"
                and t.variant.accelerator == accelerator("cuda") and not t.python.free_threaded)
    if variant == "pypi":
        return cuda
    return next(x for x in targets if x.variant.accelerator == accelerator("cpu") and x.python == cuda.python
                and x.platform == cuda.platform)


@functools.cache
def facts(variant: str = "pypi") -> Facts:
    """What :func:`target`'s wheel is."""
    t = target(variant)
    module = t.project.extension_modules[0].replace(".", "/")
    libs = tuple(lib for lib, _provider in t.variant.lib_providers[:1])
    return Facts(target_id=t.id, project=t.project.name, version=str(t.version), tag=str(t.tag),
                 requires_python=t.project.requires_python, requires=tuple(map(str, t.requirements)),
                 extension=f"{module}.cpython-{t.python.abi[2:]}-x86_64-linux-gnu.so", runtime_libs=libs,
                 rpath=":".join(t.variant.rpath))


# --- ELF and wheel contents ---------------------------------------------------------------------


def make_elf(needed: Iterable[str] = ("libc.so.6",), runpath: str | None = None, machine: int = 62) -> bytes:
    """A minimal ELF64 little-endian shared object: PT_LOAD over the file, PT_DYNAMIC with
    DT_NEEDED, DT_RUNPATH, DT_STRTAB and DT_STRSZ (machine 62 is x86-64)."""
    names = [*needed, *([runpath] if runpath else [])]
    strtab, offsets = b"\0", {}
    for text in names:
        offsets[text] = len(strtab)
        strtab += text.encode() + b"\0"
    str_off = 64 + 56 * 2
    dyn_off = (str_off + len(strtab) + 7) // 8 * 8
    entries = [(1, offsets[n]) for n in needed] + ([(29, offsets[runpath])] if runpath else [])
    dynamic = b"".join(struct.pack("<qQ", tag, v) for tag, v in [*entries, (5, str_off), (10, len(strtab)), (0, 0)])
    size = dyn_off + len(dynamic)
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
    head = struct.pack("<16sHHIQQQIHHHHHH", ident, 3, machine, 1, 0, 64, 0, 0, 64, 56, 2, 64, 0, 0)
    phdrs = struct.pack("<IIQQQQQQ", 1, 5, 0, 0, 0, size, size, 0x1000)
    phdrs += struct.pack("<IIQQQQQQ", 2, 6, dyn_off, dyn_off, dyn_off, len(dynamic), len(dynamic), 8)
    body = head + phdrs + strtab
    return body + bytes(dyn_off - len(body)) + dynamic


def metadata(f: Facts, *, requires: Iterable[str] | None = None, extra: str = "", body: str = "") -> bytes:
    lines = ["Metadata-Version: 2.4", f"Name: {f.project}", f"Version: {f.version}",
             f"Requires-Python: {f.requires_python}", *(f"Requires-Dist: {r}" for r in
                                                       (f.requires if requires is None else requires))]
    text = "\n".join(lines) + "\n" + extra + (f"\n{body}" if body else "")
    return text.encode()


def wheel_file(f: Facts, tag: str | None = None) -> bytes:
    return f"Wheel-Version: 1.0\nGenerator: make_wheels\nRoot-Is-Purelib: false\nTag: {tag or f.tag}\n".encode()


def contents(f: Facts) -> dict[str, bytes]:
    """The good wheel's members, RECORD left out."""
    return {
        f"{f.extension.split('/', 1)[0]}/__init__.py": b"__version__ = '2.15.0'\n",
        f.extension: make_elf(("libc.so.6", *f.runtime_libs), f.rpath or None),
        f"{f.dist_info}/METADATA": metadata(f),
        f"{f.dist_info}/WHEEL": wheel_file(f),
    }


def record(members: dict[str, bytes], dist_info: str) -> bytes:
    rows = []
    for name, data in members.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        rows.append(f"{name},sha256={digest},{len(data)}")
    return ("\n".join([*rows, f"{dist_info}/RECORD,,"]) + "\n").encode()


# --- a zip written byte by byte -------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """One archive member as it is stored: ``data`` is already compressed when ``method`` is 8.
    ``crc``, ``size`` (inflated) and ``csize`` default to the truth; set them to lie."""

    name: bytes
    data: bytes
    method: int = 8
    crc: int | None = None
    size: int | None = None
    csize: int | None = None
    flags: int = 0x800  # names are UTF-8
    attr: int = (stat.S_IFREG | 0o644) << 16
    plain: bytes | None = field(default=None, repr=False)  # the inflated bytes, to compute the truth from


def entry(name: str | bytes, data: bytes, **kw: object) -> Entry:
    """A deflated member with true sizes and CRC; keyword arguments override any field."""
    raw = name.encode() if isinstance(name, str) else name
    return replace(Entry(name=raw, data=deflate(data), plain=data), **kw)  # type: ignore[arg-type]


def deflate(data: bytes) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush()


def raw_zip(entries: Iterable[Entry]) -> bytes:
    """Local header + data per entry, then the central directory and the end record."""
    out, central = bytearray(), bytearray()
    count = 0
    for e in entries:
        crc = e.crc if e.crc is not None else zlib.crc32(e.plain or b"")
        size = e.size if e.size is not None else len(e.plain or b"")
        csize = e.csize if e.csize is not None else len(e.data)
        offset = len(out)
        out += struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, e.flags, e.method, 0, 0x21, crc, csize, size,
                           len(e.name), 0) + e.name + e.data
        central += struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 0x031E, 20, e.flags, e.method, 0, 0x21, crc,
                               csize, size, len(e.name), 0, 0, 0, 0, e.attr, offset) + e.name
        count += 1
    end = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, min(count, 0xFFFF), min(count, 0xFFFF), len(central),
                      len(out), 0)
    return bytes(out + central + end)


def wheel_entries(members: dict[str, bytes], dist_info: str, *, with_record: bool = True) -> list[Entry]:
    """Entries for ``members`` plus a RECORD that matches them."""
    files = dict(members)
    if with_record:
        files[f"{dist_info}/RECORD"] = record(members, dist_info)
    return [entry(name, data) for name, data in files.items()]


def write(folder: Path, data: bytes, filename: str | None = None) -> Path:
    house = folder / "house"
    house.mkdir(parents=True, exist_ok=True)
    path = house / (filename or facts().filename)
    path.write_bytes(data)
    return path


def pkg() -> str:
    """The project's top-level package folder."""
    return facts().extension.split("/", 1)[0]


def good_bytes(f: Facts | None = None) -> bytes:
    f = f or facts()
    return raw_zip(wheel_entries(contents(f), f.dist_info))


# --- the makers -----------------------------------------------------------------------------------


def good(folder: Path) -> None:
    """The shipped matrix's PyPI-default wheel, right in every respect."""
    write(folder, good_bytes())


def non_ascii_metadata(folder: Path) -> None:
    """Right, with UTF-8 in METADATA headers and body: must verify and promote unharmed."""
    f = facts()
    members = contents(f)
    members[f"{f.dist_info}/METADATA"] = metadata(f, extra="Author: Jürgen Müller\n", body="Ünïcödé description ✓\n")
    write(folder, raw_zip(wheel_entries(members, f.dist_info)))


def bad_timestamp(folder: Path) -> None:
    """Right, but one member's DOS date has month 0 (no calendar has it)."""
    data = bytearray(good_bytes())
    # Local header date at offset 12 and the first central entry's date: day 0, month 0, year 1980.
    struct.pack_into("<H", data, 12, 0)
    central = data.index(b"PK\x01\x02")
    struct.pack_into("<H", data, central + 14, 0)
    write(folder, bytes(data))


def tampered(folder: Path) -> None:
    """A payload file changed after RECORD was written (the zip itself is consistent)."""
    f = facts()
    members = contents(f)
    entries = wheel_entries(members, f.dist_info)
    entries = [entry(e.name, b"import os; os.system('id')\n") if e.name == f"{pkg()}/__init__.py".encode() else e
               for e in entries]
    write(folder, raw_zip(entries))


def relabelled(folder: Path) -> None:
    """The CPU build of the same Python, its file renamed to the CUDA label (contents untouched)."""
    cpu = facts("cpu")
    write(folder, good_bytes(cpu))


def _with_entry(extra: Entry, *, listed: bool = True) -> bytes:
    """The good wheel plus one member (in RECORD when ``listed``, as a careful attacker would)."""
    f = facts()
    members = contents(f)
    listing = dict(members)
    if listed:
        listing[extra.name.decode("utf-8", "surrogateescape")] = extra.plain or b""
    entries = [entry(n, d) for n, d in members.items()] + [extra]
    entries.append(entry(f"{f.dist_info}/RECORD", record(listing, f.dist_info)))
    return raw_zip(entries)


def _with_member(name: bytes | str, data: bytes = b"owned\n", *, listed: bool = True, **kw: object) -> bytes:
    return _with_entry(entry(name, data, **kw), listed=listed)


def zip_slip(folder: Path) -> None:
    write(folder, _with_member("../../evil.py"))


def absolute(folder: Path) -> None:
    write(folder, _with_member("/tmp/evil.py"))


def backslash(folder: Path) -> None:
    write(folder, _with_member(f"{pkg()}\\evil.py"))


def nul_name(folder: Path) -> None:
    write(folder, _with_member(pkg().encode() + b"/a.py\x00../../evil.py"))


def newline_name(folder: Path) -> None:
    write(folder, _with_member(pkg().encode() + b"/a.py\nerror: forged line"))


def duplicate(folder: Path) -> None:
    """The package's __init__.py twice, the second one different."""
    write(folder, _with_member(f"{pkg()}/__init__.py", b"import os\n", listed=False))


def symlink(folder: Path) -> None:
    write(folder, _with_member(f"{pkg()}/passwd", b"/etc/passwd", attr=(stat.S_IFLNK | 0o777) << 16))


def fifo(folder: Path) -> None:
    write(folder, _with_member(f"{pkg()}/pipe", b"", attr=(stat.S_IFIFO | 0o644) << 16))


def encrypted(folder: Path) -> None:
    write(folder, _with_member(f"{pkg()}/secret.py", b"x = 1\n", flags=0x801))


def compression(folder: Path) -> None:
    """Method 99 (WinZip AES), which nothing that installs wheels reads."""
    write(folder, _with_member(f"{pkg()}/data.bin", b"x = 1\n", method=99))


def bad_crc(folder: Path) -> None:
    write(folder, _with_member(f"{pkg()}/data.py", b"x = 1\n", crc=0xDEADBEEF))


@functools.cache
def zeros(size: int) -> tuple[bytes, int]:
    """``size`` zero bytes (a multiple of 16 MiB) as raw deflate, and their CRC-32."""
    chunk = bytes(BOMB_PIECE)
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    piece = c.compress(chunk) + c.flush(zlib.Z_FULL_FLUSH)
    crc = functools.reduce(lambda acc, _: zlib.crc32(chunk, acc), range(size // BOMB_PIECE), 0)
    return piece * (size // BOMB_PIECE) + c.flush(), crc


def bomb(folder: Path, size: int = 2 * GIB) -> None:
    """A 2 MB wheel that inflates to 2 GiB, its sizes declared honestly."""
    data, crc = zeros(size)
    write(folder, _with_entry(Entry(name=f"{pkg()}/weights.bin".encode(), data=data, crc=crc, size=size), listed=False))


def bomb_lying(folder: Path, size: int = 2 * GIB) -> None:
    """The same stream, its central directory claiming 1 KiB: inflating must stop at 1 KiB."""
    data, crc = zeros(size)
    write(folder, _with_entry(Entry(name=f"{pkg()}/weights.bin".encode(), data=data, crc=crc, size=1024), listed=False))


def bomb_many(folder: Path, count: int = 3000) -> None:
    """3,000 members of 1 MiB less a byte of zeros: under every per-member cap, 3 GiB together."""
    f = facts()
    plain = bytes((1 << 20) - 1)
    packed = deflate(plain)
    members = contents(f)
    entries = wheel_entries(members, f.dist_info)
    entries += [Entry(name=f"{pkg()}/z/{i}.bin".encode(), data=packed, crc=zlib.crc32(plain), size=len(plain))
                for i in range(count)]
    write(folder, raw_zip(entries))


def too_large(folder: Path) -> None:
    """Three stored members each declaring 1.5 GiB (their data is absent): 4.5 GiB declared."""
    f = facts()
    entries = wheel_entries(contents(f), f.dist_info)
    entries += [Entry(name=f"{pkg()}/big{i}.bin".encode(), data=b"", method=0, crc=0, size=3 * GIB // 2,
                      csize=3 * GIB // 2) for i in range(3)]
    write(folder, raw_zip(entries))


def metadata_bomb(folder: Path) -> None:
    """METADATA itself is 64 MiB of zeros in 64 KB: never read whole."""
    f = facts()
    members = contents(f)
    data, crc = zeros(64 << 20)
    entries = [entry(n, d) for n, d in members.items() if not n.endswith("/METADATA")]
    entries.append(Entry(name=f"{f.dist_info}/METADATA".encode(), data=data, crc=crc, size=64 << 20))
    entries.append(entry(f"{f.dist_info}/RECORD", record(members, f.dist_info)))
    write(folder, raw_zip(entries))


def bad_requires_python(folder: Path) -> None:
    f = facts()
    members = contents(f)
    members[f"{f.dist_info}/METADATA"] = metadata(replace(f, requires_python="at least three"))
    write(folder, raw_zip(wheel_entries(members, f.dist_info)))


def bad_marker(folder: Path) -> None:
    """A Requires-Dist whose marker cannot be evaluated (``~=`` with a non-version)."""
    f = facts()
    members = contents(f)
    members[f"{f.dist_info}/METADATA"] = metadata(f, requires=(*f.requires, 'evil; python_version ~= "x"'))
    write(folder, raw_zip(wheel_entries(members, f.dist_info)))


def bad_tag_line(folder: Path) -> None:
    f = facts()
    members = contents(f)
    members[f"{f.dist_info}/WHEEL"] = wheel_file(f, tag="not-a-tag-at-all-really")
    write(folder, raw_zip(wheel_entries(members, f.dist_info)))


def not_a_zip(folder: Path) -> None:
    write(folder, b"this is not a zip archive\n" * 100)


def truncated(folder: Path) -> None:
    data = good_bytes()
    write(folder, data[: len(data) // 2])


def empty(folder: Path) -> None:
    write(folder, b"")


@functools.cache
def _many(count: int) -> bytes:
    names = (f"m/{i:07d}".encode() for i in range(count))
    return raw_zip(Entry(name=n, data=b"", method=0, crc=0, size=0, csize=0) for n in names)


def too_many_members(folder: Path) -> None:
    """120,000 empty members: a central directory under its cap, a member count over."""
    write(folder, _many(120_000))


def huge_directory(folder: Path) -> None:
    """320,000 empty members: an 18 MB central directory, refused before it is parsed."""
    write(folder, _many(320_000))


MAKERS: dict[str, Maker] = {m.__name__.replace("_", "-"): m for m in (
    good, non_ascii_metadata, bad_timestamp, tampered, relabelled, zip_slip, absolute, backslash, nul_name,
    newline_name, duplicate, symlink, fifo, encrypted, compression, bad_crc, bomb, bomb_lying, bomb_many, too_large,
    metadata_bomb, bad_requires_python, bad_marker, bad_tag_line, not_a_zip, truncated, empty, too_many_members,
    huge_directory)}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__)
        return 2
    out = Path(argv[0])
    for name, make in MAKERS.items():
        make(out / name)
        print(out / name / "house" / facts().filename)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main(sys.argv[1:]))
