"""The channel lifecycle, run for real under act: nightlies, candidates, validation and promotion.

What runs is the committed ``.github/workflows/release.yml`` and ``promote.yml``, unchanged, on a copy of
the repository whose matrix is narrowed to one cpu target of linux-x86_64 (no CUDA toolkit; cpu is the PyPI
default, so the PyPI path runs too; the nightly channel keeps 1 version), with the lifecycle on
(``INDEX_BUCKET`` set). Around the runs, on 127.0.0.1: the harness's services (``tests/act/harness.py``:
registry, pypiserver as PyPI) and ``rclone serve s3`` with the bucket served over HTTP from the same
folder (``tests/objectstore.py``), which is what the validate jobs install from, as a user would.

Runs, in order, each asserted job by job and on the bucket's and the package server's contents:

1. two scheduled nightlies, committed on two dates: after the second only the newer dev version is on
   ``whl/nightly/cpu/``, and the pages read over HTTP link exactly the files there (each with its sha256);
2. tag ``v{VERSION}-rc1``: published to test, the validate job passes (the test channel over HTTP, the
   PyPI form from its staging index); tag ``-rc2`` (a changed source file): its files replace rc1's on test
   and the publication record lists each replaced file with both digests;
3. a dispatch of ``promote.yml`` with ``candidate-run`` = rc2's run whose ``PYPI_FILE_LIMIT_MB`` is below the
   PyPI wheel's size: refused in the preflight, its reason in the log and the job summary, the release
   channel and the package server unchanged;
4. the dispatch that promotes: the release channel and the package server hold exactly rc2's validated
   bytes (sha256 of every file equal to what validate installed and the test channel serves);
5. the same dispatch again: refused in the preflight (the version is on the package server), nothing changed.

How act stands in for GitHub here: ``GITHUB_RUN_ID`` is 1 in every act run, so a run's id is the name of its
state folder (``runs/<id>``), and the download-artifact stand-in reads another run's artifacts from the
sibling folder named by ``run-id`` (given with ``github-token``, as the real action needs). The bucket's
credentials come the documented non-OIDC way: ``AWS_ROLE_ARN`` empty and the secrets ``AWS_ACCESS_KEY_ID``
and ``AWS_SECRET_ACCESS_KEY`` (``ci/bucket-credentials.sh``); OIDC itself cannot run under act (no token
service), nor are environments' reviewers enforced. The nightlies and candidates share the host's caches
(a branch run's restored caches; the cold tag build is test_release_act.py's), so each run rebuilds the
cpu target from warm compiler caches only.

Time (each run's wall time is printed): measured on the shared 2-core machine under a load of about 5,
the nightlies took 646 and 695 s, rc1 744 s and rc2 806 s (plan about 60 s, image 140 s, build 350 s of
which the image pull is 80 s, smoke 30 s, then the channel jobs), the three promote.yml dispatches 63, 91
and 63 s: 52 minutes in all (3,115 s). Each of the four building runs goes through the whole workflow for
its own bytes (two dev versions, two candidates whose bytes must differ), so sharing caches cannot bring
them below one build each; a machine to itself runs them faster, not measured here.

Opt-in: ``BUILDERS_ACT_LIFECYCLE=1 nox -s tests -- tests/integration/test_lifecycle_act.py`` (or the whole suite
with it set). Everything it needs runs here; it is left out of the default run only for time.

Not run here: a second release after the first (each act run costs minutes; ``publish`` keeping earlier
releases is tests/integration/test_objectstore.py's), GPU validate jobs (no GPU runner here).
"""

from __future__ import annotations

import hashlib
import html.parser
import json
import os
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests
import yaml
from packaging.utils import parse_wheel_filename

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
from tests.objectstore import ObjectStore, object_store

OPT_IN = "BUILDERS_ACT_LIFECYCLE"
# Opt-in, not a skip for want of something: everything it needs runs here, but its four building runs
# (about 30 to 50 minutes on 2 cores) would take `nox -s tests` past its 50-minute budget.
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not os.environ.get(OPT_IN),
                                 reason=f"the lifecycle under act takes 30 to 50 minutes on 2 cores (four building runs), "
                                        f"past the suite's 50-minute budget; {OPT_IN}=1 runs it (docs/testing.md)")]

