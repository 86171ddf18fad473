"""Drift check between the committed release workflow and what the matrix implies.

Nothing in the workflow is generated: it takes its job matrices from the plan at run time.
What can drift is the contract between the two, and the release's gates, so that is what is
checked, in the release workflow and the local reusable workflows it calls:

- the plan job runs the plan command, with ``--release-tag`` (the only way a run becomes a
  release); a job runs the shard workflow once per shard of the plan; there, the build jobs
  take the shard's build matrix (one per variant and platform) and run the local build
  command with ``--target``, the smoke jobs take the shard's smoke matrix, and every matrix
  key used is one the plan emits;
- every job that publishes (or needs a job that does) runs only when the plan says the run is
  a release (``needs.plan.outputs.release == 'true'``);
- every artifact upload overwrites (a rerun of a failed job repeats its names, and
  upload-artifact refuses an existing name otherwise), and the smoke job's download of its
  wheel is not allowed to fail quietly;
- the smoke jobs run the smoke test with ``--require-device``, so a GPU job fails on a runner
  that shows no device of its accelerator (builders decides from the matrix's smoke runners);
- every job that runs steps has ``timeout-minutes``;
- smoke jobs run whatever happened to the other builds (``!cancelled()``), never only when
  every build succeeded;
- no job publishes wheels (PyPI, the per-variant indexes) without build provenance: an
  unconditional ``actions/attest`` step with its subjects before the publishing step, in the
  job or in one it needs.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from builders.matrix.model import Matrix
from builders.matrix.targets import expand
from builders.release.ci import build_entry, build_groups, images, plan_outputs, shards, smoke_entry

PLAN_COMMAND = "nox -s plan -- --format github"
RELEASE_OPTION = "--release-tag"
RELEASE_GATE = "needs.plan.outputs.release == 'true'"
BUILD_COMMAND = "nox -s build --"
TARGET_OPTION = "--target"
SHARD_COMMAND = "ci/plan.sh shard"
REQUIRE_DEVICE = "--require-device"
SHARDS_FROM_PLAN = "${{ fromJSON(needs.plan.outputs.shards) }}"
FROM_SHARD = "${{ fromJSON(needs.shard.outputs.include) }}"
BUILDS_FROM_SHARD = "${{ fromJSON(needs.shard.outputs.builds) }}"
UPLOAD_ACTION = "actions/upload-artifact"
DOWNLOAD_ACTION = "actions/download-artifact"
ATTEST_ACTIONS = ("actions/attest", "actions/attest-build-provenance")
ATTEST_SUBJECTS = ("subject-path", "subject-checksums")
PUBLISH_ACTIONS = ("pypa/gh-action-pypi-publish",)
PUBLISH_COMMANDS = ("ci/deploy-index.sh",)
LOCAL_PREFIXES = ("./",)


@dataclass(frozen=True, kw_only=True)
class Workflow:
    """One workflow file, read as a mapping (a malformed part reads as empty)."""

    name: str
    text: str
    jobs: dict[str, dict[str, Any]]

    @classmethod
    def read(cls, path: Path) -> Workflow:
        text = path.read_text(encoding="utf-8")
        data = yaml.safe_load(text)
        jobs = data.get("jobs") if isinstance(data, dict) else None
        jobs = {str(k): v for k, v in jobs.items() if isinstance(v, dict)} if isinstance(jobs, dict) else {}
        return cls(name=path.name, text=text, jobs=jobs)


def drift(matrix: Matrix, workflow: Path) -> list[str]:
    """Every way ``workflow`` (and the local workflows it calls) no longer matches the plan (empty: in step)."""
    release = Workflow.read(workflow)
    called, missing = _called(release, workflow.parent)
    problems = [*missing, *_plan_problems(release), *_shard_problems(release, called)]
    for wf in (release, *called):
        problems += [*_timeout_problems(wf), *_smoke_problems(wf), *_provenance_problems(wf), *_upload_problems(wf)]
    problems += _gate_problems(release)
    problems += _key_problems(matrix, (release, *called))
    return problems


def local_calls(wf: Workflow) -> dict[str, str]:
    """``{job: file name}`` for the jobs that call a reusable workflow of this repository."""
    return {name: PurePosixPath(uses[2:]).name for name, job in wf.jobs.items()
            if isinstance(uses := job.get("uses"), str) and uses.startswith(LOCAL_PREFIXES)}


def _called(release: Workflow, folder: Path) -> tuple[list[Workflow], list[str]]:
    found, missing = [], []
    for job, name in local_calls(release).items():
        if (folder / name).is_file():
            found.append(Workflow.read(folder / name))
        else:
            missing.append(f"{release.name}: job {job!r} calls {name}, which is not beside it")
    return found, missing


def _plan_problems(release: Workflow) -> Iterator[str]:
    runs = _runs(release.jobs.get("plan", {}))
    if PLAN_COMMAND not in runs:
        yield f"{release.name}: the plan job does not run `{PLAN_COMMAND}`"
    elif RELEASE_OPTION not in runs:
        yield (f"{release.name}: the plan job never passes {RELEASE_OPTION}, so no run checks the tag against the "
               "version, the whole matrix and the pinned images before it publishes")
    if not any(_matrix(release.jobs[job]) == SHARDS_FROM_PLAN for job in local_calls(release)):
        yield f"{release.name}: no job runs the shard workflow once per shard of the plan ({SHARDS_FROM_PLAN})"


def _shard_problems(release: Workflow, called: list[Workflow]) -> Iterator[str]:
    shard = next((wf for wf in called if {"build", "smoke"} <= wf.jobs.keys()), None)
    if shard is None:
        yield f"{release.name}: no workflow it calls has the build and smoke jobs"
        return
    if not any(SHARD_COMMAND in _runs(job) for job in shard.jobs.values()):
        yield f"{shard.name}: no job extracts the shard's matrix (`{SHARD_COMMAND}`)"
    for job, expected in (("build", BUILDS_FROM_SHARD), ("smoke", FROM_SHARD)):
        if _matrix(shard.jobs[job]) != expected:
            yield f"{shard.name}: job {job!r} does not take its matrix from the shard ({expected})"
    runs = _runs(shard.jobs["build"])
    if BUILD_COMMAND not in runs or TARGET_OPTION not in runs:
        yield f"{shard.name}: the build job does not run `{BUILD_COMMAND} {TARGET_OPTION} ...`"
    if REQUIRE_DEVICE not in _runs(shard.jobs["smoke"]):
        yield (f"{shard.name}: the smoke job does not smoke-test with {REQUIRE_DEVICE} (a GPU runner that shows no "
               "GPU would pass with nothing exercised)")


def _timeout_problems(wf: Workflow) -> Iterator[str]:
    for name, job in wf.jobs.items():
        if "uses" not in job and "timeout-minutes" not in job:
            yield f"{wf.name}: job {name!r} has no timeout-minutes (GitHub's default is 6 hours)"


def _smoke_problems(wf: Workflow) -> Iterator[str]:
    smoke = wf.jobs.get("smoke")
    if smoke is not None and "build" in _needs(smoke):
        condition = str(smoke.get("if", ""))
        if "!cancelled()" not in condition and "always()" not in condition:
            yield (f"{wf.name}: the smoke jobs run only when every build succeeded (one failed build skips them "
                   "all); give the smoke job `if: ${{ !cancelled() }}` and let it check for its own wheel")


def _upload_problems(wf: Workflow) -> Iterator[str]:
    for name, job in wf.jobs.items():
        for step in _steps(job):
            given = step["with"] if isinstance(step.get("with"), dict) else {}
            if _action(step) == UPLOAD_ACTION and str(given.get("overwrite", "")).lower() != "true":
                yield (f"{wf.name}: job {name!r} uploads {given.get('name', 'an artifact')!r} without overwrite: true "
                       "(re-running the failed job would fail on the existing name)")
    for step in _steps(wf.jobs.get("smoke", {})):
        if _action(step) == DOWNLOAD_ACTION and step.get("continue-on-error"):
            yield (f"{wf.name}: the smoke job's download may fail quietly (continue-on-error): a missing wheel must "
                   "fail the job")


def _gate_problems(release: Workflow) -> Iterator[str]:
    """Every publishing job (and every job after one) runs only for a release the plan accepted."""
    for name, job in release.jobs.items():
        if _first(job, _publishes) is not None and RELEASE_GATE not in str(job.get("if", "")):
            yield (f"{release.name}: job {name!r} publishes without `{RELEASE_GATE}` in its if: (a dispatch, a wrong "
                   "tag or a partial selection could publish)")


def _provenance_problems(wf: Workflow) -> Iterator[str]:
    for name, job in wf.jobs.items():
        publishing = _first(job, _publishes)
        if publishing is None:
            continue
        attested = _first(job, _attests)
        if (attested is not None and attested < publishing) or any(_attesting(wf, n) for n in _needs(job)):
            continue
        yield (f"{wf.name}: job {name!r} publishes wheels without build provenance (an actions/attest step with "
               "subject-path or subject-checksums before it, in the job or in a job it needs)")


def _attesting(wf: Workflow, name: str, seen: frozenset[str] = frozenset()) -> bool:
    job = wf.jobs.get(name)
    if job is None or name in seen:
        return False
    return _first(job, _attests) is not None or any(_attesting(wf, n, seen | {name}) for n in _needs(job))


def _key_problems(matrix: Matrix, workflows: tuple[Workflow, ...]) -> Iterator[str]:
    emitted = emitted_keys(matrix)
    text = " ".join(wf.text for wf in workflows)
    expressions = " ".join(re.findall(r"\$\{\{(.*?)\}\}", text, re.S))
    for key in sorted(set(re.findall(r"(?<![\w.'\"/-])matrix\.([A-Za-z_][A-Za-z0-9_-]*)", expressions)) - emitted):
        yield f"uses matrix.{key}, which the plan does not emit (it emits {', '.join(sorted(emitted))})"


def emitted_keys(matrix: Matrix) -> set[str]:
    """Every key of every job matrix the plan hands on: targets, the shard index, images."""
    targets, _ = expand(matrix)
    outputs = plan_outputs({"shards": shards(targets[:1]), "images": images(targets)})
    rows = [*(smoke_entry(t) for t in targets[:1]), *(build_entry(g) for g in build_groups(targets[:1])),
            *outputs["shards"]["include"], *outputs["images"]["include"]]
    return set().union(*(row.keys() for row in rows))


def _steps(job: dict[str, Any]) -> list[dict[str, Any]]:
    steps = job.get("steps", [])
    return [s for s in steps if isinstance(s, dict)] if isinstance(steps, list) else []


def _first(job: dict[str, Any], test: Any) -> int | None:
    return next((i for i, step in enumerate(_steps(job)) if test(step)), None)


def _action(step: dict[str, Any]) -> str:
    return str(step.get("uses", "")).split("@", 1)[0]


def _publishes(step: dict[str, Any]) -> bool:
    return _action(step) in PUBLISH_ACTIONS or any(c in str(step.get("run", "")) for c in PUBLISH_COMMANDS)


def _attests(step: dict[str, Any]) -> bool:
    """An attestation step that always runs (a conditional one proves nothing) and names its subjects."""
    given = step.get("with")
    if not isinstance(given, dict) or "if" in step:
        return False
    return _action(step) in ATTEST_ACTIONS and any(given.get(k) for k in ATTEST_SUBJECTS)


def _needs(job: dict[str, Any]) -> list[str]:
    needs = job.get("needs", [])
    return [needs] if isinstance(needs, str) else [str(n) for n in needs] if isinstance(needs, list) else []


def _matrix(job: dict[str, Any]) -> Any:
    strategy = job.get("strategy")
    return strategy.get("matrix") if isinstance(strategy, dict) else None


def _runs(job: dict[str, Any]) -> str:
    return "\n".join(str(step.get("run", "")) for step in _steps(job))
