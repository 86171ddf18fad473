"""Mutation test of the release policy (``.github/workflow-policy.yml``): each dangerous edit a release
engineer might approve in a diff of ``.github/`` (issue 36's list), applied to a copy of the workflows,
is refused by ``workflow --check`` with the file, the job and the key named.

Each row of ``MUTATIONS`` is (the kind of edit, what it does, file, job, key, edit); an edit changes the
parsed workflow, so it is exactly the one change it names. A new rule in the policy gets its row here."""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from builders.base.errors import WorkflowDrift
from builders.ci import workflow_policy
from builders.ci.workflow import drift
from builders.ci.workflow_commands import channel_of, commands
from builders.families import loader

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github/workflows"
POLICY = ROOT / ".github/workflow-policy.yml"
RELEASE, SHARD, PROMOTE = "release.yml", "release-shard.yml", "promote.yml"
PINNED_PYPI = "pypa/gh-action-pypi-publish@dc37677b2e1c63e2034f94d8a5b11f265b73ba33"
PINNED_CHECKOUT = "actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1"

Edit = Callable[[dict[str, Any]], None]


def on(doc: dict[str, Any]) -> dict[str, Any]:
    """The ``on:`` mapping (YAML 1.1 reads the bare key as true)."""
    key = True if True in doc else "on"
    if not isinstance(doc[key], dict):
        doc[key] = {str(doc[key]): None}
    return doc[key]


