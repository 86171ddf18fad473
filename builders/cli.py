"""``python -m builders``: a thin argparse front over one module per subcommand."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from . import __version__
from .console import Console
from .errors import BuildersError

COMMANDS = ("plan", "build", "images", "verify", "smoke", "report", "promote", "index", "workflow")

EPILOG = """\
exit codes: 0 ok, 1 a target failed, 2 usage, 3 invalid matrix, 4 dropped item asked for,
5 bad selection, 6 toolchain, 7 verify, 8 smoke, 9 engine, 11 wheel, 12 subprocess, 13 results, 14 repair,
15 not promotable, 16 index, 17 workflow drift, 18 not buildable in image, 130 interrupted
"""


def default_matrix() -> Path:
    """``matrix.yaml`` in the current directory (the repository root under nox)."""
    return Path("matrix.yaml")


def add_matrix_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--matrix", type=Path, default=default_matrix(), metavar="PATH",
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
        module = importlib.import_module(f"builders.commands.{name}")
        module.configure_parser(sub)
    return root


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    console = Console()
    try:
        return args.execute(args, console)
    except BuildersError as exc:
        console.error(f"{type(exc).__name__}: {exc}")
        return exc.exit_code
    except KeyboardInterrupt:
        console.error("interrupted")
        return 130


if __name__ == "__main__":
    sys.exit(main())
