"""``promote-release``: the validated candidate's bytes to the release channel, then its PyPI wheels, never rebuilt."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from builders.base import redact, safe_output
from builders.base.console import Console
from builders.base.errors import SelectionError
from builders.channels import manifest, promoting, promotion, provenance, publishing
from builders.channels.ledger import ChannelState, Ledger, open_ledger
from builders.channels.objectstore import Bucket, open_bucket
from builders.cli import load
from builders.cli.arguments import FLAG, Options
from builders.index.pages import find_wheels
from builders.matrix.model import Matrix
from builders.matrix.promotion_policy import AcceptedNotRunnable
from builders.matrix.release_channels import ChannelName
from builders.matrix.targets import select
from builders.wheel.pypi_form import requirement_problems

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
               "holds, are copied server-side to the release channel and their sha256 checked, the promotion "
               "appended to the release ledger (the commit point: before it no page changes), the pages rendered "
               "from the ledger and each link checked, the PyPI wheels the package server lacks uploaded with twine "
               "and the server polled until it serves each (exit 21 otherwise), and the promotion recorded in the "
               "bucket (publish-records/release/). A run cut short finishes when run again; a finished one says "
               "already done. A refusal (exit 43) writes nothing.")


def execute(opts: Options, console: Console) -> int:
    m = load.matrix(opts)
    m.declared_channel("test")
    targets = select(m, load.selection(opts))
    pypi_files = find_wheels(opts.pypi_wheels) if opts.pypi_wheels else []
    if pypi_files and not (opts.repository_url and opts.simple_url):
        raise SelectionError("--pypi-wheels needs --repository-url and --simple-url (the package server)")
    env = dict(opts.env)
    bucket = open_bucket(opts.bucket, env)
    release = manifest.load(opts.manifest)
    found = promotion.plan(bucket, m, targets, evidence(opts, m, release, pypi_files, env))
    plan = promoting.weigh(found, release, [t.id for t in targets],
                           [promoting.read_record(p) for p in opts.validation],
                           [promoting.read_record(p) for p in opts.pypi_validation], policy(opts, m)[1])
    write_record(opts.record, plan)
    show(console, plan)
    promotion.preflight(plan)
    console.line(f"preflight passed: {to_copy(plan)}, {len(plan.unchanged)} already released, "
                 f"{len(plan.pypi)} PyPI file(s)")
    attested = pypi_attestations(opts.attestations, plan) if plan.pypi else {}
    if opts.dry_run:
        return 0
    ledger = open_ledger(bucket, ChannelName.RELEASE.value, env)
    facts = promoting.gather(bucket, ledger, plan, m.channels.channel(ChannelName.RELEASE),
                             labels=[v.label for v in m.variants],
                             validations=[p.read_bytes() for p in [*opts.validation, *opts.pypi_validation]])
    planned = promoting.plan(facts, at=publishing.now(), writer=ledger.writer)
    if planned.done:
        console.line(f"{bucket.url}: already done: {plan.version} is released from this manifest (ledger entry "
                     f"{_entry_id(facts.state, plan)}), its pages and record are written and every PyPI file is on "
                     "the package server with its sha256; nothing written")
        return 0
    apply(opts, m, bucket, ledger, facts, planned, console, attested)
    return 0


def to_copy(plan: promotion.Promotion) -> str:
    """What the copies are: each wheel, its ``.metadata`` and its provenance where the test page links one (the
    preflight's copies hold the first two; the provenance is copied beside its wheel)."""
    wheels = {c.dest for c in plan.copies if not c.dest.endswith(".metadata")}
    provenance = sum(1 for r in plan.release if r.provenance and r.dest in wheels)
    metadata = len(plan.copies) - len(wheels)
    return (f"{len(plan.copies) + provenance} file(s) to copy ({len(wheels)} wheel(s), {metadata} .metadata, "
            f"{provenance} provenance)")


def _entry_id(state: ChannelState, plan: promotion.Promotion) -> str:
    entry = promoting.committed_entry(state, plan)
    return entry.id if entry else "?"


def apply(opts: Options, m: Matrix, bucket: Bucket, ledger: Ledger, facts: promoting.PromoteFacts,
          planned: promoting.PromotePlan, console: Console, attested: dict[str, dict[str, Any]]) -> None:
    """The copies, the ledger entry (the commit point), the pages and their links, the PyPI files (each with its
    ``--attestations`` attestation, if given), the record (:mod:`builders.channels.promoting`); says what a rerun
    finished."""
    plan = facts.promotion
    promoting.copy(bucket, planned)
    entry, state = promoting.commit(ledger, facts, at=planned.entry.at if planned.entry else publishing.now())
    ours = entry or promoting.committed_entry(state, plan)
    assert ours is not None  # the ledger holds the promotion once commit returns
    written = promoting.render_and_check(bucket, ledger, facts, state, opts.site_url)
    console.line(f"{bucket.url}: {len(planned.copies)} file(s) copied and verified, ledger entry {ours.id}"
                 f"{'' if entry else ' (held already)'}, {len(written)} page(s) written, every link checked")
    if plan.pypi_done:
        console.line(f"{opts.simple_url}: {len(plan.pypi_done)} of {len(plan.pypi)} PyPI file(s) uploaded already with "
                     "the manifest's sha256 (an upload cut short): the rest is uploaded")
    with tempfile.TemporaryDirectory(prefix="builders-attestations-") as tmp:
        promotion.upload_pypi(planned.pypi, opts.repository_url, dict(opts.env), write_attestations(attested, Path(tmp)))
    if plan.pypi:
        promotion.audit_pypi(plan, opts.simple_url, m.project.name, timeout=opts.audit_timeout)
        console.line(f"{opts.simple_url}: serves the {len(plan.pypi)} PyPI file(s), each with its sha256")
    key = publishing.record_key(ChannelName.RELEASE.value, ours)
    if planned.record:
        promoting.store_record(bucket, promoting.record_of(plan, state, ours), ours)
    console.line(f"{bucket.url}: the promotion's record: {key} (rollback --promotion {ours.id}, or KEY)")
    finished = finished_parts(facts, planned)
    if finished:
        console.line(f"finished a promotion cut short: {finished}")


def finished_parts(facts: promoting.PromoteFacts, planned: promoting.PromotePlan) -> str:
    """What this run did of a promotion an earlier run began (``""``: none was begun)."""
    plan = facts.promotion
    begun = (planned.entry is None or plan.pypi_done
             or any(facts.stored.get(c.dest) == c.sha256 for c in promoting.copies_of(plan, facts.provenance)))
    if not begun:
        return ""
    parts = [f"{len(planned.copies)} copy(ies)" if planned.copies else "",
             "the ledger entry" if planned.entry else "", f"{len(planned.writes)} page(s)" if planned.writes else "",
             f"{len(planned.pypi)} PyPI file(s)" if planned.pypi else "", "the record" if planned.record else ""]
    return ", ".join(p for p in parts if p)


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


def evidence(opts: Options, m: Matrix, release: manifest.Manifest, pypi_files: list[Path],
             env: dict[str, str]) -> promotion.Evidence:
    """Everything the preflight weighs besides the bucket and the validation records (reads only)."""
    limits, accept = policy(opts, m)
    version = str(m.project.version.public)
    server = (promotion.server_facts(opts.simple_url, m.project.name, version) if opts.simple_url
              else promotion.Server())
    expected = {"version": opts.expect_version or "", "tag": opts.expect_tag or "", "commit": opts.expect_commit or "",
                "run_id": opts.expect_run_id or ""}
    uploads = bool(pypi_files)
    return promotion.Evidence(
        manifest=release, pypi_files=pypi_files, accept=accept,
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
    """``--record``: the preflight's verdict as a promotion record (no ledger entry yet: rollback finds the promotion
    by its manifest and version)."""
    if path is not None:
        safe_output.write_text(path, redact.redact(promoting.record_of_plan(plan).to_json().decode()))
