"""Pip-installed toolkits, cached by their pins and reused across targets and runs.

An install goes to a temporary folder first and is renamed into place only when complete,
so an interrupted install never looks like a cached toolkit.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from builders.base.errors import ToolchainError
from builders.base.process import LogLike, ProcessError, run

CACHE_ENV = "BUILDERS_CACHE"  # the folder above the toolchain cache (declared in builders/cli/options.py)


def default_cache(env: Mapping[str, str]) -> Path:
    """The toolchain cache of ``env``: ``$BUILDERS_CACHE/toolchains``, else under ``$XDG_CACHE_HOME``, else
    ``$HOME/.cache`` (``env``'s HOME, not this process's: the environment given is the one that counts)."""
    if env.get(CACHE_ENV):
        return toolchains_under(env[CACHE_ENV])
    home = env.get("HOME") or env.get("USERPROFILE") or os.path.expanduser("~")  # ~ only when env names none
    return toolchains_under(os.path.join(env.get("XDG_CACHE_HOME") or os.path.join(home, ".cache"), "builders"))


def toolchains_under(root: str) -> Path:
    """The toolchain cache in builders' cache folder ``root`` (ccache/ and uv/ sit beside it)."""
    return Path(root) / "toolchains"


def pip_prefix(name: str, requirements: Sequence[str], cache: Path, env: Mapping[str, str],
               log: LogLike, index_url: str | None = None, *, timeout: float = 3600) -> Path:
    return _cached(name, ["install", "--target"], requirements, cache, env, log, index_url, timeout)


def pip_download(name: str, requirements: Sequence[str], cache: Path, env: Mapping[str, str], log: LogLike,
                 *, timeout: float = 3600) -> Path:
    """A folder of wheels for ``requirements`` and their dependencies (an offline wheelhouse)."""
    return _cached(name, ["download", "--only-binary", ":all:", "--dest"], requirements, cache, env, log, None, timeout)


def _cached(name: str, verb: list[str], requirements: Sequence[str], cache: Path, env: Mapping[str, str],
            log: LogLike, index_url: str | None, timeout: float) -> Path:
    final = cache / name
    want = {"requirements": list(requirements), "index_url": index_url}
    if _stamped(final, want):
        with contextlib.suppress(OSError):
            os.utime(final)  # used now: `builders cache prune` goes by last use
        return final
    cache.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(json.dumps(want).encode()).hexdigest()[:12]
    tmp = cache / f".partial-{name}-{digest}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    argv = [sys.executable, "-m", "pip", *verb, str(tmp), "--no-input", *requirements]
    if index_url:
        argv += ["--index-url", index_url]
    try:
        try:
            run(argv, env=env, log=log, timeout=timeout)
        except ProcessError as exc:
            raise ToolchainError(f"pip {verb[0]} of {' '.join(requirements)} from {index_named(index_url, env)} "
                                 f"failed: {why(exc, timeout)}") from exc
        (tmp / ".builders-stamp.json").write_text(json.dumps(want))
        _publish(tmp, final, want)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def index_named(index_url: str | None, env: Mapping[str, str]) -> str:
    """The index pip asks, for a message: the given one, else ``$PIP_INDEX_URL``, else pip's configuration."""
    return index_url or env.get("PIP_INDEX_URL") or "the index pip is configured with (pip config list)"


def why(exc: ProcessError, timeout: float) -> str:
    """How a download failed: no answer in time, or what the tool said last (its ``ERROR:`` line)."""
    if exc.returncode == 124:
        return f"no answer within the stage's {timeout:g} s (project.timeouts); is the index up?"
    lines = [line.strip() for line in exc.tail.splitlines() if line.strip()]
    errors = [line for line in lines if line.lower().startswith("error")]
    return f"exit code {exc.returncode}: " + ((errors or lines)[-1][:300] if lines else "no output")


def _stamped(folder: Path, want: Mapping[str, object]) -> bool:
    stamp = folder / ".builders-stamp.json"
    try:
        return bool(json.loads(stamp.read_text()) == want)
    except (OSError, ValueError):
        return False


def _publish(tmp: Path, final: Path, want: Mapping[str, object]) -> None:
    """``tmp`` becomes ``final``, unless another run published the same content first: a folder
    in use (a running build mounts it) is never replaced under it. Only a stale one is."""
    try:
        os.rename(tmp, final)  # atomic; refused while final exists and holds anything
    except OSError:
        if _stamped(final, want):
            return
        shutil.rmtree(final, ignore_errors=True)
        os.replace(tmp, final)