PYTHON = "3.13"  # one the local base image (Debian unstable) and this host (pyenv) both have
VERSION = "2.15.0"
BUCKET = "downloads"
NIGHTS = ("2026-11-29T12:00:00+00:00", "2026-11-30T12:00:00+00:00")  # two commit dates: two nightlies
TARGET_GLOB = "cpu-*"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def lifecycle_matrix(text: str, base: str) -> str:
    """The narrowed matrix with the cpu family alone (the PyPI default everywhere) and nightly keep 1."""
    data = yaml.safe_load(narrowed(text, version=VERSION, base_image=base, python=PYTHON))
    data["accelerators"] = {"cpu": data["accelerators"]["cpu"]}
    data["channels"]["pypi"] = dict.fromkeys(data["channels"]["pypi"], "cpu")
    data["channels"]["nightly"]["keep"] = 1
    return yaml.safe_dump(data, sort_keys=False)


@dataclass(frozen=True, kw_only=True)
class World:
    repo: Path
    runs: Path  # one state folder per run, named by its id
    harness: Harness
    store: ObjectStore
    local: Services

    @property
    def packages(self) -> Path:
        """The package server's (PyPI's) folder."""
        return self.local.pages.parent / "packages"

    def bucket(self) -> dict[str, bytes]:
        return self.store.files(BUCKET)

    def server(self) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in sorted(self.packages.iterdir()) if p.is_file()}

    def url(self, key: str) -> str:
        return self.store.http_url + f"{BUCKET}/{key}"

    def run(self, run_id: str, event: str, ref: str, **kwargs: object) -> Run:
        """One act run, its wall time printed (the module's time is the sum of these)."""
        start = time.monotonic()
        found = self.harness.run(event, ref, self.runs / run_id, log=self.runs / f"{run_id}-act.log",
                                 cold=False, **kwargs)  # type: ignore[arg-type]
        print(f"\nact run {run_id} ({event} {ref} {kwargs.get('workflow', 'release.yml')}): "
              f"{time.monotonic() - start:.0f} s, exit {found.returncode}\n{found.summary()}")
        return found

    def artifact(self, run_id: str, name: str) -> Path:
        return self.runs / run_id / "artifacts" / name


