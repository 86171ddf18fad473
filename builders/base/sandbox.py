"""Where a candidate wheel's own code runs (validate's installs and smoke probe, the smoke test): with an
allowlisted environment, in its own session, and where the kernel allows it, in its own PID namespace.

Installing a wheel and importing it runs code nobody here wrote. That code gets only what pip, uv and the
probe need (:data:`ALLOWED`, :data:`ALLOWED_PREFIXES`: a table, not a filter of known secrets, so a credential
builders never heard of is not passed either). Every command already runs in its own session
(:func:`builders.base.process.run`); a descendant that calls ``setsid`` itself and drops builders' marker
variable would still outlive the run, so each command is started as the first process of a new PID namespace
(``unshare --pid --fork --kill-child``): when it ends, the kernel ends every process left in the namespace.
Where that cannot be had (no ``unshare``, a kernel or container that refuses namespaces), :class:`Isolation`
says so and why, and the callers put it in their output and their records.
"""

from __future__ import annotations

import functools
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass

from builders.base.process import run
from builders.base.redact import is_credential

# What pip, uv and the probe need, by name: where programs are, where home and temporary files are, the locale,
# the network's proxies and CA bundles, the caches, and which accelerator the probe may see.
ALLOWED = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR", "TEMP", "TMP", "LANG", "LANGUAGE", "TZ", "TERM",
    "SYSTEMROOT", "COMSPEC", "PATHEXT", "WINDIR", "LOCALAPPDATA", "APPDATA", "USERPROFILE",  # Windows' own
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy", "all_proxy",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
    "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "LD_LIBRARY_PATH",
    "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
    "ZE_AFFINITY_MASK", "ONEAPI_DEVICE_SELECTOR",
})
# pip's and uv's own settings (index URLs, certificates, timeouts) and the locale's categories; never a
# credential of another tool that happens to share the prefix (uv's publish token).
ALLOWED_PREFIXES = ("LC_", "PIP_", "UV_")
REFUSED_PREFIXES = ("UV_PUBLISH_",)
UNSHARE = ("--pid", "--fork", "--kill-child")
SYSTEM_PATH = "/usr/bin:/bin:/usr/sbin:/sbin"


def candidate_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` cut to :data:`ALLOWED` and :data:`ALLOWED_PREFIXES`: what a candidate's code may see."""
    return {k: v for k, v in env.items() if allowed(k)}


def allowed(name: str) -> bool:
    if name.startswith(REFUSED_PREFIXES):
        return False
    if name.startswith(ALLOWED_PREFIXES):
        return not is_credential(name) or name.startswith(("PIP_", "UV_INDEX"))  # an index's own password
    return name in ALLOWED


@dataclass(frozen=True)
class Isolation:
    """How a candidate's command is contained: ``prefix`` goes before its argv; ``why`` says what is missing."""

    prefix: tuple[str, ...] = ()
    why: str = ""

    @property
    def complete(self) -> bool:
        return bool(self.prefix)

    def describe(self) -> str:
        if self.complete:
            return "own session and PID namespace: every process it starts ends with it"
        return f"own session only, no PID namespace ({self.why}): a process that leaves the session may outlive it"

    def to_json(self) -> dict[str, object]:
        return {"pid_namespace": self.complete, "why": self.why, "environment": "allowlisted"}


@functools.cache
def isolation() -> Isolation:
    """Whether this host lets a command start a PID namespace (asked once: ``unshare ... true``; util-linux's
    unshare lives in the system's own folders, so no PATH is read)."""
    unshare = shutil.which("unshare", path=SYSTEM_PATH)
    if os.name != "posix" or unshare is None:
        return Isolation(why="no unshare on this host" if os.name == "posix" else "not a Linux host")
    argv = [unshare, *(() if os.geteuid() == 0 else ("--user", "--map-root-user")), *UNSHARE]
    try:
        tried = run([*argv, "true"], env={"PATH": SYSTEM_PATH}, check=False, timeout=30, cancellable=False)
    except OSError as exc:
        return Isolation(why=f"unshare cannot run: {exc}")
    if tried.returncode != 0:
        return Isolation(why=f"the kernel refused a PID namespace: {tried.stdout.strip()[:200] or tried.returncode}")
    return Isolation(prefix=(*argv, "--"))
