"""A rehearsal as a release engineer reads it: per job, per run, per month; layouts; what a change adds.

Tables only (:func:`builders.base.console.render_table`); the JSON form is :func:`record`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from builders.base.console import render_table
from builders.report.layouts import Layout
from builders.report.limits import Crossed
from builders.report.rehearsal import RUNS, Instance, Rehearsal, Totals, release_totals

JOB_COLUMNS = ("run", "job", "runner", "count", "min cold", "min warm", "longest", "ends h", "disk GB", "down GB",
               "up GB", "bucket GB", "PyPI GB", "$ cold", "$ warm")
TOTAL_COLUMNS = ("run", "runner-min cold", "runner-min warm", "wall-clock h", "$ cold", "$ warm", "down GB", "up GB",
                 "bucket GB", "PyPI GB", "artifact GB-days")


def _gb(mb: float) -> str:
    return f"{mb / 1000:,.1f}"


def job_rows(r: Rehearsal) -> list[tuple[str, ...]]:
    """One row per run, job and runner: its count and sums (the disk and longest are the worst instance's), and
    when the job ends on the run's critical path (hours from the start)."""
    groups: dict[tuple[str, str, str], list[Instance]] = {}
    for i in r.instances:
        groups.setdefault((i.run, f"{i.job.workflow}: {i.job.name}", i.runner.name), []).append(i)
    return [(run, job, runner, str(len(g)), f"{sum(i.minutes_cold for i in g):,.0f}",
             f"{sum(i.minutes_warm for i in g):,.0f}", f"{max(i.minutes_cold for i in g):,.0f}",
             f"{r.ends.get(run, {}).get(job, 0.0) / 60:,.1f}",
             _gb(max(i.disk_mb for i in g)), _gb(sum(i.down_mb for i in g)), _gb(sum(i.up_mb for i in g)),
             _gb(sum(i.bucket_mb + i.copied_mb for i in g)), _gb(sum(i.pypi_mb for i in g)),
             f"{sum(i.dollars_cold for i in g):,.2f}", f"{sum(i.dollars_warm for i in g):,.2f}")
            for (run, job, runner), g in groups.items()]


def _total_row(name: str, t: Totals) -> tuple[str, ...]:
    return (name, f"{t.minutes_cold:,.0f}", f"{t.minutes_warm:,.0f}", f"{t.wall_minutes / 60:,.1f}",
            f"{t.dollars_cold:,.2f}", f"{t.dollars_warm:,.2f}", f"{t.down_gb:,.1f}", f"{t.up_gb:,.1f}",
            f"{t.bucket_gb:,.1f}", f"{t.pypi_gb:,.1f}", f"{t.artifact_gb_days:,.0f}")


def totals_table(r: Rehearsal) -> str:
    rows = [_total_row(name, t) for name, t in r.totals.items()]
    rows.append(_total_row("release (candidate + final tag + promote)", release_totals(r)))
    return render_table(TOTAL_COLUMNS, rows)


def month_lines(r: Rehearsal) -> list[str]:
    m = r.month()
    return [f"per month at the nightly's schedule ({m['runs']:.0f} runs): {m['minutes_cold']:,.0f} runner-minutes, "
            f"${m['dollars_cold']:,.2f} cold (${m['dollars_warm']:,.2f} warm); artifact storage "
            f"{m['artifact_gb_days']:,.0f} GB-days (${m['artifact_dollars']:,.2f}); bucket {m['bucket_gb']:,.1f} GB "
            f"kept ({r.nightly_keep} nightlies, ${m['bucket_dollars']:,.2f}); egress at {r.downloads:,} wheel downloads "
            f"{m['egress_gb']:,.0f} GB (${m['egress_dollars']:,.2f})"]


def layouts_table(layouts: Sequence[Layout]) -> str:
    rows = [(("* " if x.used else "") + x.name, str(x.jobs), f"{x.minutes:,.0f}", f"{x.wall_minutes / 60:,.1f}",
             f"{x.dollars:,.2f}") for x in layouts]
    return render_table(("build layout (* the workflow's)", "build jobs", "runner-min cold", "wall-clock h", "$ cold"),
                        rows)


def text(r: Rehearsal, layouts: Sequence[Layout], findings: Sequence[Crossed]) -> str:
    """The whole rehearsal: jobs, totals, the month, layouts, and every limit crossed."""
    head = (f"rehearsal at {r.profile.name} ({r.profile.source}; read {r.profile.date}); prices of {r.prices.date} "
            f"({r.prices.source})")
    unpriced = [f"unpriced self-hosted runners (no runner_costs in the matrix): {', '.join(r.unpriced)}"] if r.unpriced else []
    limits = [f"limits crossed: {len(findings)}", *(f"  {f}" for f in findings)] if findings else ["limits crossed: none"]
    return "\n".join([head, render_table(JOB_COLUMNS, job_rows(r)), totals_table(r), *month_lines(r),
                      *unpriced, layouts_table(layouts), *limits])


def record(r: Rehearsal, layouts: Sequence[Layout], findings: Sequence[Crossed]) -> dict[str, Any]:
    """The rehearsal as JSON: totals per run, the release, the month, layouts, findings."""
    return {"profile": {"name": r.profile.name, "source": r.profile.source, "date": r.profile.date},
            "prices": {"date": r.prices.date, "source": r.prices.source},
            "runs": {k: asdict(t) for k, t in r.totals.items()}, "release": asdict(release_totals(r)),
            "month": r.month(), "layouts": [asdict(x) for x in layouts],
            "findings": [asdict(f) for f in findings]}


def delta(before: Rehearsal, after: Rehearsal) -> str:
    """What a change of the matrix adds per nightly, per release and per month: minutes and dollars."""
    pairs = [(k, before.totals.get(k), after.totals.get(k)) for k in (r.name for r in RUNS)]
    rows = [_delta_row(k, b, a) for k, b, a in pairs if b is not None and a is not None]
    rows.append(_delta_row("release", release_totals(before), release_totals(after)))
    mb, ma = before.month(), after.month()
    rows.append(("month of nightlies", f"{ma['minutes_cold'] - mb['minutes_cold']:+,.0f}", "", "",
                 f"{ma['dollars_cold'] - mb['dollars_cold']:+,.2f}", ""))
    return render_table(("run", "runner-min cold", "runner-min warm", "wall-clock h", "$ cold", "$ warm"), rows)


def _delta_row(name: str, b: Totals, a: Totals) -> tuple[str, ...]:
    return (name, f"{a.minutes_cold - b.minutes_cold:+,.0f}", f"{a.minutes_warm - b.minutes_warm:+,.0f}",
            f"{(a.wall_minutes - b.wall_minutes) / 60:+,.1f}", f"{a.dollars_cold - b.dollars_cold:+,.2f}",
            f"{a.dollars_warm - b.dollars_warm:+,.2f}")


def cost_markdown(r: Rehearsal, earlier: tuple[str, Rehearsal] | None, findings: Sequence[Crossed] = ()) -> str:
    """``report --cost``: what a nightly, a candidate and a release cost and take, the month of nightlies, the
    limits it crosses, and what the matrix's last change added (``earlier``: its name and its rehearsal)."""
    rows = [("a nightly", r.totals["nightly"]), ("a candidate", r.totals["candidate"]),
            ("a release (candidate, final tag, promotion)", release_totals(r))] if "nightly" in r.totals else []
    lines = [f"# What a release costs at {r.profile.name}'s scale", "",
             f"Profile: {r.profile.source} (read {r.profile.date}); prices of {r.prices.date}: {r.prices.source}.", "",
             "| run | runner-minutes (cold / warm) | wall-clock h | $ (cold / warm) |", "|---|---|---|---|"]
    lines += [f"| {name} | {t.minutes_cold:,.0f} / {t.minutes_warm:,.0f} | {t.wall_minutes / 60:,.1f} | "
              f"{t.dollars_cold:,.2f} / {t.dollars_warm:,.2f} |" for name, t in rows]
    lines += ["", *month_lines(r), ""]
    lines += [f"## Limits crossed: {len(findings)}", "", *(f"- {f}" for f in findings), ""] if findings else \
        ["Limits crossed: none.", ""]
    if earlier is not None:
        lines += [f"## What the matrix adds against {earlier[0]}", "", "```", delta(earlier[1], r), "```"]
    else:
        lines += ["No earlier matrix to compare with (give --compare MATRIX, or run in the matrix's repository)."]
    return "\n".join(lines) + "\n"
