"""``promote-release``: the validated candidate's bytes to the release channel, then its PyPI wheels, never rebuilt."""

from __future__ import annotations

import datetime
import json
import tempfile
from pathlib import Path
from typing import Any

from builders.base import redact, safe_output
from builders.base.console import Console
from builders.base.errors import SelectionError
from builders.channels import provenance, releasing
from builders.channels.ledger import open_ledger
from builders.cli import load
from builders.cli.arguments import FLAG, Options
from builders.index import manifest, promotion
from builders.index.objectstore import Bucket, open_bucket
from builders.index.pages import find_wheels
from builders.index.promote import requirement_problems
from builders.matrix.model import Matrix
from builders.matrix.promotion_policy import AcceptedNotRunnable
from builders.matrix.release_channels import ChannelName
from builders.matrix.targets import select

HELP = "release exactly a candidate's validated files: test to release, then PyPI"
DESCRIPTION = ("Release the candidate that --manifest describes, without rebuilding: a preflight first, reading "
               "only (the manifest is a candidate of the matrix's version and the run --expect-* names; every record "
               "validated this manifest; every planned target's file passed validation with the manifest's bytes "
               "under every installer, or was not runnable and the matrix's channels.promotion.accept_not_runnable "
               "accepts it; the test channel serves those bytes; each release key is free or already holds the same "
               "bytes, by the object's checksum; the PyPI files are the manifest's, validated from staging, within "
               "the project's limits with what the package server already holds, their requirements right for "
               "their platforms; the version not on the package server; twine and its credentials present). Then "
               "the manifest's files (and the requirements mirrored beside them), and nothing else the test channel "
               "holds, are copied server-side to the release channel and their sha256 checked, the release pages "
               "written, the promotion recorded in the bucket (publish-records/release/, what `rollback` reads), "
               "and only then the PyPI wheels uploaded with twine and the package server polled until it serves "
               "each (exit 21 otherwise). A refusal (exit 43) writes nothing.")


def execute(opts: Options, console: Console) -> int:
    m = load.matrix(opts)
    m.declared_channel("test")
    targets = select(m, load.selection(opts))
    pypi_files = find_wheels(opts.pypi_wheels) if opts.pypi_wheels else []
    if pypi_files and not (opts.repository_url and opts.simple_url):
        raise SelectionError("--pypi-wheels needs --repository-url and --simple-url (the package server)")
    env = dict(opts.env)
    bucket = open_bucket(opts.bucket, env)
    plan = promotion.plan(bucket, m, targets, evidence(opts, m, pypi_files, env))
    write_record(opts.record, plan)
    show(console, plan)
    promotion.preflight(plan)
    console.line(f"preflight passed: {len(plan.copies)} file(s) to copy, {len(plan.unchanged)} already released, "
                 f"{len(plan.pypi)} PyPI file(s)")
    attested = pypi_attestations(opts.attestations, plan) if plan.pypi else {}
    if opts.dry_run:
        return 0
    if not release_in_ledger(opts, m, bucket, plan, console, env):
        return 0
    if plan.pypi_done:
        console.line(f"{opts.simple_url}: {len(plan.pypi_done)} of {len(plan.pypi)} PyPI file(s) uploaded already with "
                     "the manifest's sha256 (an upload cut short): the rest is uploaded")
    if plan.pypi:
        with tempfile.TemporaryDirectory(prefix="builders-attestations-") as tmp:
            promotion.upload_pypi(plan, opts.repository_url, env, write_attestations(attested, Path(tmp)))
        promotion.audit_pypi(plan, opts.simple_url, m.project.name, timeout=opts.audit_timeout)
        console.line(f"{opts.simple_url}: serves the {len(plan.pypi)} uploaded file(s), each with its sha256")
    return 0


def release_in_ledger(opts: Options, m: Matrix, bucket: Bucket, plan: promotion.Promotion, console: Console,
                      env: dict[str, str]) -> bool:
    """The copies and pages (index/promotion), then the promotion's entry in the release ledger (adopted from its
    pages first); False when the ledger and the package server hold this release already (nothing written)."""
    release = m.channels.channel(ChannelName.RELEASE)
    ledger = open_ledger(bucket, release.name.value, env)
    folders = releasing.folders_of(release, [v.label for v in m.variants])
    state = releasing.settle(bucket, ledger, folders)
    if releasing.held(state, plan.version, plan.manifest) and not plan.copies and len(plan.pypi_done) == len(plan.pypi):
        console.line(f"{bucket.url}: already done: {plan.version} is released from this manifest (ledger) and every "
                     "PyPI file is on the package server with its sha256; nothing written")
        return False
    key = promotion.copy_release(bucket, plan, at=datetime.datetime.now(datetime.UTC))
    sizes = {k: o.size for _label, folder in folders for k, o in bucket.listing(folder).items()}
    entry = releasing.record(ledger, releasing.promotion_entry(
        dict(plan.held), {p.key: p.source for p in plan.pages if isinstance(p.source, bytes)}, sizes,
        version=plan.version, manifest_sha256=plan.manifest,
        validations=releasing.validation_bytes([*opts.validation, *opts.pypi_validation]), writer=ledger.writer))
    console.line(f"{bucket.url}: release channel updated, every copy's sha256 checked; the promotion's record: {key} "
                 f"(rollback --promotion KEY); ledger entry {entry.id if entry else '(held already)'}")
    return True


