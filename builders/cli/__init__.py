"""``python -m builders``: a thin argparse front over one module per subcommand.

Every option comes from one table (:mod:`builders.cli.options`); :mod:`builders.cli.arguments`
builds the parsers from it, reads the environment once and settles each option (command line,
else environment, else matrix, else default) into one frozen value the command's ``execute``
gets. ``main`` checks every path option before the command runs (:mod:`builders.cli.paths`), so
a missing file is one clear line and exit 19 (:class:`~builders.base.errors.PathError`), never a
traceback half-way through a run.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
import textwrap
import traceback
from collections.abc import Sequence
from types import ModuleType, TracebackType

from builders.base import redact
from builders.base.console import Console
from builders.base.errors import PIPE_CLOSED, BuildersError, Interrupted, PathError, exit_codes
from builders.cli import arguments
from builders.cli.arguments import Subcommand
from builders.cli.paths import (
    check_input_dir,
    check_input_file,
    check_input_path,
    check_output_dir,
    input_dir,
    input_file,
    input_path,
    output_dir,
)

__all__ = ["COMMANDS", "EXIT_CODES", "PIPE_CLOSED", "PathError", "check_input_dir", "check_input_file",
           "check_input_path", "check_output_dir", "chosen", "commands", "described", "input_dir", "input_file",
           "input_path", "main", "output_dir", "parser"]

USAGE = """Build, verify and release a framework's wheels from one matrix.yaml: `plan` lists the
targets, `build` builds, repairs, verifies and smoke-tests them, `report` writes the compatibility
matrix, and `publish`, `validate`, `promote-release`, `yank` and `rollback` run the release
channels. `python -m builders COMMAND --help` says more."""
# The command modules (cli/<name>.py, in --help's order); none imports another (tests/unit/test_layering.py).
# The rest of cli/ is their plumbing: options, arguments, paths, load, channel_args, optionsdoc.
COMMANDS = ("plan", "build", "images", "verify", "smoke", "report", "promote", "index", "merge-index", "release-check",
            "workflow", "audit", "variants", "cache", "publish", "validate", "manifest", "promote-release", "yank",
            "rollback", "repair-index", "history", "check-index", "rebuild", "verify-release")

# Every code the tool can return, made from the error classes (a unit test proves docs/exit-codes.md's
# table is this table).
EXIT_CODES: tuple[tuple[int, str], ...] = exit_codes()


def epilog(codes: Sequence[tuple[int, str]]) -> str:
    """The ``--help`` epilog: one code a line, its meaning wrapped under it."""
    rows = (textwrap.fill(what, width=100, initial_indent=f"  {code:>3}  ", subsequent_indent=" " * 7)
            for code, what in codes)
    return "exit codes:\n" + "\n".join(rows) + "\n"


EPILOG = epilog(EXIT_CODES)


def module(name: str) -> ModuleType:
    """The module of command ``name``: its ``HELP``, ``DESCRIPTION`` and ``execute(options, console)``."""
    return importlib.import_module(f"builders.cli.{name.replace('-', '_')}")


def commands(only: str | None = None) -> tuple[Subcommand, ...]:
    """With ``only``, the others keep their names but no help: importing every command module was most of
    every start (about 1 s of 1.3), and parsing reads no help text."""
    return tuple(described(name) if only in (None, name) else Subcommand(name=name, help="", description="")
                 for name in COMMANDS)


def described(name: str) -> Subcommand:
    """Command ``name`` with the help text its module declares."""
    found = module(name)
    return Subcommand(name=name, help=found.HELP, description=found.DESCRIPTION)


def chosen(argv: Sequence[str]) -> str | None:
    """The command ``argv`` runs, when only its module is needed: not when help is asked for (or no
    command is named), since ``--help`` shows every command's text. ``--version`` is the one option
    before the command, and it takes no value, so the first word that is not an option is the command."""
    if any(arg in ("-h", "--help") for arg in argv):
        return None
    first = next((arg for arg in argv if not arg.startswith("-")), None)
    return first if first in COMMANDS else None


def parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole parser; with ``command``, its help text only for that command (see :func:`commands`)."""
    return arguments.parser(commands(command), description=USAGE,
                            epilog=EPILOG)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; a closed stdout (``plan | head``) ends quietly with :data:`PIPE_CLOSED`."""
    try:
        return _run(argv)
    except BrokenPipeError:
        _discard_stdout()
        return PIPE_CLOSED


def _run(argv: Sequence[str] | None) -> int:
    env = arguments.environ()
    redact.remember(env, urls=sys.argv[1:] if argv is None else argv)  # masked wherever they would be printed
    sys.excepthook = _redacted_traceback
    console = Console(env=env)
    try:
        opts = arguments.parse(parser(chosen(sys.argv[1:] if argv is None else argv)), argv, env)
        arguments.check_paths(opts)
        return int(module(opts.command).execute(opts, console))
    except BuildersError as exc:
        console.error(f"{type(exc).__name__}: {exc}")
        return exc.exit_code
    except KeyboardInterrupt:
        console.error("interrupted")
        return Interrupted.exit_code
    finally:
        sys.stdout.flush()  # inside the try: a reader that went away is seen here, not at exit


def _redacted_traceback(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
    """An error builders did not expect still leaves through the one rule: a traceback quotes the values that
    failed (a bucket name holding KEY:SECRET), so it is redacted like every other text."""
    sys.stderr.write(redact.redact("".join(traceback.format_exception(kind, exc, tb))))


def _discard_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    try:
        sys.stdout.flush()
    except (BrokenPipeError, ValueError):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


if __name__ == "__main__":
    sys.exit(main())
