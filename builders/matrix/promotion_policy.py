"""``channels.promotion``: what ``promote-release``'s preflight holds a release to, as matrix data.

A release engineer declares here, once and reviewed with the matrix, what would otherwise be typed at
each promotion: the project's PyPI limits (PyPI refuses a file over 100 MB unless the project's limit
was raised, and a project over 10 GB in all; twine uploads file by file, so a refusal halfway leaves a
partial release) and the targets that may be released although no validation host could run them, each
with its reason (which the promotion's record shows). ``promote-release``'s options override each value
when given (:mod:`builders.cli.options`). The schema checks the shape (a non-blank reason); the rules
(:mod:`builders.matrix.rules`) that each limit is above 0 and, with :func:`glob_problem`, that each glob
accepts a planned target.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from builders.base.errors import Location
from builders.matrix.findings import Violation

KEY = "promotion"
ACCEPT = "accept_not_runnable"
LIMITS = ("pypi_file_limit_mb", "pypi_total_limit_gb")  # numbers above 0 (findings.positive_problem)
FILE_LIMIT_MB = 100.0  # PyPI's default per-file limit
TOTAL_LIMIT_GB = 10.0  # PyPI's default project size limit
KeyPath = tuple[str | int, ...]


@dataclass(frozen=True, kw_only=True)
class AcceptedNotRunnable:
    """Targets (a glob over target ids) released although no host could validate them, and why that is fine."""

    targets: str
    reason: str
    location: Location | None = field(default=None, compare=False, repr=False)

    def accepts(self, target_id: str) -> bool:
        return fnmatch.fnmatchcase(target_id, self.targets)


@dataclass(frozen=True, kw_only=True)
class PromotionPolicy:
    """``channels.promotion`` with its defaults filled in (an absent key is PyPI's defaults, nothing accepted)."""

    pypi_file_limit_mb: float = FILE_LIMIT_MB
    pypi_total_limit_gb: float = TOTAL_LIMIT_GB
    accept_not_runnable: tuple[AcceptedNotRunnable, ...] = ()


def parse(raw: Mapping[str, Any] | None, key: KeyPath,
          locate: Callable[[KeyPath], Location | None]) -> PromotionPolicy:
    """The frozen value of a ``channels.promotion`` every rule accepted (``raw`` as read, plain; None: absent)."""
    raw = raw or {}
    accepts = tuple(AcceptedNotRunnable(targets=entry["targets"], reason=entry["reason"],
                                        location=locate((*key, ACCEPT, i)))
                    for i, entry in enumerate(raw.get(ACCEPT, ())))
    return PromotionPolicy(pypi_file_limit_mb=float(raw.get("pypi_file_limit_mb", FILE_LIMIT_MB)),
                           pypi_total_limit_gb=float(raw.get("pypi_total_limit_gb", TOTAL_LIMIT_GB)),
                           accept_not_runnable=accepts)


def glob_problem(glob: str, planned: Sequence[str]) -> Violation | None:
    """An ``accept_not_runnable`` glob must accept some planned target: one that matches none is a typo or a
    target since excluded, and would silently accept a target added later."""
    if any(fnmatch.fnmatchcase(tid, glob) for tid in planned):
        return None
    return Violation(f"accept_not_runnable {glob!r} matches no planned target",
                     hint="target ids look like cu132-cp312-linux-x86_64 (excluded targets are not planned)")
