"""``python -m builders``: a thin argparse front over one module per subcommand.

Every path argument says what it must be through its argparse ``type``: :func:`input_file`
(a plain ``type=Path`` means the same), :func:`input_dir`, :func:`input_path` (a file or a
folder) or :func:`output_dir` (:func:`output_file`: a file to write there). ``main`` checks them all before the command runs, so a
missing file, a folder where a file is meant or an output folder that cannot be written is
one clear line and exit 19 (:class:`~builders.base.errors.PathError`), never a traceback half-way through a run.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path

from builders import __version__
from builders.base.console import Console
from builders.base.errors import PIPE_CLOSED, BuildersError, Interrupted, PathError, exit_codes

COMMANDS = ("plan", "build", "images", "verify", "smoke", "report", "promote", "index", "merge-index", "release-check",
            "workflow", "audit", "variants", "cache", "publish", "validate", "promote-release")

# Every code the tool can return, made from the error classes (a unit test proves the README's
# table is this table).
EXIT_CODES: tuple[tuple[int, str], ...] = exit_codes()


def epilog(codes: Sequence[tuple[int, str]]) -> str:
    """The ``--help`` epilog: one code a line, its meaning wrapped under it."""
    rows = (textwrap.fill(what, width=100, initial_indent=f"  {code:>3}  ", subsequent_indent=" " * 7)
            for code, what in codes)
    return "exit codes:\n" + "\n".join(rows) + "\n"


EPILOG = epilog(EXIT_CODES)


def input_file(text: str) -> Path:
    """argparse type: an existing, readable regular file."""
    return Path(text)


def input_dir(text: str) -> Path:
    """argparse type: an existing, readable folder."""
    return Path(text)


def input_path(text: str) -> Path:
    """argparse type: an existing file or folder."""
    return Path(text)


def output_dir(text: str) -> Path:
    """argparse type: a folder that exists or can be created, and can be written."""
    return Path(text)


def output_file(text: str) -> Path:
    """argparse type: a file to write, in a folder that exists or can be created (a folder itself is refused)."""
    return Path(text)


def check_output_file(path: Path) -> None:
    if path.is_dir():
        raise PathError(f"{path}: is a folder, a file to write is expected here")
    check_output_dir(path.parent)


def check_input_file(path: Path) -> None:
    if not path.exists():
        raise PathError(f"{path}: no such file")
    if path.is_dir():
        raise PathError(f"{path}: is a folder, a file is expected here")
    if not path.is_file():
        raise PathError(f"{path}: not a regular file")
    with path.open("rb"):
        pass


def check_input_dir(path: Path) -> None:
    if not path.exists():
        raise PathError(f"{path}: no such folder")
    if not path.is_dir():
        raise PathError(f"{path}: is a file, a folder is expected here")
    with os.scandir(path):
        pass


def check_input_path(path: Path) -> None:
    if not path.exists():
        raise PathError(f"{path}: no such file or folder")


def check_output_dir(path: Path) -> None:
    """``path`` is (or can be made) a folder we can write; tried for real, since root ignores modes."""
    if path.exists() and not path.is_dir():
        raise PathError(f"{path}: is a file, an output folder is expected here")
    existing = next(p for p in (path, *path.parents) if p.exists())
    if not existing.is_dir():
        raise PathError(f"{path}: cannot create this folder: {existing} is a file")
    try:
        fd, probe = tempfile.mkstemp(dir=existing, prefix=".builders-write-test-")
    except OSError as exc:
        raise PathError(f"{path}: cannot write in {existing}: {exc.strerror}") from None
    os.close(fd)
    os.unlink(probe)


CHECKS: dict[Callable[[str], Path], Callable[[Path], None]] = {
    Path: check_input_file, input_file: check_input_file, input_dir: check_input_dir,
    input_path: check_input_path, output_dir: check_output_dir, output_file: check_output_file,
}


def path_arguments(parser: argparse.ArgumentParser) -> tuple[tuple[str, str, Callable[[Path], None]], ...]:
    """(dest, name for messages, check) of every path argument of ``parser``."""
    return tuple((a.dest, a.option_strings[0] if a.option_strings else str(a.metavar or a.dest), CHECKS[a.type])
                 for a in parser._actions if a.type in CHECKS)


def check_paths(args: argparse.Namespace) -> None:
    """Check every path argument given (or defaulted) before the command runs."""
    for dest, name, check in getattr(args, "path_arguments", ()):
        value = getattr(args, dest, None)
        for path in value if isinstance(value, list) else [value]:
            if path is None:
                continue
            try:
                check(Path(path))
            except PathError as exc:
                raise PathError(f"{name} {exc}") from None
            except (OSError, ValueError) as exc:
                reason = getattr(exc, "strerror", None) or str(exc)
                raise PathError(f"{name} {path}: {reason}") from None


def default_matrix() -> Path:
    """``matrix.yaml`` in the current directory (the repository root under nox)."""
    return Path("matrix.yaml")


def add_matrix_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--matrix", type=input_file, default=default_matrix(), metavar="PATH",
                        help="the release matrix (default: ./matrix.yaml)")


def add_selection_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("selection (shell globs over ids like cu132-cp314t-linux-x86_64)")
    group.add_argument("--target", action="append", default=[], metavar="ID", help="exactly this target (repeatable)")
    group.add_argument("--select", action="append", default=[], metavar="GLOB", help="targets matching GLOB (repeatable)")
    group.add_argument("--skip", action="append", default=[], metavar="GLOB", help="leave out targets matching GLOB (repeatable)")


def add_container_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--container-engine", choices=("podman", "docker"), default=None,
                        help="which container engine (default: the first that works, podman then docker)")
    parser.add_argument("--base-image", default=None, metavar="IMAGE",
                        help="base image for every build image instead of the platform's (default: "
                             "$BUILDERS_BASE_IMAGE, else base_image in the matrix)")


def parser() -> argparse.ArgumentParser:
    import importlib

    root = argparse.ArgumentParser(prog="python -m builders", description=__doc__.splitlines()[0] if __doc__ else None,
                                   epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    root.add_argument("--version", action="version", version=f"builders {__version__}")
    sub = root.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        module = importlib.import_module(f"builders.cli.{name.replace('-', '_')}")
        module.configure_parser(sub)
        command = sub.choices[name]
        command.set_defaults(path_arguments=path_arguments(command))
    return root


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; a closed stdout (``plan | head``) ends quietly with :data:`PIPE_CLOSED`."""
    try:
        return _run(argv)
    except BrokenPipeError:
        _discard_stdout()
        return PIPE_CLOSED


def _run(argv: Sequence[str] | None) -> int:
    console = Console()
    try:
        args = parser().parse_args(argv)
        check_paths(args)
        return args.execute(args, console)
    except BuildersError as exc:
        console.error(f"{type(exc).__name__}: {exc}")
        return exc.exit_code
    except KeyboardInterrupt:
        console.error("interrupted")
        return Interrupted.exit_code
    finally:
        sys.stdout.flush()  # inside the try: a reader that went away is seen here, not at exit


def _discard_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    try:
        sys.stdout.flush()
    except (BrokenPipeError, ValueError):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


if __name__ == "__main__":
    sys.exit(main())
