"""The only module that prints.

Progress lines (``[3/9] cu132-cp312-linux-x86_64 build 41s``), a summary table, and, when
running in GitHub Actions, log groups, annotations and the job summary.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TextIO


class Console:
    """Writes to ``stream`` (stderr by default, so stdout stays for machine output)."""

    def __init__(self, stream: TextIO | None = None, env: Mapping[str, str] | None = None) -> None:
        self.stream = stream or sys.stderr
        env = os.environ if env is None else env
        self.github = env.get("GITHUB_ACTIONS") == "true"
        self.summary_path = Path(env["GITHUB_STEP_SUMMARY"]) if env.get("GITHUB_STEP_SUMMARY") else None

    def line(self, text: str = "") -> None:
        print(text, file=self.stream, flush=True)

    def progress(self, index: int, total: int, target: str, stage: str, seconds: float | None = None, note: str = "") -> None:
        took = f" {seconds:.0f}s" if seconds is not None else ""
        tail = f"  {note}" if note else ""
        self.line(f"[{index}/{total}] {target} {stage}{took}{tail}")

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
            with self.summary_path.open("a", encoding="utf-8") as fh:
                fh.write(markdown + "\n")
        except OSError as exc:
            self.warning(f"cannot write the job summary {self.summary_path}: {exc.strerror or exc}")


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
