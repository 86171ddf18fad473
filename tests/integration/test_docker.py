"""The container engine with docker, for real: a private dockerd that these tests start and stop.

Debian's docker.io (``scripts/setup-test-host.sh`` installs it) runs here as
``dockerd --iptables=false --bridge=none``, with its own data root, state, pid file, socket and
containerd namespace, so it fights no other daemon. No registry can be pulled from: the base
moves over from podman (``podman save | docker load``). The data root is kept in a cache folder
(``$BUILDERS_DOCKER_ROOT``, default ``~/.cache/builders/docker``), so a second run finds its
images built; a data root in use by a live daemon is left alone (a temporary one is used).

The engine builds images with BuildKit (the CA bundle is a build secret). Debian's docker.io CLI
(20.10) has BuildKit built in; a newer CLI needs the buildx plugin, and the engine says so.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from builders.engines import images
from builders.engines.container import OWNER_LABEL, owners, reap_stale
from builders.engines.images import engine_env
from builders.families import loader as matrix_mod
from builders.matrix.targets import Selection, select
from tests import expected
from tests.helpers import builders, require_tool

pytestmark = pytest.mark.slow

TARGETS = ("cpu-cp314-linux-x86_64", "cu132-cp314-linux-x86_64")
DATA_ROOT = Path(os.environ.get("BUILDERS_DOCKER_ROOT") or Path.home() / ".cache/builders/docker")


@dataclass(frozen=True)
class Daemon:
    """A running private dockerd: ``env`` reaches it (DOCKER_HOST) with a BuildKit-capable CLI first on PATH."""

    env: dict[str, str]
    cli: str

    def docker(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([self.cli, *args], env=env or self.env, text=True, capture_output=True, timeout=600)


def buildkit_cli(dockerd: str, env: dict[str, str]) -> str | None:
    """The docker CLI on PATH if it builds with BuildKit, else the one packaged with ``dockerd``."""
    packaged = Path(dockerd).resolve().parent.parent / "bin" / "docker"
    for exe in dict.fromkeys([shutil.which("docker", path=env.get("PATH")), str(packaged)]):
        if exe and os.access(exe, os.X_OK) and images.Dialect(exe=exe).build_problem(env) is None:
            return exe
    return None


def free_data_root(tmp: Path) -> Path:
    """The cached data root, unless a live daemon holds it (its pid file names a running process)."""
    pidfile = DATA_ROOT / "dockerd.pid"
    try:
        os.kill(int(pidfile.read_text().strip()), 0)
    except (OSError, ValueError):
        return DATA_ROOT
    return tmp / "docker"


def start(dockerd: str, root: Path, state: Path) -> subprocess.Popen[bytes]:
    (root / "data").mkdir(parents=True, exist_ok=True)
    (state / "daemon.json").write_text("{}")  # not /etc/docker/daemon.json: nothing of the host's daemon
    argv = [dockerd, "--data-root", str(root / "data"), "--exec-root", str(state / "exec"),
            "--pidfile", str(root / "dockerd.pid"), "-H", f"unix://{state / 'docker.sock'}",
            "--config-file", str(state / "daemon.json"), "--iptables=false", "--bridge=none",
            "--containerd-namespace", "builders-tests", "--containerd-plugins-namespace", "builders-tests-plugins"]
    with (state / "dockerd.log").open("wb") as log:
        return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)


def wait_ready(proc: subprocess.Popen[bytes], daemon: Daemon, state: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if daemon.docker("version", "--format", "{{.Server.Version}}").returncode == 0:
            return
        time.sleep(0.5)
    stop(proc)
    tail = (state / "dockerd.log").read_text(errors="replace")[-2000:]
    pytest.skip(f"dockerd did not start here (exit {proc.returncode}):\n{tail}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=60)


def unmount_under(folder: Path) -> None:
    """What dockerd leaves mounted in its exec root (``netns/default`` once a container used the host's network)."""
    points = [Path(line.split()[4]) for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    for point in sorted((p for p in points if p.is_relative_to(folder)), key=lambda p: len(p.parts), reverse=True):
        subprocess.run(["umount", str(point)], check=True, timeout=60)


def load_base(daemon: Daemon, base: str) -> None:
    """``podman save | docker load``, unless docker already has the very image (the ids agree)."""
    podman_env = engine_env(os.environ)
    wanted = subprocess.run(["podman", "image", "inspect", "--format", "{{.Id}}", base], env=podman_env, text=True,
                            capture_output=True, check=True, timeout=120).stdout.strip()
    have = daemon.docker("image", "inspect", "--format", "{{.Id}}", base).stdout.strip().removeprefix("sha256:")
    if have == wanted:
        return
    save = subprocess.Popen(["podman", "save", base], env=podman_env, stdout=subprocess.PIPE)
    load = subprocess.run([daemon.cli, "load"], stdin=save.stdout, env=daemon.env, capture_output=True, timeout=600)
    assert save.wait(timeout=600) == 0 and load.returncode == 0, load.stderr


def current_tags(root: Path, env: dict[str, str], base: str) -> set[str]:
    m = matrix_mod.load(root / "matrix.yaml")
    found = select(m, Selection(targets=TARGETS))
    return {images.image_spec(t, images.image_pythons(m), env, base).tag for t in found}


def drop_stale_images(daemon: Daemon, keep: set[str]) -> None:
    """Keep the cached data root to the images this test builds: older tags of builders' images go."""
    listed = daemon.docker("images", "--filter", "reference=localhost/builders-*", "--format",
                           "{{.Repository}}:{{.Tag}}").stdout.split()
    stale = [ref for ref in listed if ref.split(":")[0] != "localhost/builders-base" and ref not in keep]
    if stale:
        daemon.docker("rmi", *stale)
    daemon.docker("image", "prune", "--force")


@pytest.fixture(scope="module")
def dockerd(root: Path, base_image: str) -> Iterator[Daemon]:
    exe = require_tool("dockerd", path=os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"]))
    env = engine_env(os.environ)
    cli = buildkit_cli(exe, env)
    if cli is None:
        pytest.skip("no docker CLI with BuildKit here (neither on PATH nor beside dockerd); the engine needs one")
    with tempfile.TemporaryDirectory(prefix="bd-", dir="/tmp") as tmp:  # short: a socket path has 107 bytes
        state = Path(tmp)
        bindir = state / "bin"
        bindir.mkdir()
        (bindir / "docker").symlink_to(cli)
        daemon = Daemon(env={**env, "DOCKER_HOST": f"unix://{state / 'docker.sock'}",
                             "PATH": f"{bindir}{os.pathsep}{env.get('PATH', '')}"}, cli=cli)
        proc = start(exe, free_data_root(state), state)
        try:
            wait_ready(proc, daemon, state)
            load_base(daemon, base_image)
            yield daemon
            drop_stale_images(daemon, current_tags(root, env, base_image))
        finally:
            stop(proc)
            unmount_under(state)


@pytest.fixture(scope="module")
def docker_house(dockerd: Daemon, root: Path, base_image: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("docker-house")
    proc = builders("build", "--engine", "container", "--container-engine", "docker", "--base-image", base_image,
                    *(a for t in TARGETS for a in ("--target", t)), "--output", str(out), cwd=root, env=dockerd.env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return out


def results(house: Path) -> dict[str, dict]:
    return {r["id"]: r for r in json.loads((house / "results.json").read_text())["targets"]}


def cuda_runtime(data: dict, label: str) -> int:
    """``cudaRuntimeGetVersion()`` of a CUDA variant: 1000 x major + 10 x minor of its matrix version."""
    version = next(v for v, node in data["accelerators"]["cuda"]["versions"].items() if node["label"] == label)
    major, minor = map(int, version.split("."))
    return 1000 * major + 10 * minor


def test_docker_builds_repairs_verifies_and_smokes_cp314(docker_house: Path, shipped_text: str) -> None:
    data = expected.raw(shipped_text)
    found = results(docker_house)
    assert {t: found[t]["status"] for t in TARGETS} == dict.fromkeys(TARGETS, "built")
    for tid in TARGETS:
        r, label = found[tid], tid.split("-")[0]
        assert r["engine"] == "container" and r["policy"] == "manylinux_2_28_x86_64"
        assert {"build", "repair", "verify", "smoke"} <= set(r["durations"])
        assert r["wheel"].startswith(f"whl/{label}/") and (docker_house / r["wheel"]).is_file()
        assert r["smoke"]["version"] == f"{data['project']['version']}+{label}"
        assert r["smoke"]["extension_loaded"] and r["smoke"]["failed_checks"] == []
    cuda = found["cu132-cp314-linux-x86_64"]["smoke"]
    assert cuda["cuda_runtime_version"] == cuda_runtime(data, "cu132")
    assert cuda["cudart_path"].startswith("/tmp/smoke/venv/") and cuda["cudart_path"].endswith("libcudart.so.13")


def test_docker_ran_every_container(docker_house: Path) -> None:
    """Build and repair offline (``--network none``); the smoke install through the host's network."""
    for tid in TARGETS:
        runs = [line.split() for line in (docker_house / "logs" / f"{tid}.log").read_text().splitlines()
                if line.startswith("$ ") and " run --rm --detach " in line]
        assert [Path(argv[1]).name for argv in runs] == ["docker", "docker"]
        assert [argv[argv.index("--network") + 1] for argv in runs] == ["none", "host"]


def test_images_are_in_docker_without_the_ca_bundle(dockerd: Daemon, root: Path, base_image: str) -> None:
    """The CA bundle was a build secret: the build could reach the index, no layer kept the file."""
    tags = current_tags(root, dockerd.env, base_image)
    assert len(tags) == len(TARGETS)
    for tag in tags:
        probe = dockerd.docker("run", "--rm", "--network", "none", tag, "sh", "-c",
                               "test ! -e /run/builders/ca.crt && ls /opt/_internal/tools/bin/auditwheel")
        assert probe.returncode == 0, probe.stdout + probe.stderr


def test_no_container_is_left_behind(docker_house: Path, dockerd: Daemon) -> None:
    assert dockerd.docker("ps", "--all", "--filter", "name=builders-", "--format", "{{.Names}}").stdout.strip() == ""


def test_reap_stale_removes_only_containers_of_dead_owners(dockerd: Daemon, base_image: str) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    names = {"builders-test-dead": gone.pid, "builders-test-live": os.getpid()}
    for name, pid in names.items():
        started = dockerd.docker("run", "--detach", "--rm", "--name", name, "--label", f"{OWNER_LABEL}={pid}",
                                 "--network", "none", "--entrypoint", "sleep", base_image, "600")
        assert started.returncode == 0, started.stderr
    try:
        assert {n: p for n, p in owners("docker", dockerd.env).items() if n in names} == names
        assert reap_stale("docker", dockerd.env) == ["builders-test-dead"]
        assert set(owners("docker", dockerd.env)) & set(names) == {"builders-test-live"}
    finally:
        dockerd.docker("rm", "--force", *names)


def test_a_docker_cli_without_buildkit_is_refused_with_the_reason(dockerd: Daemon, root: Path) -> None:
    on_path = shutil.which("docker", path=os.environ.get("PATH"))
    if on_path is None or images.Dialect(exe=on_path).build_problem(dockerd.env) is None:
        pytest.skip(f"the docker CLI on PATH ({on_path}) builds with BuildKit: nothing to refuse")
    env = {**dockerd.env, "PATH": os.environ.get("PATH", "")}
    proc = builders("images", "--container-engine", "docker", "--base-image", "localhost/never-built:1",
                    "--target", TARGETS[0], cwd=root, env=env)
    assert proc.returncode == 9, proc.stdout + proc.stderr
    assert "cannot build with BuildKit" in proc.stderr and "buildx" in proc.stderr
