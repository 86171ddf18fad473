"""``workflow --check``: fail when the release workflow no longer matches the plan."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from builders.base import untrusted
from builders.base.console import Console
from builders.base.errors import InputError, Problem, WorkflowDrift
from builders.ci import linters, workflow_policy
from builders.ci.workflow import checkout_root, drift
from builders.cli import load
from builders.cli.arguments import Options
from builders.report.workflow_scale import scale_problems

MAX_BYTES = untrusted.MIB


HELP = "check the release workflow against the plan"
DESCRIPTION = ("Check that .github/workflows/release.yml (and the local workflows it calls) still "
               "consumes what the plan emits and keeps the release's gates: a timeout on every "
               "job, smoke jobs that do not wait for every build to succeed, build provenance "
               "before anything is published, and per job its if (the release gate as a term, "
               "no always()), needs, least permissions, environment, per-tag concurrency and "
               "commit-pinned actions; apply the release policy (.github/workflow-policy.yml: per file its "
               "triggers, per job its kind and what the kind may and must do) to every workflow file; and "
               "run zizmor (offline) and actionlint over every workflow and local "
               "action of the repository, each finding drift unless .github/workflow-lint.yml lets it through "
               "with a written reason (exit 17 on drift, or when a file is not a "
               "workflow). The workflow is not generated: adding a Python or a variant to "
               "matrix.yaml needs no workflow edit.")


def execute(opts: Options, console: Console) -> int:
    m = load.matrix(opts)
    check_shape(opts.workflow)
    for path in sorted(opts.workflow.parent.glob("*.y*ml")):  # every file beside it: the policy reads them all
        check_shape(path)
    problems = drift(m, opts.workflow) + scale_problems(m, opts.workflow)
    root = checkout_root(opts.workflow)
    files = linters.workflow_files(root)
    policy = linters.load_policy(root / linters.CONFIG)
    problems += [str(f) for f in linters.lint(files, root, opts.env, policy)]
    problems += linters.unused_ignores(policy, files, root)
    if problems:
        raise WorkflowDrift([Problem(message=p) for p in problems])
    console.line(f"{opts.workflow}: in step with {opts.matrix}; the release policy ({workflow_policy.POLICY}) "
                 f"kept in every file; zizmor (from {policy.min_severity}) and actionlint "
                 f"found nothing in the {len(files)} workflow file(s) ({len(policy.ignores)} finding(s) let through, "
                 f"each with its reason in {linters.CONFIG})")
    return 0


def check_shape(path: Path) -> None:
    """Refuse a file ``drift`` cannot read as a workflow: not UTF-8 YAML, or jobs and steps of the wrong kind."""
    try:
        text = untrusted.read_text(path, what="workflow", limit=MAX_BYTES)
    except InputError as exc:
        raise WorkflowDrift(exc.problems) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}: " if mark else f"{path}: "
        raise WorkflowDrift([Problem(message=f"{where}not valid YAML: {getattr(exc, 'problem', None) or exc}")]) from None
    wrong = list(_shape_problems(data))
    if wrong:
        raise WorkflowDrift([Problem(message=f"{path}: {w}") for w in wrong])


def _shape_problems(data: Any) -> Iterator[str]:
    if not isinstance(data, dict):
        yield f"not a workflow: the top level is {type(data).__name__}, not a mapping"
        return
    jobs = data.get("jobs", {})
    if not isinstance(jobs, dict):
        yield "jobs: not a mapping"
        return
    for name, job in jobs.items():
        if not isinstance(job, dict):
            yield f"jobs.{name}: not a mapping"
            continue
        steps = job.get("steps", [])
        if not isinstance(steps, list) or not all(isinstance(s, dict) for s in steps):
            yield f"jobs.{name}.steps: not a list of mappings"
        elif any(not isinstance(s.get("run", ""), str) for s in steps):
            yield f"jobs.{name}.steps: a run: that is not a string"
        strategy = job.get("strategy", {})
        if not isinstance(strategy, dict):
            yield f"jobs.{name}.strategy: not a mapping"
