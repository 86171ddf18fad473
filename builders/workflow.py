"""Drift check between the committed release workflow and what the matrix implies.

Nothing in the workflow is generated: it takes its job matrix from the plan at run time.
What can drift is the contract between the two, so that is what is checked: the plan job
runs the plan command, the build and smoke jobs take their matrix from it and use only keys
the plan emits, and each build runs the local one-target command.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from .ci import github_matrix
from .model import Matrix
from .targets import expand

PLAN_COMMAND = "nox -s plan -- --format github"
BUILD_COMMAND = 'nox -s build -- --target "$TARGET"'
FROM_PLAN = "${{ fromJSON(needs.plan.outputs.matrix) }}"


def drift(matrix: Matrix, workflow: Path) -> list[str]:
    """Every way ``workflow`` no longer matches the plan of ``matrix`` (empty: in step)."""
    text = workflow.read_text(encoding="utf-8")
    jobs: dict[str, Any] = (yaml.safe_load(text) or {}).get("jobs", {})
    return list(_problems(matrix, text, jobs, workflow.name))


def _problems(matrix: Matrix, text: str, jobs: dict[str, Any], name: str) -> Iterator[str]:
    if PLAN_COMMAND not in _runs(jobs.get("plan", {})):
        yield f"{name}: the plan job does not run `{PLAN_COMMAND}`"
    for job in ("build", "smoke"):
        if jobs.get(job, {}).get("strategy", {}).get("matrix") != FROM_PLAN:
            yield f"{name}: job {job!r} does not take its matrix from the plan ({FROM_PLAN})"
    if BUILD_COMMAND not in _runs(jobs.get("build", {})):
        yield f"{name}: the build job does not run `{BUILD_COMMAND}`"
    targets, _ = expand(matrix)
    emitted = set().union(*(entry.keys() for entry in github_matrix(targets[:1])["include"])) if targets else set()
    expressions = " ".join(re.findall(r"\$\{\{(.*?)\}\}", text))
    for key in sorted(set(re.findall(r"\bmatrix\.([A-Za-z_][A-Za-z0-9_-]*)", expressions)) - emitted):
        yield f"{name}: uses matrix.{key}, which the plan does not emit (it emits {', '.join(sorted(emitted))})"


def _runs(job: dict[str, Any]) -> str:
    return "\n".join(str(step.get("run", "")) for step in job.get("steps", []))
