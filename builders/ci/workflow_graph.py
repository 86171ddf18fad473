"""The workflows read as jobs that move artifacts: for the rehearsal, what each job downloads and uploads.

Nothing here knows a job by name. A job is its ``needs``, ``if``, ``runs-on``, ``strategy.matrix``,
``timeout-minutes``, the local workflow it calls, its ``run:`` commands and its
``actions/download-artifact`` and ``actions/upload-artifact`` steps (``name:``, ``pattern:``, ``run-id``,
``retention-days``). Their ``${{ }}`` expressions are expanded per job of the matrix
(:func:`expand`): ``matrix.KEY`` and ``fromJSON(matrix.KEY)[N]`` from the entry, anything else a glob
``*`` (so an unknown name matches every artifact: the rehearsal errs on the side of more bytes).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from builders.ci.workflow_jobs import DOWNLOAD_ACTION, UPLOAD_ACTION, Workflow, action, given, local_calls, needs
from builders.ci.workflow_jobs import matrix_of as matrix_value
from builders.ci.workflow_jobs import steps as steps_of

EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
MATRIX_KEY = re.compile(r"matrix\.([A-Za-z_][A-Za-z0-9_-]*)")
FROM_JSON_INDEX = re.compile(r"fromJSON\(\s*matrix\.([A-Za-z_][A-Za-z0-9_-]*)\s*\)\[(\d+)\]")
FROM_OUTPUT = re.compile(r"fromJSON\(\s*needs\.[A-Za-z0-9_-]+\.outputs\.([A-Za-z0-9_-]+)\s*\)")
SESSION_SECONDS = re.compile(r"(\d+)\s*\}\}\s*$")


class Unset(Exception):
    """An expression names an element the matrix entry does not have (the step does not run for it)."""


@dataclass(frozen=True, kw_only=True)
class Transfer:
    """One artifact step: the name or pattern as written, and where it reads from or how long it keeps."""

    name: str
    pattern: bool = False
    other_run: bool = False  # a download with run-id: another run's artifact (the promotion's)
    retention_days: int | None = None  # an upload's retention-days (None: the repository's default)


@dataclass(frozen=True, kw_only=True)
class Job:
    """A job as the rehearsal reads it."""

    workflow: str
    name: str
    needs: tuple[str, ...]
    condition: Any
    runs_on: Any
    matrix: Any
    calls: str | None
    timeout_minutes: float | None
    commands: str
    actions: tuple[str, ...]
    downloads: tuple[Transfer, ...]
    uploads: tuple[Transfer, ...]
    session_seconds: int | None  # a bucket role session's length, where the job makes one


def _transfer(step: dict[str, Any]) -> Transfer:
    inputs = given(step)
    days = str(inputs.get("retention-days", ""))
    pattern = "pattern" in inputs
    return Transfer(name=str(inputs.get("pattern" if pattern else "name", "*")), pattern=pattern,
                    other_run="run-id" in inputs, retention_days=int(days) if days.isdigit() else None)


def _session_seconds(job: Mapping[str, Any]) -> int | None:
    for step in steps_of(dict(job)):
        if "bucket-credentials" in str(step.get("run", "")):
            env = step.get("env")
            env = env if isinstance(env, dict) else {}
            found = SESSION_SECONDS.search(str(env.get("BUCKET_SESSION_SECONDS", "")))
            return int(found.group(1)) if found else 3600
    return None


def read_job(wf: Workflow, name: str) -> Job:
    """One job of ``wf``."""
    job = wf.jobs[name]
    steps = steps_of(job)
    timeout = job.get("timeout-minutes")
    return Job(workflow=wf.name, name=name, needs=tuple(needs(job)), condition=job.get("if", True),
               runs_on=job.get("runs-on"), matrix=matrix_value(job), calls=local_calls(wf).get(name),
               timeout_minutes=float(timeout) if isinstance(timeout, (int, float)) else None,
               commands="\n".join(str(s.get("run", "")) for s in steps),
               actions=tuple(action(s) for s in steps),
               downloads=tuple(_transfer(s) for s in steps if action(s) == DOWNLOAD_ACTION),
               uploads=tuple(_transfer(s) for s in steps if action(s) == UPLOAD_ACTION),
               session_seconds=_session_seconds(job))


def load(path: Path) -> Workflow:
    """The workflow at ``path``, parsed with libyaml where PyYAML has it (the rehearsal reads three files in
    well under a second); the same mapping :meth:`Workflow.read` makes."""
    text = path.read_text(encoding="utf-8")
    data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    top = {str(k): v for k, v in data.items()} if isinstance(data, dict) else {}
    jobs = top.get("jobs")
    jobs = {str(k): v for k, v in jobs.items() if isinstance(v, dict)} if isinstance(jobs, dict) else {}
    return Workflow(name=path.name, text=text, jobs=jobs, top=top)


def read(path: Path) -> tuple[Job, ...]:
    """Every job of the workflow at ``path``, in file order."""
    wf = load(path)
    return tuple(read_job(wf, name) for name in wf.jobs)


def _one(expression: str, entry: Mapping[str, Any]) -> str:
    indexed = FROM_JSON_INDEX.fullmatch(expression)
    if indexed:
        items = json.loads(str(entry.get(indexed.group(1), "[]")))
        if int(indexed.group(2)) >= len(items):
            raise Unset(expression)
        return str(items[int(indexed.group(2))])
    key = MATRIX_KEY.fullmatch(expression)
    if key and key.group(1) in entry:
        return str(entry[key.group(1)])
    return "*"


def expand(text: str, entry: Mapping[str, Any]) -> str:
    """``text`` with each ``${{ }}`` replaced from the matrix entry (``*`` where it cannot be known).

    Raises :class:`Unset` when it indexes past the end of a list (that position's step does not run)."""
    return EXPRESSION.sub(lambda m: _one(m.group(1), entry), text)


def value(raw: Any, entry: Mapping[str, Any]) -> Any:
    """A whole-value field (``runs-on: ${{ matrix.runner }}``): the entry's value, list or string, as it is."""
    if isinstance(raw, str):
        whole = EXPRESSION.fullmatch(raw.strip())
        key = MATRIX_KEY.fullmatch(whole.group(1)) if whole else None
        if key and key.group(1) in entry:
            return entry[key.group(1)]
        return expand(raw, entry)
    return raw


def entries(raw: Any, lists: Mapping[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The jobs a ``strategy.matrix`` starts: a plan output's list, or a literal matrix expanded."""
    if raw is None:
        return [{}]
    if isinstance(raw, str):
        found = FROM_OUTPUT.search(raw)
        return list(lists.get(found.group(1), [{}])) if found else [{}]
    if isinstance(raw, dict):
        return _literal(raw)
    return [{}]


def _literal(raw: Mapping[str, Any]) -> list[dict[str, Any]]:
    axes = {k: v for k, v in raw.items() if k not in ("include", "exclude") and isinstance(v, list)}
    combos: list[dict[str, Any]] = [{}] if axes else []
    for key, values in axes.items():
        combos = [{**c, key: v} for c in combos for v in values]
    include = raw.get("include")
    extra = [dict(e) for e in include if isinstance(e, dict)] if isinstance(include, list) else []
    return combos + extra or [{}]
