"""Two wheels compared member by member, each difference named by its kind (``rebuild``'s report).

A rebuild that is not byte-identical is only useful if it says why: a zip timestamp (SOURCE_DATE_EPOCH
unset), an absolute build folder compiled into a binary (no ``-ffile-prefix-map``), members written in
another order, metadata (dist-info, a member's mode) or real code. Pure: both wheels arrive as
:class:`Archive` values (names in order, bytes, date_time, mode), read by :func:`read_archive`.

Kinds, checked in this order for a member present on both sides:

- ``timestamps``: the bytes and mode are equal, the zip ``date_time`` is not;
- ``metadata``: a ``.dist-info/`` member, or equal bytes under another mode;
- ``paths``: the bytes differ only in absolute paths (each ``/a/b/c`` run replaced by one token makes
  them equal);
- ``code``: anything else.

``ordering`` is one finding for the whole archive (the shared members in another order), and members on
one side only are ``only-released`` and ``only-rebuilt``.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from pathlib import Path

from builders.wheel.zipcheck import open_zip

TIMESTAMPS, METADATA, PATHS, CODE, ORDERING = "timestamps", "metadata", "paths", "code", "ordering"
ONLY_RELEASED, ONLY_REBUILT = "only-released", "only-rebuilt"
KINDS = (TIMESTAMPS, PATHS, ORDERING, METADATA, CODE, ONLY_RELEASED, ONLY_REBUILT)
ARCHIVE = "(archive)"  # the finding's member when the members agree but the zip's bytes do not
# An absolute POSIX path of two components or more, as a compiler or a build backend embeds one.
_PATH = re.compile(rb"(?:/[A-Za-z0-9._+@-]+){2,}")
# An ELF GNU build-id note (namesz 4, descsz 20, NT_GNU_BUILD_ID, "GNU"), then its 20-byte hash: the linker's hash
# over the output, debug info included, which stays when the debug info is stripped.
_BUILD_ID = re.compile(rb"\x04\x00\x00\x00\x14\x00\x00\x00\x03\x00\x00\x00GNU\x00(.{20})", re.DOTALL)


@dataclass(frozen=True, kw_only=True)
class ZipMember:
    name: str
    data: bytes
    date_time: tuple[int, ...]
    mode: int


@dataclass(frozen=True, kw_only=True)
class Archive:
    members: tuple[ZipMember, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(m.name for m in self.members)

    def by_name(self) -> dict[str, ZipMember]:
        return {m.name: m for m in self.members}


@dataclass(frozen=True, kw_only=True, order=True)
class Difference:
    member: str
    kind: str
    detail: str = ""

    def to_json(self) -> dict[str, str]:
        return {"member": self.member, "kind": self.kind, "detail": self.detail}


def read_archive(source: Path | bytes, name: str = "wheel") -> Archive:
    """A wheel's members in archive order, through the capped reader (a released file is untrusted input)."""
    data = source if isinstance(source, bytes) else source.read_bytes()
    with open_zip(io.BytesIO(data), len(data), name) as z:
        return Archive(members=tuple(ZipMember(name=i.filename, data=z.read(i), date_time=tuple(i.date_time),
                                            mode=i.external_attr >> 16) for i in z.infolist()))


def differences(released: bytes, rebuilt: bytes) -> tuple[Difference, ...]:
    """Why two wheels' bytes differ (empty: they are identical); members that agree in zips whose bytes do
    not (compression, extra fields, a comment) are one ``metadata`` finding on :data:`ARCHIVE`."""
    if released == rebuilt:
        return ()
    found = compare(read_archive(released, "the released wheel"), read_archive(rebuilt, "the rebuilt wheel"))
    return found or (Difference(member=ARCHIVE, kind=METADATA, detail="the members agree; the zip's own bytes differ "
                                f"({len(released)} and {len(rebuilt)} bytes)"),)


def compare(released: Archive, rebuilt: Archive) -> tuple[Difference, ...]:
    """Every difference between the two archives, sorted by member (empty: the members agree)."""
    ours, theirs = released.by_name(), rebuilt.by_name()
    out = [Difference(member=n, kind=ONLY_RELEASED) for n in ours if n not in theirs]
    out += [Difference(member=n, kind=ONLY_REBUILT) for n in theirs if n not in ours]
    out += [d for n in ours if n in theirs for d in [member_difference(ours[n], theirs[n])] if d is not None]
    moved = ordering(released.names, rebuilt.names)
    return tuple(sorted(out)) + ((moved,) if moved else ())


def member_difference(a: ZipMember, b: ZipMember) -> Difference | None:
    """The kind of difference between one member's two versions, or None when they are the same."""
    if a.data == b.data and a.mode == b.mode:
        return None if a.date_time == b.date_time else Difference(
            member=a.name, kind=TIMESTAMPS, detail=f"{_stamp(a.date_time)} != {_stamp(b.date_time)}")
    if a.data == b.data:
        return Difference(member=a.name, kind=METADATA, detail=f"mode {a.mode:o} != {b.mode:o}")
    if ".dist-info/" in a.name:
        return Difference(member=a.name, kind=METADATA, detail=_first_change(a.data, b.data))
    if _normal(a.data) == _normal(b.data):
        hashed = " (and the ELF build-id hashing them)" if _build_ids(a.data) != _build_ids(b.data) else ""
        return Difference(member=a.name, kind=PATHS, detail=_paths_detail(a.data, b.data) + hashed)
    return Difference(member=a.name, kind=CODE, detail=_first_change(a.data, b.data))


def _normal(data: bytes) -> bytes:
    """``data`` with every absolute path one token and, in an ELF file, its build-id (a hash over them) zeroed."""
    if data[:4] == b"\x7fELF":
        data = _BUILD_ID.sub(lambda m: m.group(0)[:16] + bytes(20), data)
    return _PATH.sub(b"<path>", data)


def _build_ids(data: bytes) -> list[bytes]:
    return _BUILD_ID.findall(data) if data[:4] == b"\x7fELF" else []


def ordering(released: tuple[str, ...], rebuilt: tuple[str, ...]) -> Difference | None:
    """One finding when the members both sides hold come in another order, naming the first out of place."""
    shared = set(released) & set(rebuilt)
    a, b = [n for n in released if n in shared], [n for n in rebuilt if n in shared]
    first = next((x for x, y in zip(a, b) if x != y), None)
    return None if first is None else Difference(member=first, kind=ORDERING,
                                                 detail=f"position {a.index(first)} released, {b.index(first)} rebuilt")


def _stamp(t: tuple[int, ...]) -> str:
    year, month, day, hour, minute, second = t[:6]
    return f"{year:04d}-{month:02d}-{day:02d} {hour:02d}:{minute:02d}:{second:02d}"


def _first_change(a: bytes, b: bytes) -> str:
    at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return f"first difference at byte {at} ({len(a)} and {len(b)} bytes)"


def _paths_detail(a: bytes, b: bytes) -> str:
    """The first path that differs, both sides (what a prefix map should have rewritten)."""
    pairs = zip(_PATH.findall(a), _PATH.findall(b))
    x, y = next(((p, q) for p, q in pairs if p != q), (b"", b""))
    return f"{x.decode(errors='replace')} != {y.decode(errors='replace')}"


def summary(differences: tuple[Difference, ...]) -> dict[str, int]:
    """How many findings of each kind, in :data:`KINDS` order (the kinds with none left out)."""
    return {k: n for k in KINDS if (n := sum(d.kind == k for d in differences))}
