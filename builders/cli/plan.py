"""``plan``: the expanded targets, with what this host can build and why not."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from builders import engines
from builders.base.console import Console, render_table
from builders.base.errors import RehearsalError, SelectionError
from builders.base.safe_output import write_whole
from builders.ci import disk, run_channel
from builders.ci import jobs as ci
from builders.ci.checks import refuse_release, tag_kind
from builders.cli import load
from builders.cli.arguments import Options
from builders.engines.images import engine_env
from builders.matrix.model import Matrix
from builders.matrix.release_channels import ChannelName
from builders.matrix.targets import Target, expand, selected
from builders.pipeline import platform_policy
from builders.pipeline.host import detect
from builders.report.estimate import compare, costs_from

HELP = "list the targets the matrix implies"
DESCRIPTION = ("Expand matrix.yaml into targets and show, for this host, which can be built "
                "and why the others cannot.")


def execute(opts: Options, console: Console) -> int:
    opts = from_event(opts, console)
    m = load.matrix(opts, channel=True)
    targets = selected(m, load.selection(opts))
    if opts.format == "github":
        emit(json.dumps(github(m, targets, opts, console), indent=None, sort_keys=True), opts.output, console)
        return 0
    if opts.estimate:
        console.out(estimate_table(m, targets, opts.results))
        return 0
    if opts.rehearse:
        return rehearse_plan(opts, m, targets, console)
    host = detect(m.pythons, engine_env(opts.env))
    unbuildable = engines.named(opts.engine).unbuildable
    reasons = {t.id: unbuildable(t, host) for t in targets}
    on_host = opts.engine == "local" or (opts.engine == "auto" and not host.container_engines)
    risks = {t.id: platform_policy.repair_risk(t, host) if on_host and reasons[t.id] is None else None for t in targets}
    if opts.format == "json":
        _, excluded = expand(m)
        records = [{**t.record(), "buildable_here": reasons[t.id] is None, "reason": reasons[t.id],
                    "repair_risk": risks[t.id]} for t in targets]
        out = {"matrix": str(opts.matrix), "host": host.platform, "engine": opts.engine, "count": len(records),
               "targets": records, "excluded": [{"id": e.id, "reason": e.reason, "where": e.where} for e in excluded]}
        emit(json.dumps(out, indent=2), opts.output, console)
        return 0
    rows = [(t.id, ",".join(t.channels), t.wheel_name, buildable(reasons[t.id], risks[t.id])) for t in targets]
    console.out(console_table(rows))
    here = sum(r is None for r in reasons.values())
    console.line(f"{len(targets)} targets, {here} buildable here ({host.platform}, engine {opts.engine})")
    return 0


def from_event(opts: Options, console: Console) -> Options:
    """``--event`` and the ref's facts: the channel as :func:`builders.ci.run_channel.decide` decides it, in place of
    ``--release-tag``/``--channel`` (which it refuses beside it: one place decides)."""
    if opts.event is None:
        return opts
    if opts.release_tag is not None or opts.channel is not None:
        raise SelectionError("--event decides the channel from the run's facts: drop --release-tag and --channel")
    decision = run_channel.decide(run_channel.Facts(event=opts.event, ref=opts.ref or "",
                                                    default_branch=opts.default_branch or ""))
    console.line(f"channel: {decision.planned.value} ({opts.event} of {opts.ref or '?'}: {decision.why})")
    values = dict(opts.values)
    if decision.planned is run_channel.Planned.TAG:
        values["release_tag"] = decision.tag
    elif decision.planned is run_channel.Planned.NIGHTLY:
        values["channel"] = ChannelName.NIGHTLY.value
    return dataclasses.replace(opts, values=values)


def buildable(reason: str | None, risk: str | None) -> str:
    """The "buildable here" cell: no and why, or yes and what the platform policy may do at repair."""
    if reason is not None:
        return f"no: {reason}"
    return f"yes; {risk}" if risk else "yes"


def console_table(rows: list[tuple[str, str, str, str]]) -> str:
    return render_table(("target", "channel", "wheel", "buildable here"), rows)


def emit(text: str, output: str | None, console: Console) -> None:
    """The machine-readable document, to stdout or whole to ``output`` (never half-written)."""
    if output is None:
        console.out(text)
        return
    dest = Path(output)
    dest.parent.mkdir(parents=True, exist_ok=True)
    write_whole(dest, (text + "\n").encode())  # /dev/stdout, /dev/null or a read FIFO is written into, never replaced


def served_labels(text: str | None) -> frozenset[str] | None:
    """``--gpu-runners``: None when not given (every smoke runner taken as declared)."""
    return None if text is None else frozenset(text.replace(",", " ").split())


def github(m: Matrix, targets: Sequence[Target], opts: Options, console: Console) -> dict[str, Any]:
    """The release workflow's plan; with ``--release-tag``, only for a complete release of that version."""
    if opts.release_tag is not None and opts.channel == "nightly":
        raise SelectionError("--release-tag with --channel nightly: a nightly is never a release or a candidate")
    if opts.release_tag is not None:
        refuse_release(m, opts.release_tag, targets)
    served = served_labels(opts.gpu_runners)
    plan = ci.github_plan(targets, served=served)
    kind = tag_kind(m, opts.release_tag) if opts.release_tag is not None else None
    plan["release"] = kind == "release"  # a candidate builds and checks all of it, and publishes nothing here
    plan["candidate"] = kind == "candidate"
    plan["nightly"] = opts.channel == "nightly"  # the nightly's wheels: its dev version, published to its channel
    plan["nightly_date"] = str(opts.commit_date) if plan["nightly"] and opts.commit_date else ""
    plan["version"] = str(m.project.version)
    plan["disk"] = disk.estimate(m, targets)
    for labels in ci.unserved(targets, served) if served is not None else ():
        console.warning(f"no self-hosted runner labelled {labels} is declared (--gpu-runners): its GPU smoke jobs run "
                        "on their build runners and fail at once with exit 23, blocking the release")
    if opts.estimate:
        plan["estimate"] = compare(targets, costs_from(opts.results, targets), shards=len(plan["shards"]))
    return plan


