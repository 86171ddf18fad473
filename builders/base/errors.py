"""The one error hierarchy of the pipeline, and the one table of exit codes.

``main`` catches only :class:`BuildersError`. Every subclass lives here, has its own exit code
so a script (or the release workflow) can tell a bad matrix from a failed build, and says what
that code means in ``what`` (a subclass that only narrows its parent's case, such as
:class:`ObjectExists`, declares neither and returns its parent's); :data:`OTHER_EXIT_CODES`
holds the codes no error class returns.
:func:`exit_codes` joins them: the ``--help`` epilog is made from it, and a unit test checks
that the codes are unique and that docs/exit-codes.md's table is this table, row by row.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from builders.base.redact import redact


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
    """Base of every error the pipeline reports to a user (never raised itself: raise a subclass)."""

    exit_code = 10
    what = ""  # what the exit code means, one line: a row of docs/exit-codes.md and of ``--help``


class TargetsFailed(BuildersError):
    """At least one selected target failed to build, verify or smoke-test."""

    exit_code = 1
    what = "a target failed (build, verify or smoke; the others still ran)"


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
    what = "invalid matrix"

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = tuple(problems)
        super().__init__(format_problems(self.problems))


class DroppedError(MatrixError):
    """Something the release dropped was asked for (a Python, a platform feature)."""

    exit_code = 4
    what = "a dropped item was asked for (a Python, a platform feature)"


class SelectionError(BuildersError):
    """A selector matched nothing, or named something that does not exist."""

    exit_code = 5
    what = ("bad selection: a selector matches nothing, or nothing is left selected; yank: a version the channel "
            "lacks, or no --reason; rollback: a promotion the ledger lacks")


class ToolchainError(BuildersError):
    """A toolchain could not be provisioned or does not match the matrix."""

    exit_code = 6
    what = "toolchain cannot be provisioned or does not match the matrix"


class VerifyError(BuildersError):
    """A wheel is not what its target promised."""

    exit_code = 7
    what = "verify: a wheel is not what its target promised"


class SmokeError(BuildersError):
    """A wheel failed its smoke test in a fresh environment."""

    exit_code = 8
    what = "smoke test failed"


class EngineError(BuildersError):
    """A build engine is unusable (no container engine, cibuildwheel failure)."""

    exit_code = 9
    what = ("engine unusable: the engine asked for cannot run here (no working container engine, each named with "
            "what is missing), cibuildwheel failure")


class WheelError(BuildersError):
    """A wheel file cannot be read or rewritten."""

    exit_code = 11
    what = "a wheel file cannot be read or rewritten"


class InputError(BuildersError):
    """An untrusted input file cannot be read safely: unreadable, too large, not UTF-8, or
    malformed (see :mod:`builders.base.untrusted`); carries its problems, each with a location.
    Callers with their own error (a matrix: :class:`MatrixError`) re-raise its problems."""

    exit_code = 20
    what = ("an untrusted input file cannot be read safely (too large, not UTF-8, malformed; rollback: a record "
            "that is none)")

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = tuple(problems)
        super().__init__(format_problems(self.problems))


class Interrupted(BuildersError):
    """The run was interrupted (SIGINT/SIGTERM); partial outputs were removed."""

    exit_code = 130
    what = "interrupted (SIGINT/SIGTERM)"


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
    what = ("audit: the published index drifted from the matrix (a file missing, unexpected or yanked, a wrong "
            "tag, Requires-Dist or Requires-Python), or the index cannot be read")


class ReleaseError(BuildersError):
    """A tag cannot be released from this matrix (see :mod:`builders.ci.checks`): the tag names another
    version than ``project.version``, a Linux base image is not pinned by digest, or the wheels found
    are not the wheels planned. The message lists every problem, one per line."""

    exit_code = 25
    what = ("release: the tag does not name the matrix's `project.version`, a Linux platform's `base_image` is "
            "not pinned by digest, or the wheels found are not the wheels planned (each problem listed; "
            "`builders/ci/checks.py`)")


class ProcessError(BuildersError):
    """A command exited non-zero; ``tail`` holds the last lines of its output."""

    exit_code = 12
    what = "a subprocess failed"

    def __init__(self, argv: Sequence[str], returncode: int, tail: str, *, timeout: float | None = None,
                 limit: str = "") -> None:
        self.argv = tuple(argv)
        self.returncode = returncode
        self.tail = redact(tail)
        self.timeout = timeout  # set when the command was stopped at its time limit
        self.limit = limit  # the matrix key that set that limit (project.timeouts.build[cuda]), where known
        where = f" ({limit})" if limit else ""
        what = f"timed out after {timeout:g} s{where}" if timeout is not None else f"command failed with exit code {returncode}"
        super().__init__(redact(f"{what}: {shlex.join(argv)}\n{tail}"))

    def named(self, limit: str) -> ProcessError:
        """This error, its time limit named by the matrix key that set it (unchanged when it did not time out)."""
        if self.timeout is None:
            return self
        return ProcessError(self.argv, self.returncode, self.tail, timeout=self.timeout, limit=limit)


class ResultsError(BuildersError):
    """A results file is unreadable, malformed, or describes targets the matrix does not have."""

    exit_code = 13
    what = ("a results file is unreadable, not a results file (checked against "
            "`builders/schema/results.schema.json`, at most 4 MiB and 32 levels deep) or names targets the "
            "matrix does not have")


class RepairError(BuildersError):
    """auditwheel or delocate could not repair a wheel."""

    exit_code = 14
    what = "repair"


class PromoteError(BuildersError):
    """A wheel cannot be promoted to PyPI (unlabelled, not the platform's default variant, or
    it does not verify as its labelled target)."""

    exit_code = 15
    what = ("not promotable, or a folder with no PyPI-default wheel to promote (`promote --allow-empty` accepts "
            "the latter: it writes nothing, says why and exits 0)")


class IndexBuildError(BuildersError):
    """The wheels cannot be laid out as an index (clashing files, unknown label, a wheel that
    does not verify, a path that would leave the output folder)."""

    exit_code = 16
    what = "index: clashing files, a label the matrix does not have, or no labelled wheel to index"


class WorkflowDrift(MatrixError):
    """The release workflow no longer consumes what the plan emits, or is not a workflow at all."""

    exit_code = 17
    what = "the release workflow drifted from the plan, or is not a workflow"


class NotBuildableHere(EngineError):
    """The target cannot be built with this engine here (e.g. no such interpreter in the image)."""

    exit_code = 18
    what = "not buildable in this engine's image"


class PathError(BuildersError):
    """A path argument is missing, the wrong kind (file or folder) or cannot be written."""

    exit_code = 19
    what = ("bad path argument: missing, a folder where a file is meant (or the reverse), or an output folder "
            "that cannot be created or written (tried for real, so it holds for root too)")


class NothingToBuild(SelectionError):
    """Every selected target was skipped on this host with this engine, before or during the build, or a
    target the plan could build was skipped during it (``--allow-skip`` accepts that)."""

    exit_code = 22
    what = ("nothing to build: every selected target is skipped on this host with this engine, whether the plan "
            "or the build's check decided it (the image has no such CPython), or a target the plan could build "
            "was skipped during the build (each reason is listed; `build --allow-skip` accepts it)")


class DeviceMissing(SmokeError):
    """``smoke --require-device``: the target's smoke job needs an accelerator this machine does not show."""

    exit_code = 23
    what = ("`smoke --require-device`: the target's smoke job needs an accelerator (a GPU variant the matrix "
            "gives GPU smoke runners) and this machine shows no such device")


