"""What must hold before a tag is released: pure checks for the release workflow's plan job.

Each function returns every problem it finds as one line (an empty list means go), so the
workflow can show them all at once and stop with :class:`~builders.base.errors.ReleaseError`
(:func:`refuse_release` does).
They only compare values: the matrix was validated at load, the tag and the file names come
from the caller.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Sequence

from packaging.tags import Tag
from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from builders.base.errors import ReleaseError
from builders.matrix.model import OS, Matrix
from builders.matrix.targets import Target, expand
from builders.wheel.pypi_form import manylinux

CANDIDATE = re.compile(r"-rc[1-9][0-9]*")  # v{version}-rc{N}: a release candidate, never published as the release


def release_problems(matrix: Matrix, tag: str) -> list[str]:
    """Base images must be pinned by digest: a tag can move to other content between plan and build."""
    return [*_tag_problems(matrix, tag), *_unpinned_bases(matrix)]


def tag_kind(matrix: Matrix, tag: str) -> str | None:
    """``"release"`` for exactly ``v{version}``, ``"candidate"`` for ``v{version}-rc{N}``, None otherwise.

    String equality with the matrix's version as written, not PEP 440 equality: ``v2.15``,
    ``v2.15.0.0`` and ``v02.15.00`` all equal 2.15.0 as versions, and none of them is the tag.
    """
    want = f"v{matrix.project.version}"
    if tag == want:
        return "release"
    if tag.startswith(want) and CANDIDATE.fullmatch(tag[len(want):]):
        return "candidate"
    return None


def _tag_problems(matrix: Matrix, tag: str) -> list[str]:
    version = matrix.project.version
    want = f"v{version}"
    if tag_kind(matrix, tag) is not None:
        return []
    try:
        named = Version(tag)
    except InvalidVersion:
        return [f"tag {tag!r} names no version; the matrix releases {version} ({matrix.path}), so the tag is {want} "
                f"(or {want}-rcN for a candidate)"]
    if named == version:
        return [f"tag {tag!r} names {version} but is not spelled {want} ({matrix.path}): a release is tagged exactly "
                f"{want}, a candidate {want}-rcN"]
    return [f"tag {tag!r} names version {named}, but the matrix's project.version is {version} ({matrix.path}); "
            f"tag {want}, or change project.version"]


def _unpinned_bases(matrix: Matrix) -> list[str]:
    return [f"{p.location}: platforms.{p.name}.base_image {p.base_image or '(none)'} is not pinned by digest; "
            f"a release builds on repo@sha256:<digest> (`skopeo inspect docker://IMAGE` shows it)"
            for p in matrix.platforms if p.os is OS.LINUX and p.image_digest is None]


def wheel_set_problems(expected: set[str], found: set[str]) -> list[str]:
    """Each expected wheel file name that is missing and each file that is not expected, one line
    each (sorted): a release publishes exactly the wheels its plan promised."""
    missing = [f"missing: {name} (planned, not found)" for name in sorted(expected - found)]
    unexpected = [f"unexpected: {name} (found, not planned{local_only_note(name, expected)})"
                  for name in sorted(found - expected)]
    return missing + unexpected


def local_only_note(name: str, expected: set[str]) -> str:
    """What a stray wheel is when a planned one differs from it only in its manylinux level: a `build
    --local-only` wheel, tagged at its build host's own level for testing, which is never published."""
    try:
        project, version, _build, tags = parse_wheel_filename(name)
    except InvalidWheelFilename:
        return ""
    for other in expected:
        with contextlib.suppress(InvalidWheelFilename):
            o_project, o_version, _b, o_tags = parse_wheel_filename(other)
            if (o_project, o_version) == (project, version) and _levelless(o_tags) == _levelless(tags) != set():
                return f"; a `build --local-only` wheel, never published: the plan has {other}"
    return ""


def _levelless(tags: frozenset[Tag]) -> set[tuple[str, str, str]]:
    return {(t.interpreter, t.abi, level[2]) for t in tags if (level := manylinux(t.platform))}


def refuse_release(m: Matrix, tag: str, targets: Sequence[Target]) -> None:
    """A release publishes exactly the matrix's version, every target of it, from digest-pinned images."""
    problems = release_problems(m, tag)
    everything, _ = expand(m)
    if len(targets) != len(everything):
        problems.append(f"the selection holds {len(targets)} of the matrix's {len(everything)} targets; a release "
                        "publishes all of them (a run of a subset is a workflow_dispatch, which publishes nothing)")
    if problems:
        raise ReleaseError(f"tag {tag} is not released:\n  " + "\n  ".join(problems))
