"""The one error hierarchy of the pipeline.

``main`` catches only :class:`BuildersError`. Every subclass has its own exit code so a
script (or the release workflow) can tell a bad matrix from a failed build; a unit test
asserts that the codes are unique.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class Location:
    """Where a value came from: file, 1-based line and column, and its key path."""

    file: str
    line: int
    column: int
    key: str = ""

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


@dataclass(frozen=True, kw_only=True)
class Problem:
    """One thing wrong with an input, with a hint on how to fix it."""

    message: str
    location: Location | None = None
    hint: str = ""
    dropped: bool = False

    def __str__(self) -> str:
        where = f"{self.location}: " if self.location else ""
        key = f"{self.location.key}: " if self.location and self.location.key else ""
        hint = f"\n    hint: {self.hint}" if self.hint else ""
        return f"{where}{key}{self.message}{hint}"


class BuildersError(Exception):
    """Base of every error the pipeline reports to a user."""

    exit_code = 10


class TargetsFailed(BuildersError):
    """At least one selected target failed to build, verify or smoke-test."""

    exit_code = 1


SHOWN_PROBLEMS = 50


def format_problems(problems: Sequence[Problem], limit: int = SHOWN_PROBLEMS) -> str:
    """One problem per paragraph, the first ``limit`` of them, then how many more there are."""
    lines = [str(p) for p in problems[:limit]]
    if len(problems) > limit:
        lines.append(f"... and {len(problems) - limit} more problems (fix the ones above first)")
    return "\n".join(lines)


class MatrixError(BuildersError):
    """``matrix.yaml`` is invalid; carries every problem found, not just the first (the message
    shows the first :data:`SHOWN_PROBLEMS`)."""

    exit_code = 3

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = tuple(problems)
        super().__init__(format_problems(self.problems))


class DroppedError(MatrixError):
    """Something the release dropped was asked for (a Python, a platform feature)."""

    exit_code = 4


class SelectionError(BuildersError):
    """A selector matched nothing, or named something that does not exist."""

    exit_code = 5


class ToolchainError(BuildersError):
    """A toolchain could not be provisioned or does not match the matrix."""

    exit_code = 6


class VerifyError(BuildersError):
    """A wheel is not what its target promised."""

    exit_code = 7


class SmokeError(BuildersError):
    """A wheel failed its smoke test in a fresh environment."""

    exit_code = 8


class EngineError(BuildersError):
    """A build engine is unusable (no container engine, cibuildwheel failure)."""

    exit_code = 9


class WheelError(BuildersError):
    """A wheel file cannot be read or rewritten."""

    exit_code = 11


class InputError(BuildersError):
    """An untrusted input file cannot be read safely: unreadable, too large, not UTF-8, or
    malformed (see :mod:`builders.untrusted`); carries its problems, each with a location.
    Callers with their own error (a matrix: :class:`MatrixError`) re-raise its problems."""

    exit_code = 20

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = tuple(problems)
        super().__init__(format_problems(self.problems))


class Interrupted(BuildersError):
    """The run was interrupted (SIGINT/SIGTERM); partial outputs were removed."""

    exit_code = 130


def raise_problems(problems: Sequence[Problem]) -> None:
    """Raise the right :class:`MatrixError` for ``problems``, if there are any."""
    if not problems:
        return
    if all(p.dropped for p in problems):
        raise DroppedError(problems)
    raise MatrixError(problems)


class AuditError(BuildersError):
    """A published index drifted from the matrix (missing, unexpected or yanked files, wrong tags
    or metadata), or it cannot be read."""

    exit_code = 21


class ReleaseError(BuildersError):
    """A tag cannot be released from this matrix (see :mod:`builders.release`): the tag names another
    version than ``project.version``, a Linux base image is not pinned by digest, or the wheels found
    are not the wheels planned. The message lists every problem, one per line."""

    exit_code = 25