class CoreError(BuildersError):
    """The core's commands ran but left nothing installed where ``{coredir}`` points."""

    exit_code = 24
    what = "`build.core` ran and installed nothing into `{coredir}` (recorded as that target's failure; the run exits 1)"


class FolderBusy(BuildersError):
    """Another run holds the output folder's lock (:mod:`builders.base.folderlock`) and ``--no-wait`` was given."""

    exit_code = 26
    what = ("`--no-wait`: another run holds the output folder's lock (`<output>/.builders.lock`; the message names "
            "its pid, command line and start); without `--no-wait` the run waits for it")


PIPE_CLOSED = 141  # 128 + SIGPIPE: what a shell reports for a tool whose reader went away

class VariantError(BuildersError):
    """A wheel variant (PEP 825) cannot be made, does not verify, or its index is not what the matrix says."""

    exit_code = 27
    what = ("variants: a wheel variant or its index's variants.json that does not verify against the matrix (each "
            "finding listed), no labelled wheel to make variants of, or `audit --channel variants` with a matrix "
            "without wheel_variants")


class ObjectStoreError(BuildersError):
    """The object store refused or failed a request (credentials, a missing bucket, an endpoint down), or a bucket
    URL is not one."""

    exit_code = 40
    what = ("object store: a request the S3-compatible store refused or could not serve (credentials, no such bucket, "
            "the endpoint down), a bad s3:// URL, a channel's pages or ledger that disagree with its files (repair-index: "
            "a lost file), or another writer holding the ledger (any command that writes a channel)")