@pytest.fixture(scope="module")
def world(root: Path, base_image: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    folder = tmp_path_factory.mktemp("lifecycle")
    repo = folder / "repo"
    repo.mkdir()
    copy_repository(root, repo)
    (repo / "matrix.yaml").write_text(lifecycle_matrix((root / "matrix.yaml").read_text(), base_digest(base_image)))
    home = folder / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[user]\n\tname = release-test\n\temail = release-test@localhost\n")
    with services(folder / "services") as local, object_store(folder / "store") as s3:
        s3.make_bucket(BUCKET)
        variables = {"INDEX_BUCKET": f"s3://{BUCKET}/", "AWS_ENDPOINT_URL": s3.endpoint, "AWS_REGION": "us-east-1",
                     "AWS_ROLE_ARN": "", "INDEX_BASE_URL": s3.http_url + f"{BUCKET}/",
                     "PYPI_SIMPLE_URL": local.simple_url, "PYPI_REPOSITORY_URL": local.pypi_url,
                     "ACCEPT_NOT_RUNNABLE": "", "PYPI_FILE_LIMIT_MB": "", "PYPI_TOTAL_LIMIT_GB": ""}
        harness = Harness(repo=repo, home=home, services=local, variables=variables,
                          secrets={"AWS_ACCESS_KEY_ID": s3.key, "AWS_SECRET_ACCESS_KEY": s3.secret},
                          env={"PYENV_VERSION": host_pythons(), "AWS_EC2_METADATA_DISABLED": "true"})
        yield World(repo=repo, runs=folder / "runs", harness=harness, store=s3, local=local)



def job(run: Run, name: str) -> set[str]:
    """The results of every job whose name holds ``name`` (matrix entries and called jobs too)."""
    return {result for key, result in run.jobs.items() if name in key}


# -- pages, read over HTTP ---------------------------------------------------------------------------------

class _Links(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.anchors: list[dict[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.anchors.append({key: value or "" for key, value in attrs})


def links(url: str) -> list[dict[str, str]]:
    """The anchors of a PEP 503 page, each href absolute."""
    response = requests.get(url, timeout=30)
    response.raise_for_status()
    parser = _Links()
    parser.feed(response.text)
    return [{**a, "href": urllib.parse.urljoin(url, a["href"])} for a in parser.anchors if a.get("href")]


def fetched(address: str, digest: str) -> None:
    body = requests.get(address, timeout=60)
    assert body.status_code == 200, f"{address}: linked, but HTTP {body.status_code}"
    assert sha256(body.content) == digest, f"{address}: its bytes are not the sha256 its page names"


def served(world: World, folder: str) -> dict[str, str]:
    """Every file the pages under ``folder`` (a variant index) link, by bucket key, with the sha256 its link
    names; each link (and its PEP 658 metadata file) fetched over HTTP and checked against that sha256."""
    files: dict[str, str] = {}
    base = world.url("")
    for project in links(world.url(folder)):
        for link in links(project["href"]):
            address, _, fragment = link["href"].partition("#sha256=")
            fetched(address, fragment)
            files[urllib.parse.unquote(address.removeprefix(base))] = fragment
            metadata = link.get("data-dist-info-metadata", "").removeprefix("sha256=")
            if metadata:
                fetched(address + ".metadata", metadata)
    return files


def assert_consistent(world: World, folder: str) -> dict[str, str]:
    """The variant index under ``folder``: every linked file exists with its sha256, and every project file
    in the bucket is linked (or is a linked wheel's PEP 658 ``.metadata``, or a page); returns the linked."""
    linked = served(world, folder)
    objects = {key for key in world.bucket() if key.startswith(folder)}
    pages = {k for k in objects if k.rsplit("/", 1)[-1] in ("index.html", "index.json")}
    project_files = {k for k in objects - pages if k.removeprefix(folder).count("/") == 1}
    unlinked = project_files - set(linked) - {k + ".metadata" for k in linked}
    assert not unlinked, f"in the bucket but linked by no page: {sorted(unlinked)}"
    sums = world.bucket().get(folder + "SHA256SUMS")
    if sums is not None:
        listed = {line.split()[1].lstrip("*"): line.split()[0] for line in sums.decode().splitlines() if line.strip()}
        assert {folder + name: digest for name, digest in listed.items() if name.endswith(".whl")} == \
            {k: v for k, v in linked.items() if k.endswith(".whl")}, "SHA256SUMS is not the pages' wheels"
    return linked


def wheels(files: dict[str, object], folder: str) -> dict[str, object]:
    """The project's wheels among ``files`` under ``folder``, by file name."""
    return {k.rsplit("/", 1)[-1]: v for k, v in files.items() if k.startswith(folder) and k.endswith(".whl")
            and k.rsplit("/", 1)[-1].startswith("minifw-")}


# -- 1. two nightlies ----------------------------------------------------------------------------------------

NIGHTLY = "whl/nightly/cpu/"


@pytest.fixture(scope="module")
def nightlies(world: World) -> list[tuple[Run, dict[str, bytes]]]:
    found = []
    for number, day in enumerate(NIGHTS, 1):
        commit(world.repo, f"main on {day[:10]}", date=day)
        run = world.run(f"10{number}", "schedule", "refs/heads/main")
        found.append((run, world.bucket()))
    return found


def nightly_versions(files: dict[str, object]) -> set[str]:
    return {str(parse_wheel_filename(name)[1]) for name in wheels(files, NIGHTLY)}


def test_two_nightlies_leave_only_the_newer_on_the_channel_with_consistent_pages(world: World, nightlies) -> None:
    (first, after_first), (second, after_second) = nightlies
    for run in (first, second):
        assert run.returncode == 0, run.failure()
        assert job(run, "publish the nightly") == {"success"}, run.failure()
        assert job(run, "/build ") == {"success"} and job(run, "/smoke ") == {"success"}, run.failure()
        assert not any(name in key for key in run.jobs for name in ("candidate", "validate", "release files")), \
            run.summary()
    (older,) = nightly_versions(after_first)
    (newer,) = nightly_versions(after_second)
    assert older.endswith(f".dev{NIGHTS[0][:10].replace('-', '')}+cpu"), older
    assert newer.endswith(f".dev{NIGHTS[1][:10].replace('-', '')}+cpu"), newer
    linked = assert_consistent(world, NIGHTLY)
    assert {str(parse_wheel_filename(k.rsplit("/", 1)[-1])[1]) for k in linked if k.endswith(".whl")
            and "/minifw/" in k} == {newer}
    assert not any(older.split("+")[0] in key for key in world.bucket() if key.startswith(NIGHTLY)), \
        "a file of the pruned nightly is left"


# -- 2. candidates: rc1, then rc2 replacing it on test ----------------------------------------------------

TEST = "whl/test/cpu/"
RELEASE = "whl/cpu/"
CHANGED = "examples/minifw/src/minifw/ops.py"  # rc2's fix: a changed source file, so other bytes


@dataclass(frozen=True, kw_only=True)
class Candidate:
    run_id: str
    run: Run
    bucket: dict[str, bytes]  # the bucket after the run


@pytest.fixture(scope="module")
def candidates(world: World) -> tuple[Candidate, Candidate]:
    found = []
    for number, rc in enumerate(("rc1", "rc2"), 1):
        if rc == "rc2":
            path = world.repo / CHANGED
            path.write_text(path.read_text() + "\n# rc2: the fix found while validating rc1\n")
        commit(world.repo, f"minifw {VERSION}-{rc}", tag=f"v{VERSION}-{rc}")
        run_id = f"20{number}"
        run = world.run(run_id, "push", f"refs/tags/v{VERSION}-{rc}")
        found.append(Candidate(run_id=run_id, run=run, bucket=world.bucket()))
    return found[0], found[1]


def records(world: World, run_id: str, kind: str) -> list[dict]:
    """The candidate run's validation records of ``kind`` (``test`` or ``pypi``), from its artifacts."""
    files = sorted((world.runs / run_id / "artifacts").glob(f"validation-*/{kind}-*.json"))
    assert files, f"run {run_id} kept no {kind} validation record"
    return [json.loads(p.read_text()) for p in files]


def validated(world: World, run_id: str, kind: str) -> dict[str, str]:
    """Every passed target's installed file name and sha256 (what validate installed), each installed and
    smoke-tested by pip and by uv (pip records the sha256 of what it installed: the same)."""
    found: dict[str, str] = {}
    for record in records(world, run_id, kind):
        for target in record["targets"]:
            assert target["status"] == "passed", target
            installs = {i["installer"]: i for i in target["installs"]}
            assert set(installs) == {"pip", "uv"} and {i["status"] for i in installs.values()} == {"passed"}, target
            assert all(i.get("sha256", target["sha256"]) == target["sha256"] for i in installs.values()), target
            found[target["filename"]] = target["sha256"]
    return found


def assert_candidate(world: World, candidate: Candidate) -> None:
    run = candidate.run
    assert run.returncode == 0, run.failure()
    assert job(run, "publish the candidate to test") == {"success"}, run.failure()
    assert job(run, "release/validate") == {"success"}, run.failure()
    assert not any(name in key for key in run.jobs for name in ("PyPI", "deploy", "provenance", "nightly")), \
        run.summary()
    built = {p.name: sha256(p.read_bytes()) for p in world.artifact(candidate.run_id, "release-wheels").glob("wheels/*.whl")}
    on_test = {name: sha256(data) for name, data in wheels(candidate.bucket, TEST).items()}  # type: ignore[arg-type]
    assert built and on_test == built, "the test channel holds exactly the candidate's wheels"
    assert validated(world, candidate.run_id, "test") == built, "validate installed the published bytes"
    staged = {p.name: sha256(p.read_bytes()) for p in world.artifact(candidate.run_id, "release-wheels").glob("dist/*.whl")}
    assert staged and validated(world, candidate.run_id, "pypi") == staged, "the PyPI form was validated"
    assert not wheels(candidate.bucket, RELEASE), "a candidate publishes nothing to the release channel"


def test_rc1_is_published_to_test_and_validated_over_http(world: World, candidates) -> None:
    rc1, _rc2 = candidates
    assert_candidate(world, rc1)


def test_rc2_replaces_rc1_on_test_and_the_replacement_is_recorded(world: World, candidates) -> None:
    rc1, rc2 = candidates
    assert_candidate(world, rc2)
    old, new = wheels(rc1.bucket, TEST), wheels(rc2.bucket, TEST)
    assert set(old) == set(new), "rc2 publishes the same file names (the final version)"
    assert all(old[name] != new[name] for name in new), "rc2's bytes differ from rc1's"
    linked = assert_consistent(world, TEST)
    assert {k.rsplit("/", 1)[-1]: v for k, v in linked.items() if k.endswith(".whl") and "/minifw/" in k} == \
        {name: sha256(data) for name, data in new.items()}  # type: ignore[arg-type]
    (publication,) = world.artifact(rc2.run_id, "publication-test").glob("*.json")
    replaced = {c["key"].rsplit("/", 1)[-1]: (c["old_sha256"], c["new_sha256"])
                for c in json.loads(publication.read_text())["replaced"]}
    for name in new:
        assert replaced.get(name) == (sha256(old[name]), sha256(new[name])), replaced  # type: ignore[arg-type]
    kept = [json.loads(data) for key, data in rc2.bucket.items() if key.startswith("publish-records/test/")]
    assert any(r["replaced"] for r in kept), "the bucket's own publication records list the replacement"


# -- 3. to 5. promotion and its refusals ------------------------------------------------------------------

REFUSED_LIMIT, PROMOTED, REFUSED_AGAIN = "301", "302", "303"


def summaries(run: Run) -> str:
    """The job summaries act printed (``⚙  Summary - ...``), joined."""
    found = []
    for line in run.output.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and "Summary - " in str(event.get("msg", "")):
            found.append(str(event["msg"]))
    return "\n".join(found)


@dataclass(frozen=True, kw_only=True)
class Promotion:
    run: Run
    before: tuple[dict[str, bytes], dict[str, bytes]]  # the bucket and the package server before the run
    after: tuple[dict[str, bytes], dict[str, bytes]]


@pytest.fixture(scope="module")
def promotions(world: World, candidates) -> dict[str, Promotion]:
    _rc1, rc2 = candidates
    (pypi_wheel,) = world.artifact(rc2.run_id, "release-wheels").glob("dist/*.whl")
    limits = {REFUSED_LIMIT: {"PYPI_FILE_LIMIT_MB": f"{pypi_wheel.stat().st_size / 2e6:.6f}"}}
    found = {}
    for run_id in (REFUSED_LIMIT, PROMOTED, REFUSED_AGAIN):
        before = (world.bucket(), world.server())
        run = world.run(run_id, "workflow_dispatch", "refs/heads/main", workflow=".github/workflows/promote.yml",
                        inputs={"version": VERSION, "candidate-run": rc2.run_id}, variables=limits.get(run_id))
        found[run_id] = Promotion(run=run, before=before, after=(world.bucket(), world.server()))
    return found


def assert_refused(promotion: Promotion, reason: str) -> None:
    run = promotion.run
    assert run.returncode != 0, run.failure()
    assert job(run, "preflight, provenance and the release index") == {"failure"}, run.failure()
    assert job(run, "PyPI, after the release index") <= {"skipped"}, run.failure()
    assert reason in run.output, run.failure()
    assert reason in summaries(run), f"the reason is not in the job summary:\n{summaries(run)}"
    assert promotion.after == promotion.before, "the release channel or the package server changed"


def test_a_pypi_file_over_the_declared_limit_is_refused_and_nothing_changes(promotions) -> None:
    assert_refused(promotions[REFUSED_LIMIT], "over the project's PyPI file limit")


def test_promotion_releases_exactly_rc2s_validated_bytes(world: World, candidates, promotions) -> None:
    _rc1, rc2 = candidates
    promotion = promotions[PROMOTED]
    run = promotion.run
    assert run.returncode == 0, run.failure()
    assert job(run, "preflight, provenance and the release index") == {"success"}, run.failure()
    assert job(run, "PyPI, after the release index") == {"success"}, run.failure()
    bucket, server = promotion.after
    installed = validated(world, rc2.run_id, "test")
    released = {name: sha256(data) for name, data in wheels(bucket, RELEASE).items()}  # type: ignore[arg-type]
    assert released == installed, "the release channel holds exactly what validate installed from test"
    from_test = {name: sha256(requests.get(world.url(TEST + "minifw/" + name), timeout=60).content) for name in installed}
    assert released == from_test, "and exactly what the test channel serves"
    linked = assert_consistent(world, RELEASE)
    assert {k.rsplit("/", 1)[-1]: v for k, v in linked.items() if k.endswith(".whl") and "/minifw/" in k} == released
    pypi = {name: sha256(data) for name, data in server.items() if name.endswith(".whl")}
    assert pypi == validated(world, rc2.run_id, "pypi"), "the package server holds exactly the validated PyPI wheels"
    assert promotion.before[1] == {}, "nothing was on the package server before the promotion"


def test_the_same_promotion_again_is_refused_as_already_on_the_package_server(promotions) -> None:
    assert promotions[PROMOTED].run.returncode == 0, promotions[PROMOTED].run.failure()
    assert_refused(promotions[REFUSED_AGAIN], "already on the package server")
