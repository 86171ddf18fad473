"""What must hold before a tag is released: pure checks for the release workflow's plan job.

Each function returns every problem it finds as one line (an empty list means go), so the
workflow can show them all at once and stop with :class:`~builders.base.errors.ReleaseError`.
They only compare values: the matrix was validated at load, the tag and the file names come
from the caller.
"""

from __future__ import annotations

from packaging.version import InvalidVersion, Version

from builders.matrix.model import OS, Matrix


def release_problems(matrix: Matrix, tag: str) -> list[str]:
    """Why ``tag`` cannot release ``matrix``: a tag that names another version than ``project.version``,
    and Linux platforms whose base image is not pinned by digest (a tag can be moved to other content
    between the plan and the build; a digest cannot)."""
    return [*_tag_problems(matrix, tag), *_unpinned_bases(matrix)]


def _tag_problems(matrix: Matrix, tag: str) -> list[str]:
    version = matrix.project.version
    want = f"v{version}"
    try:
        named = Version(tag)
    except InvalidVersion:
        return [f"tag {tag!r} names no version; the matrix releases {version} ({matrix.path}), so the tag is {want}"]
    if named != version:
        return [f"tag {tag!r} names version {named}, but the matrix's project.version is {version} ({matrix.path}); "
                f"tag {want}, or change project.version"]
    return []


def _unpinned_bases(matrix: Matrix) -> list[str]:
    return [f"{p.location}: platforms.{p.name}.base_image {p.base_image or '(none)'} is not pinned by digest; "
            f"a release builds on repo@sha256:<digest> (`skopeo inspect docker://IMAGE` shows it)"
            for p in matrix.platforms if p.os is OS.LINUX and p.image_digest is None]


def wheel_set_problems(expected: set[str], found: set[str]) -> list[str]:
    """Each expected wheel file name that is missing and each file that is not expected, one line
    each (sorted): a release publishes exactly the wheels its plan promised."""
    missing = [f"missing: {name} (planned, not found)" for name in sorted(expected - found)]
    unexpected = [f"unexpected: {name} (found, not planned)" for name in sorted(found - expected)]
    return missing + unexpected
