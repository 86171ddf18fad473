"""The channel lifecycle's half of ``workflow --check``: nightly, candidate and promotion jobs.

Read per job from the parsed workflows, as :mod:`builders.ci.workflow_rules` reads them:

- in the release workflow, a job that publishes a channel to the bucket (``builders publish
  --channel nightly|test``) has its channel's gate as an ``&&`` term of its ``if``
  (``needs.plan.outputs.nightly`` or ``.candidate == 'true'``; no status function, no ``||``),
  comes after the plan, the images and the builds, runs in its channel's environment (where the
  bucket's credentials and the OIDC role's trust are scoped) and in a concurrency group (two
  writers of one channel's pages would lose one's update); nothing there publishes the release
  channel from a build (``--channel release`` or ``promote-release``);
- with such jobs, the Pages path of a final tag is off while a bucket is set: each job that
  publishes the release (PyPI, the index deploy, the GitHub Release) has, itself or through a job
  it needs, ``!vars.INDEX_BUCKET`` as an ``&&`` term, so a bucket's release comes only from the
  promotion of a validated candidate;
- the promotion workflow (``promote.yml`` beside it) is run by ``workflow_dispatch`` alone with a
  ``version`` input, builds nothing (no reusable build workflow, no build or image command), runs
  ``promote-release`` in the ``release`` environment (its reviewers approve the release), and
  uploads to PyPI only after it (the shared rule of :func:`workflow_rules.pypi_last_problems`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from builders.base.errors import WorkflowDrift
from builders.ci import expressions as ex
from builders.ci.workflow_commands import builders_command, channel_of, commands
from builders.ci.workflow_jobs import (
    Workflow,
    first,
    local_calls,
    needs,
    publishes_release_index,
    runs,
    steps,
    upstream,
)
from builders.ci.workflow_rules import (
    BYPASSES,
    environment,
    producers,
    publishing_jobs,
    pypi_last_problems,
    where,
)

PROMOTE_WORKFLOW = "promote.yml"
PROMOTE_COMMAND = "promote-release"  # or ci/promote.sh index, which runs it
DEPLOY_COMMAND = "ci/deploy-index.sh"
PROMOTE_ENVIRONMENT = "release"
CHANNEL_GATES = {"nightly": "needs.plan.outputs.nightly", "test": "needs.plan.outputs.candidate"}
CHANNEL_ENVIRONMENTS = {"nightly": "nightly", "test": "candidates"}
BUCKET_VARIABLE = "vars.INDEX_BUCKET"
BUILD_COMMANDS = ("nox -s build", "builders build", "ci/images.sh")


def lifecycle_workflows(folder: Path) -> list[Workflow]:
    """The promotion workflow beside the release workflow, when there is one."""
    path = folder / PROMOTE_WORKFLOW
    return [Workflow.read(path)] if path.is_file() else []


def lifecycle_problems(release: Workflow, promotion: list[Workflow]) -> list[str]:
    channels = channel_jobs(release)
    problems = [*_channel_problems(release, channels), *_no_release_from_a_build(release)]
    if channels:
        problems += _pages_path_problems(release)
        if not promotion:
            problems.append(f"{release.name}: publishes candidates to the bucket, but {PROMOTE_WORKFLOW}, which "
                            "releases a validated candidate, is not beside it")
    for wf in promotion:
        problems += [*_promotion_problems(wf), *pypi_last_problems(wf)]
    return problems


def channel_jobs(wf: Workflow) -> dict[str, str]:
    """``{job: channel}`` for the jobs that run ``builders publish --channel CHANNEL`` (read as the shell and
    argparse read it: ``--channel=X`` and continuation lines too)."""
    found = {}
    for name, job in wf.jobs.items():
        channels = [channel_of(c) for c in commands(runs(job)) if builders_command(c) == "publish"]
        if channel := next((c for c in channels if c is not None), None):
            found[name] = channel
    return found


# -- the release workflow's channel jobs -----------------------------------------------------

def _channel_problems(wf: Workflow, channels: dict[str, str]) -> Iterator[str]:
    for name, channel in sorted(channels.items()):
        if channel not in CHANNEL_GATES:
            yield (f"{where(wf, name, 'steps')} publishes the {channel!r} channel from a build; the release channel "
                   f"is only ever promoted ({PROMOTE_WORKFLOW}: {PROMOTE_COMMAND}), nightly and test are built")
            continue
        yield from _channel_gate(wf, name, CHANNEL_GATES[channel])
        job = wf.jobs[name]
        if environment(job) != CHANNEL_ENVIRONMENTS[channel]:
            yield (f"{where(wf, name, 'environment')} publishes the {channel} channel outside the "
                   f"{CHANNEL_ENVIRONMENTS[channel]!r} environment (found {environment(job)!r}), where its bucket "
                   "credentials and the OIDC role's trust are scoped")
        if not job.get("concurrency"):
            yield (f"{where(wf, name, 'concurrency')} none: two runs would write the {channel} channel's pages at "
                   "once and one's update would be lost")
        missing = sorted(producers(wf) - upstream(wf, name))
        if missing:
            yield f"{where(wf, name, 'needs')} does not come after {', '.join(map(repr, missing))}"


def _channel_gate(wf: Workflow, name: str, gate: str) -> Iterator[str]:
    try:
        node = ex.parse(wf.jobs[name].get("if", True))
    except WorkflowDrift as exc:  # an unreadable condition
        yield f"{where(wf, name, 'if')} {exc.problems[0].message}"
        return
    if ex.calls(node) & BYPASSES or node.kind == "or":
        yield (f"{where(wf, name, 'if')} a status function or an || lets it publish when a job it needs failed, "
               "or on another run")
    if not any(ex.equals(term, gate, "true") for term in ex.conjuncts(node)):
        yield f"{where(wf, name, 'if')} the channel's gate `{gate} == 'true'` is not one of its && terms"


def _no_release_from_a_build(wf: Workflow) -> Iterator[str]:
    for name, job in sorted(wf.jobs.items()):
        if any(publishes_release_index(s) and DEPLOY_COMMAND not in str(s.get("run", "")) for s in steps(job)):
            yield (f"{where(wf, name, 'steps')} runs {PROMOTE_COMMAND} in the workflow that builds; the promotion is "
                   f"{PROMOTE_WORKFLOW}'s, which builds nothing")


def _bucket_unset(node: ex.Node) -> bool:
    return any(t.kind == "not" and t.args[0].kind == "ref" and t.args[0].text == BUCKET_VARIABLE
               for t in ex.conjuncts(node))


def _pages_path_problems(wf: Workflow) -> Iterator[str]:
    off = {name for name in wf.jobs if _readable_bucket_unset(wf, name)}
    for name in sorted(publishing_jobs(wf)):
        if name not in off and not upstream(wf, name) & off:
            yield (f"{where(wf, name, 'if')} neither it nor a job it needs has `!{BUCKET_VARIABLE}` as an && term: "
                   "with a bucket set, a final tag would publish a rebuild instead of the validated candidate")


def _readable_bucket_unset(wf: Workflow, name: str) -> bool:
    try:
        return _bucket_unset(ex.parse(wf.jobs[name].get("if", True)))
    except WorkflowDrift:  # an unreadable condition is reported by the gate rules
        return False


# -- the promotion workflow ------------------------------------------------------------------

def triggers(wf: Workflow) -> dict[str, object]:
    """The ``on:`` mapping (YAML 1.1 reads the bare key ``on`` as true)."""
    on = wf.top.get("on", wf.top.get("True"))
    if isinstance(on, str):
        return {on: None}
    if isinstance(on, list):
        return {str(e): None for e in on}
    return {str(k): v for k, v in on.items()} if isinstance(on, dict) else {}


def _promotion_problems(wf: Workflow) -> Iterator[str]:
    dispatch = triggers(wf).get("workflow_dispatch")  # its triggers are the release policy's
    inputs = dispatch.get("inputs") if isinstance(dispatch, dict) else None
    if not isinstance(inputs, dict) or "version" not in inputs:
        yield f"{wf.name}: key 'on': the dispatch has no `version` input naming what it releases"
    for name in sorted(local_calls(wf)):
        yield f"{where(wf, name, 'uses')} calls a reusable workflow: a promotion builds nothing"
    for name, job in sorted(wf.jobs.items()):
        if any(command in runs(job) for command in BUILD_COMMANDS):
            yield f"{where(wf, name, 'steps')} builds (or pushes images): a promotion copies validated bytes only"
    promoting = [name for name, job in wf.jobs.items() if first(job, publishes_release_index) is not None]
    if not promoting:
        yield f"{wf.name}: no job runs {PROMOTE_COMMAND}"
    for name in promoting:
        if environment(wf.jobs[name]) != PROMOTE_ENVIRONMENT:
            yield (f"{where(wf, name, 'environment')} runs {PROMOTE_COMMAND} outside the {PROMOTE_ENVIRONMENT!r} "
                   f"environment (found {environment(wf.jobs[name])!r}), whose reviewers approve a release")
        yield from _ungated(wf, name)


def _ungated(wf: Workflow, name: str) -> Iterator[str]:
    """A promotion job runs only when every job it needs succeeded."""
    condition = wf.jobs[name].get("if")
    if condition is None:
        return
    try:
        node = ex.parse(condition)
    except WorkflowDrift as exc:
        yield f"{where(wf, name, 'if')} {exc.problems[0].message}"
        return
    if ex.calls(node) & BYPASSES and needs(wf.jobs[name]):
        yield f"{where(wf, name, 'if')} a status function would promote over a failed job it needs"
