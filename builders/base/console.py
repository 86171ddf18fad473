"""The only module that prints.

Progress lines (``[3/9] cu132-cp312-linux-x86_64 build 41s``), a summary table, and, when
running in GitHub Actions, log groups, annotations and the job summary. Every text passes
:func:`builders.base.redact.redact` on its way out. Safe to call from several threads (targets
build in parallel). On a terminal, the targets that are running
each keep one status line at the bottom, redrawn in place; elsewhere (CI, a pipe) every
stage that ends prints one line.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TextIO

from builders.base import safe_output
from builders.base.errors import PathError
from builders.base.redact import redact

CLEAR_BELOW = "\x1b[J"
# A build backend's own progress in a log line: ninja's "[12/345] Building CXX object ...", make's "[ 42%] ...".
BACKEND_PROGRESS = re.compile(r"^\s*(\[\s*\d+/\d+\]|\[\s*\d+%\])\s")


class Console:
    """Writes to ``stream`` (stderr by default, so stdout stays for machine output, :meth:`out`'s)."""

    def __init__(self, stream: TextIO | None = None, env: Mapping[str, str] | None = None,
                 stdout: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self._stdout = stdout  # None: sys.stdout when written, as print does (a test's capture is honoured)
        env = {} if env is None else env  # main passes the run's environment (read once, in builders.cli.arguments)
        self.github = env.get("GITHUB_ACTIONS") == "true"
        self.summary_path = Path(env["GITHUB_STEP_SUMMARY"]) if env.get("GITHUB_STEP_SUMMARY") else None
        self.live = _is_tty(self.stream) and not self.github and env.get("TERM") != "dumb"
        self._lock = threading.RLock()
        self._running: dict[str, str] = {}
        self._backend: dict[str, str] = {}  # target -> its build backend's latest progress ("[12/345]")
        self._drawn = 0

    def line(self, text: str = "") -> None:
        with self._lock:
            self._erase()
            print(redact(text), file=self.stream, flush=True)
            self._draw()

    def out(self, text: str) -> None:
        """A command's answer (a JSON document, a listing, a table) on stdout, never decorated: what a pipe reads."""
        print(redact(text), file=self._stdout or sys.stdout)

    def progress(self, index: int, total: int, target: str, stage: str, seconds: float | None = None,
                 note: str = "") -> None:
        """A stage of ``target`` ended (or its outcome is known): one line, and its status line updated."""
        took = f" {seconds:.0f}s" if seconds is not None else ""
        tail = f"  {note}" if note else ""
        text = f"[{index}/{total}] {target} {stage}{took}{tail}"
        with self._lock:
            if self.live and target in self._running:
                self._running[target] = text
                self._erase()
                self._draw()
            else:
                self.line(text)

    def running(self, target: str, text: str) -> None:
        """``target`` started: it holds a status line until :meth:`finished`."""
        with self._lock:
            self._running[target] = text
            if self.live:
                self._erase()
                self._draw()

    def finished(self, target: str, text: str) -> None:
        """``target`` is done: its status line goes, ``text`` stays."""
        with self._lock:
            self._running.pop(target, None)
            self._backend.pop(target, None)
            self.line(text)

    def mirror(self, target: str, text: str) -> None:
        """A line of a target's log, shown as it is written (``build -v``); a backend's progress (ninja's
        ``[n/N]``) also goes onto the target's status line, so a long compile shows how far it is."""
        with self._lock:
            found = BACKEND_PROGRESS.match(text)
            if found and target in self._running:
                self._backend[target] = " ".join(found.group(1).split())
            self.line(f"  {target} | {text}")

    def status(self, target: str) -> str | None:
        """What ``target``'s status line shows now (None when it is not running)."""
        with self._lock:
            if target not in self._running:
                return None
            backend = self._backend.get(target)
            return f"{self._running[target]}  compiling {backend}" if backend else self._running[target]

    def block(self, title: str, body: str) -> None:
        """A titled block (a failed target's log tail), folded on GitHub."""
        with self._lock, self.group(title):
            for text in body.splitlines():
                self.line(f"  | {text}")

    def warning(self, text: str) -> None:
        self.line(f"::warning::{text}" if self.github else f"warning: {text}")

    def error(self, text: str) -> None:
        self.line(f"::error::{text}" if self.github else f"error: {text}")

    @contextlib.contextmanager
    def group(self, title: str) -> Iterator[None]:
        """A foldable group on GitHub; a timed header elsewhere."""
        start = time.monotonic()
        self.line(f"::group::{title}" if self.github else f"== {title}")
        try:
            yield
        finally:
            if self.github:
                self.line("::endgroup::")
            self.line(f"   {title}: {time.monotonic() - start:.1f}s")

    def table(self, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
        self.line(render_table(headers, rows))

    def job_summary(self, markdown: str) -> None:
        """Append ``markdown`` to the GitHub job summary, if there is one."""
        if self.summary_path is None:
            return
        try:
            with safe_output.open_append(self.summary_path) as fh:
                fh.write(redact(markdown) + "\n")
        except PathError as exc:
            self.warning(f"cannot write the job summary: {exc}")

    def _erase(self) -> None:
        if self.live and self._drawn:
            self.stream.write(f"\x1b[{self._drawn}F{CLEAR_BELOW}")
            self._drawn = 0

    def _draw(self) -> None:
        if not self.live or not self._running:
            return
        for target in self._running:
            self.stream.write(f"{redact(self.status(target) or '')[:_width()]}\n")
        self.stream.flush()
        self._drawn = len(self._running)


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _width() -> int:
    try:
        return max(os.get_terminal_size(sys.stderr.fileno()).columns - 1, 20)
    except (OSError, ValueError):
        return 120


def render_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A plain fixed-width text table."""
    widths = [max(len(str(c)) for c in col) for col in zip(headers, *rows)] if rows else [len(h) for h in headers]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines = [fmt.format(*headers), fmt.format(*("-" * w for w in widths))]
    lines += [fmt.format(*map(str, row)) for row in rows]
    return "\n".join(line.rstrip() for line in lines)


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(out)
