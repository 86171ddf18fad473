"""What a command opens with: the matrix it runs on, read once, and the selection its flags make (the
flags are rows of :mod:`builders.cli.options`). Plumbing shared by the commands, not a command."""

from __future__ import annotations

from pathlib import Path

from builders.cli.arguments import Options
from builders.cli.channel_args import on_channel
from builders.families import loader
from builders.matrix.model import Matrix
from builders.matrix.targets import Selection


def matrix(opts: Options, *, builds: bool = False, source: Path | None = None, channel: bool = False) -> Matrix:
    """``builds``: a command that builds or smoke-tests, so the source tree and smoke script are checked too."""
    m = loader.load(opts.matrix, builds=builds, source=source)
    return on_channel(m, opts.channel, opts.commit_date) if channel else m


def selection(opts: Options) -> Selection:
    """``--target``, ``--select`` and ``--skip`` as the selection they make."""
    return Selection(targets=tuple(opts.target), select=tuple(opts.select), skip=tuple(opts.skip))
