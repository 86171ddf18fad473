"""Release policy applied to targets: dropped items and exclusions.

Pure functions over the model; the messages here are what users read, so each one says
what was dropped, since which release and why.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable

from packaging.specifiers import SpecifierSet

from builders.matrix.model import Dropped, DroppedKind, Exclusion, Matrix, PythonVersion


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
    """The first exclusion whose glob matches ``target_id``."""
    return next((e for e in exclusions if fnmatch.fnmatchcase(target_id, e.pattern)), None)
