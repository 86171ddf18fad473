"""The rehearsal's inputs read from the options (``plan --rehearse``, ``report --cost``): the edge with effects.

The profile (a file, a shipped name, or ``declared``), a run's results and a published index's sizes
over it, the price table with the matrix's own runners, and the workflows beside the matrix.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from builders.base.process import ProcessError
from builders.base.process import run as run_process
from builders.ci.workflow_graph import load
from builders.cli.arguments import Options
from builders.families import loader as matrix_mod
from builders.index.audit import read_project
from builders.index.remote import Client
from builders.matrix.model import Matrix
from builders.matrix.release_channels import ChannelName
from builders.matrix.targets import Target, expand
from builders.pipeline import results as results_mod
from builders.report import layouts, limits, prices, rehearsal, scale_profile

DECLARED = "declared"
RELEASE_WORKFLOW = Path(".github/workflows/release.yml")


@dataclass(frozen=True, kw_only=True)
class Rehearsed:
    """A rehearsal with its layouts and findings."""

    rehearsal: rehearsal.Rehearsal
    layouts: list[layouts.Layout]
    findings: list[limits.Crossed]


def profile_for(opts: Options, m: Matrix, targets: Sequence[Target], name: str) -> scale_profile.Profile:
    """``name``'s profile, with ``--results`` and ``--index-sizes`` (plan only) laid over it."""
    found = scale_profile.from_matrix(m) if name == DECLARED else scale_profile.load(name)
    for path in getattr(opts, "results", ()) if opts.command == "plan" else ():
        found = scale_profile.from_results(results_mod.read(path).values(), targets, found, str(path))
    url = getattr(opts, "index_sizes", None) if opts.command == "plan" else None
    if url:
        files = read_project(Client(), url, m.project.name) or []
        sizes = {f.filename: f.size for f in files if f.size is not None and f.filename.endswith(".whl")}
        found = scale_profile.from_index(sizes, targets, found, url)
    return found


def workflow_of(matrix_path: Path) -> Path:
    """The release workflow beside the matrix (the repository's)."""
    return matrix_path.resolve().parent / RELEASE_WORKFLOW


def nightly_keep(m: Matrix) -> int:
    """The nightlies the bucket keeps per variant (every one of a month where the matrix keeps all)."""
    found = next((c.keep for c in m.channels.lifecycle if c.name is ChannelName.NIGHTLY), None)
    return found if found is not None else 31


def nightlies_per_month(workflow: Path) -> float:
    """Runs a month of the release workflow's ``schedule`` (:func:`builders.report.rehearsal.per_month`)."""
    return rehearsal.per_month(load(workflow).top) if workflow.is_file() else 0.0


def run(opts: Options, m: Matrix, targets: Sequence[Target], name: str) -> Rehearsed:
    """The rehearsal of ``targets`` at ``name``'s scale, its layouts and the limits it crosses."""
    profile = profile_for(opts, m, targets, name)
    table = prices.shipped(m.runner_costs)
    r = rehearsal.rehearse(targets, workflow_of(opts.matrix), profile, table, downloads=opts.downloads,
                           nightly_keep=nightly_keep(m), nightlies_per_month=nightlies_per_month(workflow_of(opts.matrix)))
    held = opts.pypi_held if opts.pypi_held is not None else profile.pypi_held_gb
    found = limits.check(r, m.channels.promotion, held_gb=held,
                         limits=limits.ScaleLimits(promotion_window_days=opts.promotion_window))
    return Rehearsed(rehearsal=r, layouts=layouts.compare(targets, profile, table), findings=found)


def other(opts: Options, name: str) -> Rehearsed:
    """``--compare MATRIX``'s rehearsal at the same scale (every target of that matrix)."""
    m = matrix_mod.load(opts.compare, builds=False)
    return run(opts, m, expand(m)[0], name)


def before_last_change(opts: Options, name: str) -> tuple[str, Rehearsed] | None:
    """The matrix as it was before the last commit that changed it (git), rehearsed; None outside a
    repository or where the matrix has no earlier version."""
    path = opts.matrix.resolve()
    env = dict(opts.env)
    try:
        last = run_process(["git", "log", "-1", "--format=%h", "--", path.name], env=env, cwd=path.parent,
                           separate_stderr=True, timeout=60).stdout.strip()
        text = run_process(["git", "show", f"{last}~1:./{path.name}"], env=env, cwd=path.parent,
                           separate_stderr=True, timeout=60).stdout if last else ""
    except (ProcessError, OSError):
        return None
    if not text:
        return None
    m = matrix_mod.loads(text, path)
    return f"{path.name} before {last}", run(opts, m, expand(m)[0], name)
