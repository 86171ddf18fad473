"""``python -m builders ARGV`` for the hostile corpus, forked from an interpreter that has imported builders.

The corpus runs hundreds of cases, and a fresh interpreter spends most of a case's CPU importing builders before
it reads the case's first byte. multiprocessing's forkserver imports ``builders.cli`` once (``PRELOAD``: what
every start imports, the parser and the options); each case is a forked child that runs ``builders/__main__.py``
as ``-m`` runs it (``runpy``), in its own process, folder, environment, resource limits and standard streams, and
imports its command's module itself. The command modules are not preloaded: the memory limit counts the address
space, and theirs (boto3, cryptography, jinja2: about 40 MB) would be charged to every case. No module of
builders reads the environment on import (its one reader is ``builders.cli.arguments.environ``, called by
``main``), so a module imported by the server is the one a fresh interpreter would have imported.

This module is imported by the forkserver: keep it to the standard library and builders.
"""

from __future__ import annotations

import io
import os
import resource
import runpy
import sys
import traceback
from dataclasses import dataclass

PRELOAD = ["builders.cli", __name__]
MEMORY = 512 * 2**20
CPU_SECONDS = 20


@dataclass(frozen=True)
class Invocation:
    """One ``python -m builders`` run: its arguments, folder and environment, and the files its streams are."""

    argv: tuple[str, ...]
    cwd: str
    env: dict[str, str]
    stdin: str  # a file read as standard input
    stdout: str | None  # a file, or None for a pipe whose reader has gone (``builders plan | head``)
    stderr: str


def run(call: Invocation) -> None:
    """The forked child's body: ends the process with the exit code ``python -m builders`` would have."""
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_SECONDS, CPU_SECONDS))
    os.chdir(call.cwd)
    os.environ.clear()
    os.environ.update(call.env)
    _streams(call)
    code = _main(call.argv)
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        code = 120  # what CPython's exit does when its final flush of stdout fails
    sys.stderr.flush()
    os._exit(code)


def _streams(call: Invocation) -> None:
    """fds 0, 1 and 2 onto the case's files, and sys.std* rebuilt on them as a starting interpreter builds them."""
    _onto(0, os.open(call.stdin, os.O_RDONLY))
    if call.stdout is None:
        reader, writer = os.pipe()
        os.close(reader)
        _onto(1, writer)
    else:
        _onto(1, os.open(call.stdout, os.O_WRONLY | os.O_TRUNC))
    _onto(2, os.open(call.stderr, os.O_WRONLY | os.O_TRUNC))
    unbuffered = bool(call.env.get("PYTHONUNBUFFERED"))
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", write_through=unbuffered)
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="backslashreplace",
                                  write_through=True)


def _onto(target: int, opened: int) -> None:
    """``opened`` becomes fd ``target``; no second descriptor of it is left open."""
    os.dup2(opened, target)
    os.close(opened)


def _main(argv: tuple[str, ...]) -> int:
    """``builders/__main__.py`` run as ``-m`` runs it; an uncaught exception goes through ``sys.excepthook``
    (builders installs its redacting one) and exits 1, as the interpreter does."""
    sys.argv = ["-m", *argv]  # runpy puts the module's path first, as -m does
    try:
        runpy.run_module("builders", run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        print(exc.code, file=sys.stderr)
        return 1
    except BaseException:  # noqa: BLE001 - the interpreter's own last resort, reproduced
        kind, value, tb = sys.exc_info()
        assert kind is not None and value is not None
        try:
            sys.excepthook(kind, value, tb)
        except Exception:  # noqa: BLE001 - a failing hook still leaves a traceback, as CPython's does
            traceback.print_exception(value)
        return 1
    return 0
