"""The one way the pipeline runs a subprocess.

Each call resolves the executable on the PATH of the environment it is given (never the
pipeline's own ``os.environ`` by accident), writes the quoted command to the target's log,
streams the command's output into that log line by line as it is produced (and to the
console with ``-v``), records the exit code and duration, and raises :class:`ProcessError`
with the output's tail on failure.

Every command runs in its own process group and is registered while it runs, so that
:func:`cancel_all` (the SIGINT/SIGTERM handler of ``build``) stops every running command of
every target at once; a cancelled :func:`run` raises :class:`Cancelled`. A pipeline killed
outright (SIGKILL, the OOM killer) runs no handler: its commands' groups, outside its own, would
go on writing into folders the next run uses. A small watchdog process (POSIX) is told each
group as it starts and ends, and SIGKILLs those still running when the pipeline's end of its
pipe closes, whatever ended the pipeline.
"""

from __future__ import annotations

import collections
import contextlib
import os
import selectors
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Protocol

from builders.base import safe_output
from builders.base.errors import ProcessError
from builders.base.redact import redact

TAIL_LINES = 25
KILL_GRACE = 5.0  # seconds between SIGTERM and SIGKILL of a cancelled command's group
POLL = 0.1
PIPE_CHUNK = 1 << 16


class Cancelled(KeyboardInterrupt):
    """The run was cancelled (SIGINT/SIGTERM) while or before this command ran."""


@dataclass(frozen=True)
class Completed:
    """A command that ran to its end: what ran, its exit status, its output and how long it took."""

    argv: tuple[str, ...]
    returncode: int
    stdout: str
    duration: float


class Log:
    """A target's log file, appended as output arrives; each line optionally echoed (``-v``)."""

    def __init__(self, path: Path, echo: Callable[[str], None] | None = None) -> None:
        self.path = path
        self.echo = echo
        self._lock = threading.Lock()

    def write(self, text: str) -> None:
        with self.writer() as put:
            put(text)

    @contextlib.contextmanager
    def writer(self) -> Iterator[Callable[[str], None]]:
        """A function appending text (flushed at once) while the file stays open."""
        with safe_output.open_append(self.path) as fh:
            yield lambda text: self._put(fh, text)

    def _put(self, fh: IO[str], text: str) -> None:
        text = redact(text)  # the log is uploaded as an artifact: no credential a tool echoed stays in it
        with self._lock:
            fh.write(text)
            fh.flush()
        if self.echo is not None:
            for line in text.splitlines():
                self.echo(line)

    def tail(self, lines: int = TAIL_LINES) -> str:
        try:
            text = self.path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.rstrip().splitlines()[-lines:])


LogLike = Log | Path | None


def as_log(log: LogLike) -> Log | None:
    return Log(log) if isinstance(log, Path) else log


# -- cancellation -------------------------------------------------------------------------

_CANCEL = threading.Event()
_RUNNING: set[subprocess.Popen[bytes]] = set()
_RUNNING_LOCK = threading.Lock()


def cancelled() -> bool:
    return _CANCEL.is_set()


def check_cancelled() -> None:
    """Raise :class:`Cancelled` once the run has been cancelled (a stage boundary)."""
    if _CANCEL.is_set():
        raise Cancelled


def cancel_all() -> None:
    """Stop every running command (SIGTERM to its process group; SIGKILL follows in :func:`run`)."""
    _CANCEL.set()
    with _RUNNING_LOCK:
        running = list(_RUNNING)
    for proc in running:
        _signal_group(proc, signal.SIGTERM)


def reset_cancel() -> None:
    _CANCEL.clear()


