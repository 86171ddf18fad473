"""Pip-installed toolkits, cached by everything they are installed from and reused across targets and runs.

A folder's name carries a digest of its requirements (pins and extras) and index
(:func:`install_key`), so two matrices with one pin and other components get two folders. An
install goes to a temporary folder first, is finished there (a family's layout step), and is
renamed into place only when complete, so an interrupted install never looks like a cached
toolkit. Each run that uses a folder holds a shared lock on ``.<name>.lock`` beside it until it
ends: a folder is replaced (a stale one, whose stamp says it holds something else) only when no
other run holds it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from builders.base.errors import ToolchainError
from builders.base.process import LogLike, ProcessError, run

if sys.platform != "win32":
    import fcntl

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


Finish = Callable[[Path], None]  # a fresh install's last step, on its temporary folder, before it is published
_IN_USE: dict[Path, int] = {}  # lock file -> its descriptor, held (shared) until this process ends


def install_key(requirements: Sequence[str], index_url: str | None) -> str:
    """12 hex digits of what an install is made from: the requirements (pins, extras) and the index as written."""
    made_from = {"requirements": sorted(requirements), "index_url": index_url or ""}
    return hashlib.sha256(json.dumps(made_from).encode()).hexdigest()[:12]


def pip_prefix(name: str, requirements: Sequence[str], cache: Path, env: Mapping[str, str],
               log: LogLike, index_url: str | None = None, *, timeout: float = 3600, finish: Finish | None = None) -> Path:
    """``requirements`` installed into ``cache/name`` (``pip install --target``) and ``finish``-ed, once."""
    return _cached(name, ["install", "--target"], requirements, cache, env, log, index_url, timeout, finish)


def pip_download(name: str, requirements: Sequence[str], cache: Path, env: Mapping[str, str], log: LogLike,
                 *, timeout: float = 3600) -> Path:
    """A folder of wheels for ``requirements`` and their dependencies (an offline wheelhouse)."""
    return _cached(name, ["download", "--only-binary", ":all:", "--dest"], requirements, cache, env, log, None, timeout)


def _cached(name: str, verb: list[str], requirements: Sequence[str], cache: Path, env: Mapping[str, str],
            log: LogLike, index_url: str | None, timeout: float, finish: Finish | None = None) -> Path:
    final = cache / name
    want = {"requirements": list(requirements), "index_url": index_url}
    cache.mkdir(parents=True, exist_ok=True)
    lock = in_use(cache / f".{name}.lock")
    if _stamped(final, want):
        with contextlib.suppress(OSError):
            os.utime(final)  # used now: `builders cache prune` goes by last use
        return final
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
        if finish is not None:
            finish(tmp)
        (tmp / ".builders-stamp.json").write_text(json.dumps(want))
        _publish(tmp, final, want, lock)
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


def _publish(tmp: Path, final: Path, want: Mapping[str, object], lock: int) -> None:
    """``tmp`` becomes ``final``, unless another run published the same content first. A stale ``final`` (its
    stamp says it holds something else) is replaced only while no other run holds it (``lock``, taken
    exclusively for the swap): a folder a running build uses is never replaced under it."""
    try:
        os.rename(tmp, final)  # atomic; refused while final exists and holds anything
        return
    except OSError:
        if _stamped(final, want):
            return
    if not _alone(lock):
        raise ToolchainError(f"{final} holds another install than this run's (its .builders-stamp.json says which) "
                             "and another run is using it; it is never replaced under a run: run again when that "
                             "one has ended")
    try:
        shutil.rmtree(final, ignore_errors=True)
        os.replace(tmp, final)
    finally:
        _share(lock)


def in_use(lock_file: Path) -> int:
    """A shared lock on ``lock_file`` that this process holds until it ends (taken once per file): other runs
    see the folder beside it in use. -1 where there are no ``flock`` locks (Windows)."""
    if sys.platform == "win32":
        return -1
    if lock_file not in _IN_USE:
        fd = os.open(lock_file, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        fcntl.flock(fd, fcntl.LOCK_SH)  # waits only for a replacement under way (exclusive, seconds)
        _IN_USE[lock_file] = fd
    return _IN_USE[lock_file]


def _alone(lock: int) -> bool:
    """Whether no other process holds ``lock``: this one's shared lock becomes exclusive, or stays shared."""
    if sys.platform == "win32" or lock < 0:
        return True
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        _share(lock)  # a refused conversion may have dropped the shared lock (flock(2)): take it again
        return False
    return True


def _share(lock: int) -> None:
    if sys.platform != "win32" and lock >= 0:
        fcntl.flock(lock, fcntl.LOCK_SH)
