"""``compile_cache``: the compiler cache shared by every runner and every developer, as matrix data.

Without the key nothing changes: each machine keeps its local ccache (builders.pipeline.compilercache).
With it, the project names a backend (``sccache`` on an S3-compatible bucket, Redis or an HTTP/WebDAV
store; or ``ccache`` remote storage on Redis or HTTP), where the store is, and who may write into it.
The location never holds a credential (the schema refuses a ``user@`` part): credentials reach the build
at run time in the store's own variables (``AWS_*``, ``SCCACHE_REDIS_PASSWORD``), never through a plan.

Who writes is a trust decision (builders.pipeline.remotecache): only the contexts named under
``trusted`` (by default the scheduled build of ``refs/heads/main``), or a developer who owns the store
and says so (``build --compile-cache-write``). Candidate and release builds read the store or read
nothing (``releases``); pull-request builds read it or nothing (``pull_requests``), and never write.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from builders.base import redact
from builders.base.errors import Location

KEY = "compile_cache"
# The variable that names (or overrides) the store's location at run time (``build --compile-cache``): a
# developer's own store, or the workflow's, without editing the matrix. Like the matrix's location, it holds
# no credential. Read by builders.cli.arguments (a row of the options table), handed down as a value.
LOCATION_ENV = "BUILDERS_COMPILER_CACHE"
STORES = {"s3": "s3", "redis": "redis", "rediss": "redis", "http": "http", "https": "http"}


class Backend(enum.Enum):
    CCACHE = "ccache"  # ccache with remote storage (redis://, http://); the local ccache in front of it
    SCCACHE = "sccache"  # sccache on S3, Redis or HTTP (WebDAV); also the client of sccache-dist


class Reads(enum.Enum):
    READ = "read"
    NONE = "none"


@dataclass(frozen=True, kw_only=True)
class CompileCache:
    """The matrix's ``compile_cache``: backend, location (or none: ``$BUILDERS_COMPILER_CACHE`` at run time),
    whether trusted builds write, what candidate/release and pull-request builds read, and an optional
    ``sccache-dist`` scheduler the compiles are sent to."""

    backend: Backend
    location: str | None = None
    write: bool = True  # "trusted-only": trusted builds write; "never": nobody does (a store filled elsewhere)
    releases: Reads = Reads.READ
    pull_requests: Reads = Reads.READ
    trusted_events: tuple[str, ...] = ("schedule",)
    trusted_refs: tuple[str, ...] = ("refs/heads/main",)
    dist_scheduler: str | None = None
    where: Location | None = None

    def store_kind(self, location: str) -> str:
        """``s3``, ``redis`` or ``http``: what the location's scheme names."""
        return STORES[urlsplit(location).scheme]


def parse(raw: Mapping[str, Any], where: Location | None) -> CompileCache:
    """The frozen value of a schema-valid ``compile_cache`` (as :mod:`builders.matrix.build` read it, plain)."""
    trusted = raw.get("trusted", {})
    return CompileCache(backend=Backend(raw["backend"]), location=raw.get("location"),
                        write=raw.get("write", "trusted-only") == "trusted-only",
                        releases=Reads(raw.get("releases", "read")), pull_requests=Reads(raw.get("pull_requests", "read")),
                        trusted_events=tuple(trusted.get("events", ("schedule",))),
                        trusted_refs=tuple(trusted.get("refs", ("refs/heads/main",))),
                        dist_scheduler=raw.get("dist", {}).get("scheduler"), where=where)


def location_problem(location: str) -> str | None:
    """The message never repeats the location: it may hold the very secret it must not."""
    try:
        parts = urlsplit(location)
    except ValueError:
        return "not a URL"
    if parts.scheme not in STORES:
        return f"must start with one of {', '.join(s + '://' for s in STORES)}"
    if redact.holds_credential(location):
        return ("holds a user, password or token: give credentials in the store's own variables "
                "(AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, SCCACHE_REDIS_PASSWORD), never in the location")
    return None
