"""The release workflow, run for real under act on this host (tests/act/harness.py says how).

Runs, each asserted job by job:

- a tag push of v2.15.0 of a matrix narrowed to a cpu and a cu132 target: plan, images (pushed
  to a local registry and pulled by digest), one build job per (variant, platform), a smoke job
  per target, report, release files, provenance, publish (to a local package server) and deploy
  (to a local git remote); the package server then holds exactly the promoted wheels (audit:
  zero drift) and the deployed indexes the release;
- a tag that does not name the matrix's version: the plan job fails and nothing runs after it;
- a dispatch on the tag whose build fails: that build job fails, the smoke job of its target
  fails for want of a wheel, nothing is assembled or published;
- a tag push of a cpu-only matrix whose images job fails (a broken Containerfile): no build job
  runs on an image nobody attested, nothing is published.

What cannot run here: GitHub itself (act runs the jobs; the stand-ins keep the documented
behaviour the workflow relies on, listed in tests/act/README.md), OIDC and Sigstore (the
attest stand-in records its subjects), macOS and Windows runners, GPU runners. Nor a tag whose only
failure is a smoke job: act 0.2.89 ends its whole run at a failed job of a called workflow
(tests/act/README.md), so no job after the shard runs whatever its `if`, and "nothing published" could
not fail here; the gates after the shard are workflow --check's (tests/unit/test_workflow_check.py), and
a failed smoke keeping its record is ci/smoke.sh's (tests/integration/test_workflow.py).

Left out to keep the suite within its time (each run costs 5 to 8 minutes on 2 cores): a second tag
release after the first (ci/deploy-index.sh adding a release and keeping the earlier ones is
tests/integration/test_workflow.py's) and the re-run of the failed dispatch (every upload's
`overwrite: true` is workflow --check's, the stand-in's 409 test_act_standins_under_act.py's).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import requests
import yaml
from packaging.utils import parse_wheel_filename

from builders.families import loader as matrix
from builders.matrix.targets import expand
from tests.act.harness import (
    Harness,
    Run,
    Services,
    base_digest,
    commit,
    copy_repository,
    host_pythons,
    narrowed,
    services,
)

pytestmark = pytest.mark.slow

PYTHON = "3.13"  # one the local base image (Debian unstable) and this host (pyenv) both have
FIRST = "2.15.0"


def cpu_only(text: str) -> str:
    """The narrowed matrix without its cuda family: one build job, one smoke job, and PyPI's wheel the cpu one
    (so a release that went through would publish it). The cheapest release that still shows a gate."""
    data = yaml.safe_load(text)
    data["accelerators"] = {"cpu": data["accelerators"]["cpu"]}
    data["channels"]["pypi"] = dict.fromkeys(data["channels"]["pypi"], "cpu")
    return yaml.safe_dump(data, sort_keys=False)


def prepare(root: Path, dest: Path, version: str, base: str, *, cpu: bool = False) -> Path:
    dest.mkdir(parents=True)
    copy_repository(root, dest)
    text = narrowed((root / "matrix.yaml").read_text(), version=version, base_image=base, python=PYTHON)
    (dest / "matrix.yaml").write_text(cpu_only(text) if cpu else text)
    commit(dest, f"minifw {version}", tag=f"v{version}")
    return dest


def expected(repo: Path) -> tuple[set[str], set[str]]:
    """The labelled wheels the narrowed matrix promises, and the PyPI wheels promoted from them."""
    targets, _ = expand(matrix.load(repo / "matrix.yaml"))
    labelled = {t.wheel_name for t in targets}
    pypi = set()
    for t in targets:
        if "pypi" in t.channels:
            name, version, _build, tags = parse_wheel_filename(t.wheel_name)
            tag = next(iter(tags))
            pypi.add(f"{name}-{version.public}-{tag.interpreter}-{tag.abi}-{tag.platform}.whl")
    return labelled, pypi



def audit(repo: Path, channel: str, url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "builders", "audit", "--matrix", str(repo / "matrix.yaml"),
                           "--channel", channel, "--index-url", url, "--format", "json"],
                          capture_output=True, text=True, timeout=300)


def deployed(pages: Path, dest: Path) -> Path:
    if not dest.exists():
        subprocess.run(["git", "clone", "--quiet", "--branch", "gh-pages", str(pages), str(dest)], check=True, timeout=120)
    else:
        subprocess.run(["git", "-C", str(dest), "pull", "--quiet"], check=True, timeout=120)
    return dest


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory):
    with services(tmp_path_factory.mktemp("services")) as found:
        yield found


@pytest.fixture(scope="module")
def act_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("act-home")
    (home / ".gitconfig").write_text("[user]\n\tname = release-test\n\temail = release-test@localhost\n")
    return home


def harness(repo: Path, home: Path, local: Services) -> Harness:
    return Harness(repo=repo, home=home, services=local, env={"PYENV_VERSION": host_pythons()})


@pytest.fixture(scope="module")
def first(root: Path, base_image: str, local: Services, act_home: Path, tmp_path_factory: pytest.TempPathFactory):
    work = tmp_path_factory.mktemp("first")
    repo = prepare(root, work / "repo", FIRST, base_digest(base_image))
    run = harness(repo, act_home, local).run("push", f"refs/tags/v{FIRST}", work / "state", log=work / "act.log")
    return repo, work / "state", run


def test_a_tag_push_releases_every_planned_wheel(first, local: Services) -> None:
    repo, state, run = first
    assert run.returncode == 0, run.failure()
    assert set(run.jobs.values()) == {"success"}, run.failure()
    for job in ("plan", "image", "matrix", "build", "smoke", "compatibility report", "release files",
                "provenance and PyPI", "deploy the indexes", "GitHub Release"):
        assert any(job in name for name in run.jobs), f"no {job} job ran:\n{run.summary()}"
    labelled, pypi = expected(repo)
    builds = [name for name in run.jobs if "build " in name]
    assert len(builds) == 2, run.summary()  # one per (variant, platform): the core once each
    uploaded = {p.name for p in (local.pages.parent / "packages").iterdir() if p.name.endswith(".whl")}
    assert pypi <= uploaded and {n for n in uploaded if f"-{FIRST}-" in n} == pypi
    proc = audit(repo, "pypi", local.simple_url)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    attested = {json.loads(line)["subjects"][i]["name"] for line in (state / "attestations.jsonl").read_text().splitlines()
                for i in range(len(json.loads(line)["subjects"]))}
    assert labelled | pypi <= attested
    release = state / "releases" / f"v{FIRST}"  # the GitHub Release, through the gh stand-in
    sums = {line.split("  ", 1)[1].rsplit("/", 1)[-1] for line in (release / "SHA256SUMS").read_text().splitlines()}
    assert labelled <= sums
    notes = (release / "notes.md").read_text()
    assert all(f"`{name}`" in notes for name in labelled)
    bundles = sorted(p.name for p in release.glob("provenance-*.sigstore.json"))
    assert bundles and all(f"`{name}`" in notes for name in bundles)


def test_the_deployed_indexes_hold_the_release(first, local: Services, tmp_path: Path) -> None:
    repo, _state, run = first
    assert run.returncode == 0, run.failure()
    labelled, _pypi = expected(repo)
    site = deployed(local.pages, tmp_path / "pages")
    found = {p.name for p in site.rglob("*.whl") if "minifw" in p.name}
    assert labelled <= found
    for label in {parse_wheel_filename(w)[1].local for w in labelled}:
        index = site / "whl" / str(label)
        subprocess.run(["sha256sum", "--quiet", "-c", "SHA256SUMS"], cwd=index, check=True, timeout=120)
        proc = audit(repo, str(label), index.as_uri() + "/")
        assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_image_was_pushed_and_pulled_by_digest(first, local: Services) -> None:
    _repo, _state, run = first
    assert run.returncode == 0, run.failure()
    host = local.registry.split("/", 1)[0]
    catalog = requests.get(f"http://{host}/v2/_catalog", timeout=30).json()["repositories"]
    assert {"builders/builders-cpu", "builders/builders-cuda"} <= set(catalog)
    assert "@sha256:" in run.output and "from " + local.registry in run.output


def test_a_tag_that_is_not_the_version_fails_in_the_plan(root: Path, base_image: str, local: Services,
                                                          act_home: Path, tmp_path: Path) -> None:
    repo = prepare(root, tmp_path / "repo", FIRST, base_digest(base_image))
    commit(repo, "a wrong tag", tag="v9.9.9")
    run = harness(repo, act_home, local).run("push", "refs/tags/v9.9.9", tmp_path / "state", log=tmp_path / "act.log")
    assert run.returncode != 0
    assert run.jobs.get("release/plan") == "failure", run.failure()
    assert f"the matrix's project.version is {FIRST}" in run.output, run.failure()  # the reason, in the job's log
    assert not any("build " in name or "publish" in name or "PyPI" in name for name in run.jobs), run.summary()


def test_a_failed_dispatch_build_fails_its_smoke_and_nothing_is_assembled(
        root: Path, base_image: str, local: Services, act_home: Path, tmp_path: Path) -> None:
    repo = prepare(root, tmp_path / "repo", FIRST, base_digest(base_image))
    core = repo / "examples/minifw/core/CMakeLists.txt"
    intact = core.read_text()
    core.write_text(intact + '\nmessage(FATAL_ERROR "sabotaged by the release test")\n')
    state, ran = tmp_path / "state", harness(repo, act_home, local)
    broken = ran.run("workflow_dispatch", f"refs/tags/v{FIRST}", state, inputs={"select": "cpu-*"},
                     log=tmp_path / "act-1.log")
    assert broken.returncode != 0
    assert {r for name, r in broken.jobs.items() if "/build " in name} == {"failure"}, broken.failure()
    smoke = [name for name in broken.jobs if "smoke " in name]
    assert smoke and all(broken.jobs[name] == "failure" for name in smoke), broken.failure()
    assert "nothing was smoke-tested" in broken.output
    assert not any(job in name for name in broken.jobs for job in ("release files", "PyPI", "deploy")), broken.summary()


# -- fail closed: a tag push whose images job fails --------------------------------------------------

IMAGES_FAIL = "2.15.3"  # a version of its own: the module's server may hold the others


def published(local: Services) -> tuple[frozenset[tuple[str, int]], str]:
    """What the package server holds (names and sizes) and every ref of the pages remote: a run that
    publishes nothing leaves both as they were."""
    packages = frozenset((p.name, p.stat().st_size) for p in (local.pages.parent / "packages").iterdir())
    refs = subprocess.run(["git", "-C", str(local.pages), "for-each-ref"], check=True, capture_output=True, text=True,
                          timeout=60).stdout
    return packages, refs


def assert_nothing_published(run: Run, state: Path, local: Services, before: tuple[object, object]) -> None:
    for job in ("release files", "provenance and PyPI", "deploy the indexes", "GitHub Release"):
        assert not any(job in name for name in run.jobs), f"{job} ran:\n{run.failure()}"
    assert published(local) == before, "the package server or the pages remote changed"
    assert not (state / "published.jsonl").exists() and not (state / "releases").exists()
    artifacts = {p.name for p in (state / "artifacts").iterdir()} if (state / "artifacts").exists() else set()
    assert not artifacts & {"release-wheels", "per-variant-indexes", "attestations"}, artifacts
    lines = (state / "attestations.jsonl").read_text().splitlines() if (state / "attestations.jsonl").exists() else []
    assert {json.loads(line)["job"] for line in lines} <= {"images"}  # no wheel was attested


def test_a_tag_push_whose_images_job_fails_builds_and_publishes_nothing(
        root: Path, base_image: str, local: Services, act_home: Path, tmp_path: Path) -> None:
    repo = prepare(root, tmp_path / "repo", IMAGES_FAIL, base_digest(base_image), cpu=True)
    containerfile = repo / "builders/resources/containers/cpu.Containerfile"
    text = containerfile.read_text()
    assert "\nFROM ${BASE_IMAGE}\n" in text
    containerfile.write_text(text.replace("\nFROM ${BASE_IMAGE}\n",
                                          '\nFROM ${BASE_IMAGE}\nRUN echo "broken by the release test" >&2; exit 1\n'))
    commit(repo, "a broken image", tag=f"v{IMAGES_FAIL}")
    before, state = published(local), tmp_path / "state"
    run = harness(repo, act_home, local).run("push", f"refs/tags/v{IMAGES_FAIL}", state, log=tmp_path / "act.log",
                                             cold=False)
    assert run.returncode != 0, run.failure()
    assert run.jobs.get("release/plan") == "success" and run.result("release/image") == {"failure"}, run.failure()
    assert "broken by the release test" in run.output, run.failure()  # the image's build failed, nothing else
    # Fail closed: no build job at all (none falls back to an image it builds itself, unattested), no smoke.
    assert not any("/build " in name or "/smoke " in name or "/matrix" in name for name in run.jobs), run.failure()
    assert not any(p.name.startswith(("image-", "build-")) for p in (state / "artifacts").glob("*")), run.failure()
    assert_nothing_published(run, state, local, before)
