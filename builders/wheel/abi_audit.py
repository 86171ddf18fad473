"""A shared wheel's binaries against its tag (``project.wheel_shape``): what abi3audit checks, and the file names.

A ``cp312-abi3`` wheel promises every extension module loads on each CPython from 3.12 on. Two ways to break
that ship silently, since the build Python imports the module fine: an extension built for one Python
(``_x.cpython-312-x86_64-linux-gnu.so``, which 3.13 does not even look for), and one built with the full API
(symbols outside the stable ABI, or ones the stable ABI gained after the tag's minimum). The first is the file
name's; the second is pypa's abi3audit's (:func:`abi3audit._audit.audit`, run on each extension module).
A ``py3-none`` wheel promises no Python ABI at all: an extension module in it (version-specific or abi3) is
a finding too.
"""

from __future__ import annotations

import posixpath
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from builders.matrix.wheel_shape import ShapeKind, WheelShape
from builders.wheel.zipcheck import Finding

Reader = Callable[[str], Iterable[bytes]]  # a member's bytes, in chunks

NATIVE = (".so", ".pyd")


def python_specific(name: str) -> str | None:
    """The Python a module file is built for, from its suffix (``cpython-312-x86_64-linux-gnu``, ``cp312-win_amd64``),
    or None for a plain or ``abi3`` one."""
    parts = posixpath.basename(name).split(".")
    if len(parts) < 3 or not name.endswith(NATIVE):
        return None
    tag = parts[-2]
    return tag if tag.startswith(("cpython-", "cp3", "pypy")) else None


def is_stable(name: str) -> bool:
    """``_x.abi3.so`` (a module built for the stable ABI)."""
    parts = posixpath.basename(name).split(".")
    return len(parts) >= 3 and parts[-2] in ("abi3", "abi3t") and name.endswith(NATIVE)


def shape_findings(shape: WheelShape, elves: Iterable[str], read: Reader) -> Iterator[Finding]:
    """Every native file (``elves``: the ELF members' names) of a shared wheel against its shape (a per-Python
    wheel: nothing to check)."""
    if not shape.shared:
        return
    names = sorted(elves)
    for name in names:
        yield from _name_findings(name, shape)
    if shape.kind is not ShapeKind.PY3_NONE:
        yield from _symbol_findings(names, read, shape)


def _name_findings(name: str, shape: WheelShape) -> Iterator[Finding]:
    built_for = python_specific(name)
    promise = f"{shape.interpreter()}-{shape.abi_text}"
    if built_for is not None:
        yield Finding(code="abi-python-specific", file=name,
                      message=f"extension module built for one Python ({built_for}) in a {promise} wheel, which "
                              "every listed Python installs: build it for the stable ABI (Py_LIMITED_API)"
                              if shape.kind is not ShapeKind.PY3_NONE else
                              f"extension module built for one Python ({built_for}) in a {promise} wheel")
    elif shape.kind is ShapeKind.PY3_NONE and is_stable(name):
        yield Finding(code="abi-python-specific", file=name,
                      message=f"stable-ABI extension module in a {promise} wheel, which promises no Python ABI "
                              "(free-threaded builds do not load it): wheel_shape abi3 fits it")


def _symbol_findings(names: Iterable[str], read: Reader, shape: WheelShape) -> Iterator[Finding]:
    """abi3audit on each extension module (a file exporting ``PyInit_``, or named ``.abi3``): no symbol outside
    the stable ABI, none newer than the tag's minimum."""
    from abi3audit._audit import AuditError, audit
    from abi3info.models import PyVersion

    floor = PyVersion(*(shape.minimum or (3, 2)))
    with tempfile.TemporaryDirectory(prefix="builders-abi3-") as folder:
        for name in names:
            if not name.endswith(".so") or python_specific(name):
                continue  # Windows and macOS objects are abi3audit's too, but not built here; named: above
            so = _shared_object(name, read, Path(folder))
            if so is None:
                continue
            try:
                result = audit(so, assume_minimum_abi3=floor)
            except AuditError as exc:
                yield Finding(code="abi3-unreadable", file=name, message=f"abi3audit could not read it: {exc}")
                continue
            yield from _audit_findings(name, result, shape)


def _shared_object(name: str, read: Reader, folder: Path):  # type: ignore[no-untyped-def]
    """abi3audit's view of one member (written out, as abi3audit reads files), if it is an extension module."""
    from abi3audit._extract import SharedObjectExtractor, SharedObjectSpec

    path = folder / posixpath.basename(name)
    with path.open("wb") as out:
        for chunk in read(name):
            out.write(chunk)
    if not is_stable(name) and b"PyInit_" not in path.read_bytes():
        return None  # a plain library (ctypes, a bundled dependency): no Python API to audit
    return next(iter(SharedObjectExtractor(SharedObjectSpec(str(path)))), None)


def _audit_findings(name: str, result, shape: WheelShape) -> Iterator[Finding]:  # type: ignore[no-untyped-def]
    promise = f"{shape.interpreter()}-{shape.abi_text}"
    outside = sorted(s.name for s in result.non_abi3_symbols)
    if outside:
        shown = ", ".join(outside[:5]) + (f" and {len(outside) - 5} more" if len(outside) > 5 else "")
        yield Finding(code="abi3-violation", file=name,
                      message=f"uses {len(outside)} symbol(s) outside the stable ABI in a {promise} wheel: {shown} "
                              "(abi3audit): build with Py_LIMITED_API")
    if result.computed > result.baseline:
        newer = sorted(f"{o.symbol.name} ({o.added})" for o in result.future_abi3_objects)
        yield Finding(code="abi3-newer", file=name,
                      message=f"uses the stable ABI of CPython {result.computed}, newer than the tag's "
                              f"{result.baseline}: {', '.join(newer[:5])} (abi3audit)")