# The watchdog: reads ``+PGID`` / ``-PGID`` lines; at EOF (the pipeline has ended, however) it kills
# the groups still listed. Its own session, so a signal to the pipeline's group does not reach it.
# Every command's environment also carries ``MARKER=<token>``: at EOF the watchdog kills any process whose
# environment has it (Linux's /proc), which covers a command started a moment before the pipeline died,
# before its group was told.
MARKER = "BUILDERS_RUN"
WATCHDOG = """
import os, signal, sys
groups, mark = set(), f"{sys.argv[1]}={sys.argv[2]}".encode()
for line in sys.stdin:
    (groups.add if line[0] == "+" else groups.discard)(int(line[1:]))
for pgid in groups:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass
for pid in (p for p in os.listdir("/proc") if p.isdigit()) if os.path.isdir("/proc") else ():
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            if mark in fh.read().split(b"\\0"):
                os.kill(int(pid), signal.SIGKILL)
    except OSError:
        pass
"""
_WATCHDOG: dict[int, subprocess.Popen[bytes] | None] = {}
_WATCHDOG_LOCK = threading.Lock()


def _watchdog() -> subprocess.Popen[bytes] | None:
    """This process's watchdog, started on first use (a forked child starts its own); None off POSIX."""
    if os.name != "posix":
        return None
    with _WATCHDOG_LOCK:
        if os.getpid() not in _WATCHDOG:
            _WATCHDOG[os.getpid()] = _start_watchdog()
        return _WATCHDOG[os.getpid()]


def _tell_watchdog(sign: str, pgid: int) -> None:
    """Tell this process's watchdog that the group ``pgid`` started (``+``) or ended (``-``)."""
    dog = _watchdog()
    if dog is None or dog.stdin is None:
        return
    with _WATCHDOG_LOCK, contextlib.suppress(OSError):
        dog.stdin.write(f"{sign}{pgid}\n".encode())
        dog.stdin.flush()


def run_token() -> str:
    """This process's value of :data:`MARKER` (its commands carry it; the watchdog looks for it)."""
    return f"{os.getpid()}-{id(_WATCHDOG):x}"


