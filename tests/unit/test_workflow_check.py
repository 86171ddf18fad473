"""Mutation test of ``workflow --check``'s structural rules: each dangerous edit of the committed
release workflows must fail the check with the job and the key named.

The workflows are edited as data (parsed, changed, written back), so each mutation is exactly
the one change it names, whatever the file's layout."""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from builders.ci import expressions as ex
from builders.ci.jobs import build_groups
from builders.ci.workflow import drift
from builders.families import loader
from builders.matrix.targets import expand

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github/workflows"
RELEASE, SHARD, PROMOTE = "release.yml", "release-shard.yml", "promote.yml"

Edit = Callable[[dict[str, Any]], None]


def job(name: str, key: str, value: Any) -> Edit:
    def edit(doc: dict[str, Any]) -> None:
        doc["jobs"][name][key] = value
    return edit


def drop(name: str, key: str) -> Edit:
    def edit(doc: dict[str, Any]) -> None:
        del doc["jobs"][name][key]
    return edit


def permission(name: str, scope: str, level: str | None) -> Edit:
    def edit(doc: dict[str, Any]) -> None:
        granted = doc["jobs"][name]["permissions"]
        if level is None:
            del granted[scope]
        else:
            granted[scope] = level
    return edit


def unpin(name: str) -> Edit:
    def edit(doc: dict[str, Any]) -> None:
        step = next(s for s in doc["jobs"][name]["steps"] if "uses" in s)
        step["uses"] = step["uses"].split("@")[0] + "@v7"
    return edit


def remove_need(name: str, need: str) -> Edit:
    def edit(doc: dict[str, Any]) -> None:
        doc["jobs"][name]["needs"] = [n for n in doc["jobs"][name]["needs"] if n != need]
    return edit


def concurrency(name: str, group: str) -> Edit:
    return job(name, "concurrency", {"group": group, "cancel-in-progress": False})


def image_download_quiet(doc: dict[str, Any]) -> None:
    step = next(s for s in doc["jobs"]["build"]["steps"] if s.get("uses", "").startswith("actions/download-artifact@"))
    step["continue-on-error"] = True


def upload_if(condition: str | None, name: str = "build") -> Edit:
    def edit(doc: dict[str, Any]) -> None:
        step = next(s for s in doc["jobs"][name]["steps"] if s.get("uses", "").startswith("actions/upload-artifact@"))
        if condition is None:
            del step["if"]
        else:
            step["if"] = condition
    return edit


def smoke_record(name: str | None) -> Edit:
    """The smoke job's record upload renamed (one name for every target), or gone (None)."""
    def edit(doc: dict[str, Any]) -> None:
        smoke = doc["jobs"]["smoke"]
        step = next(s for s in smoke["steps"] if s.get("uses", "").startswith("actions/upload-artifact@"))
        if name is None:
            smoke["steps"].remove(step)
        else:
            step["with"]["name"] = name
    return edit


def pypi_steps(keep: int) -> Edit:
    def edit(doc: dict[str, Any]) -> None:
        found = [s for s in doc["jobs"]["publish"]["steps"] if "gh-action-pypi-publish" in s.get("uses", "")]
        doc["jobs"]["publish"]["steps"] = [s for s in doc["jobs"]["publish"]["steps"] if s not in found[keep:]]
    return edit


def batch_call(command: str) -> Edit:
    def edit(doc: dict[str, Any]) -> None:
        step = next(s for s in doc["jobs"]["publish"]["steps"] if "ci/batches.sh" in s.get("run", ""))
        step["run"] = command
    return edit


def pypi_before_index(doc: dict[str, Any]) -> None:
    """The order of old: PyPI straight after the provenance, the indexes after PyPI."""
    doc["jobs"]["publish"]["needs"] = ["plan", "provenance"]
    doc["jobs"]["deploy"]["needs"] = ["plan", "publish"]


def index_after_upload_in_one_job(doc: dict[str, Any]) -> None:
    """One job that uploads to PyPI and only then publishes the index."""
    deploy = [s for s in doc["jobs"]["deploy"]["steps"] if "ci/deploy-index.sh" in s.get("run", "")]
    doc["jobs"]["publish"]["steps"] += deploy


