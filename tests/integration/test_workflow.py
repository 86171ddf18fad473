"""The release workflow: linted for real, pinned to real releases, in step with the plan it
consumes, and its ci/ scripts run here the way the jobs run them."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from packaging.version import Version

from builders.ci import jobs as ci
from builders.ci.workflow import drift
from builders.families import loader as matrix
from builders.matrix.targets import expand
from tests import helpers
from tests.unit.test_ci_shards import synthetic

WORKFLOWS = Path(".github/workflows")
WORKFLOW = WORKFLOWS / "release.yml"
SHARD = WORKFLOWS / "release-shard.yml"
PROMOTE = WORKFLOWS / "promote.yml"
FILES = (WORKFLOW, SHARD, PROMOTE)

# Node 24 majors of the actions/* we use (Node 20 runners are retired in 2026), and the releases
# that first do what the release needs: free-threaded "3.14t" (setup-python 5.5.0), twine that
# reads Metadata-Version 2.4 (gh-action-pypi-publish 1.14), attestations with only subject inputs.
MINIMUMS = {
    "actions/checkout": "5.0.0",
    "actions/setup-python": "6.0.0",
    "actions/upload-artifact": "6.0.0",
    "actions/download-artifact": "6.0.0",
    "actions/cache": "5.0.0",
    "actions/attest": "4.0.0",
    "astral-sh/setup-uv": "6.0.0",
    "pypa/gh-action-pypi-publish": "1.14.0",
}
FREE_THREADED_SETUP_PYTHON = Version("5.5.0")
USES = re.compile(r"^\s*(?:-\s+)?uses:\s*(\S+)(.*)$", re.M)


def builders(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return helpers.builders(*args, cwd=cwd, timeout=120)


def tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent))
    assert found, f"{name} is a test dependency (pyproject [test] extra)"
    return found


def script(root: Path, name: str, *args: str, env: dict[str, str] | None = None,
           cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(root / "ci" / name), *args], cwd=cwd or root, text=True, capture_output=True,
                          timeout=120, env={**os.environ, **(env or {})})


def plan_ids(stdout: str) -> set[str]:
    return {e["id"] for s in json.loads(stdout)["shards"] for e in s["include"]}


# -- linters ---------------------------------------------------------------------------------

def test_workflow_check_runs_zizmor_and_actionlint_and_the_committed_workflows_are_clean(root: Path) -> None:
    proc = builders("workflow", "--check", cwd=root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    said = proc.stdout + proc.stderr
    assert "zizmor" in said and "actionlint" in said and f"in the {len(list((root / WORKFLOWS).glob('*.y*ml')))} " in said


def repository_copy(root: Path, tmp_path: Path) -> Path:
    """The repository's workflows (and lint and release policies) in ``tmp_path/.github``: what ``workflow --check``
    reads there."""
    shutil.copytree(root / WORKFLOWS, tmp_path / WORKFLOWS)
    for config in (".github/workflow-lint.yml", ".github/workflow-policy.yml"):
        if (root / config).is_file():
            shutil.copy(root / config, tmp_path / config)
    return tmp_path / WORKFLOW


def check_copy(root: Path, release: Path) -> subprocess.CompletedProcess[str]:
    return builders("workflow", "--check", "--matrix", str(root / "matrix.yaml"), "--workflow", str(release), cwd=root)


INJECTED = 'run: bash ci/disk.sh before plan/plan.json . "${{ github.event.head_commit.message }}"'


def test_an_attacker_controlled_context_in_run_is_refused_by_both_linters(root: Path, tmp_path: Path) -> None:
    release = repository_copy(root, tmp_path)
    text = release.read_text()
    old = "run: bash ci/disk.sh before plan/plan.json ."
    assert old in text
    release.write_text(text.replace(old, INJECTED, 1))
    line = next(n for n, row in enumerate(release.read_text().splitlines(), 1) if INJECTED in row)
    proc = check_copy(root, release)
    assert proc.returncode == 17, proc.stdout + proc.stderr
    assert f".github/workflows/release.yml:{line}: zizmor [template-injection]" in proc.stderr, proc.stderr
    assert f".github/workflows/release.yml:{line}: actionlint [expression]" in proc.stderr, proc.stderr


FOURTH = """name: sneaky
on: [push]
permissions: {}
jobs:
  upload:
    runs-on: ubuntu-24.04
    steps:
      - uses: actions/checkout@v4
      - run: echo upload
