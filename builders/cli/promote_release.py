"""``promote-release``: the validated candidate's bytes to the release channel, then its PyPI wheels, never rebuilt."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from builders.base.console import Console
from builders.base.errors import InputError, Problem, SelectionError
from builders.cli.arguments import FLAG, Options
from builders.cli.plan import selection_of
from builders.cli.publish import declared
from builders.matrix import loader as matrix_mod
from builders.matrix.model import Matrix
from builders.matrix.promotion_policy import AcceptedNotRunnable
from builders.matrix.targets import select
from builders.release import promotion
from builders.release.index import find_wheels
from builders.release.objectstore import open_bucket

HELP = "copy the validated candidate from test to release, then upload to PyPI"
DESCRIPTION = ("Release the matrix's version without rebuilding: a preflight first (every selected target passed "
               "validation, or was not runnable and the matrix's channels.promotion.accept_not_runnable accepts it, "
               "and the test channel still serves the file that passed; each release file new or byte-identical; "
               "each PyPI file validated from staging, under the matrix's channels.promotion.pypi_file_limit_mb, the "
               "release under its pypi_total_limit_gb; the version not on the package server; --accept-not-runnable, "
               "--file-limit-mb and --total-limit-gb, when given, win over the matrix's); then the test channel's "
               "files are copied server-side to the release channel and read back (sha256 unchanged), the release "
               "pages written, and only then the PyPI wheels uploaded with twine, and the package server polled "
               "until it serves each with its sha256 (exit 21 otherwise). A refusal (exit 43) writes nothing.")


def execute(opts: Options, console: Console) -> int:
    m = matrix_mod.load(opts.matrix, builds=False)
    declared(m, "test")
    targets = select(m, selection_of(opts))
    pypi_files = find_wheels(opts.pypi_wheels) if opts.pypi_wheels else []
    if pypi_files and not (opts.repository_url and opts.simple_url):
        raise SelectionError("--pypi-wheels needs --repository-url and --simple-url (the package server)")
    env = dict(opts.env)
    bucket = open_bucket(opts.bucket, env)
    on_server = (promotion.files_on_server(opts.simple_url, m.project.name, str(m.project.version.public))
                 if opts.simple_url else [])
    limits, accept = policy(opts, m)
    plan = promotion.plan(bucket, m, targets, [read(p) for p in opts.validation],
                          [read(p) for p in opts.pypi_validation], pypi_files, accept=accept, limits=limits,
                          on_server=on_server)
    write_record(opts.record, plan)
    for target in plan.accepted:
        console.line(f"accepted: {target}")
    if plan.accepted:  # the reviewers approving the release see what ships unvalidated, and why
        console.job_summary("### promote-release: released without validation (accepted)\n\n"
                            + "".join(f"- {target}\n" for target in plan.accepted))
    for reason in plan.refusals:
        console.error(f"refused: {reason}")
    if plan.refusals:  # the job summary names each reason too, where the release engineer looks first
        console.job_summary("### promote-release refused (nothing written)\n\n"
                            + "".join(f"- {reason}\n" for reason in plan.refusals))
    promotion.preflight(plan)
    console.line(f"preflight passed: {len(plan.copies)} file(s) to copy, {len(plan.unchanged)} already released, "
                 f"{len(plan.pypi)} PyPI file(s)")
    if opts.dry_run:
        return 0
    promotion.copy_release(bucket, plan)
    console.line(f"{bucket.url}: release channel updated, every copy's sha256 checked")
    if plan.pypi:
        promotion.upload_pypi(plan, opts.repository_url, env)
        promotion.audit_pypi(plan, opts.simple_url, m.project.name, timeout=opts.audit_timeout)
        console.line(f"{opts.simple_url}: serves the {len(plan.pypi)} uploaded file(s), each with its sha256")
    return 0


def policy(opts: Options, m: Matrix) -> tuple[promotion.PypiLimits, tuple[AcceptedNotRunnable, ...]]:
    """What the preflight holds the release to: each option given on the command line (or, through ci/promote.sh,
    a workflow variable), else the matrix's ``channels.promotion``. Globs given replace the matrix's entries."""
    opts = opts.with_matrix(m)
    limits = promotion.PypiLimits(file_mb=opts.file_limit_mb, total_gb=opts.total_limit_gb)
    if opts.origin("accept_not_runnable") != FLAG:
        return limits, m.channels.promotion.accept_not_runnable
    return limits, tuple(AcceptedNotRunnable(targets=glob, reason="given on the command line (--accept-not-runnable)")
                         for glob in opts.accept_not_runnable)


def read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError([Problem(message=f"{path}: not a validation record: {exc}")]) from None
    if not isinstance(data, dict) or not isinstance(data.get("targets"), list):
        raise InputError([Problem(message=f"{path}: not a validation record (no targets list)")])
    return data


def write_record(path: Path | None, plan: promotion.Promotion) -> None:
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(plan.to_json(), indent=2, sort_keys=True) + "\n", encoding="utf-8")