def add_step(name: str, run: str) -> Edit:
    def edit(doc: dict[str, Any]) -> None:
        doc["jobs"][name]["steps"].append({"run": run})
    return edit


def publish_channel(channel: str) -> Edit:
    def edit(doc: dict[str, Any]) -> None:
        step = next(s for s in doc["jobs"]["candidate"]["steps"] if "builders publish" in s.get("run", ""))
        step["run"] = step["run"].replace("--channel test", f"--channel {channel}")
    return edit


def session_seconds(name: str, value: Any) -> Edit:
    """The step of job ``name`` that runs ci/bucket-credentials.sh, passing ``value`` (None: passing none)."""
    def edit(doc: dict[str, Any]) -> None:
        step = next(s for s in doc["jobs"][name]["steps"] if "ci/bucket-credentials.sh" in s.get("run", ""))
        if value is None:
            step.pop("env", None)
        else:
            step["env"] = {"BUCKET_SESSION_SECONDS": value}
    return edit


# The build job's condition before candidates failed closed: images were required only on a release.
FAIL_OPEN = ("${{ !cancelled() && needs.plan.result == 'success' && (needs.images.result == 'success' || "
             "needs.plan.outputs.release != 'true') }}")


def largest_build() -> int:
    """The most targets one build job of the shipped plan holds (derived, so another Python moves it)."""
    targets, _ = expand(loader.load(ROOT / "matrix.yaml", builds=False))
    return max(len(group) for group in build_groups(targets))


def drop_wheel_steps_from(position: int) -> Edit:
    """The build job without its per-wheel uploads at ``position`` and after."""
    def edit(doc: dict[str, Any]) -> None:
        kept = []
        for step in doc["jobs"]["build"]["steps"]:
            name = str((step.get("with") or {}).get("name", ""))
            index = name.removeprefix("wheel-${{ fromJSON(matrix.ids)[").partition("]")[0]
            if not (name.startswith("wheel-") and index.isdigit() and int(index) >= position):
                kept.append(step)
        assert len(kept) < len(doc["jobs"]["build"]["steps"])
        doc["jobs"]["build"]["steps"] = kept
    return edit


def smoke_downloads_whole_build(doc: dict[str, Any]) -> None:
    step = next(s for s in doc["jobs"]["smoke"]["steps"] if "download-artifact" in s.get("uses", ""))
    step["with"] = {"name": "build-${{ matrix.build }}", "path": "wheelhouse"}