def _start_watchdog() -> subprocess.Popen[bytes] | None:
    try:
        return subprocess.Popen([sys.executable, "-I", "-c", WATCHDOG, MARKER, run_token()], stdin=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError:
        return None


def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


# -- running ------------------------------------------------------------------------------


def resolve(executable: str, env: Mapping[str, str]) -> str:
    """``executable`` as found on ``env['PATH']`` (an absolute path is kept)."""
    if os.sep in executable:
        return executable
    found = shutil.which(executable, path=env.get("PATH", os.defpath))
    if found is None:
        raise ProcessError([executable], 127, f"{executable}: not found on PATH={env.get('PATH', '')}")
    return found


@dataclass
class _Output:
    """What a running command printed: stdout kept whole, the last lines of everything for the tail."""

    stdout: list[str] = field(default_factory=list)
    recent: collections.deque[str] = field(default_factory=lambda: collections.deque(maxlen=TAIL_LINES))


def run(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    log: LogLike = None,
    cwd: Path | None = None,
    check: bool = True,
    timeout: float | None = None,
    stdin: str | None = None,
    separate_stderr: bool = False,
    shown_env: Mapping[str, str] | None = None,
    cancellable: bool = True,
) -> Completed:
    """Output streams to ``log`` as it comes; ``separate_stderr`` is for output that is data (JSON).

    ``cancellable=False`` is for cleanup (removing a container): it runs even after :func:`cancel_all`.
    """
    if cancellable:
        check_cancelled()
    argv = [resolve(argv[0], env), *argv[1:]]
    sink = as_log(log)
    with _log_writer(sink) as put:
        put(_header(argv, cwd, shown_env))
        start = time.monotonic()
        code, output = _execute(argv, env, cwd, stdin, separate_stderr, put, timeout, cancellable)
        duration = time.monotonic() - start
        put(f"[exit {code} after {duration:.1f}s]\n\n")
    if cancellable and cancelled():  # stopped (or not): the run is ending, its outcome is "interrupted"
        raise Cancelled
    if check and code != 0:
        raise ProcessError(argv, code, "\n".join(line.rstrip("\n") for line in output.recent),
                           timeout=timeout if code == 124 and timeout is not None else None)
    return Completed(tuple(argv), code, "".join(output.stdout), duration)


@contextlib.contextmanager
def _log_writer(sink: Log | None) -> Iterator[Callable[[str], None]]:
    if sink is None:
        yield lambda text: None
        return
    with sink.writer() as put:
        yield put


def _header(argv: Sequence[str], cwd: Path | None, shown_env: Mapping[str, str] | None) -> str:
    text = f"$ {shlex.join(argv)}\n"
    if cwd:
        text += f"# cwd: {cwd}\n"
    if shown_env:
        text += f"# env: {shlex.join(f'{k}={v}' for k, v in sorted(shown_env.items()))}\n"
    return text


def _execute(argv: Sequence[str], env: Mapping[str, str], cwd: Path | None, stdin: str | None,
             separate_stderr: bool, put: Callable[[str], None], timeout: float | None,
             cancellable: bool) -> tuple[int, _Output]:
    """Start ``argv`` in its own process group, pump its output as it comes, wait; (exit code, output)."""
    output = _Output()
    _watchdog()  # started before the first command, so it can find that one too
    proc = subprocess.Popen(argv, env={**env, MARKER: run_token()}, cwd=cwd, start_new_session=True,
                            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE if separate_stderr else subprocess.STDOUT)
    with _registered(proc, cancellable):
        pump = _Pump(proc, put, output, (stdin or "").encode())
        code = pump.run(timeout, cancellable)
    if code == 124 and timeout is not None:
        put(f"[timed out after {timeout}s]\n")
        output.recent.append(f"[timed out after {timeout}s]")
    return code, output


@contextlib.contextmanager
def _registered(proc: subprocess.Popen[bytes], cancellable: bool) -> Iterator[None]:
    """``proc`` known to :func:`cancel_all` and the watchdog while it runs; never left running behind an
    exception."""
    _tell_watchdog("+", proc.pid)
    if cancellable:
        with _RUNNING_LOCK:
            _RUNNING.add(proc)
    try:
        yield
    finally:
        with _RUNNING_LOCK:
            _RUNNING.discard(proc)
        if proc.poll() is None:
            _signal_group(proc, signal.SIGKILL)
            proc.wait()
        _tell_watchdog("-", proc.pid)


class _Pump:
    """One selectors loop per command (no thread): its stdin fed, its output copied line by line."""

    def __init__(self, proc: subprocess.Popen[bytes], put: Callable[[str], None], output: _Output,
                 stdin: bytes) -> None:
        self.proc, self.put, self.output, self.stdin = proc, put, output, stdin
        self.selector = selectors.DefaultSelector()
        self.partial: dict[int, bytes] = {}
        self.streams: dict[int, IO[bytes]] = {}
        for stream, event, keep in ((proc.stdout, selectors.EVENT_READ, True), (proc.stderr, selectors.EVENT_READ, False),
                                    (proc.stdin, selectors.EVENT_WRITE, None)):
            if stream is not None:
                self.streams[stream.fileno()] = stream
                self.selector.register(stream, event, keep)

    def run(self, timeout: float | None, cancellable: bool) -> int:
        """The exit code; 124 after ``timeout``; the group is stopped on timeout or cancellation."""
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while self.selector.get_map():
                if deadline is not None and time.monotonic() > deadline:
                    _stop(self.proc)
                    return 124
                if cancellable and cancelled():
                    _stop(self.proc)
                    return -signal.SIGTERM
                for key, _ in self.selector.select(POLL):
                    self._ready(key)
        finally:
            self.selector.close()
            for stream in self.streams.values():
                stream.close()
        return _wait(self.proc, deadline, cancellable)

    def _ready(self, key: selectors.SelectorKey) -> None:
        stream = self.streams[key.fd]
        if key.data is None:  # stdin: feed it, close it when all is written (or nobody reads)
            try:
                written = os.write(key.fd, self.stdin[:PIPE_CHUNK]) if self.stdin else 0
            except BrokenPipeError:
                written = len(self.stdin)
            self.stdin = self.stdin[written:]
            if not self.stdin:
                self.selector.unregister(stream)
                stream.close()
            return
        chunk = os.read(key.fd, PIPE_CHUNK)
        self._lines(key.fd, chunk, key.data, final=not chunk)
        if not chunk:
            self.selector.unregister(stream)
            stream.close()

    def _lines(self, fd: int, chunk: bytes, keep: bool, *, final: bool) -> None:
        data = self.partial.pop(fd, b"") + chunk
        *complete, rest = data.split(b"\n")
        if final and rest:
            complete, rest = [*complete, rest], b""
        self.partial[fd] = rest
        for raw in complete:
            line = raw.decode("utf-8", errors="replace") + "\n"
            self.put(line)
            self.output.recent.append(redact(line))  # the tail goes into errors and records
            if keep:
                self.output.stdout.append(line)


def _wait(proc: subprocess.Popen[bytes], deadline: float | None, cancellable: bool) -> int:
    """The exit code once the output has ended; 124 after ``deadline``, and stopped when cancelled."""
    while True:
        try:
            return proc.wait(timeout=POLL)
        except subprocess.TimeoutExpired:
            pass
        if deadline is not None and time.monotonic() > deadline:
            _stop(proc)
            return 124
        if cancellable and cancelled():
            _stop(proc)
            return -signal.SIGTERM


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the group, SIGKILL after :data:`KILL_GRACE` seconds."""
    _signal_group(proc, signal.SIGTERM)
    try:
        proc.wait(timeout=KILL_GRACE)
    except subprocess.TimeoutExpired:
        _signal_group(proc, signal.SIGKILL)
        proc.wait()


# -- runners ------------------------------------------------------------------------------


class Call(Protocol):
    """Runs a command somewhere (this host, a container) with its own environment and log."""

    def __call__(self, argv: Sequence[str], *, cwd: str | None = None, separate_stderr: bool = False,
                 timeout: float | None = 1800) -> Completed: ...


class Runner(Call, Protocol):
    """Where a plan's commands run: a command with extra variables, and files copied in."""

    def run(self, argv: Sequence[str], *, env: Mapping[str, str], cwd: str | None = None,
            separate_stderr: bool = False, timeout: float | None = None) -> Completed: ...

    def copy_in(self, source: Path, dest: str) -> None: ...


@dataclass(frozen=True)
class HostRunner:
    """A :class:`Runner` on this host with a fixed environment and log."""

    env: Mapping[str, str]
    log: LogLike = None
    wrap: tuple[str, ...] = ()  # put before every command (:func:`builders.base.sandbox.isolation`'s prefix)

    def __call__(self, argv: Sequence[str], *, cwd: str | None = None, separate_stderr: bool = False,
                 timeout: float | None = 1800) -> Completed:
        return self.run(argv, env={}, cwd=cwd, separate_stderr=separate_stderr, timeout=timeout)

    def run(self, argv: Sequence[str], *, env: Mapping[str, str], cwd: str | None = None,
            separate_stderr: bool = False, timeout: float | None = None) -> Completed:
        """``argv`` with this runner's environment plus ``env`` (shown in the log), behind :attr:`wrap`."""
        full = {**self.env, **env}
        if self.wrap:
            argv = [*self.wrap, resolve(argv[0], full), *argv[1:]]
        return run(argv, env=full, log=self.log, cwd=Path(cwd) if cwd else None,
                   separate_stderr=separate_stderr, timeout=timeout, shown_env=env or None)

    def copy_in(self, source: Path, dest: str) -> None:
        _copy(source, Path(dest))


def _copy(source: Path, dest: Path) -> None:
    if dest.exists() and source.resolve() == dest.resolve():
        return
    if source.is_dir():
        shutil.copytree(source, dest, dirs_exist_ok=True)
    else:
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, dest)
