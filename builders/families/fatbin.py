"""What CUDA device code embedded in an ELF file records of the toolkit that compiled it.

nvcc puts a translation unit's device code into the host binary's ``.nv_fatbin`` section as a fat
binary: a 16-byte header (magic ``0xBA55ED50``, version, header size, size of what follows) and
entries, each a header (kind 1 = PTX, 2 = cubin; header size; payload size; the arch at byte 28)
and its payload. A linked library holds one fat binary per translation unit (and one per device
link), one after another. A cubin is an ELF file of its own whose ``.note.nv.tkinfo`` note names
the tool that made it and that tool's ``--version`` line, ``ptxas`` / ``Cuda compilation tools,
release 13.2, V13.2.86`` (what ``cuobjdump -elf`` shows as the toolkit info). That line is read
here; measured with nvcc 13.0 (``release 13.0``) and the pinned 13.2 on the same kernel, it is
the one field that names the toolkit, where the cubin's other headers are the same.

PTX payloads are zstd-compressed by default (as are cubins built with ``-Xfatbin
-compress-all``): those are skipped, since only cubins name their release in plain bytes (a
PTX entry's header holds its ISA version, 9.2 for CUDA 13.2, which maps to a release only
through the PTX ISA's release notes). Only headers and the notes are read, by seeking: a
gigabyte of fat binaries costs a few reads per entry, never the payloads.
"""

from __future__ import annotations

import io
import re
import struct
from collections.abc import Iterator
from typing import IO, cast

from elftools.elf.elffile import ELFFile

from builders.families.base import MadeBy

SECTION = ".nv_fatbin"
NOTE = ".note.nv.tkinfo"
MAGIC = 0xBA55ED50
CONTAINER = struct.Struct("<IHHQ")  # magic, version, header size, size of the entries
ENTRY = struct.Struct("<HHIQIIHHI")  # kind, -, header size, payload size, -, -, minor, major, arch
CUBIN = 2
ELF_MAGIC = b"\x7fELF"
TOOL_RELEASE = re.compile(rb"([\w+.-]+)\x00Cuda compilation tools, release (\d+\.\d+)")
NOTE_MAX = 64 << 10  # a tkinfo note is a few hundred bytes: never read more


class Window(io.RawIOBase):
    """A seekable view of ``size`` bytes of ``fh`` from ``start``: a cubin inside its fat binary."""

    def __init__(self, fh: IO[bytes], start: int, size: int) -> None:
        super().__init__()
        self.fh, self.start, self.size, self.pos = fh, start, size, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.pos, io.SEEK_END: self.size}[whence]
        self.pos = max(0, base + offset)
        return self.pos

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        want = max(0, min(len(buffer), self.size - self.pos))
        self.fh.seek(self.start + self.pos)
        data = self.fh.read(want)
        buffer[:len(data)] = data
        self.pos += len(data)
        return len(data)


def made_by(fh: IO[bytes]) -> tuple[MadeBy, ...]:
    """Every (tool, arch, release) the cubins of ``fh``'s fat binaries record, once each, in file order."""
    section = ELFFile(fh).get_section_by_name(SECTION)
    if section is None or section["sh_type"] == "SHT_NOBITS":
        return ()
    found: dict[MadeBy, None] = {}
    for arch, start, size in cubins(fh, section["sh_offset"], section["sh_size"]):
        for tool, release in toolkit_info(cast(IO[bytes], Window(fh, start, size))):
            found[MadeBy(what=f"sm_{arch} cubin ({tool})", release=release)] = None
    return tuple(found)


def cubins(fh: IO[bytes], offset: int, size: int) -> Iterator[tuple[int, int, int]]:
    """(arch, payload offset, payload size) of each uncompressed cubin of the fat binaries in ``[offset, +size)``."""
    end, at = offset + size, offset
    while at + CONTAINER.size <= end:
        fh.seek(at)
        magic, _, header, length = CONTAINER.unpack(fh.read(CONTAINER.size))
        if magic != MAGIC or header < CONTAINER.size:
            return
        yield from _entries(fh, at + header, min(end, at + header + length))
        at += header + length


def _entries(fh: IO[bytes], at: int, end: int) -> Iterator[tuple[int, int, int]]:
    while at + ENTRY.size <= end:
        fh.seek(at)
        kind, _, header, payload, _, _, _, _, arch = ENTRY.unpack(fh.read(ENTRY.size))
        if header < ENTRY.size:
            return
        start = at + header
        fh.seek(start)
        if kind == CUBIN and start + payload <= end and fh.read(4) == ELF_MAGIC:
            yield arch, start, payload
        at = start + payload


def toolkit_info(cubin: IO[bytes]) -> list[tuple[str, str]]:
    """(tool, release) from a cubin's ``.note.nv.tkinfo``; [] where it has none or cannot be read."""
    try:
        note = ELFFile(cubin).get_section_by_name(NOTE)
        if note is None:
            return []
        cubin.seek(note["sh_offset"])
        data = cubin.read(min(note["sh_size"], NOTE_MAX))
    except Exception:  # noqa: BLE001 - pyelftools raises many kinds on a damaged cubin: it records nothing then
        return []
    return [(m.group(1).decode(), m.group(2).decode()) for m in TOOL_RELEASE.finditer(data)]
