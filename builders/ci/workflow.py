"""Drift check between the committed release workflow and what the matrix implies.

Nothing in the workflow is generated: it takes its job matrices from the plan at run time.
What can drift is the contract between the two, and the release's gates, so that is what is
checked, in the release workflow and the local reusable workflows it calls:

- the plan job runs the plan command, with ``--release-tag`` (the only way a run becomes a
  release); a job runs the shard workflow once per shard of the plan; there, the build jobs
  take the shard's build matrix (one per variant and platform) and run the local build
  command with ``--target``, the smoke jobs take the shard's smoke matrix, and every matrix
  key used is one the plan emits;
- the structure (:mod:`builders.ci.workflow_rules`): per job its ``if`` (the release gate
  as a term of the condition, no status-function bypass), ``needs``, ``permissions`` (the least
  its steps need), ``environment``, ``concurrency``, ``timeout-minutes`` and commit-pinned
  ``uses``;
- every artifact upload overwrites (a rerun of a failed job repeats its names, and
  upload-artifact refuses an existing name otherwise), and the smoke job's download of its
  wheel is not allowed to fail quietly;
- the smoke jobs run the smoke test with ``--require-device``, so a GPU job fails on a runner
  that shows no device of its accelerator (builders decides from the matrix's smoke runners);
- each build job uploads every wheel as an artifact of its own (``wheel-<target>``, one step per
  position of the plan's ``ids``, as many as the plan's largest build job holds), and each smoke job
  downloads only its own, never the build job's whole wheelhouse;
- each smoke job uploads its wheel's smoke record, named after its target, ``if: always()``
  (a failed or timed-out smoke keeps its evidence);
- every job that runs steps has ``timeout-minutes``;
- smoke jobs run whatever happened to the other builds (``!cancelled()``), never only when
  every build succeeded;
- no job publishes wheels (PyPI, the per-variant indexes) without build provenance: an
  unconditional ``actions/attest`` step with its subjects before the publishing step, in the
  job or in one it needs;
- the channel lifecycle (:mod:`builders.ci.workflow_lifecycle`): the nightly and candidate
  jobs of the release workflow, and the promotion workflow ``promote.yml`` beside it, which is
  held to the same timeouts, uploads, provenance, PyPI batches and per-job structure;
- the release policy (:mod:`builders.ci.workflow_policy`, ``.github/workflow-policy.yml``) over
  every workflow file beside it, a new one included, and the repository's local composite actions;
  every file also keeps the per-workflow rules (permissions, pins, timeouts, provenance, uploads).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from builders.base.errors import WorkflowDrift
from builders.ci import disk, workflow_policy
from builders.ci import expressions as ex
from builders.ci.jobs import build_entry, build_groups, images, plan_outputs, shards, smoke_entry
from builders.ci.workflow_jobs import (
    DOWNLOAD_ACTION,
    PYPI_ACTIONS,
    UPLOAD_ACTION,
    Workflow,
    action,
    attests,
    first,
    given,
    local_calls,
    needs,
    publishes,
    runs,
    steps,
)
from builders.ci.workflow_jobs import matrix_of as _matrix
from builders.ci.workflow_lifecycle import lifecycle_problems, lifecycle_workflows
from builders.ci.workflow_rules import (
    ATTESTED_RUNS,
    attested_run,
    outcomes,
    per_workflow_problems,
    structural_problems,
)
from builders.matrix.model import Matrix
from builders.matrix.targets import expand

PLAN_COMMAND = "nox -s plan -- --format github"
RELEASE_OPTION = "--release-tag"
EVENT_OPTION = "--event"  # plan decides the tag (as --release-tag) from the run's facts: builders.ci.run_channel
BUILD_COMMAND = "nox -s build --"
TARGET_OPTION = "--target"
SHARD_COMMAND = "ci/plan.sh shard"
REQUIRE_DEVICE = "--require-device"
SHARDS_FROM_PLAN = "${{ fromJSON(needs.plan.outputs.shards) }}"
FROM_SHARD = "${{ fromJSON(needs.shard.outputs.include) }}"
BUILDS_FROM_SHARD = "${{ fromJSON(needs.shard.outputs.builds) }}"
BATCH_COMMAND = "ci/batches.sh"
SMOKE_RECORD_NAME = "${{ matrix.id }}"
RELEASE_INPUT = "${{ needs.plan.outputs.release == 'true' || needs.plan.outputs.candidate == 'true' }}"


def drift(matrix: Matrix, workflow: Path, policy: Path | None = None) -> list[str]:
    """Every way ``workflow`` (and the local workflows it calls) no longer matches the plan, and every way a
    workflow file beside it breaks the release policy (``policy``: default ``.github/workflow-policy.yml`` of
    the checkout) (empty: in step)."""
    release = Workflow.read(workflow)
    called, missing = _called(release, workflow.parent)
    promotion = lifecycle_workflows(workflow.parent)
    known = {wf.name for wf in (release, *called, *promotion)}
    others = [Workflow.read(p) for p in sorted(workflow.parent.glob("*.y*ml")) if p.name not in known]
    root = checkout_root(workflow)
    rules = workflow_policy.load(policy or root / workflow_policy.POLICY)
    problems = [*missing, *_plan_problems(release), *_shard_problems(release, called)]
    problems += workflow_policy.policy_problems(rules, [release, *called, *promotion, *others],
                                                workflow_policy.composite_actions(root))
    problems += [p for wf in others for p in per_workflow_problems(wf, {})]
    for wf in (release, *called, *promotion, *others):
        problems += [*_timeout_problems(wf), *_smoke_problems(wf), *_provenance_problems(wf), *_upload_problems(wf),
                     *_smoke_record_problems(wf)]
    problems += structural_problems(release, called)
    problems += [p for wf in promotion for p in per_workflow_problems(wf, {})]
    problems += lifecycle_problems(release, promotion)
    for wf in (release, *promotion):
        problems += _batch_problems(matrix, wf)
    problems += _fail_closed_problems(release, called)
    problems += _wheel_artifact_problems(matrix, called)
    problems += _key_problems(matrix, (release, *called))
    return problems


def checkout_root(workflow: Path) -> Path:
    """The checkout ``workflow`` belongs to: above ``.github/workflows/``, else the current folder."""
    resolved = workflow.resolve()
    if resolved.parent.name == "workflows" and resolved.parent.parent.name == ".github":
        return resolved.parent.parent.parent
    return Path.cwd()


def _called(release: Workflow, folder: Path) -> tuple[list[Workflow], list[str]]:
    found, missing = [], []
    for job, name in local_calls(release).items():
        if (folder / name).is_file():
            found.append(Workflow.read(folder / name))
        else:
            missing.append(f"{release.name}: job {job!r} calls {name}, which is not beside it")
    return found, missing


def _plan_problems(release: Workflow) -> Iterator[str]:
    commands = runs(release.jobs.get("plan", {}))
    if PLAN_COMMAND not in commands:
        yield f"{release.name}: the plan job does not run `{PLAN_COMMAND}`"
    elif EVENT_OPTION not in commands and RELEASE_OPTION not in commands:
        yield (f"{release.name}: the plan job never passes {EVENT_OPTION}, so no run checks the tag against the "
               "version, the whole matrix and the pinned images before it publishes")
    if not any(_matrix(release.jobs[job]) == SHARDS_FROM_PLAN for job in local_calls(release)):
        yield f"{release.name}: no job runs the shard workflow once per shard of the plan ({SHARDS_FROM_PLAN})"


def _shard_problems(release: Workflow, called: list[Workflow]) -> Iterator[str]:
    shard = next((wf for wf in called if {"build", "smoke"} <= wf.jobs.keys()), None)
    if shard is None:
        yield f"{release.name}: no workflow it calls has the build and smoke jobs"
        return
    if not any(SHARD_COMMAND in runs(job) for job in shard.jobs.values()):
        yield f"{shard.name}: no job extracts the shard's matrix (`{SHARD_COMMAND}`)"
    for job, expected in (("build", BUILDS_FROM_SHARD), ("smoke", FROM_SHARD)):
        if _matrix(shard.jobs[job]) != expected:
            yield f"{shard.name}: job {job!r} does not take its matrix from the shard ({expected})"
    commands = runs(shard.jobs["build"])
    if BUILD_COMMAND not in commands or TARGET_OPTION not in commands:
        yield f"{shard.name}: the build job does not run `{BUILD_COMMAND} {TARGET_OPTION} ...`"
    if REQUIRE_DEVICE not in runs(shard.jobs["smoke"]):
        yield (f"{shard.name}: the smoke job does not smoke-test with {REQUIRE_DEVICE} (a GPU runner that shows no "
               "GPU would pass with nothing exercised)")


def _timeout_problems(wf: Workflow) -> Iterator[str]:
    for name, job in wf.jobs.items():
        if "uses" not in job and "timeout-minutes" not in job:
            yield f"{wf.name}: job {name!r}, key 'timeout-minutes': missing (GitHub's default is 6 hours)"


def _smoke_problems(wf: Workflow) -> Iterator[str]:
    smoke = wf.jobs.get("smoke")
    if smoke is not None and "build" in needs(smoke):
        condition = str(smoke.get("if", ""))
        if "!cancelled()" not in condition and "always()" not in condition:
            yield (f"{wf.name}: the smoke jobs run only when every build succeeded (one failed build skips them "
                   "all); give the smoke job `if: ${{ !cancelled() }}` and let it check for its own wheel")


def _upload_problems(wf: Workflow) -> Iterator[str]:
    for name, job in wf.jobs.items():
        for step in steps(job):
            given = step["with"] if isinstance(step.get("with"), dict) else {}
            if action(step) == UPLOAD_ACTION and str(given.get("overwrite", "")).lower() != "true":
                yield (f"{wf.name}: job {name!r} uploads {given.get('name', 'an artifact')!r} without overwrite: true "
                       "(re-running the failed job would fail on the existing name)")
        for step in steps(job):
            if action(step) == UPLOAD_ACTION and "cancelled()" in str(step.get("if", "")):
                yield (f"{wf.name}: job {name!r}, key 'if': an upload runs `{step['if']}`, so a job that reaches "
                       "timeout-minutes (which counts as cancelled) loses its logs; upload if: always()")
    for step in steps(wf.jobs.get("smoke", {})):
        if action(step) == DOWNLOAD_ACTION and step.get("continue-on-error"):
            yield (f"{wf.name}: the smoke job's download may fail quietly (continue-on-error): a missing wheel must "
                   "fail the job")


def _smoke_record_problems(wf: Workflow) -> Iterator[str]:
    """A smoke job (one per target) uploads its own record, named after its target, whatever happened:
    one name for every job would keep one record, and an upload on success only loses the failed one's."""
    smoke = wf.jobs.get("smoke")
    if smoke is None or "build" not in needs(smoke):
        return
    uploads = [s for s in steps(smoke) if action(s) == UPLOAD_ACTION]
    named = [s for s in uploads if isinstance(s.get("with"), dict) and SMOKE_RECORD_NAME in str(s["with"].get("name", ""))]
    if not named:
        yield (f"{wf.name}: job 'smoke', key 'steps': no upload of the wheel's smoke record named after its target "
               f"({SMOKE_RECORD_NAME}), so a failed smoke leaves no evidence but its log")
    elif not any("always()" in str(s.get("if", "")) for s in named):
        yield (f"{wf.name}: job 'smoke', key 'if': the smoke record is uploaded only when the smoke passed; "
               "upload it if: always()")