def estimate_table(m: Matrix, targets: Sequence[Target], results: Sequence[Path]) -> str:
    """Both layouts side by side, and the ratio of their runner-minutes."""
    plan = ci.github_plan(targets)
    found = compare(targets, costs_from(results, targets), shards=len(plan["shards"]))
    keys = ("jobs", "build_jobs", "core_builds", "runner_minutes", "critical_path_minutes")
    rows = [(key.replace("_", " "), *(str(found[side][key]) for side in ("before", "after", "warm"))) for key in keys]
    rows.append(("runner-minutes, after / before", "", str(found["runner_minutes_ratio"]), ""))
    rows.append(("runner-minutes, warm / cold", "", "", str(found["warm_runner_minutes_ratio"])))
    source = ", ".join(map(str, results)) if results else "default stage times (builders.report.estimate.Costs)"
    rates = ", ".join(f"{k} {v:.0%}" for k, v in found["hit_rates"].items()) or "none measured (warm = cold)"
    return render_table(("release run of " + m.project.name, "one build job per target", "per (variant, platform)",
                         "same, warm compile cache"), rows) + f"\nstage times: {source}\ncompile-cache hit rates: {rates}"


def rehearse_plan(opts: Options, m: Matrix, targets: Sequence[Target], console: Console) -> int:
    """``--rehearse``: the table (or JSON), ``--compare``'s delta; exit 47 naming every limit crossed."""
    # Imported here: the rehearsal's modules cost every other `plan` start (the workflow's plan job) 0.25 s.
    from builders.cli import rehearse
    from builders.report import rehearsal_report

    done = rehearse.run(opts, m, targets, opts.rehearse)
    if opts.format == "json":
        found = rehearsal_report.record(done.rehearsal, done.layouts, done.findings)
        emit(json.dumps(found, indent=2), opts.output, console)
    else:
        console.out(rehearsal_report.text(done.rehearsal, done.layouts, done.findings))
    if opts.compare is not None:
        console.out(f"what {m.path} adds against {opts.compare}:")
        console.out(rehearsal_report.delta(rehearse.other(opts, opts.rehearse).rehearsal, done.rehearsal))
    if done.findings:
        raise RehearsalError(f"at {done.rehearsal.profile.name}'s scale the release crosses {len(done.findings)} "
                             "limit(s), each named above with its job and the fix")
    return 0