class ObjectExists(ObjectStoreError):
    """A conditional write (``If-None-Match: *``) found the key taken: another writer got there first. It shares
    its parent's exit code (a request the store refused) and so declares none of its own."""


class LedgerCorrupt(ObjectStoreError):
    """A channel's ledger object (head, entry, lease) in the bucket is not what this builders writes; shares its
    parent's exit code (40: a message, never a traceback)."""


class LedgerBusy(ObjectStoreError):
    """Another writer holds a channel's ledger (named in the message) or kept winning the race for it."""


class PublishRefused(BuildersError):
    """A publication would change a file the release channel already serves; nothing was written."""

    exit_code = 41
    what = ("publish: a file already on the release channel would get other bytes (a published file never changes: "
            "release a new version); nothing was written")


class ValidationFailed(BuildersError):
    """``validate``: a target installed from the published index failed to install or its smoke test."""

    exit_code = 42
    what = ("validate: a target installed from the channel's published index over HTTP failed to install or its smoke "
            "test (the validation record names each target and why)")


class PreflightRefused(BuildersError):
    """``promote-release``: the preflight found a reason not to release; nothing irreversible was done."""

    exit_code = 43
    what = ("promote-release: the preflight refused (a target not validated, a release file that would change, a "
            "PyPI file over the project's file limit or the release over its total budget, the version already on "
            "the package server); the release channel and the package server are as they were")


class IndexCheckFailed(BuildersError):
    """``check-index``: the served index breaks its contract (pages, hashes, links, provenance, variants.json)."""

    exit_code = 48
    what = ("check-index: the pages differ, lack a hash, core-metadata or provenance, serve other bytes, or "
            "variants.json changed")


class CoverageMissing(IndexCheckFailed):
    """``check-index``: a declared (variant x Python x platform) cell that pip or uv cannot resolve."""

    exit_code = 49
    what = "check-index: a declared cell that pip or uv cannot resolve from the served index"


class ReleaseUnverified(BuildersError):
    """``verify-release``: a served file does not match its page, the release manifest or its provenance."""

    exit_code = 51
    what = ("verify-release: a file of the version, as the index serves it, is not what its page or the release "
            "manifest declares, or its PEP 740 provenance is missing, names another file, another builder "
            "(repository, workflow, ref), or its signature does not verify (each named)")


class RehearsalError(BuildersError):
    """``plan --rehearse``: a scale profile or price table cannot be read, or the release crosses a limit."""

    exit_code = 47
    what = ("plan --rehearse: a release at the profile's scale would cross a limit (GitHub's jobs per matrix, hours "
            "per job, a runner's disk, artifact retention, PyPI's file or project limit, S3's single PUT, a Release "
            "asset, a credential's life), each named with its job and the fix; or the profile or price table is "
            "unreadable")


class RebuildError(BuildersError):
    """``rebuild`` could not rebuild: no such commit, target or file, a released file whose bytes are not the
    manifest's, or the build itself failed."""

    exit_code = 56
    what = ("rebuild: the manifest's commit is not in the repository, the target has no file in the manifest, the "
            "released file's sha256 is not the manifest's, or the rebuild's build failed (its log is named)")


class NotReproduced(BuildersError):
    """``rebuild`` built the target, and its bytes are not the released file's: the report names each member."""

    exit_code = 57
    what = ("rebuild: the rebuilt wheel differs from the released one; each differing member is named with the "
            "kind of difference (timestamps, paths, ordering, metadata, code, only on one side)")


# The codes no error class returns: success, argparse's usage error, a reader that went away.
OTHER_EXIT_CODES: tuple[tuple[int, str], ...] = (
    (0, "ok"),
    (2, "usage: an unknown option or a missing argument (argparse)"),
    (PIPE_CLOSED, "stdout was closed early (`plan | head`): the command stops quietly, as a tool killed by "
                  "SIGPIPE does (128 + 13)"),
)


def error_classes(base: type[BuildersError] = BuildersError) -> Iterator[type[BuildersError]]:
    """Every subclass of ``base``, recursively, in declaration order."""
    for sub in base.__subclasses__():
        yield sub
        yield from error_classes(sub)


def exit_codes() -> tuple[tuple[int, str], ...]:
    """Every (code, meaning) the tool can return; a class without its own ``exit_code`` shares its parent's row."""
    own = (c for c in error_classes() if "exit_code" in vars(c))
    return tuple(sorted([*OTHER_EXIT_CODES, *((c.exit_code, c.what) for c in own)]))
