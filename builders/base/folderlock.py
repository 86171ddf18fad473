"""One writer per output folder: an advisory lock held for a whole run.

Two runs writing one output folder (two terminals, two CI jobs on one runner's disk) would
share its work folders, its store and its ``results.json``. A writer holds ``<folder>/.builders.lock``
(``flock``, exclusive) for as long as it writes there; a second one waits, saying once who holds
it (pid, command line, since when: written into the lock file once it is taken), or, with
``wait=False``, stops at once with :class:`~builders.base.errors.FolderBusy`. The kernel
drops the lock when its holder ends, however it ends (a ``SIGKILL`` included), so a crashed
run never blocks the next one. The lock file itself is never removed: removing it would
let a waiter lock a file nobody else opens any more.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shlex
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from builders.base.errors import FolderBusy

LOCK_NAME = ".builders.lock"
MAX_HOLDER_BYTES = 64 * 1024  # what is read of a holder's record: a pid, a command line, a time


def lock_path(folder: Path) -> Path:
    return folder / LOCK_NAME


@contextlib.contextmanager
def held(folder: Path, *, wait: bool = True, note: Callable[[str], None] = lambda _: None,
         argv: Sequence[str] | None = None) -> Iterator[None]:
    """Hold ``folder``'s lock for the body: taken at once, else waited for (``note`` gets one line naming the
    holder), else, without ``wait``, :class:`FolderBusy`. ``argv`` is this run's command line for the record."""
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path(folder), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        taken = _try_lock(fd, folder, note)
        if taken is None:
            yield
            return
        if not taken:
            holder = describe(read_holder(fd))
            if not wait:
                raise FolderBusy(f"{folder} is in use by {holder}; --no-wait given, so this run stops here "
                                 "(without it, the run waits for the other to finish)")
            note(f"{folder} is in use by {holder}; waiting for it to finish")
            fcntl.flock(fd, fcntl.LOCK_EX)
        _write_holder(fd, argv if argv is not None else sys.argv)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)  # still held: a later waiter never reads a finished run's record
    finally:
        os.close(fd)  # releases the lock


def _try_lock(fd: int, folder: Path, note: Callable[[str], None]) -> bool | None:
    """Taken (True), held by another (False), or None where the file system has no ``flock`` (some network
    mounts): that is said, and the run goes on without the lock."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError as exc:
        note(f"{folder}: cannot be locked ({exc.strerror or exc}); running without the lock, so start no other run "
             "into this folder until this one ends")
        return None
    return True


def _write_holder(fd: int, argv: Sequence[str]) -> None:
    record = {"pid": os.getpid(), "command": shlex.join(argv),
              "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    os.ftruncate(fd, 0)
    os.pwrite(fd, (json.dumps(record) + "\n").encode(), 0)


def read_holder(fd: int) -> dict[str, object]:
    """The holder's record (empty when it has not written it yet, or wrote something else)."""
    try:
        data = json.loads(os.pread(fd, MAX_HOLDER_BYTES, 0).decode("utf-8", "replace"))
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def describe(record: dict[str, object]) -> str:
    """``pid 4242 (python -m builders build ...) since 2026-11-30T22:40:14Z``, or what is known of it."""
    if not record.get("pid"):
        return "another run (it has not written its pid yet)"
    command = str(record.get("command", ""))
    shown = command if len(command) <= 200 else command[:200] + "..."
    return f"pid {record['pid']} ({shown}) since {record.get('since', '?')}"