WHEEL_ARTIFACT = re.compile(r"^wheel-\$\{\{ fromJSON\(matrix\.ids\)\[(\d+)\] \}\}$")
SMOKE_WHEEL = "wheel-${{ matrix.id }}"


def _with(step: dict) -> dict:
    return step["with"] if isinstance(step.get("with"), dict) else {}


def _wheel_artifact_problems(matrix: Matrix, called: list[Workflow]) -> Iterator[str]:
    """Per-wheel artifacts: a smoke job tests one wheel, so it downloads one (at framework scale a build
    job's wheelhouse is several GB). The build job has one upload step per position of the plan's ``ids``."""
    shard = next((wf for wf in called if {"build", "smoke"} <= wf.jobs.keys()), None)
    if shard is None:
        return
    positions = {int(found.group(1)) for step in steps(shard.jobs["build"]) if action(step) == UPLOAD_ACTION
                 if (found := WHEEL_ARTIFACT.match(str(_with(step).get("name", "")))) is not None}
    largest = max((len(group) for group in build_groups(expand(matrix)[0])), default=0)
    missing = [i for i in range(largest) if i not in positions]
    if missing:
        yield (f"{shard.name}: job 'build', key 'steps': a build job of the plan holds {largest} targets, and no step "
               f"uploads the wheel at position(s) {missing} (name wheel-${{{{ fromJSON(matrix.ids)[N] }}}}, path "
               "wheelhouse/**/${{ fromJSON(matrix.wheels)[N] }}): add one step per position")
    downloads = [_with(s) for s in steps(shard.jobs["smoke"]) if action(s) == DOWNLOAD_ACTION]
    if not any(str(d.get("pattern", d.get("name", ""))) == SMOKE_WHEEL for d in downloads):
        yield (f"{shard.name}: job 'smoke', key 'steps': the smoke job does not download its own wheel's artifact "
               f"({SMOKE_WHEEL})")
    whole = [str(d.get("name", d.get("pattern", ""))) for d in downloads if "build-" in str(d.get("name", d.get("pattern", "")))]
    if whole:
        yield (f"{shard.name}: job 'smoke', key 'steps': downloads {whole[0]!r}, the build job's whole wheelhouse, to "
               "test one wheel; download wheel-${{ matrix.id }}")