"""


def test_a_fourth_workflow_file_is_linted_and_an_ignore_needs_its_reason(root: Path, tmp_path: Path) -> None:
    release = repository_copy(root, tmp_path)
    (tmp_path / WORKFLOWS / "sneaky.yml").write_text(FOURTH)
    proc = check_copy(root, release)
    assert proc.returncode == 17, proc.stdout + proc.stderr
    assert ".github/workflows/sneaky.yml:8: zizmor [unpinned-uses]" in proc.stderr, proc.stderr
    assert ".github/workflows/sneaky.yml:8: zizmor [artipacked]" in proc.stderr, proc.stderr

    policy = tmp_path / ".github/workflow-lint.yml"
    policy.write_text("ignore:\n  - {tool: zizmor, rule: unpinned-uses, file: .github/workflows/sneaky.yml}\n")
    refused = check_copy(root, release)
    assert refused.returncode == 17 and "ignore[0]: reason missing" in refused.stderr, refused.stderr
    policy.write_text("ignore:\n  - {tool: zizmor, rule: unpinned-uses, file: .github/workflows/sneaky.yml,\n"
                      "     reason: the test's own workflow}\n")
    let_through = check_copy(root, release)
    assert "unpinned-uses" not in let_through.stderr and "[artipacked]" in let_through.stderr, let_through.stderr


def test_ci_scripts_lint_clean(root: Path) -> None:
    proc = subprocess.run([tool("shellcheck"), *map(str, sorted((root / "ci").glob("*.sh")))], text=True,
                          capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stdout


# -- pins ----------------------------------------------------------------------------------

def pins(root: Path) -> list[tuple[str, str, str, str]]:
    """(file, action, ref, comment) of every `uses:` in the release workflows."""
    return [(f.name, m.group(1).split("@")[0], m.group(1).partition("@")[2], m.group(2).strip())
            for f in FILES for m in USES.finditer((root / f).read_text())]


def test_every_action_is_pinned_to_a_commit_with_its_release_in_a_comment(root: Path) -> None:
    found = [p for p in pins(root) if not p[1].startswith(("./", "$/"))]
    assert found
    for name, action, ref, comment in found:
        assert re.fullmatch(r"[0-9a-f]{40}", ref), f"{name}: {action}@{ref} is not a commit"
        assert re.fullmatch(r"# v\d+\.\d+\.\d+", comment), f"{name}: {action}@{ref} has no `# vX.Y.Z` comment"


def test_pinned_releases_meet_the_minimums(root: Path) -> None:
    for name, action, _, comment in pins(root):
        if action.startswith(("./", "$/")):
            continue
        assert action in MINIMUMS, f"{name}: {action} has no minimum release here; add it to MINIMUMS"
        assert Version(comment[3:]) >= Version(MINIMUMS[action]), f"{name}: {action} {comment} < {MINIMUMS[action]}"


def test_one_commit_per_action_and_release(root: Path) -> None:
    seen: dict[str, set[tuple[str, str]]] = {}
    for _, action, ref, comment in pins(root):
        seen.setdefault(action, set()).add((ref, comment))
    assert {a: len(s) for a, s in seen.items() if len(s) > 1} == {}


def test_free_threaded_pythons_are_set_up_by_something_that_supports_them(root: Path) -> None:
    """Whatever installs ``matrix.python`` (3.14t among them) must understand free-threaded versions."""
    for f in FILES:
        for job in yaml.safe_load((root / f).read_text())["jobs"].values():
            for step in job.get("steps", []):
                uses, given = step.get("uses", ""), json.dumps(step.get("with", {}))
                if "matrix.python" in given and uses.startswith("actions/setup-python@"):
                    version = re.search(r"setup-python@\S+ # v([\d.]+)", (root / f).read_text()).group(1)
                    assert Version(version) >= FREE_THREADED_SETUP_PYTHON
                if "PYTHON" in step.get("env", {}) and "matrix.python" in str(step["env"]["PYTHON"]):
                    setup = [s.get("uses", "") for s in job["steps"]]
                    assert any(u.startswith("astral-sh/setup-uv@") for u in setup), "uv installs matrix.python"


# -- the plan, as the workflow consumes it ---------------------------------------------------

def test_plan_job_command_produces_the_shards(root: Path) -> None:
    # The plan job's command, as the workflow runs it (nox forwards to this).
    proc = builders("plan", "--format", "github", "--select", "*", cwd=root)
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    targets, _ = expand(matrix.load(root / "matrix.yaml"))
    assert plan_ids(proc.stdout) == {t.id for t in targets}
    used = {"id", "runner", "engine", "python", "smoke_runner", "wheel", "device", "variant"}
    assert all(used <= entry.keys() for s in plan["shards"] for entry in s["include"])
    assert builders("workflow", "--check", cwd=root).returncode == 0


def test_adding_a_python_changes_the_plan_and_needs_no_workflow_edit(root: Path) -> None:
    text = (root / "matrix.yaml").read_text()
    last = yaml.safe_load(text)["pythons"][-1]
    copy = root / ".grown-plan-matrix.yaml"  # beside the original: its relative paths keep their meaning
    copy.write_text(text.replace(f'  - "{last}"\n', f'  - "{last}"\n  - "3.16"\n', 1))
    try:
        before = plan_ids(builders("plan", "--format", "github", cwd=root).stdout)
        ids = plan_ids(builders("plan", "--format", "github", "--matrix", str(copy), cwd=root).stdout)
        added = {i.replace("-cp315-", "-cp316-") for i in before if "-cp315-" in i}
        assert ids == before | added and "cu132-cp316-linux-x86_64" in ids
        assert drift(matrix.load(copy), root / WORKFLOW) == []
        assert builders("workflow", "--check", "--matrix", str(copy), cwd=root).returncode == 0
    finally:
        copy.unlink()


def test_ci_plan_sh_hands_every_shard_of_a_1000_target_plan_to_its_job(root: Path, tmp_path: Path,
                                                                        shipped_text: str) -> None:
    targets, _ = expand(matrix.loads(synthetic(shipped_text), root / "matrix.yaml"))
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(ci.github_plan(targets), sort_keys=True))
    out = tmp_path / "plan-job.out"
    proc = script(root, "plan.sh", "outputs", str(plan), env={"GITHUB_OUTPUT": str(out)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    outputs = dict(line.split("=", 1) for line in out.read_text().splitlines())
    shards = json.loads(outputs["shards"])["include"]
    assert int(outputs["image_count"]) == len(json.loads(outputs["images"])["include"])
    seen: list[str] = []
    for shard in shards:
        out = tmp_path / f"shard-{shard['index']}.out"
        proc = script(root, "plan.sh", "shard", str(plan), str(shard["index"]), env={"GITHUB_OUTPUT": str(out)})
        assert proc.returncode == 0, proc.stdout + proc.stderr
        written = dict(line.split("=", 1) for line in out.read_text().splitlines())
        include = json.loads(written["include"])["include"]
        builds = json.loads(written["builds"])["include"]
        assert 0 < len(include) == shard["count"] <= 256 and 0 < len(builds) <= 256
        assert sorted(t for b in builds for t in b["targets"].split()) == sorted(e["id"] for e in include)
        seen += [e["id"] for e in include]
    assert sorted(seen) == sorted(t.id for t in targets)
    assert outputs["release"] == "false"  # a plan without --release-tag never releases


@pytest.mark.parametrize("content", ["", "not json", '{"include": []}', '{"shards": [], "images": []}'])
def test_ci_plan_sh_refuses_what_is_not_a_plan(root: Path, tmp_path: Path, content: str) -> None:
    (tmp_path / "plan.json").write_text(content)
    out = tmp_path / "out"
    proc = script(root, "plan.sh", "outputs", str(tmp_path / "plan.json"), env={"GITHUB_OUTPUT": str(out)})
    assert proc.returncode != 0
    assert not out.exists() or out.read_text() == ""


# -- drift: the contract and the gates -----------------------------------------------------

# The provenance job's first attestation (the nightly and candidate jobs attest their own wheels before it in the file).
PROVENANCE_DIGESTS = "        run: bash ci/provenance.sh provenance release/wheels release/dist release/variants\n"
PROVENANCE_ATTEST = (PROVENANCE_DIGESTS + "      - uses: actions/attest@1e69f48acb82d1966a394da916b4c1698aa569d6 # v4.2.2\n"
                     "        id: attest-1\n        with:\n          subject-checksums: provenance/subjects-1.sha256\n")


def edited(root: Path, tmp_path: Path, file: Path, old: str, new: str) -> Path:
    for f in FILES:
        shutil.copy(root / f, tmp_path / f.name)
    text = (tmp_path / file.name).read_text()
    assert old in text, old
    (tmp_path / file.name).write_text(text.replace(old, new, 1))
    return tmp_path / WORKFLOW.name


@pytest.mark.parametrize(
    ("file", "old", "new", "expected"),
    [
        (SHARD, "ENGINE: ${{ matrix.engine }}", "ENGINE: ${{ matrix.builder }}", "matrix.builder"),
        (WORKFLOW, "nox -s plan -- --format github --output", "nox -s plan -- --json --output", "plan job does not run"),
        (SHARD, 'nox -s build -- "${args[@]}" --engine "$ENGINE" --output wheelhouse --jobs 2', "make wheels",
         "build job does not run"),
        (SHARD, "matrix: ${{ fromJSON(needs.shard.outputs.builds) }}", "matrix: ${{ fromJSON(needs.shard.outputs.include) }}",
         "job 'build' does not take its matrix from the shard"),
        # a rerun repeats artifact names: every upload overwrites
        (SHARD, "          name: build-${{ matrix.id }}\n          path: wheelhouse/\n          if-no-files-found: error\n"
                "          overwrite: true\n", "          name: build-${{ matrix.id }}\n          path: wheelhouse/\n",
         "uploads 'build-${{ matrix.id }}' without overwrite: true"),
        # a smoke job with no wheel must fail
        (SHARD, "      - uses: actions/download-artifact@3e5f45b2cfb9172054b4087a40e8e0b5a5461e7c # v8.0.1\n        with:\n"
                "          pattern: wheel-${{ matrix.id }}",
         "      - uses: actions/download-artifact@3e5f45b2cfb9172054b4087a40e8e0b5a5461e7c # v8.0.1\n"
         "        continue-on-error: true\n        with:\n          pattern: wheel-${{ matrix.id }}",
         "the smoke job's download may fail quietly"),
        # only a release the plan accepted publishes
        (WORKFLOW, "    if: needs.plan.outputs.release == 'true'\n    runs-on: ubuntu-24.04\n    timeout-minutes: 30\n"
                   "    environment: indexes",
         "    if: startsWith(github.ref, 'refs/tags/v')\n    runs-on: ubuntu-24.04\n    timeout-minutes: 30\n"
         "    environment: indexes",
         "job 'deploy', key 'if': the release gate"),
        (WORKFLOW, '--event "$EVENT" ', "", "the plan job never passes --event"),
        (WORKFLOW, "matrix: ${{ fromJSON(needs.plan.outputs.shards) }}", "matrix: {index: [0]}",
         "once per shard of the plan"),
        (SHARD, "bash ci/plan.sh shard", "bash ci/other.sh shard", "extracts the shard's matrix"),
        # a GPU smoke job must fail on a runner that shows no GPU
        (SHARD, 'args=(--require-device)', 'args=()', "does not smoke-test with --require-device"),
        (WORKFLOW, "uses: ./.github/workflows/release-shard.yml", "uses: ./.github/workflows/gone.yml",
         "calls gone.yml, which is not beside it"),
        # every job has a timeout
        (WORKFLOW, "    runs-on: ubuntu-24.04\n    timeout-minutes: 15\n", "    runs-on: ubuntu-24.04\n",
         "job 'plan', key 'timeout-minutes': missing"),
        (SHARD, "    timeout-minutes: 240\n", "", "job 'build', key 'timeout-minutes': missing"),
        # smoke jobs must not wait for every build to succeed
        (SHARD, "    if: ${{ !cancelled() && needs.shard.result == 'success' }}\n    name: smoke", "    name: smoke",
         "smoke jobs run only when every build succeeded"),
        # no wheels published without provenance
        (WORKFLOW, PROVENANCE_ATTEST, PROVENANCE_DIGESTS, "job 'deploy' publishes wheels without build provenance"),
        (WORKFLOW, PROVENANCE_ATTEST, PROVENANCE_ATTEST.replace("subject-checksums: provenance/subjects-1.sha256",
                                                                "show-summary: false"),
         "job 'publish' publishes wheels without build provenance"),
        (WORKFLOW, "    needs: [plan, provenance]\n", "    needs: [plan, release-files]\n",
         "job 'deploy' publishes wheels without build provenance"),
        # PyPI last: the index deploy before the upload
        (WORKFLOW, "    needs: [plan, deploy]\n", "    needs: [plan, provenance]\n",
         "job 'publish', key 'needs': uploads to PyPI without coming after 'deploy'"),
    ],
)
def test_drift_is_detected(root: Path, tmp_path: Path, file: Path, old: str, new: str, expected: str) -> None:
    release = edited(root, tmp_path, file, old, new)
    problems = drift(matrix.load(root / "matrix.yaml"), release)
    assert any(expected in p for p in problems), problems
    proc = builders("workflow", "--check", "--workflow", str(release), cwd=root)
    assert proc.returncode == 17, proc.stderr
    assert expected in proc.stderr


def test_the_committed_workflows_are_in_step(root: Path) -> None:
    assert drift(matrix.load(root / "matrix.yaml"), root / WORKFLOW) == []


def test_an_attestation_after_the_upload_is_no_provenance(root: Path, tmp_path: Path) -> None:
    text = (root / WORKFLOW).read_text()
    attest = PROVENANCE_ATTEST.removeprefix(PROVENANCE_DIGESTS)
    release = edited(root, tmp_path, WORKFLOW, PROVENANCE_ATTEST, PROVENANCE_DIGESTS)
    release.write_text(release.read_text() + attest)  # now the last step of github-release, after its upload
    assert text.rstrip().endswith('run: bash ci/github-release.sh "$TAG" plan/plan.json site attestations github-release')
    problems = drift(matrix.load(root / "matrix.yaml"), release)
    assert any("job 'github-release' publishes wheels without build provenance" in p for p in problems), problems
    assert any("job 'deploy' publishes wheels without build provenance" in p for p in problems), problems


def test_report_merges_every_build_jobs_results(root: Path, tmp_path: Path) -> None:
    """The report job passes one --results per downloaded build artifact (ci/report.sh)."""
    from builders.pipeline import results

    results.record(tmp_path / "a" / "results.json", results.Result(id="cu132-cp312-linux-x86_64", status="built",
                                                                   engine="container"))
    results.record(tmp_path / "b" / "results.json", results.Result(id="cpu-cp313-macos-arm64", status="failed",
                                                                   engine="cibw", stage="smoke", reason="x"))
    proc = builders("report", "--results", str(tmp_path / "a/results.json"), "--results", str(tmp_path / "b/results.json"),
                    "--output", str(tmp_path / "out"), cwd=root)
    assert proc.returncode == 0, proc.stderr
    cells = {c["id"]: c for c in json.loads((tmp_path / "out/compatibility.json").read_text())["cells"]}
    assert cells["cu132-cp312-linux-x86_64"]["status"] == "built"
    assert cells["cpu-cp313-macos-arm64"]["status"] == "failed"
    assert "--results" in (root / "ci/report.sh").read_text()


# -- the ci/ scripts, run as the jobs run them ------------------------------------------------

def fake_tools(folder: Path, **tools: str) -> dict[str, str]:
    """Executables named after ``tools``, each a bash script body; the environment that finds them first."""
    folder.mkdir(exist_ok=True)
    for name, body in tools.items():
        path = folder / name
        path.write_text(f"#!/usr/bin/env bash\necho \"{name} $*\" >> {folder}/calls\n{body}\n")
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return {"PATH": f"{folder}:{os.environ['PATH']}"}


DRY_RUN = ("echo \"podman build --file builders/resources/containers/cuda.Containerfile --tag localhost/builders-cuda:0123456789abcdef "
           "--build-arg 'TOOLKIT_REQUIREMENTS=a\nb' docker\"")


DIGEST = "sha256:" + "ab" * 32


# podman login as podman writes it: `auths` of the file --authfile names.
LOGIN = ('[[ "$1" == login ]] && { file=$3; mkdir -p "$(dirname "$file")"; '
         'printf \'{"auths": {"%s": {"auth": "%s"}}}\' "${@: -1}" "$(printf \'me:t\' | base64)" > "$file"; }')


def test_images_sh_always_builds_and_hands_on_the_pushed_digest(root: Path, tmp_path: Path) -> None:
    """A tag in the registry proves nothing about what it holds: build, push, record the digest."""
    env = fake_tools(tmp_path / "bin", nox=f'[[ "$*" == *--dry-run* ]] && {DRY_RUN}; true',
                     podman=f'{LOGIN}; [[ "$1" == push ]] && echo {DIGEST} > "$3"; true')
    env |= {"GITHUB_REPOSITORY": "Org/Repo", "REGISTRY_USER": "me", "REGISTRY_TOKEN": "t",
            "GITHUB_OUTPUT": str(tmp_path / "outputs"), "HOME": str(tmp_path / "home")}
    proc = script(root, "images.sh", "push", "cu132-cp312-linux-x86_64", str(tmp_path / "image/ref"), env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    calls = (tmp_path / "bin/calls").read_text()
    assert "nox -s images -- --target cu132-cp312-linux-x86_64 --container-engine podman" in calls
    assert "podman push --digestfile" in calls
    name = "ghcr.io/org/repo/builders-cuda"
    assert (tmp_path / "image/ref").read_text().strip() == f"{name}@{DIGEST}"
    assert (tmp_path / "outputs").read_text().splitlines() == [f"name={name}", f"digest={DIGEST}"]
    # where actions/attest reads registry credentials (sigstore's OCI helper), not podman's default
    assert f"podman login --authfile {tmp_path}/home/.docker/config.json --username me --password-stdin ghcr.io" in calls
    assert "ghcr.io" in json.loads((tmp_path / "home/.docker/config.json").read_text())["auths"]


def test_images_sh_refuses_a_login_attest_could_not_read(root: Path, tmp_path: Path) -> None:
    """A login that leaves nothing in ~/.docker/config.json (podman's own auth.json, a credential
    store) would sign the image's attestation and then fail to push it: fail at the login."""
    env = fake_tools(tmp_path / "bin", nox=f'[[ "$*" == *--dry-run* ]] && {DRY_RUN}; true',
                     podman=f'[[ "$1" == login ]] && {{ mkdir -p "$(dirname "$3")"; echo "{{}}" > "$3"; }}; '
                            f'[[ "$1" == push ]] && echo {DIGEST} > "$3"; true')
    env |= {"GITHUB_REPOSITORY": "org/repo", "REGISTRY_USER": "me", "REGISTRY_TOKEN": "t", "HOME": str(tmp_path / "home")}
    proc = script(root, "images.sh", "push", "cu132-cp312-linux-x86_64", str(tmp_path / "ref"), env=env)
    assert proc.returncode != 0 and "where actions/attest reads them" in proc.stdout, proc.stdout + proc.stderr
    assert "podman push" not in (tmp_path / "bin/calls").read_text()