MUTATIONS: list[tuple[str, str, str, str, Edit]] = [
    # defect 6, as reported
    ("publish if always() ||", RELEASE, "publish", "if",
     job("publish", "if", "${{ always() || needs.plan.outputs.release == 'true' }}")),
    ("publish without environment pypi", RELEASE, "publish", "environment", drop("publish", "environment")),
    ("publish without id-token", RELEASE, "publish", "permissions", permission("publish", "id-token", None)),
    ("release-files if always()", RELEASE, "release-files", "if", job("release-files", "if", "${{ always() }}")),
    # the gates
    ("deploy without the release gate", RELEASE, "deploy", "if", job("deploy", "if", "github.ref_type == 'tag'")),
    ("publish gate inside an ||", RELEASE, "publish", "if",
     job("publish", "if", "needs.plan.outputs.release == 'true' || github.event_name == 'push'")),
    ("publish with !cancelled()", RELEASE, "publish", "if",
     job("publish", "if", "${{ !cancelled() && needs.plan.outputs.release == 'true' }}")),
    ("publish if the gate is negated", RELEASE, "publish", "if",
     job("publish", "if", "!(needs.plan.outputs.release == 'true')")),
    ("publish if unreadable", RELEASE, "publish", "if", job("publish", "if", "needs.plan.outputs.release ==")),
    ("deploy if always()", RELEASE, "deploy", "if", job("deploy", "if", "always() && needs.plan.outputs.release == 'true'")),
    ("release-files not waiting for the build", RELEASE, "release-files", "if",
     job("release-files", "if", "${{ !cancelled() && needs.plan.result == 'success' }}")),
    ("builds of a release over failed images", RELEASE, "build", "if",
     job("build", "if", "${{ !cancelled() && needs.plan.result == 'success' }}")),
    ("github-release for every run", RELEASE, "github-release", "if", job("github-release", "if", "always()")),
    ("github-release may only read", RELEASE, "github-release", "permissions",
     permission("github-release", "contents", "read")),
    ("github-release in one group for every tag", RELEASE, "github-release", "concurrency",
     concurrency("github-release", "release-github")),
    # needs
    ("publish straight after the plan", RELEASE, "publish", "needs", job("publish", "needs", ["plan"])),
    ("release-files before the builds", RELEASE, "publish", "needs", remove_need("release-files", "build")),
    # PyPI last: after every job that publishes the release index
    ("PyPI before the index", RELEASE, "publish", "needs", pypi_before_index),
    ("PyPI beside the index", RELEASE, "publish", "needs", job("publish", "needs", ["plan", "provenance"])),
    ("PyPI with no index job", RELEASE, "publish", "needs", lambda doc: doc["jobs"].pop("deploy")),
    ("the index after PyPI in one job", RELEASE, "publish", "steps", index_after_upload_in_one_job),
    ("provenance for any run", RELEASE, "provenance", "if", job("provenance", "if", "${{ !cancelled() }}")),
    ("provenance in the pypi environment", RELEASE, "provenance", "environment", job("provenance", "environment", "pypi")),
    # the channel lifecycle: nightly and candidate jobs in release.yml
    ("nightly on any run with a bucket", RELEASE, "nightly", "if", job("nightly", "if", "vars.INDEX_BUCKET != ''")),
    ("nightly with always()", RELEASE, "nightly", "if",
     job("nightly", "if", "always() && needs.plan.outputs.nightly == 'true'")),
    ("candidate gate inside an ||", RELEASE, "candidate", "if",
     job("candidate", "if", "needs.plan.outputs.candidate == 'true' || github.event_name == 'push'")),
    ("candidate in another environment", RELEASE, "candidate", "environment", job("candidate", "environment", "nightly")),
    ("nightly without an environment", RELEASE, "nightly", "environment", drop("nightly", "environment")),
    ("candidate without a concurrency group", RELEASE, "candidate", "concurrency", drop("candidate", "concurrency")),
    ("candidate straight after the plan", RELEASE, "candidate", "needs", job("candidate", "needs", ["plan"])),
    ("nightly without id-token for the bucket", RELEASE, "nightly", "permissions", permission("nightly", "id-token", None)),
    ("validate with id-token", RELEASE, "validate", "permissions", permission("validate", "id-token", "write")),
    ("the release channel from a build", RELEASE, "candidate", "steps", publish_channel("release")),
    ("promote-release in the building workflow", RELEASE, "release-files", "steps",
     add_step("release-files", "python -m builders promote-release --bucket s3://b/ --validation v.json")),
    ("the Pages path on with a bucket", RELEASE, "deploy", "if",
     job("provenance", "if", "needs.plan.outputs.release == 'true'")),
    # promote.yml: only promotes, approved, PyPI last
    ("promote outside the release environment", PROMOTE, "promote", "environment", job("promote", "environment", "indexes")),
    ("promote's PyPI beside the index", PROMOTE, "publish", "needs", drop("publish", "needs")),
    ("promote rebuilds", PROMOTE, "promote", "steps", add_step("promote", "nox -s build -- --target cpu-cp313-linux-x86_64")),
    ("promote without actions: read", PROMOTE, "promote", "permissions", permission("promote", "actions", None)),
    ("promote may write contents", PROMOTE, "promote", "permissions", permission("promote", "contents", "write")),
    ("promote's PyPI outside pypi", PROMOTE, "publish", "environment", job("publish", "environment", "release")),
    ("promote's PyPI one step for every batch", PROMOTE, "publish", "steps", pypi_steps(1)),
    ("promote over a failed job", PROMOTE, "publish", "needs", job("publish", "needs", [])),
    ("promote with no timeout", PROMOTE, "promote", "timeout-minutes", drop("promote", "timeout-minutes")),
    ("promote's checkout by tag", PROMOTE, "promote", "uses", unpin("promote")),
    # permissions: least privilege, and id-token only where something signs or publishes
    ("release-files with id-token", RELEASE, "release-files", "permissions",
     permission("release-files", "id-token", "write")),
    ("report with id-token", RELEASE, "report", "permissions", permission("report", "id-token", "write")),
    ("images without id-token", RELEASE, "images", "permissions", permission("images", "id-token", None)),
    ("plan may write contents", RELEASE, "plan", "permissions", permission("plan", "contents", "write")),
    ("build may write packages", RELEASE, "build", "permissions", permission("build", "packages", "write")),
    ("deploy may only read", RELEASE, "deploy", "permissions", permission("deploy", "contents", "read")),
    ("publish with write-all", RELEASE, "publish", "permissions", job("publish", "permissions", "write-all")),
    ("smoke may write packages", SHARD, "smoke", "permissions", permission("smoke", "packages", "write")),
    ("build without id-token for the compile cache", SHARD, "build", "permissions", permission("build", "id-token", None)),
    ("fewer wheel uploads than the largest build job", SHARD, "build", "steps", drop_wheel_steps_from(largest_build() - 1)),
    ("smoke downloads the whole build artifact", SHARD, "smoke", "steps", smoke_downloads_whole_build),
    ("smoke with id-token", SHARD, "smoke", "permissions", permission("smoke", "id-token", "write")),
    # environment
    ("publish in another environment", RELEASE, "publish", "environment", job("publish", "environment", "indexes")),
    ("release-files in pypi", RELEASE, "release-files", "environment", job("release-files", "environment", "pypi")),
    # concurrency: a group every tag shares cancels a waiting release
    ("publish in one group for every tag", RELEASE, "publish", "concurrency", concurrency("publish", "release-publish")),
    ("deploy in one group for every tag", RELEASE, "deploy", "concurrency", concurrency("deploy", "release-deploy")),
    # fail closed on images (a release and a candidate alike), logs on a timeout, one token per PyPI batch
    ("the shard not told it is a release", RELEASE, "build", "with", job("build", "with", {"shard": "${{ matrix.index }}"})),
    ("the shard not told a candidate fails closed", RELEASE, "build", "with",
     job("build", "with", {"shard": "${{ matrix.index }}", "release": "${{ needs.plan.outputs.release == 'true' }}"})),
    ("builds of a candidate over failed images", RELEASE, "build", "if", job("build", "if", FAIL_OPEN)),
    ("builds of any tag push over failed images", RELEASE, "build", "if",
     job("build", "if", "${{ !cancelled() && needs.plan.result == 'success' && "
                        "(needs.images.result == 'success' || github.event_name == 'push') }}")),
    ("no builds where no image is needed", RELEASE, "build", "if",
     job("build", "if", "${{ !cancelled() && needs.plan.result == 'success' && needs.images.result == 'success' }}")),
    ("builds that do not wait for the images", RELEASE, "build", "needs", job("build", "needs", ["plan"])),
    ("a build gate that cannot be judged", RELEASE, "build", "if",
     job("build", "if", "${{ !cancelled() && needs.plan.result == 'success' && contains(needs.images.result, 's') }}")),
    ("image download quiet on a release", SHARD, "build", "continue-on-error", image_download_quiet),
    ("log upload skipped on a timeout", SHARD, "build", "if", upload_if("${{ !cancelled() }}")),
    ("smoke record only on success", SHARD, "smoke", "if", upload_if(None, "smoke")),
    ("smoke record skipped on a timeout", SHARD, "smoke", "if", upload_if("${{ !cancelled() }}", "smoke")),
    ("no smoke record", SHARD, "smoke", "steps", smoke_record(None)),
    ("one smoke record for every target", SHARD, "smoke", "steps", smoke_record("smoke-records")),
    ("one PyPI step for every batch", RELEASE, "publish", "steps", pypi_steps(1)),
    ("a batch with no step", RELEASE, "publish", "steps", batch_call("ci/batches.sh release/dist pypi-batches 7 3000")),
    ("batches larger than planned", RELEASE, "publish", "steps", batch_call("ci/batches.sh release/dist pypi-batches 6 9000")),
    ("no batches", RELEASE, "publish", "steps", batch_call("true")),
    # the bucket's role session lasts the job
    ("bucket credentials without a session length", RELEASE, "candidate", "steps", session_seconds("candidate", None)),
    ("a role session shorter than the job", PROMOTE, "promote", "steps",
     session_seconds("promote", "${{ vars.BUCKET_SESSION_SECONDS || 900 }}")),
    ("a job longer than its role session", RELEASE, "nightly", "steps", job("nightly", "timeout-minutes", 120)),
    # pins and timeouts
    ("checkout by tag", RELEASE, "plan", "uses", unpin("plan")),
    ("checkout by tag in the shard", SHARD, "build", "uses", unpin("build")),
    ("no timeout", RELEASE, "publish", "timeout-minutes", drop("publish", "timeout-minutes")),
    ("a zero timeout", SHARD, "smoke", "timeout-minutes", job("smoke", "timeout-minutes", 0)),
]


