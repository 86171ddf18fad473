"""The channel lifecycle, run for real under act: nightlies, candidates, validation and promotion, and the
shared compile cache the nightly fills and the candidates read.

What runs is the committed ``.github/workflows/release.yml`` and ``promote.yml``, unchanged, on a copy of
the repository whose matrix is narrowed to one cpu target of linux-x86_64 (no CUDA toolkit; cpu is the PyPI
default, so the PyPI path runs too; the nightly channel keeps 1 version), with the lifecycle on
(``INDEX_BUCKET`` set) and the shared compile cache on (``COMPILE_CACHE``, an sccache S3 store). Around the
runs, on 127.0.0.1: the harness's services (``tests/act/harness.py``: registry, pypiserver as PyPI) and
``rclone serve s3`` with the buckets served over HTTP from the same folder (``tests/objectstore.py``), which
is what the validate jobs install from, as a user would.

Runs, in order, each asserted job by job and on the buckets' and the package server's contents:

1. two scheduled nightlies, committed on two dates: after the second only the newer dev version is on
   ``whl/nightly/cpu/``, and the pages read over HTTP link exactly the files there (each with its sha256).
   The first (trusted: a schedule of main) compiles into the empty compile cache and its objects are in
   the bucket; the second, a fresh runner, hits it;
2. tag ``v{VERSION}-rc1``: published to test, the validate job passes (the test channel over HTTP, the
   PyPI form from its staging index); tag ``-rc2`` (a changed Python file and a changed core unit): its
   files replace rc1's on test and the publication record lists each replaced file with both digests.
   Both read the compile cache (read-only, the hit rate in the build's job summary) and write nothing:
   the cache bucket is byte for byte what the nightlies left, although rc2 missed on its changed unit;
3. tag ``-rc3`` whose smoke job's script fails (its build passes): nothing published, nothing changed;
4. a dispatch of ``promote.yml`` with ``candidate-run`` = rc2's run whose ``PYPI_FILE_LIMIT_MB`` is below the
   PyPI wheel's size: refused in the preflight, its reason in the log and the job summary, the release
   channel and the package server unchanged;
5. the dispatch that promotes: the release channel and the package server hold exactly rc2's validated
   bytes (sha256 of every file equal to what validate installed and the test channel serves);
6. the same dispatch again: the promotion is finished already ("already done", nothing written); the PyPI
   job's upload is refused by the package server, which holds the files already; nothing changed.

How act stands in for GitHub here: ``GITHUB_RUN_ID`` is 1 in every act run, so a run's id is the name of its
state folder (``runs/<id>``), and the download-artifact stand-in reads another run's artifacts from the
sibling folder named by ``run-id`` (given with ``github-token``, as the real action needs). The buckets'
credentials come the documented non-OIDC way: ``AWS_ROLE_ARN`` and ``COMPILE_CACHE_ROLE_ARN`` empty and the
keys as secrets (``ci/bucket-credentials.sh``, ``ci/compile-cache.sh``); OIDC itself cannot run under act (no
token service), nor are environments' reviewers enforced. A failed job of a called workflow ends act's whole
run (tests/act/README.md): rc3 shows the smoke job failing alone and nothing published, while the
publishing jobs' gates themselves are workflow --check's. The nightlies and candidates share the host's
caches (the cold tag build is test_release_act.py's).

Time (each run's wall time is printed with -s): in the clean-clone run of the whole suite, on 2 cores beside the
other worker, the act runs took: nightlies 265 s (the cold compile cache) and 128 s, rc1 158 s, rc2 164 s, rc3
90 s, the second release's candidate 160 s, the four promote.yml dispatches 13 to 23 s; the module about 17
minutes. It runs in the default suite.

7. a second release (2.15.1: its candidate and its promotion): the first is still on the release channel byte for
   byte and both versions resolve with pip over HTTP from the release index and from the package server;
8. the second release rolled back (``builders rollback`` on the host, by the promotion's id that ``builders
   history`` lists): its files yanked on the release pages and no byte deleted; unpinned, pip and uv resolve 2.15.0
   again, pinned ``==2.15.1`` still resolves; the same rollback again (by the promotion's publish record) is
   "already done" and writes nothing; history lists the rollback; the next publish works.

Each candidate writes its release manifest (the ``release-files`` job); the validate jobs validate against it
and promote.yml releases exactly its validated files, after ``ci/candidate-run.sh`` asked GitHub's API (the ``gh``
stand-in, which answers from the ``run.json`` the harness writes when each act run ends) that the run named is a
successful candidate run of the version.

Not run here: GPU validate jobs (no GPU runner here).
"""