def test_images_sh_pull_on_a_release_fails_without_the_attested_image(root: Path, tmp_path: Path) -> None:
    env = fake_tools(tmp_path / "bin", nox=DRY_RUN, podman="true") | {"GITHUB_REPOSITORY": "org/repo", "RELEASE": "true"}
    proc = script(root, "images.sh", "pull", "cu132-cp312-linux-x86_64", str(tmp_path / "absent"), env=env)
    assert proc.returncode != 0 and "a release builds only in images its images jobs pushed and attested" in proc.stdout
    assert "podman build" not in (tmp_path / "bin/calls").read_text() if (tmp_path / "bin/calls").exists() else True


def test_images_sh_push_fails_without_a_digest(root: Path, tmp_path: Path) -> None:
    env = fake_tools(tmp_path / "bin", nox=f'[[ "$*" == *--dry-run* ]] && {DRY_RUN}; true', podman="true")
    env |= {"GITHUB_REPOSITORY": "org/repo"}
    proc = script(root, "images.sh", "push", "cu132-cp312-linux-x86_64", str(tmp_path / "ref"), env=env)
    assert proc.returncode != 0 and "no digest" in proc.stdout
    assert not (tmp_path / "ref").exists()


def test_images_sh_pulls_exactly_the_digest_and_tags_it_locally(root: Path, tmp_path: Path) -> None:
    ref = tmp_path / "ref"
    ref.write_text(f"ghcr.io/org/repo/builders-cuda@{DIGEST}\n")
    env = fake_tools(tmp_path / "bin", nox=DRY_RUN, podman="true") | {"GITHUB_REPOSITORY": "org/repo"}
    proc = script(root, "images.sh", "pull", "cu132-cp312-linux-x86_64", str(ref), env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    calls = (tmp_path / "bin/calls").read_text().splitlines()
    assert f"podman pull ghcr.io/org/repo/builders-cuda@{DIGEST}" in calls
    assert f"podman tag ghcr.io/org/repo/builders-cuda@{DIGEST} localhost/builders-cuda:0123456789abcdef" in calls


def test_images_sh_pull_tells_a_missing_image_from_one_it_cannot_pull(root: Path, tmp_path: Path) -> None:
    """No reference (the images job failed): the build builds it. A reference that fails: an error."""
    env = fake_tools(tmp_path / "bin", nox=DRY_RUN, podman='[[ "$1" == pull ]] && exit 1; true')
    env |= {"GITHUB_REPOSITORY": "org/repo"}
    proc = script(root, "images.sh", "pull", "cu132-cp312-linux-x86_64", str(tmp_path / "absent"), env=env)
    assert proc.returncode == 0 and "::warning::" in proc.stdout
    ref = tmp_path / "ref"
    ref.write_text(f"ghcr.io/org/repo/builders-cuda@{DIGEST}")
    proc = script(root, "images.sh", "pull", "cu132-cp312-linux-x86_64", str(ref), env=env)
    assert proc.returncode != 0 and "cannot pull" in proc.stdout
    ref.write_text("ghcr.io/org/repo/builders-cuda:latest")
    proc = script(root, "images.sh", "pull", "cu132-cp312-linux-x86_64", str(ref), env=env)
    assert proc.returncode != 0 and "not a reference by digest" in proc.stdout


def site_with_wheels(folder: Path) -> list[Path]:
    wheels = [folder / "whl/cu132/minifw/minifw-2.15.0+cu132-cp312-cp312-manylinux_2_28_x86_64.whl",
              folder / "whl/cu132/cuda-toolkit/cuda_toolkit-13.2.2-py3-none-manylinux_2_28_x86_64.whl",
              folder / "whl/cpu/minifw/minifw-2.15.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl"]
    for i, w in enumerate(wheels):
        w.parent.mkdir(parents=True, exist_ok=True)
        w.write_bytes(b"wheel %d" % i)
        (w.parent / "index.html").write_text("<a>")
    return wheels


def test_checksums_sh_writes_sha256sums_beside_each_index(root: Path, tmp_path: Path) -> None:
    wheels = site_with_wheels(tmp_path / "site")
    assert script(root, "checksums.sh", str(tmp_path / "site")).returncode == 0
    for label in ("cu132", "cpu"):
        index = tmp_path / "site/whl" / label
        check = subprocess.run(["sha256sum", "--check", "--strict", "SHA256SUMS"], cwd=index, capture_output=True,
                               text=True, timeout=60)
        assert check.returncode == 0, check.stdout + check.stderr
        listed = {line.split("  ", 1)[1] for line in (index / "SHA256SUMS").read_text().splitlines()}
        assert listed == {str(w.relative_to(index)) for w in wheels if index in w.parents}


def test_provenance_sh_lists_every_wheel_in_lists_attest_accepts(root: Path, tmp_path: Path) -> None:
    for i in range(1030):
        (tmp_path / "wheels").mkdir(exist_ok=True)
        (tmp_path / "wheels" / f"w-{i}.whl").write_bytes(b"%d" % i)
    (tmp_path / "dist").mkdir()
    (tmp_path / "dist/minifw-2.15.0.whl").write_bytes(b"pypi")
    proc = script(root, "provenance.sh", str(tmp_path / "out"), str(tmp_path / "wheels"), str(tmp_path / "dist"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lists = sorted((tmp_path / "out").glob("subjects-*.sha256"))
    assert [p.name for p in lists] == ["subjects-1.sha256", "subjects-2.sha256"]
    lines = [line for p in lists for line in p.read_text().splitlines()]
    assert all(len(p.read_text().splitlines()) <= 1024 for p in lists) and len(lines) == 1031
    digest = hashlib.sha256(b"pypi").hexdigest()
    assert f"{digest}  minifw-2.15.0.whl" in lines


def test_provenance_sh_refuses_two_wheels_with_one_name(root: Path, tmp_path: Path) -> None:
    for folder, content in (("a", b"1"), ("b", b"2")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "x.whl").write_bytes(content)
    proc = script(root, "provenance.sh", str(tmp_path / "out"), str(tmp_path / "a"), str(tmp_path / "b"))
    assert proc.returncode != 0 and "one name" in proc.stdout


def test_smoke_sh_find_fails_when_the_wheel_is_not_there(root: Path, tmp_path: Path) -> None:
    """A smoke job never passes with nothing tested: no wheel (failed build, missing artifact) fails it."""
    (tmp_path / "wheelhouse/whl/cpu").mkdir(parents=True)
    (tmp_path / "wheelhouse/whl/cpu/a.whl").write_bytes(b"a")
    out = tmp_path / "a.out"
    proc = script(root, "smoke.sh", "find", str(tmp_path / "wheelhouse"), "a.whl", env={"GITHUB_OUTPUT": str(out)})
    assert proc.returncode == 0 and out.read_text().strip() == f"path={tmp_path}/wheelhouse/whl/cpu/a.whl"
    for folder, wheel in (("wheelhouse", "b.whl"), ("absent", "a.whl")):
        out = tmp_path / f"{folder}-{wheel}.out"
        proc = script(root, "smoke.sh", "find", str(tmp_path / folder), wheel, env={"GITHUB_OUTPUT": str(out)})
        assert proc.returncode != 0 and "nothing was smoke-tested" in proc.stdout
        assert not out.exists()


FAKE_UV = r'''
case "$1 $2" in
  "python find") if [[ "$*" == *3.14t* ]]; then echo /py/bin/python3.14t; else echo /py/bin/python3.12; fi ;;
  "venv --quiet") mkdir -p "$5/bin"
                  printf '#!/usr/bin/env bash\necho "venv-python $*" >> %s\n' "$CALLS" > "$5/bin/python"
                  chmod +x "$5/bin/python" ;;
esac
true'''


def test_smoke_sh_run_installs_builders_locked_and_passes_the_options_on(root: Path, tmp_path: Path) -> None:
    """The smoke job's `ci/smoke.sh run ... --require-device` reaches `builders smoke` whole, with
    builders' dependencies from the hash-locked file and the interpreter the runner has."""
    wheel = tmp_path / "w.whl"
    wheel.write_bytes(b"w")
    env = fake_tools(tmp_path / "bin", uv=FAKE_UV) | {"CALLS": str(tmp_path / "bin/calls"),
                                                       "SMOKE_RECORDS": str(tmp_path / "records")}
    proc = script(root, "smoke.sh", "run", str(wheel), "cu132-cp314t-linux-x86_64", "3.14t", "--require-device", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    calls = (tmp_path / "bin/calls").read_text().splitlines()
    assert any(c.startswith("uv pip install") and "--require-hashes --no-deps -r ci/release-tools.txt" in c for c in calls)
    assert any(c.startswith("uv pip install") and c.endswith("--no-deps .") for c in calls)
    assert calls[-1] == (f"venv-python -m builders smoke {wheel} --target cu132-cp314t-linux-x86_64 "
                         "--python /py/bin/python3.14t --require-device")
    assert script(root, "smoke.sh", "run", str(wheel), "t", env=env).returncode != 0


FAILING_UV = r'''
case "$1 $2" in
  "python find") echo /py/bin/python3.12 ;;
  "venv --quiet") mkdir -p "$5/bin"
                  printf '#!/usr/bin/env bash\necho "{\\"ok\\": false}"\necho probing >&2\nexit 8\n' > "$5/bin/python"
                  chmod +x "$5/bin/python" ;;
esac
true'''


def test_smoke_sh_run_keeps_the_wheels_record_when_the_smoke_fails(root: Path, tmp_path: Path) -> None:
    """The smoke job's per-wheel artifact: the probe's JSON (stdout) and the log (stderr) of `builders smoke`
    land in $SMOKE_RECORDS as TARGET.json and TARGET.log, and its exit status stays the script's."""
    wheel = tmp_path / "w.whl"
    wheel.write_bytes(b"w")
    records = tmp_path / "records"
    env = fake_tools(tmp_path / "bin", uv=FAILING_UV) | {"SMOKE_RECORDS": str(records)}
    proc = script(root, "smoke.sh", "run", str(wheel), "cpu-cp313-linux-x86_64", "3.13", env=env)
    assert proc.returncode == 8, proc.stdout + proc.stderr
    assert json.loads((records / "cpu-cp313-linux-x86_64.json").read_text()) == {"ok": False}
    assert (records / "cpu-cp313-linux-x86_64.log").read_text() == "probing\n"
    assert "probing" in proc.stderr and '{"ok": false}' in proc.stdout  # and the job's log shows both


def test_smoke_sh_run_tests_a_shared_wheel_on_each_python(root: Path, tmp_path: Path) -> None:
    """A shared (py3-none, abi3) wheel's smoke job lists its Pythons: each one is smoke-tested, each keeps its
    record (TARGET-3.12.json), and one failure fails the job after all have run."""
    wheel = tmp_path / "w.whl"
    wheel.write_bytes(b"w")
    records = tmp_path / "records"
    env = fake_tools(tmp_path / "bin", uv=FAILING_UV) | {"SMOKE_RECORDS": str(records)}
    proc = script(root, "smoke.sh", "run", str(wheel), "cpu-abi3-linux-x86_64", "3.11 3.12 3.13", env=env)
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert sorted(p.name for p in records.glob("*.json")) == [f"cpu-abi3-linux-x86_64-{v}.json"
                                                               for v in ("3.11", "3.12", "3.13")]
    assert proc.stdout.count("smoke-testing with") == 3


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, text=True, capture_output=True, check=True, timeout=60).stdout


def release_site(folder: Path, version: str) -> list[Path]:
    """What `index` writes for one release, in its shape: each label's wheels under whl/<label>/<project>/."""
    from dataclasses import replace

    from builders.index.pages import refresh_pages
    from tests.hostile import make_wheels

    wheels = []
    for variant in ("pypi", "cpu"):
        facts = make_wheels.facts(variant)
        label = facts.version.partition("+")[2]
        facts = replace(facts, version=f"{version}+{label}")
        dest = folder / "whl" / label / facts.project / facts.filename
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(make_wheels.good_bytes(facts))
        wheels.append(dest)
    refresh_pages(folder)  # the pages, as index writes them
    return wheels


def deploy_env(server: Path) -> dict[str, str]:
    (server / "org").mkdir(parents=True, exist_ok=True)
    if not (server / "org/repo.git").exists():
        git("init", "--quiet", "--bare", "repo.git", cwd=server / "org")
    return {"GH_TOKEN": "token", "GITHUB_REPOSITORY": "org/repo", "GITHUB_SERVER_URL": f"file://{server}",
            "INDEX_DEPLOY_COMMAND": "", "INDEX_GIT_REMOTE": "", "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}


def published(server: Path, path: str) -> str:
    return git("show", f"gh-pages:{path}", cwd=server / "org/repo.git")


def test_deploy_index_sh_publishes_to_a_gh_pages_branch(root: Path, tmp_path: Path) -> None:
    server = tmp_path / "server"
    wheels = release_site(tmp_path / "site", "2.15.0")
    env = deploy_env(server)
    for _ in range(2):  # the second run finds the branch and its indexes unchanged
        proc = script(root, "deploy-index.sh", str(tmp_path / "site"), env=env)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    files = set(git("ls-tree", "-r", "--name-only", "gh-pages", cwd=server / "org/repo.git").split())
    assert {".nojekyll", *(str(w.relative_to(tmp_path / "site")) for w in wheels)} <= files
    assert {f"whl/{w.parent.parent.name}/SHA256SUMS" for w in wheels} <= files
    assert len(git("log", "--oneline", "gh-pages", cwd=server / "org/repo.git").splitlines()) == 1


def test_deploy_index_sh_adds_a_release_and_keeps_the_earlier_ones(root: Path, tmp_path: Path) -> None:
    server = tmp_path / "server"
    env = deploy_env(server)
    first = release_site(tmp_path / "first", "2.15.0")
    second = release_site(tmp_path / "second", "2.15.1")
    for site in ("first", "second"):
        proc = script(root, "deploy-index.sh", str(tmp_path / site), env=env)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    for old, new in zip(first, second):
        folder = str(old.parent.relative_to(tmp_path / "first"))
        page = published(server, f"{folder}/index.html")
        assert old.name in page and new.name in page
        project = json.loads(published(server, f"{folder}/index.json"))
        assert project["versions"] == sorted({old.name.split("-")[1], new.name.split("-")[1]})
        sums = published(server, f"{old.parent.parent.relative_to(tmp_path / 'first')}/SHA256SUMS")
        assert hashlib.sha256(old.read_bytes()).hexdigest() in sums and hashlib.sha256(new.read_bytes()).hexdigest() in sums
    assert len(git("log", "--oneline", "gh-pages", cwd=server / "org/repo.git").splitlines()) == 2


def test_deploy_index_sh_never_changes_a_published_file(root: Path, tmp_path: Path) -> None:
    server = tmp_path / "server"
    env = deploy_env(server)
    wheels = release_site(tmp_path / "site", "2.15.0")
    assert script(root, "deploy-index.sh", str(tmp_path / "site"), env=env).returncode == 0
    wheels[0].write_bytes(wheels[0].read_bytes() + b"\0")  # same name, other bytes
    proc = script(root, "deploy-index.sh", str(tmp_path / "site"), env=env)
    assert proc.returncode != 0 and "published with other bytes" in proc.stdout + proc.stderr
    assert len(git("log", "--oneline", "gh-pages", cwd=server / "org/repo.git").splitlines()) == 1


def test_deploy_index_sh_refuses_what_pages_cannot_serve(root: Path, tmp_path: Path) -> None:
    release_site(tmp_path / "site", "2.15.0")
    with open(tmp_path / "site/whl/cpu/big.bin", "wb") as f:
        f.truncate(101 * 1000 * 1000)  # sparse: no disk used
    proc = script(root, "deploy-index.sh", str(tmp_path / "site"), env=deploy_env(tmp_path / "server"))
    assert proc.returncode != 0 and "over 100 MB" in proc.stdout and "INDEX_BUCKET" in proc.stdout


def test_deploy_index_sh_refuses_the_command_that_published_one_release_alone(root: Path, tmp_path: Path) -> None:
    """INDEX_DEPLOY_COMMAND ran on a folder holding this release only (its examples used --delete): refused, and
    nothing runs; the cumulative path for a large index is `builders publish` (tests/integration/test_objectstore.py)."""
    release_site(tmp_path / "site", "2.15.0")
    command = 'cp -R "$SITE" "$DEST"'
    proc = script(root, "deploy-index.sh", str(tmp_path / "site"),
                  env={"INDEX_DEPLOY_COMMAND": command, "DEST": str(tmp_path / "host")})
    assert proc.returncode == 1 and "no longer supported" in proc.stdout and "INDEX_BUCKET" in proc.stdout
    assert not (tmp_path / "host").exists()


def wheels(folder: Path, sizes: dict[str, int]) -> None:
    """Sparse files of the given apparent sizes (the scripts count what copies would occupy)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, size in sizes.items():
        with (folder / name).open("wb") as f:
            f.truncate(size)


def free_mb(path: Path) -> int:
    return shutil.disk_usage(path).free // 2**20


def test_disk_sh_refuses_before_the_download_what_the_plan_bounds_above_the_free_disk(root: Path,
                                                                                       tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    proc = builders("plan", "--format", "github", "--output", str(plan), cwd=root)
    assert proc.returncode == 0, proc.stderr
    estimate = json.loads(plan.read_text())["disk"]
    m = matrix.load(root / "matrix.yaml")
    targets, _ = expand(m)
    assert estimate["download_mb"] == round(len(targets) * m.project.wheel_size_budget_mb)
    proc = script(root, "disk.sh", "before", str(plan), str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(plan.read_text())
    data["disk"]["download_mb"] = free_mb(tmp_path) + 1000
    plan.write_text(json.dumps(data))
    proc = script(root, "disk.sh", "before", str(plan), str(tmp_path))
    assert proc.returncode != 0 and "split the release" in proc.stdout, proc.stdout


def test_disk_sh_refuses_copies_that_would_not_fit_after_the_download(root: Path, tmp_path: Path) -> None:
    wheels(tmp_path / "artifacts", {"a-1-py3-none-any.whl": 10 * 2**20})
    proc = script(root, "disk.sh", "after", str(tmp_path / "artifacts"), "3", str(tmp_path))
    assert proc.returncode == 0 and "3 more copies need 30 MB" in proc.stdout, proc.stdout + proc.stderr
    wheels(tmp_path / "artifacts", {"b-1-py3-none-any.whl": (free_mb(tmp_path) // 3 + 100) * 2**20})
    proc = script(root, "disk.sh", "after", str(tmp_path / "artifacts"), "3", str(tmp_path))
    assert proc.returncode != 0 and "3 more copies of the wheels" in proc.stdout, proc.stdout


def test_batches_sh_keeps_each_batch_within_one_tokens_budget(root: Path, tmp_path: Path) -> None:
    mb = 2**20
    sizes = {"a-1-cp312-cp312-linux_x86_64.whl": 900 * mb, "b-1-cp312-cp312-linux_x86_64.whl": 1200 * mb,
             "c-1-cp313-cp313-linux_x86_64.whl": 1100 * mb, "d-1-cp313-cp313-win_amd64.whl": 3500 * mb,
             "notes.txt": 5 * mb}
    wheels(tmp_path / "dist", sizes)
    proc = script(root, "batches.sh", str(tmp_path / "dist"), str(tmp_path / "out"), "6", "3000")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    batches = {int(b.name): {f.name: f.stat().st_size for f in b.iterdir()} for b in (tmp_path / "out").iterdir()}
    assert sorted(n for b in batches.values() for n in b) == sorted(n for n in sizes if n.endswith(".whl"))
    assert sorted(batches) == list(range(1, len(batches) + 1))
    for files in batches.values():  # within the budget, or one file that is larger alone
        assert sum(files.values()) <= 3000 * mb or len(files) == 1
    assert len(batches) == 3  # 3500 alone; 1200 + 1100; 900
    proc = script(root, "batches.sh", str(tmp_path / "dist"), str(tmp_path / "out2"), "2", "3000")
    assert proc.returncode != 0 and "more than the 2 upload steps" in proc.stdout


def test_plan_sh_hands_on_a_candidate_as_no_release(root: Path, tmp_path: Path) -> None:
    for candidate in (True, False):
        plan = tmp_path / "plan.json"
        plan.write_text(json.dumps({"shards": [{"index": 0, "name": "a", "count": 1, "include": [{}], "builds": [{}]}],
                                    "images": [], "targets": 1, "builds": 1, "release": False,
                                    "candidate": candidate}))
        out = tmp_path / f"out-{candidate}"
        proc = script(root, "plan.sh", "outputs", str(plan), env={"GITHUB_OUTPUT": str(out)})
        assert proc.returncode == 0, proc.stdout + proc.stderr
        outputs = dict(line.split("=", 1) for line in out.read_text().splitlines())
        assert outputs["release"] == "false" and outputs["candidate"] == str(candidate).lower()
        assert outputs["nightly"] == "false" and len(json.loads(outputs["validate"])["include"]) == 1


def test_plan_sh_hands_the_validate_jobs_one_per_smoke_runner(root: Path, tmp_path: Path) -> None:
    """The candidate's validate matrix: targets grouped by the runner their smoke job takes, the PyPI ones apart."""
    m = matrix.load(root / "matrix.yaml")
    targets, _ = expand(m)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({**ci.github_plan(targets), "release": False, "candidate": True, "nightly": False}))
    out = tmp_path / "out"
    proc = script(root, "plan.sh", "outputs", str(plan), env={"GITHUB_OUTPUT": str(out)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    outputs = dict(line.split("=", 1) for line in out.read_text().splitlines())
    groups = json.loads(outputs["validate"])["include"]
    by_runner: dict[str, set[str]] = {}
    for t in targets:
        by_runner.setdefault("-".join(ci.smoke_runner(t)), set()).add(t.id)
    assert {g["name"]: set(g["targets"].split()) for g in groups} == by_runner
    for g in groups:
        assert set(g["pypi"].split()) == {t.id for t in targets if t.on_pypi and t.id in g["targets"].split()}
        assert g["pythons"].splitlines()[-1] == "3.11"


def test_tag_runs_restore_no_cache_and_no_key_grows_per_run(root: Path) -> None:
    """A tag run could restore the default branch's caches (any run there writes them); keys must
    not carry the run id, or every run adds entries to the repository's 10 GB quota."""
    caches = [step for f in FILES for job in yaml.safe_load((root / f).read_text())["jobs"].values()
              for step in job.get("steps", []) if step.get("uses", "").startswith("actions/cache@")]
    assert caches
    for step in caches:
        assert step.get("if") == "github.ref_type != 'tag'", step
        keys = " ".join(str(step["with"].get(k, "")) for k in ("key", "restore-keys"))
        assert "run_id" not in keys and "run_number" not in keys and "run_attempt" not in keys, keys


def test_report_sh_finds_results_however_the_artifacts_were_unpacked(root: Path, tmp_path: Path) -> None:
    """download-artifact v8 puts one matching artifact directly into its path, several into path/<name>/."""
    env = fake_tools(tmp_path / "bin", nox="true")
    for layout in ("results.json", "build-a/results.json", "build-a/whl/results.json"):
        folder = tmp_path / layout.replace("/", "_")
        (folder / layout).parent.mkdir(parents=True, exist_ok=True)
        (folder / layout).write_text("{}")
        proc = script(root, "report.sh", str(folder), str(tmp_path / "out"), env=env)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        last = (tmp_path / "bin/calls").read_text().splitlines()[-1]
        assert last == f"nox -s report -- --output {tmp_path / 'out'} --results {folder / layout}"


def test_plan_output_keeps_warnings_out_of_the_document(root: Path, tmp_path: Path) -> None:
    """nox merges a session's stderr into its stdout: the plan job writes the document with --output,
    so the unserved-GPU-runner warnings reach the log and never the JSON."""
    proc = builders("plan", "--format", "github", "--gpu-runners", "", "--output", str(tmp_path / "plan.json"), cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "" and "no self-hosted runner labelled" in proc.stderr
    plan = json.loads((tmp_path / "plan.json").read_text())
    gpu = [e for s in plan["shards"] for e in s["include"] if e["device"]]
    assert gpu and all(e["smoke_runner"] == [e["runner"]] for e in gpu)


def github_release_inputs(root: Path, tmp_path: Path) -> tuple[Path, dict[str, str], set[str]]:
    """A plan of the shipped matrix marked a release, its index site with SHA256SUMS, two bundles, a
    tagged repository, and the gh stand-in of tests/act first on PATH."""
    plan = tmp_path / "plan.json"
    proc = builders("plan", "--format", "github", "--select", "cpu-*-linux-x86_64", "--output", str(plan), cwd=root)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(plan.read_text()) | {"release": True}
    plan.write_text(json.dumps(data))
    wheels = {e["wheel"] for s in data["shards"] for e in s["include"]}
    for name in wheels:
        (tmp_path / "site/whl/cpu/minifw").mkdir(parents=True, exist_ok=True)
        (tmp_path / "site/whl/cpu/minifw" / name).write_bytes(name.encode())
    assert script(root, "checksums.sh", str(tmp_path / "site")).returncode == 0
    for n in (1, 2):
        (tmp_path / "bundles").mkdir(exist_ok=True)
        (tmp_path / "bundles" / f"provenance-{n}.sigstore.json").write_text("{}")
    repo = tmp_path / "repo"
    repo.mkdir()
    git("init", "-q", cwd=repo)
    git("-c", "user.name=t", "-c", "user.email=t@localhost", "commit", "-q", "--allow-empty", "-m", "x", cwd=repo)
    git("tag", f"v{data['version']}", cwd=repo)
    (tmp_path / "state").mkdir()
    env = {"PATH": f"{root / 'tests/act/bin'}:{os.environ['PATH']}", "STANDIN_STATE": str(tmp_path / "state")}
    return repo, env, wheels


def test_github_release_sh_attaches_sha256sums_and_bundles_with_notes_from_the_plan(root: Path, tmp_path: Path) -> None:
    repo, env, wheels = github_release_inputs(root, tmp_path)
    version = json.loads((tmp_path / "plan.json").read_text())["version"]
    args = (str(tmp_path / "plan.json"), str(tmp_path / "site"), str(tmp_path / "bundles"), str(tmp_path / "out"))
    proc = script(root, "github-release.sh", f"v{version}", *args, env=env, cwd=repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    release = tmp_path / "state/releases" / f"v{version}"
    lines = (release / "SHA256SUMS").read_text().splitlines()
    assert {line.split("  ")[1] for line in lines} == {f"whl/cpu/minifw/{w}" for w in wheels}
    site = tmp_path / "site"
    subprocess.run(["sha256sum", "--quiet", "-c", str(release / "SHA256SUMS")], cwd=site, check=True, timeout=60)
    notes = (release / "notes.md").read_text()
    assert notes.startswith(f"# minifw {version}\n") and all(f"`{w}`" in notes for w in wheels)
    assert "`provenance-1.sigstore.json`" in notes and (release / "provenance-2.sigstore.json").is_file()
    # a rerun uploads the assets again and keeps the release
    proc = script(root, "github-release.sh", f"v{version}", *args, env=env, cwd=repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    verbs = [json.loads(line)["verb"] for line in (tmp_path / "state/releases.jsonl").read_text().splitlines()]
    assert verbs == ["create", "upload"]


def test_github_release_sh_makes_none_for_a_candidate_or_another_tag(root: Path, tmp_path: Path) -> None:
    repo, env, _ = github_release_inputs(root, tmp_path)
    data = json.loads((tmp_path / "plan.json").read_text())
    args = (str(tmp_path / "plan.json"), str(tmp_path / "site"), str(tmp_path / "bundles"), str(tmp_path / "out"))
    proc = script(root, "github-release.sh", f"v{data['version']}-rc1", *args, env=env, cwd=repo)
    assert proc.returncode != 0 and "is not v" in proc.stdout
    (tmp_path / "plan.json").write_text(json.dumps(data | {"release": False, "candidate": True}))
    proc = script(root, "github-release.sh", f"v{data['version']}", *args, env=env, cwd=repo)
    assert proc.returncode != 0 and "not the plan of a release" in proc.stdout
    assert not (tmp_path / "state/releases").exists()


def test_promote_sh_check_passes_only_the_preflights_pypi_files(root: Path, tmp_path: Path) -> None:
    """promote.yml's PyPI job uploads exactly the files the preflight planned, each with its sha256."""
    dist = tmp_path / "dist"
    dist.mkdir()
    files = {"minifw-2.15.0-cp313-cp313-manylinux_2_28_x86_64.whl": b"one", "minifw-2.15.0-cp313-cp313-win_amd64.whl": b"two"}
    for name, data in files.items():
        (dist / name).write_bytes(data)
    record = tmp_path / "preflight.json"
    record.write_text(json.dumps({"pypi": {n: hashlib.sha256(d).hexdigest() for n, d in files.items()}}))
    assert script(root, "promote.sh", "check", str(record), str(dist)).returncode == 0
    (dist / "minifw-2.15.0-cp313-cp313-win_amd64.whl").write_bytes(b"other bytes")
    assert script(root, "promote.sh", "check", str(record), str(dist)).returncode != 0
    (dist / "minifw-2.15.0-cp313-cp313-win_amd64.whl").unlink()
    proc = script(root, "promote.sh", "check", str(record), str(dist))
    assert proc.returncode != 0 and "not the ones" in proc.stdout


# -- ci/compile-cache.sh: the shared compile cache's location and credentials for a build job -------------

CACHE_VARS = ("COMPILE_CACHE", "COMPILE_CACHE_ENDPOINT", "COMPILE_CACHE_REGION", "COMPILE_CACHE_ROLE_ARN",
              "COMPILE_CACHE_WRITER_ROLE_ARN", "COMPILE_CACHE_ACCESS_KEY_ID", "COMPILE_CACHE_SECRET_ACCESS_KEY",
              "ACTIONS_ID_TOKEN_REQUEST_URL", "ACTIONS_ID_TOKEN_REQUEST_TOKEN", "TRUSTED")


def compile_cache(root: Path, tmp_path: Path, **given: str) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    """ci/compile-cache.sh with only ``given`` of its inputs set; what it wrote to $GITHUB_ENV."""
    out = tmp_path / "github-env"
    out.write_text("")
    proc = script(root, "compile-cache.sh", env={**dict.fromkeys(CACHE_VARS, ""), **given, "GITHUB_ENV": str(out)})
    return proc, dict(line.split("=", 1) for line in out.read_text().splitlines() if line)


def test_compile_cache_sh_without_a_store_sets_nothing(root: Path, tmp_path: Path) -> None:
    proc, written = compile_cache(root, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert written == {} and "no shared compile cache" in proc.stdout


def test_compile_cache_sh_hands_an_s3_store_and_its_key_to_the_build(root: Path, tmp_path: Path) -> None:
    key, secret = "AKIA-cache-reader", "not-printed-3f9"
    proc, written = compile_cache(root, tmp_path, COMPILE_CACHE="s3://build-cache/builders",
                                  COMPILE_CACHE_ENDPOINT="http://127.0.0.1:9000",
                                  COMPILE_CACHE_ACCESS_KEY_ID=key, COMPILE_CACHE_SECRET_ACCESS_KEY=secret)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert written == {"BUILDERS_COMPILER_CACHE": "s3://build-cache/builders", "SCCACHE_ENDPOINT": "http://127.0.0.1:9000",
                       "SCCACHE_S3_USE_SSL": "false", "SCCACHE_REGION": "us-east-1",
                       "AWS_ACCESS_KEY_ID": key, "AWS_SECRET_ACCESS_KEY": secret}
    assert secret not in proc.stdout + proc.stderr


def test_compile_cache_sh_without_credentials_reads_a_public_store(root: Path, tmp_path: Path) -> None:
    proc, written = compile_cache(root, tmp_path, COMPILE_CACHE="s3://public-cache", COMPILE_CACHE_REGION="eu-west-1")
    assert proc.returncode == 0, proc.stderr
    assert written == {"BUILDERS_COMPILER_CACHE": "s3://public-cache", "SCCACHE_REGION": "eu-west-1",
                       "SCCACHE_S3_NO_CREDENTIALS": "true"}


@pytest.mark.parametrize(("given", "reason"), [
    ({"COMPILE_CACHE": "s3://c", "COMPILE_CACHE_ROLE_ARN": "arn:aws:iam::1:role/reader"}, "id-token: write"),
    ({"COMPILE_CACHE": "s3://c", "TRUSTED": "true", "COMPILE_CACHE_WRITER_ROLE_ARN": "arn:aws:iam::1:role/writer"},
     "id-token: write"),
    ({"COMPILE_CACHE": "gs://c"}, "not s3://, redis:// or http(s)://"),
])
def test_compile_cache_sh_refuses_what_it_cannot_hand_over(root: Path, tmp_path: Path, given: dict[str, str],
                                                           reason: str) -> None:
    proc, _ = compile_cache(root, tmp_path, **given)
    assert proc.returncode != 0 and reason in proc.stdout, proc.stdout + proc.stderr