def write(folder: Path, edits: dict[str, Edit]) -> Path:
    for name in (RELEASE, SHARD, PROMOTE):
        doc = copy.deepcopy(parsed(name))
        if name in edits:
            edits[name](doc)
        (folder / name).write_text(yaml.dump(doc, Dumper=DUMPER, sort_keys=False))
    return folder / RELEASE


DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml where PyYAML has it: each test writes 3 files


@functools.cache
def parsed(name: str) -> Any:
    """The committed workflow ``name``, parsed once for the module (each test edits a deep copy)."""
    return yaml.load((WORKFLOWS / name).read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


@pytest.fixture(scope="module")
def matrix() -> Any:
    return loader.load(ROOT / "matrix.yaml", builds=False)


def test_the_committed_workflows_pass(matrix: Any, tmp_path: Path) -> None:
    assert drift(matrix, write(tmp_path, {})) == []


@pytest.mark.parametrize(("what", "file", "name", "key", "edit"), MUTATIONS, ids=[m[0] for m in MUTATIONS])
def test_each_mutation_fails_naming_job_and_key(matrix: Any, tmp_path: Path, what: str, file: str, name: str,
                                                key: str, edit: Edit) -> None:
    problems = drift(matrix, write(tmp_path, {file: edit}))
    assert any(f"{file}: job {name!r}, key {key!r}:" in p for p in problems), (what, problems)


def test_the_old_fail_open_build_condition_is_refused_for_candidates(matrix: Any, tmp_path: Path) -> None:
    """The committed release.yml's text with the build job's condition put back as it was (images required only
    on a release): refused, naming the file, the job and the key, and saying it is a candidate that builds."""
    write(tmp_path, {})
    text = (WORKFLOWS / RELEASE).read_text()
    committed = next(line for line in text.splitlines() if line.startswith("    if: ") and "needs.images.result" in line)
    assert "needs.plan.outputs.candidate != 'true'" in committed
    (tmp_path / RELEASE).write_text(text.replace(committed, f"    if: {FAIL_OPEN}"))
    problems = drift(matrix, tmp_path / RELEASE)
    assert any(p.startswith("release.yml: job 'build', key 'if': runs the builds of a candidate whose images job "
                            "ended 'failure'") for p in problems), problems
    assert not any(": runs the builds of a release" in p for p in problems), problems  # a release was closed already


@pytest.mark.parametrize(("condition", "candidate_over_failed_images"), [
    ("needs.images.result == 'success' || needs.plan.outputs.release != 'true'", True),
    ("needs.images.result == 'success' || needs.plan.outputs.image_count == '0' || "
     "(needs.plan.outputs.release != 'true' && needs.plan.outputs.candidate != 'true')", False),
    ("needs.images.result == 'success' || !(needs.plan.outputs.release == 'true' || "
     "needs.plan.outputs.candidate == 'true')", False),
    ("needs.images.result != 'failure'", True),  # skipped images pass
    ("success()", False),
    ("always()", True),
    ("needs.images.result == 'success' || github.event_name == 'push'", True),  # a free value, tried as push
    ("needs.images.result == 'success' || needs.plan.outputs.candidate", True),  # 'false' is a true string
])
def test_the_images_gate_is_evaluated_as_github_would(condition: str, candidate_over_failed_images: bool) -> None:
    from builders.ci.workflow_rules import attested_run, outcomes

    results = {"plan": "success", "images": "skipped"}  # the images job did not run
    context = attested_run("candidate", results=results)
    assert (True in outcomes(ex.parse(f"${{{{ {condition} }}}}"), context, results)) is candidate_over_failed_images


@pytest.mark.parametrize("granted", ["write-all", {"contents": "write"}, {"contents": "read", "id-token": "write"}])
def test_workflow_level_permissions_grant_at_most_contents_read(matrix: Any, tmp_path: Path, granted: Any) -> None:
    problems = drift(matrix, write(tmp_path, {RELEASE: lambda doc: doc.__setitem__("permissions", granted)}))
    assert any("release.yml: key 'permissions' (workflow level)" in p for p in problems), problems


@pytest.mark.parametrize("on", [{"push": {"tags": ["v*"]}}, {"workflow_dispatch": {"inputs": {"version": {}}},
                                                             "schedule": [{"cron": "0 0 * * *"}]},
                                {"workflow_dispatch": {"inputs": {"run": {}}}}])
def test_the_promotion_is_dispatched_with_a_version_only(matrix: Any, tmp_path: Path, on: Any) -> None:
    def edit(doc: dict[str, Any]) -> None:
        doc.pop(True, None)
        doc["on"] = on
    problems = drift(matrix, write(tmp_path, {PROMOTE: edit}))
    assert any(p.startswith(("promote.yml: key 'on':", "promote.yml: job '(workflow)', key 'on':")) for p in problems), problems


def test_candidates_to_a_bucket_need_the_promotion_beside_them(matrix: Any, tmp_path: Path) -> None:
    write(tmp_path, {})
    (tmp_path / PROMOTE).unlink()
    problems = drift(matrix, tmp_path / RELEASE)
    assert any(f"but {PROMOTE}, which releases a validated candidate, is not beside it" in p for p in problems), problems


def test_a_workflow_level_group_shared_by_every_ref_is_refused(matrix: Any, tmp_path: Path) -> None:
    edit: Edit = lambda doc: doc.__setitem__("concurrency", {"group": "release"})  # noqa: E731
    problems = drift(matrix, write(tmp_path, {RELEASE: edit}))
    assert any("job '(workflow)', key 'concurrency'" in p for p in problems), problems


# -- the expression reader the gate rules rest on --------------------------------------------

@pytest.mark.parametrize(("text", "gate"), [
    ("needs.plan.outputs.release == 'true'", True),
    ("${{ 'true' == needs.plan.outputs.release && needs.x.result == 'success' }}", True),
    ("always() || needs.plan.outputs.release == 'true'", False),
    ("(needs.plan.outputs.release == 'true' || true)", False),
    ("needs.plan.outputs.release != 'true'", False),
    ("contains(needs.plan.outputs.release, 'true')", False),
])
def test_the_gate_is_a_term_not_a_substring(text: str, gate: bool) -> None:
    node = ex.parse(text)
    assert any(ex.equals(t, "needs.plan.outputs.release", "true") for t in ex.conjuncts(node)) is gate


def test_precedence_and_references() -> None:
    node = ex.parse("!cancelled() && needs['build'].result == 'success' || failure()")
    assert node.kind == "or" and node.args[0].kind == "and"
    assert ex.calls(node) == {"cancelled", "failure"}
    assert ex.references(node) == {"needs.build.result"}


def test_wheels_larger_than_the_batches_allow_need_more_steps(tmp_path: Path) -> None:
    """The size budget bounds each wheel: at 3 GB a wheel, every PyPI wheel is its own batch."""
    from builders.ci import disk
    from builders.matrix.targets import expand

    text = (ROOT / "matrix.yaml").read_text()
    assert "  wheel_size_budget_mb: 64\n" in text
    big = loader.loads(text.replace("  wheel_size_budget_mb: 64\n", "  wheel_size_budget_mb: 3000\n"), "matrix.yaml")
    targets, _ = expand(big)
    assert disk.batches_needed(big, targets) == len(disk.pypi_targets(big, targets)) > 6
    problems = drift(big, write(tmp_path, {}))
    assert any(f"need {len(disk.pypi_targets(big, targets))} upload batches and the job has 6 steps" in p
               for p in problems), problems


# -- the plan the lifecycle jobs read -------------------------------------------------------------

def test_a_nightly_plan_names_the_nightly_wheels(matrix: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the scheduled run's smoke jobs look for: every wheel with the channel's dev version of that date."""
    import datetime

    from builders import cli
    from builders.matrix.targets import expand

    monkeypatch.chdir(ROOT)
    out = tmp_path / "plan.json"
    argv = ["plan", "--format", "github", "--channel", "nightly", "--commit-date", "2026-12-01", "--output", str(out)]
    assert cli.main(argv) == 0
    plan = json.loads(out.read_text())
    nightly = matrix.on_channel("nightly", datetime.date(2026, 12, 1))
    targets, _ = expand(nightly)
    assert plan["nightly"] is True and plan["release"] is False and plan["version"] == str(nightly.project.version)
    assert {e["wheel"] for s in plan["shards"] for e in s["include"]} == {t.wheel_name for t in targets}
    assert all(".dev20261201+" in t.wheel_name for t in targets)


def test_a_nightly_is_never_a_release(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from builders import cli
    from builders.base.errors import SelectionError

    monkeypatch.chdir(ROOT)
    argv = ["plan", "--format", "github", "--channel", "nightly", "--commit-date", "2026-12-01", "--release-tag",
            "v2.15.0", "--output", str(tmp_path / "plan.json")]
    assert cli.main(argv) == SelectionError.exit_code
    assert not (tmp_path / "plan.json").exists()


# -- what one promote.yml job hands the next --------------------------------------------------------

def _steps_running(job: dict[str, Any], script: str) -> list[list[str]]:
    """The arguments of every ``bash ci/<script> ...`` line in the job's run steps."""
    calls = []
    for step in job["steps"]:
        for line in str(step.get("run", "")).splitlines():
            words = line.split()
            if words[:2] == ["bash", f"ci/{script}"]:
                calls.append(words[2:])
    return calls


def _artifact_paths(job: dict[str, Any], action: str) -> dict[str, str]:
    """Artifact name -> path of each ``actions/<action>-artifact`` step of the job."""
    return {s["with"]["name"]: s["with"]["path"].rstrip("/") for s in job["steps"]
            if str(s.get("uses", "")).startswith(f"actions/{action}-artifact@") and "name" in s.get("with", {})}


def test_the_github_release_gets_the_promotion_s_attestation_bundles() -> None:
    """The bundles promote writes ride in its uploaded artifact and are the folder github-release attaches:
    a path that only exists in the other job (``attestations``) leaves the release without them."""
    jobs = parsed(PROMOTE)["jobs"]
    [[written, *_]] = _steps_running(jobs["promote"], "attestation-bundles.sh")
    [[_tag, _plan, _site, bundles, _out]] = _steps_running(jobs["github-release"], "github-release.sh")
    assert bundles == written
    uploaded = _artifact_paths(jobs["promote"], "upload")
    downloaded = _artifact_paths(jobs["github-release"], "download")
    carriers = [name for name, path in uploaded.items() if written.startswith(path + "/")]
    assert carriers and all(downloaded.get(name) == uploaded[name] for name in carriers), (uploaded, downloaded)