def _fail_closed_problems(release: Workflow, called: list[Workflow]) -> Iterator[str]:
    """A release or a candidate never falls back to an image its images job did not push and attest: the shard
    workflow's ``release`` input is true on both (evaluated as GitHub would), and its image download may fail
    quietly only when it is not."""
    for name in local_calls(release):
        passed = release.jobs[name].get("with")
        value = passed.get("release", False) if isinstance(passed, dict) else False
        falls_back = [what for what in ATTESTED_RUNS if not _always_true(value, attested_run(what))]
        if falls_back:
            yield (f"{release.name}: job {name!r}, key 'with': passes `release: {value}`, false on a "
                   f"{' and a '.join(falls_back)}, so its builds fall back to unattested images there; pass "
                   f"`release: {RELEASE_INPUT}`")
    for wf in called:
        for name, job in wf.jobs.items():
            for step in steps(job):
                quiet = step.get("continue-on-error")
                if action(step) == DOWNLOAD_ACTION and quiet and "inputs.release" not in str(quiet):
                    yield (f"{wf.name}: job {name!r}, key 'continue-on-error': a download may fail quietly on a "
                           "release too; make it `${{ !inputs.release }}`")


def _always_true(value: object, context: dict[str, str]) -> bool:
    try:
        return outcomes(ex.parse(value), context, {}) == {True}
    except WorkflowDrift:
        return False