def pypi_attestations(folder: Path | None, plan: promotion.Promotion) -> dict[str, dict[str, Any]]:
    """PyPI file name -> the PEP 740 attestation of ``--attestations`` whose statement names it alone (PyPI takes
    one subject per attestation); a file without one is refused before anything is written."""
    if folder is None:
        return {}
    try:
        found = provenance.read_bundles(folder)
        single = {subjects[0][1]: a for a in found if len(subjects := provenance.subjects(a)) == 1}
    except provenance.ProvenanceProblem as exc:
        raise SelectionError(f"--attestations: {exc}") from None
    lacking = [f.path.name for f in plan.pypi if f.sha256 not in single]
    if lacking:
        raise SelectionError(f"--attestations: no single-subject attestation names {', '.join(lacking)} by its "
                             "sha256 (PyPI takes one attestation per file: attest each PyPI wheel on its own); "
                             "nothing was written")
    return {f.path.name: single[f.sha256] for f in plan.pypi}


def write_attestations(attested: dict[str, dict[str, Any]], folder: Path) -> list[Path]:
    """Each as ``<wheel>.publish.attestation``, the name twine pairs with its file."""
    out = []
    for name, item in sorted(attested.items()):
        path = folder / f"{name}.publish.attestation"
        path.write_text(json.dumps(item, sort_keys=True), encoding="utf-8")
        out.append(path)
    return out


def evidence(opts: Options, m: Matrix, pypi_files: list[Path], env: dict[str, str]) -> promotion.Evidence:
    """Everything the preflight weighs besides the bucket, gathered before the plan (reads only)."""
    limits, accept = policy(opts, m)
    version = str(m.project.version.public)
    release = manifest.load(opts.manifest)
    server = (promotion.server_facts(opts.simple_url, m.project.name, version) if opts.simple_url
              else promotion.Server())
    expected = {"version": opts.expect_version or "", "tag": opts.expect_tag or "", "commit": opts.expect_commit or "",
                "run_id": opts.expect_run_id or ""}
    uploads = bool(pypi_files)
    return promotion.Evidence(
        manifest=release, records=[promotion.read_record(p) for p in opts.validation],
        pypi_records=[promotion.read_record(p) for p in opts.pypi_validation], pypi_files=pypi_files, accept=accept,
        limits=limits, expected=expected, server=server,
        upload_problem=promotion.upload_problem(env, trusted_publishing=opts.trusted_publishing) if uploads else "",
        requirement_problems=requirement_problems(m, pypi_files))


def show(console: Console, plan: promotion.Promotion) -> None:
    """What the release engineer reads: each acceptance, each file left out, and each refusal, once."""
    for target in plan.accepted:
        console.line(f"accepted: {target}")
    if plan.accepted:  # the reviewers approving the release see what ships unvalidated, and why
        console.job_summary("### promote-release: released without validation (accepted)\n\n"
                            + "".join(f"- {target}\n" for target in plan.accepted))
    for key in plan.left_out:
        console.line(f"left out: {key} (on the test channel, not in the manifest: not released)")
    for reason in plan.refusals:
        console.error(f"refused: {reason}")
    if plan.refusals:  # the job summary names each reason too, where the release engineer looks first
        console.job_summary("### promote-release refused (nothing written)\n\n"
                            + "".join(f"- {reason}\n" for reason in plan.refusals))


def policy(opts: Options, m: Matrix) -> tuple[promotion.PypiLimits, tuple[AcceptedNotRunnable, ...]]:
    """What the preflight holds the release to: each option given on the command line (or, through ci/promote.sh,
    a workflow variable), else the matrix's ``channels.promotion``. Globs given replace the matrix's entries."""
    opts = opts.with_matrix(m)
    limits = promotion.PypiLimits(file_mb=opts.file_limit_mb, total_gb=opts.total_limit_gb)
    if opts.origin("accept_not_runnable") != FLAG:
        return limits, m.channels.promotion.accept_not_runnable
    return limits, tuple(AcceptedNotRunnable(targets=glob, reason="given on the command line (--accept-not-runnable)")
                         for glob in opts.accept_not_runnable)


def write_record(path: Path | None, plan: promotion.Promotion) -> None:
    if path is not None:
        safe_output.write_text(path, json.dumps(redact.scrub(plan.to_json()), indent=2, sort_keys=True) + "\n")
