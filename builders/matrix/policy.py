"""Release policy applied to targets: dropped items and exclusions.

Pure functions over the model; the messages here are what users read, so each one says
what was dropped, since which release and why.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from builders.matrix.findings import Violation
from builders.matrix.model import Dropped, DroppedKind, Exclusion, Matrix, PythonVersion

FREE_THREADED_SINCE = (3, 13)


def admits_release(spec: SpecifierSet, release: str) -> bool:
    """Whether ``spec`` admits any patch release of ``release`` (``"3.10"``)."""
    return any(spec.contains(f"{release}.{patch}", prereleases=True) for patch in (0, 1, 5, 99))


def dropped_pythons(matrix: Matrix) -> tuple[tuple[PythonVersion, Dropped], ...]:
    return tuple(
        (PythonVersion.parse(d.value), d) for d in matrix.dropped if d.kind is DroppedKind.PYTHON
    )


def dropped_admitted_by(spec: SpecifierSet, dropped: Iterable[Dropped]) -> tuple[Dropped, ...]:
    """The dropped Pythons that a ``Requires-Python`` still admits (free-threaded excluded:
    Requires-Python cannot tell a ``t`` build apart)."""
    return tuple(
        d for d in dropped
        if d.kind is DroppedKind.PYTHON and not d.value.endswith("t") and admits_release(spec, d.value)
    )


def exclusion_for(target_id: str, exclusions: Iterable[Exclusion]) -> Exclusion | None:
    return next((e for e in exclusions if fnmatch.fnmatchcase(target_id, e.pattern)), None)


def python_problem(text: str, requires: SpecifierSet | None, neighbours: Iterable[int] = ()) -> Violation | None:
    """A listed Python: free-threaded only from 3.13, admitted by ``requires_python``.

    ``neighbours`` are the minors of the other Pythons the matrix names: ``3.1`` among 3.1x
    is almost certainly 3.10 written without quotes and read as a number.
    """
    py = PythonVersion.parse(text)
    if py.free_threaded and (py.major, py.minor) < FREE_THREADED_SINCE:
        return Violation(f"Python {text}: free-threaded CPython exists from 3.13 on",
                         hint=f"list {py.release!r} instead, or remove it")
    if requires is None or admits_release(requires, py.release):
        return None
    others = sorted(neighbours)
    if py.minor < 10 and others and others[0] - 1 <= py.minor * 10 <= others[-1] + 1:
        hint = (f"{text} looks like {py.release}0 written without quotes (YAML reads 3.{py.minor}0 as the "
                f"number 3.{py.minor}): write \"{py.release}0\"")
    else:
        hint = "remove it, or change requires_python"
    return Violation(f"Python {text} is not admitted by requires_python {requires}", hint=hint)


def dropped_python_problem(text: str, dropped: Iterable[Dropped]) -> Violation | None:
    for d in dropped:
        if d.kind is DroppedKind.PYTHON and d.value == text:
            return Violation(f"Python {text} is listed, but {d.describe()}", hint=f"remove {text!r} from pythons", dropped=True)
    return None


def pypi_default_problem(platform: str, label: str, ids: list[str], exclusions: Iterable[Exclusion]) -> Violation | None:
    """The variant published on PyPI for ``platform`` must have a target there."""
    reasons = [exclusion_for(tid, exclusions) for tid in ids]
    if not ids or not all(reasons):
        return None
    first = reasons[0]
    reason = f": {first.reason}" if first else ""
    return Violation(f"the PyPI default for {platform} is {label!r}, but every {label} target on {platform} is "
                     f"excluded{reason}", hint="publish a variant that is built for this platform, or drop the entry")


def mps_problem(mps: str, dropped: tuple[Dropped, ...]) -> Violation | None:
    for d in dropped:
        if d.kind is DroppedKind.MPS_MACOS and Version(mps).major <= Version(d.value).major:
            return Violation(f"MPS is enabled from macOS {mps}, but {d.describe()}",
                             hint=f"set mps_min_macos above {d.value}", dropped=True)
    return None