def _batch_problems(matrix: Matrix, release: Workflow) -> Iterator[str]:  # release.yml's, or promote.yml's
    """One PyPI upload step per batch (each mints its own token), as many as ``ci/batches.sh`` may fill,
    at the batch size builders plans with, and enough for the matrix's PyPI wheels."""
    for name, job in release.jobs.items():
        uploads = [given(s).get("packages-dir", "") for s in steps(job) if action(s) in PYPI_ACTIONS]
        if not uploads:
            continue
        call = re.search(rf"{BATCH_COMMAND}\s+\S+\s+(\S+)\s+(\d+)\s+(\d+)", runs(job))
        if call is None:
            yield (f"{release.name}: job {name!r}, key 'steps': uploads to PyPI without `{BATCH_COMMAND}` batches "
                   "(one step's token lasts about 15 minutes)")
            continue
        out, count, size = call.group(1), int(call.group(2)), int(call.group(3))
        wanted = [f"{out}/{i}/" for i in range(1, count + 1)]
        if uploads != wanted or size != disk.PYPI_BATCH_MB:
            yield (f"{release.name}: job {name!r}, key 'steps': PyPI uploads of {uploads} at {size} MB, but "
                   f"{BATCH_COMMAND} fills {wanted} and builders plans batches of {disk.PYPI_BATCH_MB} MB")
        targets, _ = expand(matrix)
        if (needed := disk.batches_needed(matrix, targets)) > count:
            yield (f"{release.name}: job {name!r}, key 'steps': the matrix's PyPI wheels need {needed} upload "
                   f"batches and the job has {count} steps")


def _provenance_problems(wf: Workflow) -> Iterator[str]:
    for name, job in wf.jobs.items():
        publishing = first(job, publishes)
        if publishing is None:
            continue
        attested = first(job, attests)
        if (attested is not None and attested < publishing) or any(_attesting(wf, n) for n in needs(job)):
            continue
        yield (f"{wf.name}: job {name!r} publishes wheels without build provenance (an actions/attest step with "
               "subject-path or subject-checksums before it, in the job or in a job it needs)")


def _attesting(wf: Workflow, name: str, seen: frozenset[str] = frozenset()) -> bool:
    job = wf.jobs.get(name)
    if job is None or name in seen:
        return False
    return first(job, attests) is not None or any(_attesting(wf, n, seen | {name}) for n in needs(job))


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
