"""The few facts verify needs from an ELF file, read with pyelftools.

Only the program headers are read (PT_INTERP, PT_DYNAMIC): they are what the dynamic loader
itself uses, they sit near the start of the file, and they are present in stripped binaries
that have no section headers. The architecture table and the loader rule mirror auditwheel's
(``auditwheel.lddtree._get_platform`` and ``WheelPolicies.lddtree_external_references``), so
verify and repair agree on what a wheel may need.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import IO, Any

from elftools.elf.dynamic import DynamicSegment
from elftools.elf.elffile import ELFFile
from elftools.elf.segments import InterpSegment

from builders.base.arch import canonical_arch

MAGIC = b"\x7fELF"

# (e_machine, ELF class, little-endian) -> architecture name, as auditwheel maps them.
ARCHITECTURES: dict[tuple[str, int, bool], str] = {
    ("EM_386", 32, True): "i686",
    ("EM_X86_64", 64, True): "x86_64",
    ("EM_PPC64", 64, True): "ppc64le",
    ("EM_PPC64", 64, False): "ppc64",
    ("EM_RISCV", 64, True): "riscv64",
    ("EM_AARCH64", 64, True): "aarch64",
    ("EM_S390", 64, False): "s390x",
    ("EM_ARM", 32, True): "armv7l",
    ("EM_LOONGARCH", 64, True): "loongarch64",
}

# auditwheel never treats the dynamic loader as an external library ('ld64.so.2' on s390x,
# 'ld64.so.1' on ppc64le, 'ld-linux*' elsewhere); musl's loader is ld-musl-<arch>.so.1.
LOADER_NAMES = frozenset({"ld64.so.1", "ld64.so.2"})


class ElfParseError(Exception):
    """The file starts with the ELF magic but its headers cannot be read."""


@dataclass(frozen=True, kw_only=True)
class ElfInfo:
    """What one ELF file asks of the system that loads it."""

    machine: str
    elf_class: int
    little_endian: bool
    needed: tuple[str, ...] = ()
    rpaths: tuple[str, ...] = ()
    interpreter: str | None = None
    # the compiler's record of a compilation for the build host's CPU (-march=native), where it kept one
    host_cpu_flags: str | None = None

    @property
    def arch(self) -> str | None:
        """The architecture name (``x86_64``), or None for one auditwheel does not know."""
        return ARCHITECTURES.get((self.machine, self.elf_class, self.little_endian))


def parse(fh: IO[bytes]) -> ElfInfo:
    """Read ``fh`` (seekable, positioned anywhere) as an ELF file; any failure is one ElfParseError."""
    try:
        elf = ELFFile(fh)
        needed, rpaths, interpreter = _program_headers(elf)
        return ElfInfo(machine=elf["e_machine"], elf_class=elf.elfclass, little_endian=elf.little_endian,
                       needed=tuple(needed), rpaths=tuple(rpaths), interpreter=interpreter,
                       host_cpu_flags=host_cpu_flags(elf))
    except Exception as exc:  # pyelftools raises ELFError, construct, struct, Overflow, Assertion... on bad input
        raise ElfParseError(str(exc) or type(exc).__name__) from exc


def _program_headers(elf: ELFFile) -> tuple[list[str], list[str], str | None]:
    needed: list[str] = []
    rpaths: list[str] = []
    interpreter = None
    for segment in elf.iter_segments():
        if isinstance(segment, InterpSegment):
            interpreter = segment.get_interp_name()
        elif isinstance(segment, DynamicSegment):
            _dynamic_tags(segment, needed, rpaths)
    return needed, rpaths, interpreter


def _dynamic_tags(segment: DynamicSegment, needed: list[str], rpaths: list[str]) -> None:
    """DT_NEEDED names and DT_RPATH/DT_RUNPATH entries, in file order."""
    tags: Iterable[Any] = segment.iter_tags()  # pyelftools sets .needed/.rpath/.runpath per tag kind
    for tag in tags:
        kind = tag.entry.d_tag
        if kind == "DT_NEEDED":
            needed.append(tag.needed)
        elif kind == "DT_RPATH":
            rpaths.extend(p for p in tag.rpath.split(":") if p)
        elif kind == "DT_RUNPATH":
            rpaths.extend(p for p in tag.runpath.split(":") if p)


# Where compilers record their options: DW_AT_producer strings (gcc -g keeps every target option; they sit in
# .debug_str, or inline in .debug_info), and gcc's -frecord-gcc-switches section. A larger section is not read.
RECORD_SECTIONS = (".debug_str", ".debug_info", ".GCC.command.line")
RECORD_MAX = 64 * 1024 * 1024
# gcc expands -march=native into the host's CPU plus its cache sizes, which only host detection adds; clang
# with -grecord-command-line keeps "-march=native" itself. -mtune=native alone (also with cache sizes) only tunes.
NATIVE = re.compile(rb"-march=native\b")
HOST_CACHE = re.compile(rb"--param[= ]l1-cache-size=")
MARCH = re.compile(rb"-march=(\S+)")
BASELINES = frozenset({b"x86-64", b"x86-64-v2", b"x86-64-v3", b"x86-64-v4", b"i686", b"armv8-a", b"armv8.2-a"})


def host_cpu_flags(elf: ELFFile) -> str | None:
    """The recorded compiler options that show a compilation for the build host's CPU, or None (also where the
    compiler recorded none: no -g, a stripped file)."""
    for name in RECORD_SECTIONS:
        section = elf.get_section_by_name(name)
        if section is None or section["sh_type"] == "SHT_NOBITS" or section["sh_size"] > RECORD_MAX:
            continue
        data = section.data()
        if not (NATIVE.search(data) or HOST_CACHE.search(data)):
            continue  # the common case: one scan, no split
        for record in data.split(b"\0"):
            if is_native_record(record):
                return record.decode("utf-8", "replace")[:400]
    return None


def is_native_record(record: bytes) -> bool:
    """Whether one recorded set of compiler options (a DW_AT_producer string) compiled for the build host's CPU."""
    if NATIVE.search(record):
        return True
    march = MARCH.findall(record)
    return bool(HOST_CACHE.search(record) and march and march[-1] not in BASELINES)


# ``AMD64`` -> ``x86_64``, ``arm64`` -> ``aarch64``: the name ELF files are checked against (the matrix
# spells an arch as ``platform.machine()`` does on that OS; ELF knows one name).
normalise_arch = canonical_arch


def is_loader(library: str) -> bool:
    """Whether ``library`` is the ELF interpreter, which every dynamic binary may need."""
    return "ld-linux" in library or library in LOADER_NAMES or library.startswith("ld-musl-")


def is_origin_relative(entry: str) -> bool:
    """An RPATH/RUNPATH entry that resolves inside the installed wheel."""
    return entry.startswith(("$ORIGIN", "${ORIGIN}"))