from __future__ import annotations

import hashlib
import html.parser
import json
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests
import yaml
from packaging.utils import parse_wheel_filename

from builders.pipeline.remotecache import cell
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

pytestmark = pytest.mark.slow

PYTHON = "3.13"  # one the local base image (Debian unstable) and this host (pyenv) both have
VERSION = "2.15.0"
BUCKET = "downloads"
CACHE_BUCKET, CACHE_PREFIX = "build-cache", "builders"  # the shared compile cache (issue: nightly writes, others read)
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

    def cache(self) -> dict[str, bytes]:
        """The shared compile cache's objects."""
        return self.store.files(CACHE_BUCKET)

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
        s3.make_bucket(CACHE_BUCKET)
        variables = {"INDEX_BUCKET": f"s3://{BUCKET}/", "AWS_ENDPOINT_URL": s3.endpoint, "AWS_REGION": "us-east-1",
                     "AWS_ROLE_ARN": "", "INDEX_BASE_URL": s3.http_url + f"{BUCKET}/",
                     "PYPI_SIMPLE_URL": local.simple_url, "PYPI_REPOSITORY_URL": local.pypi_url,
                     "ACCEPT_NOT_RUNNABLE": "", "PYPI_FILE_LIMIT_MB": "", "PYPI_TOTAL_LIMIT_GB": "",
                     "COMPILE_CACHE": f"s3://{CACHE_BUCKET}/{CACHE_PREFIX}", "COMPILE_CACHE_ENDPOINT": s3.endpoint,
                     "COMPILE_CACHE_REGION": "us-east-1", "COMPILE_CACHE_ROLE_ARN": "", "COMPILE_CACHE_WRITER_ROLE_ARN": ""}
        harness = Harness(repo=repo, home=home, services=local, variables=variables,
                          secrets={"AWS_ACCESS_KEY_ID": s3.key, "AWS_SECRET_ACCESS_KEY": s3.secret,
                                   "COMPILE_CACHE_ACCESS_KEY_ID": s3.key, "COMPILE_CACHE_SECRET_ACCESS_KEY": s3.secret},
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


def provenances(world: World, folder: str) -> dict[str, str]:
    """Each wheel's PEP 740 provenance its HTML page links (``data-provenance``), by bucket key, each fetched:
    a provenance object (version 1, its attestation bundles) the attest step made."""
    found: dict[str, str] = {}
    base = world.url("")
    for project in links(world.url(folder)):
        for link in links(project["href"]):
            if link.get("data-provenance"):
                address = urllib.parse.urljoin(project["href"], link["data-provenance"])
                body = requests.get(address, timeout=60)
                assert body.status_code == 200, f"{address}: linked as provenance, but HTTP {body.status_code}"
                assert body.json().get("version") == 1 and body.json().get("attestation_bundles"), address
                key = urllib.parse.unquote(link["href"].partition("#")[0].removeprefix(base))
                found[key] = urllib.parse.unquote(address.removeprefix(base))
    return found


def assert_consistent(world: World, folder: str) -> dict[str, str]:
    """The variant index under ``folder``: every linked file exists with its sha256, every project wheel has
    its PEP 740 provenance linked, and every project file in the bucket is linked (or is a linked wheel's PEP 658
    ``.metadata`` or provenance, or a page); returns the linked."""
    linked = served(world, folder)
    attested = provenances(world, folder)
    bare = sorted(k for k in linked if k.endswith(".whl") and "/minifw/" in k and k not in attested)
    assert not bare, f"linked without provenance: {bare}"
    objects = {key for key in world.bucket() if key.startswith(folder)}
    pages = {k for k in objects if k.rsplit("/", 1)[-1] in ("index.html", "index.json")}
    project_files = {k for k in objects - pages if k.removeprefix(folder).count("/") == 1}
    unlinked = project_files - set(linked) - {k + ".metadata" for k in linked} - set(attested.values())
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


@pytest.fixture(scope="module")
def cache_after_nightlies(world: World, nightlies) -> dict[str, bytes]:
    """The shared compile cache as the nightlies left it (taken before any candidate runs)."""
    return world.cache()


def nightly_versions(files: dict[str, object]) -> set[str]:
    return {str(parse_wheel_filename(name)[1]) for name in wheels(files, NIGHTLY)}


def assert_covered(files: dict[str, object], key: str, version: str) -> None:
    """check-index ran after the publish: its coverage table beside the index, every cell resolved by pip and uv."""
    record = json.loads(files[key])  # type: ignore[arg-type]
    assert record["version"] == version and record["missing"] == [] and record["findings"] == [], record
    assert record["cells"] and all(c["pip"] == "resolved" and c["uv"] == "resolved" for c in record["cells"]), record


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
    assert_covered(after_second, "whl/nightly/coverage.json", newer.split("+")[0])


# -- the shared compile cache: the nightly writes it, candidates read it and write nothing ------------------

def shared_cache(world: World, run_id: str) -> dict:
    """The run's build's ``compiler_cache`` record (results.json of its build artifact; one target)."""
    (results,) = (world.runs / run_id / "artifacts").glob("build-*/results.json")
    (target,) = json.loads(results.read_text())["targets"]
    return target["compiler_cache"]


def test_the_nightly_fills_the_shared_compile_cache_and_the_next_nightly_hits_it(
        world: World, nightlies, cache_after_nightlies) -> None:
    (first, _), (second, _) = nightlies
    assert first.returncode == 0 and second.returncode == 0, first.failure() + second.failure()
    cold, warm = shared_cache(world, "101"), shared_cache(world, "102")
    assert cold["backend"] == "sccache" and cold["mode"] == "read-write", cold  # a schedule on main: trusted
    assert cold["misses"] > 0 and cold["writes"] == cold["misses"], cold
    stored = [key for key in cache_after_nightlies if key.startswith(f"{CACHE_PREFIX}/")]
    assert len(stored) >= cold["writes"], (len(stored), cold)  # the objects are in the bucket
    assert warm["mode"] == "read-write" and warm["hit_rate"] >= 0.9, warm  # a fresh runner, nothing local


def test_candidates_read_the_shared_cache_its_hit_rate_in_the_job_summary_and_write_nothing(
        world: World, cache_after_nightlies, candidates) -> None:
    rc1, rc2 = candidates
    for candidate in (rc1, rc2):
        assert candidate.run.returncode == 0, candidate.run.failure()
        record = shared_cache(world, candidate.run_id)
        assert record["mode"] == "read-only" and record["writes"] == 0, record
        assert cell(record) in summaries(candidate.run), f"no hit rate in the build's job summary:\n{summaries(candidate.run)}"
    assert shared_cache(world, rc1.run_id)["hit_rate"] >= 0.9  # the nightly compiled rc1's sources
    assert shared_cache(world, rc2.run_id)["misses"] > 0  # rc2's changed unit: not in the cache
    assert rc1.cache == cache_after_nightlies and rc2.cache == cache_after_nightlies, \
        "a candidate (not the trusted nightly) wrote into the shared compile cache"


# -- 2. candidates: rc1, then rc2 replacing it on test ----------------------------------------------------

TEST = "whl/test/cpu/"
RELEASE = "whl/cpu/"
CHANGED = "examples/minifw/src/minifw/ops.py"  # rc2's fix: a changed source file, so other bytes
# and a changed unit of the core: compiles the shared cache has no entry for, which a candidate (a
# reader) must not store
CHANGED_UNIT = "examples/minifw/core/src/ops.cpp"


@dataclass(frozen=True, kw_only=True)
class Candidate:
    run_id: str
    run: Run
    bucket: dict[str, bytes]  # the bucket after the run
    cache: dict[str, bytes]  # the shared compile cache after the run


@pytest.fixture(scope="module")
def candidates(world: World, cache_after_nightlies) -> tuple[Candidate, Candidate]:
    found = []
    for number, rc in enumerate(("rc1", "rc2"), 1):
        if rc == "rc2":
            path = world.repo / CHANGED
            path.write_text(path.read_text() + "\n# rc2: the fix found while validating rc1\n")
            unit = world.repo / CHANGED_UNIT
            unit.write_text(unit.read_text() + '\nextern "C" int minifw_rc2_fix(void);\nint minifw_rc2_fix(void) { return 2; }\n')
        commit(world.repo, f"minifw {VERSION}-{rc}", tag=f"v{VERSION}-{rc}")
        run_id = f"20{number}"
        run = world.run(run_id, "push", f"refs/tags/v{VERSION}-{rc}")
        found.append(Candidate(run_id=run_id, run=run, bucket=world.bucket(), cache=world.cache()))
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
    assert_covered(rc1.bucket, "whl/test/coverage.json", VERSION)


def test_rc2_replaces_rc1_on_test_and_the_replacement_is_recorded(world: World, candidates) -> None:
    rc1, rc2 = candidates
    assert_candidate(world, rc2)
    old, new = wheels(rc1.bucket, TEST), wheels(rc2.bucket, TEST)
    assert set(old) == set(new), "rc2 publishes the same file names (the final version)"
    assert all(old[name] != new[name] for name in new), "rc2's bytes differ from rc1's"
    linked = assert_consistent(world, TEST)
    assert {k.rsplit("/", 1)[-1]: v for k, v in linked.items() if k.endswith(".whl") and "/minifw/" in k} == \
        {name: sha256(data) for name, data in new.items()}  # type: ignore[arg-type]
    publication = world.artifact(rc2.run_id, "publication-test") / "test.json"  # beside it: check-index's coverage
    replaced = {c["key"].rsplit("/", 1)[-1]: (c["old_sha256"], c["new_sha256"])
                for c in json.loads(publication.read_text())["replaced"]}
    for name in new:
        assert replaced.get(name) == (sha256(old[name]), sha256(new[name])), replaced  # type: ignore[arg-type]
    kept = [json.loads(data) for key, data in rc2.bucket.items() if key.startswith("publish-records/test/")]
    assert any(r["replaced"] for r in kept), "the bucket's own publication records list the replacement"


# -- a candidate whose only failure is its smoke job --------------------------------------------------------

SMOKE_SCRIPT = "ci/smoke.sh"
SABOTAGE = "smoke sabotaged by the lifecycle test"


@dataclass(frozen=True, kw_only=True)
class Observed:
    """A run, and what the bucket and the package server held before and after it."""
    run: Run
    before: tuple[dict[str, bytes], dict[str, bytes]]
    after: tuple[dict[str, bytes], dict[str, bytes]]


@pytest.fixture(scope="module")
def smoke_failed(world: World, candidates) -> Observed:
    """Tag ``-rc3`` with the smoke job's script failing (its build is rc2's, and passes); the script is put
    back and committed after the run, so the promotion dispatches that follow run the real one."""
    script = world.repo / SMOKE_SCRIPT
    intact = script.read_text()
    script.write_text(intact.replace("\nrun() {\n", f'\nrun() {{\n  echo "::error::{SABOTAGE}" >&2; exit 1\n', 1))
    assert script.read_text() != intact
    commit(world.repo, f"minifw {VERSION}-rc3", tag=f"v{VERSION}-rc3")
    before = (world.bucket(), world.server())
    run = world.run("203", "push", f"refs/tags/v{VERSION}-rc3")
    after = (world.bucket(), world.server())
    script.write_text(intact)
    commit(world.repo, "the smoke script back")
    return Observed(run=run, before=before, after=after)


def test_a_candidate_whose_only_failure_is_a_smoke_job_publishes_nothing(smoke_failed: Observed) -> None:
    """The gate after the shard under act is act's own: act 0.2.89 ends the run at the failed job of the called
    workflow (tests/act/README.md), so this shows the smoke job failing on its own and nothing published;
    that the publishing jobs' `if`s would skip on GitHub is workflow --check's (test_workflow_check.py)."""
    run = smoke_failed.run
    assert run.returncode != 0, run.failure()
    assert job(run, "/build ") == {"success"}, run.failure()  # the build passed: only the smoke failed
    assert job(run, "/smoke ") == {"failure"}, run.failure()
    assert SABOTAGE in run.output, run.failure()
    assert not any(name in key for key in run.jobs for name in ("publish", "validate", "release files")), run.summary()
    assert smoke_failed.after == smoke_failed.before, "the test channel or the package server changed"


# -- 3. to 5. promotion and its refusals ------------------------------------------------------------------

REFUSED_LIMIT, PROMOTED, AGAIN = "301", "302", "303"


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


@pytest.fixture(scope="module")
def promotions(world: World, candidates, smoke_failed) -> dict[str, Observed]:
    _rc1, rc2 = candidates
    (pypi_wheel,) = world.artifact(rc2.run_id, "release-wheels").glob("dist/*.whl")
    limits = {REFUSED_LIMIT: {"PYPI_FILE_LIMIT_MB": f"{pypi_wheel.stat().st_size / 2e6:.6f}"}}
    found = {}
    for run_id in (REFUSED_LIMIT, PROMOTED, AGAIN):
        before = (world.bucket(), world.server())
        run = world.run(run_id, "workflow_dispatch", "refs/heads/main", workflow=".github/workflows/promote.yml",
                        inputs={"version": VERSION, "candidate-run": rc2.run_id}, variables=limits.get(run_id))
        found[run_id] = Observed(run=run, before=before, after=(world.bucket(), world.server()))
    return found


def assert_refused(promotion: Observed, reason: str) -> None:
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
    assert_covered(bucket, "whl/coverage.json", VERSION)
    pypi = {name: sha256(data) for name, data in server.items() if name.endswith(".whl")}
    assert pypi == validated(world, rc2.run_id, "pypi"), "the package server holds exactly the validated PyPI wheels"
    assert promotion.before[1] == {}, "nothing was on the package server before the promotion"
    manifest = world.artifact(rc2.run_id, "release-wheels") / "manifest.json"
    listed = {f["name"]: f["sha256"] for f in json.loads(manifest.read_text())["files"] if f["form"] == "labelled"}
    assert listed == released, "the release is exactly the candidate's manifest"
    github = world.runs / PROMOTED / "releases" / f"v{VERSION}"  # the gh stand-in's release of the bucket path
    assert (github / "manifest.json").read_bytes() == manifest.read_bytes()
    sums = dict(reversed(line.split("  ", 1)) for line in (github / "SHA256SUMS").read_text().splitlines())
    assert {path.rsplit("/", 1)[-1]: sha for path, sha in sums.items()
            if path.startswith(RELEASE)} == released, "SHA256SUMS of the release index (the variants' are beside it)"
    assert_verified(world, rc2.run_id, manifest)


def assert_verified(world: World, run_id: str, manifest: Path) -> None:
    """``verify-release`` on the host, as a user runs it against the served release index: every file's sha256
    and its provenance (the candidate's attestation, copied with its files), signed for this workflow and tag."""
    (signer,) = {json.dumps(json.loads(line)["signer"], sort_keys=True)
                 for line in (world.runs / run_id / "attestations.jsonl").read_text().splitlines()}
    repository = json.loads(signer)["repository"]  # whatever act ran with: the certificate names it
    proc = subprocess.run([sys.executable, "-m", "builders", "verify-release", VERSION, "--channel", "release",
                           "--matrix", str(world.repo / "matrix.yaml"), "--site-url", world.url(""),
                           "--manifest", str(manifest), "--repository", repository],  # workflow, ref: release.yml, rc2's tag
                          cwd=world.repo, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    print(f"\nverify-release: {(proc.stdout + proc.stderr).strip()}")


def test_the_same_promotion_again_is_already_done_and_changes_nothing(promotions) -> None:
    """Rerun is finish for promote-release: the ledger and the package server hold this release, so it says so and
    writes nothing. The workflow's PyPI job uploads the same files again and the package server refuses them (the
    action's skip-existing is not used: twine does not support it against a server other than PyPI's)."""
    assert promotions[PROMOTED].run.returncode == 0, promotions[PROMOTED].run.failure()
    again = promotions[AGAIN]
    assert job(again.run, "preflight, provenance and the release index") == {"success"}, again.run.failure()
    assert "already done" in again.run.output, again.run.failure()
    assert again.after == again.before, "the release channel or the package server changed"


# -- 7. a second release keeps the first installable on every path ----------------------------------------

SECOND = "2.15.1"
SECOND_CANDIDATE, SECOND_PROMOTION = "204", "304"


@dataclass(frozen=True, kw_only=True)
class Second:
    candidate: Run
    promotion: Run
    bucket: dict[str, bytes]  # after the promotion
    server: dict[str, bytes]


@pytest.fixture(scope="module")
def second_release(world: World, promotions) -> Second:
    """The next version's candidate (the matrix's version bumped), then its promotion, after the first's."""
    matrix = world.repo / "matrix.yaml"
    data = yaml.safe_load(matrix.read_text())
    data["project"]["version"] = SECOND
    matrix.write_text(yaml.safe_dump(data, sort_keys=False))
    commit(world.repo, f"minifw {SECOND}-rc1", tag=f"v{SECOND}-rc1")
    candidate = world.run(SECOND_CANDIDATE, "push", f"refs/tags/v{SECOND}-rc1")
    promotion = world.run(SECOND_PROMOTION, "workflow_dispatch", "refs/heads/main",
                          workflow=".github/workflows/promote.yml",
                          inputs={"version": SECOND, "candidate-run": SECOND_CANDIDATE})
    return Second(candidate=candidate, promotion=promotion, bucket=world.bucket(), server=world.server())


def downloadable(index_url: str, version: str, dest: Path) -> str:
    """pip's own resolution of ``minifw==version`` from ``index_url`` alone, for the cp313 manylinux wheel
    the plan made (downloaded, not installed: this host's interpreter need not match); the file's sha256."""
    proc = subprocess.run([sys.executable, "-m", "pip", "download", "--isolated", "--no-deps", "--only-binary=:all:",
                           "--python-version", PYTHON, "--platform", "manylinux_2_28_x86_64", "--index-url", index_url,
                           "--dest", str(dest), f"minifw=={version}"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"minifw=={version} from {index_url}:\n{proc.stdout}{proc.stderr}"
    (wheel,) = dest.glob(f"minifw-{version}*.whl")
    return sha256(wheel.read_bytes())


def test_a_second_release_keeps_the_first_installable_on_every_path(world: World, candidates, promotions,
                                                                     second_release: Second, tmp_path: Path) -> None:
    second = second_release
    assert second.candidate.returncode == 0, second.candidate.failure()
    assert second.promotion.returncode == 0, second.promotion.failure()
    first_released = promotions[PROMOTED].after
    # the release channel: both versions, the first's files byte for byte as promoted, the pages consistent
    kept = wheels(first_released[0], RELEASE)
    now = wheels(second.bucket, RELEASE)
    assert kept and all(now.get(name) == data for name, data in kept.items()), "the first release's files changed"
    assert {str(parse_wheel_filename(name)[1].public) for name in now} == {VERSION, SECOND}, sorted(now)
    linked = assert_consistent(world, RELEASE)
    assert {k.rsplit("/", 1)[-1] for k in linked if "/minifw/" in k and k.endswith(".whl")} == set(now)
    # the package server (PyPI): both versions, the first's wheel unchanged
    assert all(second.server.get(name) == data for name, data in first_released[1].items() if name.endswith(".whl"))
    assert {str(parse_wheel_filename(n)[1]) for n in second.server if n.endswith(".whl")} == {VERSION, SECOND}
    # installable as a user installs it, over HTTP: each version from the release index and from PyPI
    for version in (VERSION, SECOND):
        released = {name: sha256(data) for name, data in now.items() if f"-{version}+" in name}  # type: ignore[arg-type]
        assert downloadable(world.url(RELEASE), version, tmp_path / f"index-{version}") in released.values()
        on_pypi = {sha256(data) for name, data in second.server.items() if f"-{version}-" in name}
        assert downloadable(world.local.simple_url, version, tmp_path / f"pypi-{version}") in on_pypi


# -- 8. the second release rolled back: yanked, the first resolves again, nothing deleted -----------------

ROLLBACK_REASON = "rolled back by the lifecycle test"


@dataclass(frozen=True, kw_only=True)
class RolledBack:
    proc: subprocess.CompletedProcess[str]
    before: dict[str, bytes]
    after: dict[str, bytes]
    published: subprocess.CompletedProcess[str]  # a publish of its candidate again, after the rollback
    history: tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]  # before and after it
    promotion_id: str  # the second release's promotion, as ``history`` lists it (what the rollback was given)
    again: subprocess.CompletedProcess[str]  # the same rollback again, named by its publish record
    after_again: dict[str, bytes]


def host_builders(world: World, root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m builders`` on the host against the lifecycle's bucket (what a release engineer runs)."""
    import os

    env = {**os.environ, **world.store.env, "PYTHONPATH": str(root)}
    return subprocess.run([sys.executable, "-m", "builders", *args, "--matrix", str(world.repo / "matrix.yaml"),
                           "--bucket", f"s3://{BUCKET}/"], cwd=world.repo, env=env, capture_output=True, text=True,
                          timeout=600)


@pytest.fixture(scope="module")
def rolled_back(world: World, root: Path, second_release: Second) -> RolledBack:
    """``history`` names the second promotion's id, ``rollback`` takes that id; the same rollback again, by the
    promotion's publish record, is already done; ``history`` then lists the rollback; the next publish."""
    before = world.bucket()
    listed = host_builders(world, root, "history", "--channel", "release")
    ids = [line.split()[0] for line in (listed.stdout + listed.stderr).splitlines()
           if " promotion " in line and f"version {SECOND}," in line]
    promotion_id = ids[0] if len(ids) == 1 else f"(history listed {len(ids)} promotions of {SECOND})"
    proc = host_builders(world, root, "rollback", "--promotion", promotion_id, "--reason", ROLLBACK_REASON)
    after = world.bucket()
    records = sorted(k for k in before if k.startswith("publish-records/release/"))
    record = next(k for k in reversed(records) if json.loads(before[k]).get("version", "").startswith(SECOND))
    again = host_builders(world, root, "rollback", "--promotion", record, "--reason", "another reason")
    after_again = world.bucket()
    history = host_builders(world, root, "history", "--channel", "release")
    wheels_dir = world.artifact(SECOND_CANDIDATE, "release-wheels") / "wheels"
    published = host_builders(world, root, "publish", str(wheels_dir), "--channel", "test")
    return RolledBack(proc=proc, before=before, after=after, published=published, history=(listed, history),
                      promotion_id=promotion_id, again=again, after_again=after_again)


def resolved_by_uv(index_url: str, requirement: str) -> str:
    """uv's own resolution of ``requirement`` from ``index_url`` alone for the plan's cp313 manylinux wheel."""
    from builders.wheel.smoke import find_uv

    proc = subprocess.run([str(find_uv()), "pip", "compile", "-", "--no-config", "--no-header", "--no-annotate",
                           "--index-url", index_url, "--python-version", PYTHON, "--python-platform",
                           "x86_64-manylinux_2_28"], input=requirement + "\n", capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, f"{requirement} from {index_url}:\n{proc.stdout}{proc.stderr}"
    return proc.stdout.strip()


def test_a_rollback_yanks_the_release_the_previous_resolves_and_its_candidate_is_refused_at_publish(
        world: World, rolled_back: RolledBack, tmp_path: Path) -> None:
    assert rolled_back.proc.returncode == 0, rolled_back.proc.stdout + rolled_back.proc.stderr
    wheels_before = {k: v for k, v in rolled_back.before.items() if k.endswith(".whl")}
    assert {k: v for k, v in rolled_back.after.items() if k.endswith(".whl")} == wheels_before, "no byte deleted"
    page = json.loads(rolled_back.after[RELEASE + "minifw/index.json"])
    yanks = {f["filename"]: f.get("yanked") for f in page["files"]}
    assert {n for n, y in yanks.items() if y} == {n for n in yanks if f"-{SECOND}+" in n}, yanks
    assert set(yanks.values()) - {None} == {ROLLBACK_REASON}
    # unpinned, pip and uv resolve the previous release; pinned, the yanked one still installs
    index = world.url(RELEASE)
    first = {sha256(data) for name, data in wheels(rolled_back.after, RELEASE).items() if f"-{VERSION}+" in name}
    second = {sha256(data) for name, data in wheels(rolled_back.after, RELEASE).items() if f"-{SECOND}+" in name}
    proc = subprocess.run([sys.executable, "-m", "pip", "download", "--isolated", "--no-deps", "--only-binary=:all:",
                           "--python-version", PYTHON, "--platform", "manylinux_2_28_x86_64", "--index-url", index,
                           "--dest", str(tmp_path / "unpinned"), "minifw"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (got,) = (tmp_path / "unpinned").glob("minifw-*.whl")
    assert sha256(got.read_bytes()) in first, got.name
    assert resolved_by_uv(index, "minifw").startswith(f"minifw=={VERSION}+")
    assert downloadable(index, SECOND, tmp_path / "pinned") in second
    assert resolved_by_uv(index, f"minifw=={SECOND}+cpu") == f"minifw=={SECOND}+cpu"
    # the rolled-back version stays released: a candidate of it is refused at publish, before anything is written
    published = rolled_back.published
    assert published.returncode == 41 and "released already" in published.stderr, published.stdout + published.stderr


def test_history_names_the_promotion_a_rollback_takes_by_id_and_a_second_rollback_is_already_done(
        rolled_back: RolledBack) -> None:
    """``builders history`` lists each promotion with its id; ``rollback`` takes that id; the same rollback again
    (named by the promotion's publish record this time) exits 0, says "already done" and writes nothing; history
    then lists the rollback, naming the promotion it undoes."""
    listed, after = rolled_back.history
    assert listed.returncode == 0 and after.returncode == 0, listed.stdout + listed.stderr + after.stderr
    said = rolled_back.proc.stdout + rolled_back.proc.stderr
    assert rolled_back.proc.returncode == 0 and rolled_back.promotion_id in said, (
        rolled_back.promotion_id, listed.stdout + listed.stderr, said)
    assert rolled_back.again.returncode == 0, rolled_back.again.stdout + rolled_back.again.stderr
    assert "already done" in rolled_back.again.stdout + rolled_back.again.stderr
    assert rolled_back.after_again == rolled_back.after, "a second rollback wrote something"
    lines = (after.stdout + after.stderr).splitlines()
    assert [line for line in lines if " rollback " in line and f"undoes {rolled_back.promotion_id}" in line], lines
