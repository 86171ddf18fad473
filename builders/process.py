"""The one way the pipeline runs a subprocess.

Each call resolves the executable on the PATH of the environment it is given (never the
pipeline's own ``os.environ`` by accident), writes the quoted command, its output and its
duration to the target's log, and raises :class:`ProcessError` with the log's tail on failure.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from .errors import BuildersError


class ProcessError(BuildersError):
    """A command exited non-zero; ``tail`` holds the last lines of its output."""

    exit_code = 12

    def __init__(self, argv: Sequence[str], returncode: int, tail: str) -> None:
        self.argv = tuple(argv)
        self.returncode = returncode
        self.tail = tail
        super().__init__(f"command failed with exit code {returncode}: {shlex.join(argv)}\n{tail}")


@dataclass(frozen=True)
class Result:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    duration: float


def resolve(executable: str, env: Mapping[str, str]) -> str:
    """``executable`` as found on ``env['PATH']`` (an absolute path is kept)."""
    if os.sep in executable:
        return executable
    found = shutil.which(executable, path=env.get("PATH", os.defpath))
    if found is None:
        raise ProcessError([executable], 127, f"{executable}: not found on PATH={env.get('PATH', '')}")
    return found


def run(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    log: Path | None = None,
    cwd: Path | None = None,
    check: bool = True,
    timeout: float | None = None,
    stdin: str | None = None,
    separate_stderr: bool = False,
) -> Result:
    """Run ``argv`` to completion, capturing stdout+stderr together.

    With ``separate_stderr`` the result's stdout is stdout alone (for commands whose output
    is data, like JSON); stderr still goes to the log.
    """
    argv = [resolve(argv[0], env), *argv[1:]]
    start = time.monotonic()
    stderr = subprocess.PIPE if separate_stderr else subprocess.STDOUT
    try:
        proc = subprocess.run(argv, env=dict(env), cwd=cwd, input=stdin, text=True, errors="replace",
                              stdout=subprocess.PIPE, stderr=stderr, timeout=timeout, check=False)
        out, code = proc.stdout, proc.returncode
        logged = out + (proc.stderr or "") if separate_stderr else out
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"").decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        out, code = out + f"\n[timed out after {timeout}s]", 124
        logged = out
    duration = time.monotonic() - start
    _log(log, argv, cwd, logged, code, duration)
    if check and code != 0:
        raise ProcessError(argv, code, _tail(logged))
    return Result(tuple(argv), code, out, duration)


def _log(log: Path | None, argv: Sequence[str], cwd: Path | None, out: str, code: int, duration: float) -> None:
    if log is None:
        return
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a", encoding="utf-8") as fh:
        where = f" (in {cwd})" if cwd else ""
        fh.write(f"$ {shlex.join(argv)}{where}\n{out}")
        if out and not out.endswith("\n"):
            fh.write("\n")
        fh.write(f"[exit {code} after {duration:.1f}s]\n\n")


def _tail(out: str, lines: int = 25) -> str:
    return "\n".join(out.rstrip().splitlines()[-lines:])


class Runner(Protocol):
    """Runs a command somewhere (this host, a container) with its own environment and log."""

    def __call__(self, argv: Sequence[str], *, cwd: str | None = None, separate_stderr: bool = False,
                 timeout: float | None = 1800) -> Result: ...


@dataclass(frozen=True)
class HostRunner:
    """A :class:`Runner` on this host with a fixed environment and log."""

    env: Mapping[str, str]
    log: Path | None = None

    def __call__(self, argv: Sequence[str], *, cwd: str | None = None, separate_stderr: bool = False,
                 timeout: float | None = 1800) -> Result:
        return run(argv, env=self.env, log=self.log, cwd=Path(cwd) if cwd else None,
                   separate_stderr=separate_stderr, timeout=timeout)
