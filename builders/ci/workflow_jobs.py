"""The release workflow's files read as jobs and steps, and what each step does.

Shared by the contract checks (:mod:`builders.ci.workflow`) and the structural rules
(:mod:`builders.ci.workflow_rules`); nothing here judges a workflow.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

UPLOAD_ACTION = "actions/upload-artifact"
DOWNLOAD_ACTION = "actions/download-artifact"
CHECKOUT_ACTION = "actions/checkout"
ATTEST_ACTIONS = ("actions/attest", "actions/attest-build-provenance")
ATTEST_SUBJECTS = ("subject-path", "subject-checksums")
PYPI_ACTIONS = ("pypa/gh-action-pypi-publish",)
PUBLISH_COMMANDS = ("ci/deploy-index.sh", "ci/github-release.sh", "promote-release", "ci/promote.sh index")
# What publishes a release's per-variant indexes: the Pages deploy, or the promotion to the bucket's
# release channel. PyPI comes after it (a file name is PyPI's for good; an index can be reverted).
RELEASE_INDEX_COMMANDS = ("ci/deploy-index.sh", "promote-release", "ci/promote.sh index")
LOCAL_PREFIXES = ("./",)


@dataclass(frozen=True, kw_only=True)
class Workflow:
    """One workflow file, read as a mapping (a malformed part reads as empty)."""

    name: str
    text: str
    jobs: dict[str, dict[str, Any]]
    top: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def read(cls, path: Path) -> Workflow:
        text = path.read_text(encoding="utf-8")
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # libyaml: 10x PyYAML's own
        top = {str(k): v for k, v in data.items()} if isinstance(data, dict) else {}
        jobs = top.get("jobs")
        jobs = {str(k): v for k, v in jobs.items() if isinstance(v, dict)} if isinstance(jobs, dict) else {}
        return cls(name=path.name, text=text, jobs=jobs, top=top)


def local_calls(wf: Workflow) -> dict[str, str]:
    """``{job: file name}`` for the jobs that call a reusable workflow of this repository."""
    return {name: PurePosixPath(uses[2:]).name for name, job in wf.jobs.items()
            if isinstance(uses := job.get("uses"), str) and uses.startswith(LOCAL_PREFIXES)}


def steps(job: dict[str, Any]) -> list[dict[str, Any]]:
    found = job.get("steps", [])
    return [s for s in found if isinstance(s, dict)] if isinstance(found, list) else []


def first(job: dict[str, Any], test: Callable[[dict[str, Any]], bool]) -> int | None:
    return next((i for i, step in enumerate(steps(job)) if test(step)), None)


def action(step: dict[str, Any]) -> str:
    return str(step.get("uses", "")).split("@", 1)[0]


def given(step: dict[str, Any]) -> dict[str, Any]:
    """The step's ``with:`` inputs (empty when it has none)."""
    inputs = step.get("with")
    return inputs if isinstance(inputs, dict) else {}


def publishes(step: dict[str, Any]) -> bool:
    """The step makes wheels public: PyPI, the per-variant indexes, a GitHub Release."""
    return action(step) in PYPI_ACTIONS or any(c in str(step.get("run", "")) for c in PUBLISH_COMMANDS)


def uploads_to_pypi(step: dict[str, Any]) -> bool:
    return action(step) in PYPI_ACTIONS


def publishes_release_index(step: dict[str, Any]) -> bool:
    """The step publishes the release channel's indexes (``promote-release`` or ``ci/promote.sh index``, which
    runs it; ``ci/deploy-index.sh``)."""
    return any(c in str(step.get("run", "")) for c in RELEASE_INDEX_COMMANDS)


def attests(step: dict[str, Any]) -> bool:
    """An attestation step that always runs (a conditional one proves nothing) and names its subjects."""
    inputs = step.get("with")
    if not isinstance(inputs, dict) or "if" in step:
        return False
    return action(step) in ATTEST_ACTIONS and any(inputs.get(k) for k in ATTEST_SUBJECTS)


def needs(job: dict[str, Any]) -> list[str]:
    found = job.get("needs", [])
    return [found] if isinstance(found, str) else [str(n) for n in found] if isinstance(found, list) else []


def upstream(wf: Workflow, name: str) -> set[str]:
    """Every job ``name`` needs, directly or through the jobs it needs."""
    seen: set[str] = set()
    todo = needs(wf.jobs.get(name, {}))
    while todo:
        job = todo.pop()
        if job not in seen:
            seen.add(job)
            todo.extend(needs(wf.jobs.get(job, {})))
    return seen


def matrix_of(job: dict[str, Any]) -> Any:
    strategy = job.get("strategy")
    return strategy.get("matrix") if isinstance(strategy, dict) else None


def runs(job: dict[str, Any]) -> str:
    return "\n".join(str(step.get("run", "")) for step in steps(job))