def step(doc: dict[str, Any], job: str, test: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    return next(s for s in doc["jobs"][job]["steps"] if test(s))


def uses(prefix: str) -> Callable[[dict[str, Any]], bool]:
    return lambda s: str(s.get("uses", "")).startswith(prefix)


def running(text: str) -> Callable[[dict[str, Any]], bool]:
    return lambda s: text in str(s.get("run", ""))


def set_key(job: str, key: str, value: Any) -> Edit:
    return lambda doc: doc["jobs"][job].__setitem__(key, value)


def set_step(job: str, test: Callable[[dict[str, Any]], bool], key: str, value: Any) -> Edit:
    def edit(doc: dict[str, Any]) -> None:
        found = step(doc, job, test)
        if value is None:
            found.pop(key, None)
        else:
            found[key] = value
    return edit


def set_with(job: str, test: Callable[[dict[str, Any]], bool], key: str, value: Any) -> Edit:
    def edit(doc: dict[str, Any]) -> None:
        given = step(doc, job, test).setdefault("with", {})
        if value is None:
            given.pop(key, None)
        else:
            given[key] = value
    return edit


def drop_step(job: str, test: Callable[[dict[str, Any]], bool]) -> Edit:
    return lambda doc: doc["jobs"][job].__setitem__("steps", [s for s in doc["jobs"][job]["steps"] if not test(s)])


def add_run(job: str, run: str) -> Edit:
    return lambda doc: doc["jobs"][job]["steps"].append({"name": "added", "run": run})


def replace_run(job: str, old: str, new: str) -> Edit:
    def edit(doc: dict[str, Any]) -> None:
        found = step(doc, job, running(old))
        found["run"] = found["run"].replace(old, new)
    return edit


def add_trigger(name: str, value: Any = None) -> Edit:
    return lambda doc: on(doc).__setitem__(name, value)


def add_input(name: str) -> Edit:
    return lambda doc: on(doc)["workflow_dispatch"].setdefault("inputs", {}).__setitem__(
        name, {"description": "make this run a release", "type": "boolean"})


def concurrency(job: str, group: str, cancel: bool = False) -> Edit:
    return set_key(job, "concurrency", {"group": group, "cancel-in-progress": cancel})


def workflow_cancels(doc: dict[str, Any]) -> None:
    doc["concurrency"]["cancel-in-progress"] = True


def pr_head(job: str) -> Edit:
    return set_with(job, uses("actions/checkout@"), "ref", "${{ github.event.pull_request.head.sha }}")


def injected(job: str, context: str) -> Edit:
    def edit(doc: dict[str, Any]) -> None:
        found = step(doc, job, lambda s: "run" in s)
        found["run"] = f'echo "${{{{ {context} }}}}"\n' + found["run"]
    return edit


# The kinds of dangerous edit (issue 36, "Why"), each in every workflow where it applies.
MUTATIONS: list[tuple[str, str, str, str, str, Edit]] = [
    # triggers
    ("triggers", "pull_request_target", RELEASE, "(workflow)", "on", add_trigger("pull_request_target")),
    ("triggers", "pull_request_target", SHARD, "(workflow)", "on", add_trigger("pull_request_target")),
    ("triggers", "pull_request_target", PROMOTE, "(workflow)", "on", add_trigger("pull_request_target")),
    ("triggers", "a push promotes", PROMOTE, "(workflow)", "on", add_trigger("push", {"tags": ["v*"]})),
    ("triggers", "issue comments run the release", RELEASE, "(workflow)", "on", add_trigger("issue_comment")),
    ("triggers", "a dispatch input that makes a nightly", RELEASE, "(workflow)", "on", add_input("nightly")),
    ("triggers", "a dispatch input that picks the channel", PROMOTE, "(workflow)", "on", add_input("channel")),
    ("triggers", "the PR head checked out with secrets", RELEASE, "candidate", "ref", pr_head("candidate")),
    ("triggers", "the PR head checked out with secrets", SHARD, "build", "ref", pr_head("build")),
    ("triggers", "the PR head checked out with secrets", PROMOTE, "promote", "ref", pr_head("promote")),
    # credentials
    ("credentials", "secrets: inherit", RELEASE, "build", "secrets", set_key("build", "secrets", "inherit")),
    ("credentials", "persist-credentials removed", RELEASE, "plan", "persist-credentials",
     set_with("plan", uses("actions/checkout@"), "persist-credentials", None)),
    ("credentials", "persist-credentials removed", SHARD, "smoke", "persist-credentials",
     set_with("smoke", uses("actions/checkout@"), "persist-credentials", None)),
    ("credentials", "persist-credentials removed", PROMOTE, "publish", "persist-credentials",
     set_with("publish", uses("actions/checkout@"), "persist-credentials", None)),
    ("credentials", "a cache restored into a tag's build", SHARD, "build", "steps",
     set_step("build", uses("actions/cache@"), "if", None)),
    ("credentials", "setup-uv's cache in a tag's build", SHARD, "build", "steps",
     set_with("build", uses("astral-sh/setup-uv@"), "enable-cache", True)),
    ("credentials", "setup-uv's cache in the images job", RELEASE, "images", "steps",
     set_with("images", uses("astral-sh/setup-uv@"), "enable-cache", True)),
    ("credentials", "the bucket's role assumed by the report", RELEASE, "report", "steps",
     add_run("report", "bash ci/bucket-credentials.sh")),
    ("credentials", "an OIDC token for validate", RELEASE, "validate", "permissions",
     lambda doc: doc["jobs"]["validate"]["permissions"].__setitem__("id-token", "write")),
    ("credentials", "an OIDC token for the smoke", SHARD, "smoke", "permissions",
     lambda doc: doc["jobs"]["smoke"]["permissions"].__setitem__("id-token", "write")),
    ("credentials", "an OIDC token for the GitHub Release", PROMOTE, "github-release", "permissions",
     lambda doc: doc["jobs"]["github-release"]["permissions"].__setitem__("id-token", "write")),
    # injection
    ("injection", "the head commit's message in run:", RELEASE, "plan", "run",
     injected("plan", "github.event.head_commit.message")),
    ("injection", "the pull request's title in run:", SHARD, "build", "run",
     injected("build", "github.event.pull_request.title")),
    ("injection", "github.head_ref in run:", RELEASE, "report", "run", injected("report", "github.head_ref")),
    ("injection", "a dispatch input in run:", PROMOTE, "promote", "run", injected("promote", "inputs.version")),
    ("injection", "a comment's body in run:", PROMOTE, "publish", "run",
     injected("publish", "github.event.comment.body")),
    # failures let through
    ("failures", "continue-on-error on the smoke job", SHARD, "smoke", "continue-on-error",
     set_key("smoke", "continue-on-error", True)),
    ("failures", "continue-on-error on a smoke step", SHARD, "smoke", "continue-on-error",
     set_step("smoke", running("ci/smoke.sh"), "continue-on-error", True)),
    ("failures", "continue-on-error on the validate job", RELEASE, "validate", "continue-on-error",
     set_key("validate", "continue-on-error", True)),
    ("failures", "continue-on-error on a validate step", RELEASE, "validate", "continue-on-error",
     set_step("validate", running("ci/validate.sh test"), "continue-on-error", True)),
    ("failures", "continue-on-error on the promotion's preflight", PROMOTE, "promote", "continue-on-error",
     set_step("promote", running("ci/promote.sh preflight"), "continue-on-error", True)),
    ("failures", "validate if: false", RELEASE, "validate", "if", set_key("validate", "if", False)),
    ("failures", "a block-scalar if", RELEASE, "validate", "if",
     set_key("validate", "if", "needs.plan.outputs.candidate == 'true'\n")),
    ("failures", "a block-scalar if", PROMOTE, "publish", "if", set_key("publish", "if", "success()\n")),
    ("failures", "a block-scalar if", SHARD, "smoke", "if", set_key("smoke", "if", "${{ !cancelled() }}\n")),
    ("failures", "!cancelled() on promote's PyPI job", PROMOTE, "publish", "if",
     set_key("publish", "if", "${{ !cancelled() }}")),
    ("failures", "always() on promote's PyPI job", PROMOTE, "publish", "if", set_key("publish", "if", "always()")),
    ("failures", "an || on promote's GitHub Release", PROMOTE, "github-release", "if",
     set_key("github-release", "if", "needs.publish.result == 'success' || github.event_name == 'workflow_dispatch'")),
    # the gate's inputs
    ("gate inputs", "a plan output forced to release", RELEASE, "plan", "outputs",
     lambda doc: doc["jobs"]["plan"]["outputs"].__setitem__("release", "true")),
    # the channel is plan's decision (issue 44): the edit that made every dispatch a nightly, and its variants
    ("gate inputs", "a dispatch made a nightly by the plan step's shell", RELEASE, "plan", "run",
     replace_run("plan", "nox -s plan -- ",
                 'if [ "$EVENT" = workflow_dispatch ]; then extra=(--channel nightly); fi\nnox -s plan -- ')),
    ("gate inputs", "a dispatch planned as a schedule", RELEASE, "plan", "run",
     replace_run("plan", '--event "$EVENT"', "--event schedule")),
    ("gate inputs", "the event fact taken from elsewhere", RELEASE, "plan", "env",
     lambda doc: step(doc, "plan", running("nox -s plan"))["env"].__setitem__("EVENT", "schedule")),
    ("gate inputs", "the release check removed", RELEASE, "release-files", "steps",
     replace_run("release-files", "python -m builders release-check artifacts --plan plan/plan.json\n", "")),
    ("gate inputs", "the images' attestation removed", RELEASE, "images", "steps",
     drop_step("images", uses("actions/attest@"))),
    ("gate inputs", "--channel=release", RELEASE, "candidate", "steps",
     replace_run("candidate", "--channel test", "--channel=release")),
    ("gate inputs", "--channel on a continuation line", RELEASE, "nightly", "steps",
     replace_run("nightly", "--channel nightly", "\\\n  --channel release")),
    ("gate inputs", "twine outside the PyPI job", RELEASE, "release-files", "steps",
     add_run("release-files", "python -m twine upload release/dist/*")),
    ("gate inputs", "twine outside the PyPI job", SHARD, "build", "steps",
     add_run("build", "twine upload wheelhouse/*.whl")),
    ("gate inputs", "twine outside the PyPI job", PROMOTE, "promote", "steps",
     add_run("promote", "uv publish release/dist/*")),
    ("gate inputs", "the promotion's preflight removed", PROMOTE, "promote", "steps",
     drop_step("promote", running("ci/promote.sh preflight"))),
    ("gate inputs", "the sha256 check of the PyPI files removed", PROMOTE, "publish", "steps",
     replace_run("publish", "bash ci/promote.sh check promotion/preflight.json release/dist\n", "")),
    ("gate inputs", "PyPI batches from the labelled wheelhouse", PROMOTE, "publish", "steps",
     replace_run("publish", "ci/batches.sh release/dist", "ci/batches.sh release/wheels")),
    ("gate inputs", "PyPI batches from the labelled wheelhouse", RELEASE, "publish", "steps",
     replace_run("publish", "ci/batches.sh release/dist", "ci/batches.sh release/wheels")),
    ("gate inputs", "the PyPI job takes the labelled wheelhouse", PROMOTE, "publish", "steps",
     set_with("publish", uses("actions/download-artifact@"), "name", "release-wheels")),
    ("gate inputs", "validate takes the whole wheelhouse", RELEASE, "validate", "steps",
     set_with("validate", uses("actions/download-artifact@"), "name", "release-wheels")),
    ("gate inputs", "a download of every artifact", SHARD, "smoke", "steps",
     set_with("smoke", uses("actions/download-artifact@"), "pattern", None)),
    # queues
    ("queues", "cancel-in-progress on the nightly", RELEASE, "nightly", "concurrency",
     concurrency("nightly", "index-bucket-nightly-${{ needs.plan.outputs.nightly_date }}", cancel=True)),
    ("queues", "cancel-in-progress on the promotion", PROMOTE, "promote", "concurrency",
     concurrency("promote", "index-bucket-release-${{ inputs.version }}", cancel=True)),
    ("queues", "cancel-in-progress on the workflow", PROMOTE, "(workflow)", "concurrency", workflow_cancels),
    ("queues", "one candidate group for every tag", RELEASE, "candidate", "concurrency",
     concurrency("candidate", "index-bucket-test")),
    ("queues", "one promotion group for every version", PROMOTE, "promote", "concurrency",
     concurrency("promote", "index-bucket-release")),
    ("queues", "no group on promote's PyPI job", PROMOTE, "publish", "concurrency",
     lambda doc: doc["jobs"]["publish"].pop("concurrency")),
    # framework scale
    ("scale", "validate's record lost on a timeout", RELEASE, "validate", "if",
     set_step("validate", uses("actions/upload-artifact@"), "if", None)),
    ("scale", "an upload kept the default 90 days", RELEASE, "release-files", "retention-days",
     set_with("release-files", uses("actions/upload-artifact@"), "retention-days", None)),
    ("scale", "an upload kept the default 90 days", SHARD, "build", "retention-days",
     set_with("build", uses("actions/upload-artifact@"), "retention-days", None)),
    ("scale", "an upload kept the default 90 days", PROMOTE, "promote", "retention-days",
     set_with("promote", uses("actions/upload-artifact@"), "retention-days", 7)),
]


def write(folder: Path, file: str | None = None, edit: Edit | None = None) -> Path:
    for name in (RELEASE, SHARD, PROMOTE):
        doc = copy.deepcopy(parsed(name))
        if name == file and edit is not None:
            edit(doc)
        (folder / name).write_text(yaml.dump(doc, Dumper=DUMPER, sort_keys=False))
    return folder / RELEASE


DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml where PyYAML has it: each mutation writes 3 files


@functools.cache
def parsed(name: str) -> Any:
    """The committed workflow ``name``, parsed once for the module (each mutation edits a deep copy)."""
    return yaml.load((WORKFLOWS / name).read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


@pytest.fixture(scope="module")
def matrix() -> Any:
    return loader.load(ROOT / "matrix.yaml", builds=False)


def test_the_committed_workflows_keep_the_policy(matrix: Any, tmp_path: Path) -> None:
    assert drift(matrix, write(tmp_path), POLICY) == []


@pytest.mark.parametrize(("kind", "what", "file", "job", "key", "edit"), MUTATIONS,
                         ids=[f"{m[0]}: {m[1]} ({m[2]})" for m in MUTATIONS])
def test_each_dangerous_edit_is_refused_naming_file_job_and_key(matrix: Any, tmp_path: Path, kind: str, what: str,
                                                                file: str, job: str, key: str, edit: Edit) -> None:
    problems = drift(matrix, write(tmp_path, file, edit), POLICY)
    assert any(f"{file}: job {job!r}, key {key!r}:" in p for p in problems), (kind, what, problems)


def test_every_kind_of_edit_has_a_mutation_in_every_workflow_it_applies_to() -> None:
    covered = {(m[0], m[2]) for m in MUTATIONS}
    for kind in ("triggers", "credentials", "injection", "failures", "gate inputs", "scale"):
        assert {(kind, f) for f in (RELEASE, SHARD, PROMOTE)} <= covered, kind
    assert {("queues", RELEASE), ("queues", PROMOTE)} <= covered


FOURTH = {
    "pypi": {"steps": [{"uses": PINNED_PYPI, "with": {"packages-dir": "dist/"}}]},
    "channel": {"steps": [{"run": "python -m builders publish dist \\\n  --channel=release --bucket s3://b/"}]},
    "release-role": {"steps": [{"run": "bash ci/bucket-credentials.sh"}]},
    "id-token": {"permissions": {"id-token": "write"}, "steps": [{"run": "true"}]},
    "github-release": {"steps": [{"run": "gh release create v1"}]},
}


@pytest.mark.parametrize("capability", sorted(FOURTH))
def test_a_fourth_workflow_that_publishes_is_refused(matrix: Any, tmp_path: Path, capability: str) -> None:
    body = FOURTH[capability]
    job = {"runs-on": "ubuntu-24.04", "timeout-minutes": 10, "permissions": body.get("permissions", {}),
           "steps": [{"uses": PINNED_CHECKOUT, "with": {"persist-credentials": False}}, *body["steps"]]}
    doc = {"name": "sneaky", "on": {"push": {"branches": ["main"]}}, "permissions": {}, "jobs": {"upload": job}}
    release = write(tmp_path)
    (tmp_path / "sneaky.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    key = "permissions" if capability == "id-token" else "steps"
    problems = drift(matrix, release, POLICY)
    assert any(p.startswith(f"sneaky.yaml: job 'upload', key {key!r}:") and capability in p for p in problems), problems


def test_a_local_composite_action_is_read_in_place_of_the_step_that_uses_it(tmp_path: Path) -> None:
    action = tmp_path / ".github/actions/upload/action.yml"
    action.parent.mkdir(parents=True)
    action.write_text(yaml.safe_dump({"runs": {"using": "composite", "steps": [
        {"shell": "bash", "run": "twine upload dist/*"}]}}))
    wf = tmp_path / "ci.yml"
    wf.write_text(yaml.safe_dump({"on": {"push": None}, "jobs": {"lint": {
        "runs-on": "ubuntu-24.04", "steps": [{"uses": "./.github/actions/upload"}]}}}))
    from builders.ci.workflow_jobs import Workflow
    problems = workflow_policy.policy_problems(workflow_policy.load(POLICY), [Workflow.read(wf)],
                                               workflow_policy.composite_actions(tmp_path))
    assert any(p.startswith("ci.yml: job 'lint', key 'steps':") and "pypi" in p for p in problems), problems


@pytest.mark.parametrize(("run", "channel"), [
    ("python -m builders publish a --channel release", "release"),
    ("python -m builders publish a --channel=release", "release"),
    ("python -m builders publish a \\\n    --bucket b \\\n    --channel release", "release"),
    ("python -m builders publish a --channel 'test' # --channel release", "test"),
    ("A=1 builders publish a --bucket=b --channel nightly && echo --channel release", "nightly"),
])
def test_the_channel_is_read_as_argparse_reads_it(run: str, channel: str) -> None:
    found = [channel_of(c) for c in commands(run) if "publish" in c]
    assert found[0] == channel


def test_a_policy_naming_an_unknown_kind_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "policy.yml"
    bad.write_text("retention_days: 30\nkinds: {}\nworkflows: {release.yml: {jobs: {publish: publish-pypi}}}\n")
    with pytest.raises(WorkflowDrift, match="publish-pypi"):
        workflow_policy.load(bad)
    with pytest.raises(WorkflowDrift, match="missing"):
        workflow_policy.load(tmp_path / "absent.yml")


def test_a_block_scalar_if_is_refused_however_it_is_chomped(matrix: Any, tmp_path: Path) -> None:
    release = write(tmp_path)
    text = (WORKFLOWS / RELEASE).read_text()
    old = "    if: needs.plan.outputs.candidate == 'true'\n    strategy:"
    assert old in text
    release.write_text(text.replace(old, "    if: |-\n      needs.plan.outputs.candidate == 'true'\n    strategy:"))
    problems = drift(matrix, release, POLICY)
    assert any(p.startswith("release.yml: job 'validate', key 'if': a block scalar") for p in problems), problems
