"""What a path argument must be, and the check ``main`` runs before a command does.

Every path option says what it must be through its parser in the options table
(:mod:`builders.cli.options`): :func:`input_file` (a plain ``Path`` means the same),
:func:`input_dir`, :func:`input_path` (a file or a folder), :func:`output_dir` or
:func:`output_file` (a file to write). The checks
run on every such value given or defaulted, so a missing file, a folder where a file is meant
or an output folder that cannot be written is one clear line and exit 19
(:class:`~builders.base.errors.PathError`), never a traceback half-way through a run.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from builders.base import safe_output
from builders.base.errors import PathError


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
    """A file to write: refused before the command runs where :mod:`builders.base.safe_output` would refuse it at
    the end (a symlink out of its folder, a device node, a folder, a FIFO nobody reads) or where its folder
    cannot take a byte (read-only, full), so a publication never ends in a record that cannot be written."""
    if path.is_dir():
        raise PathError(f"{path}: is a folder, a file to write is expected here")
    if safe_output.destination(path) is None:
        safe_output.hold(path)
        return
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
    try:
        os.write(fd, b"\n")  # a full filesystem takes a new empty file, not a byte
    except OSError as exc:
        raise PathError(f"{path}: cannot write in {existing}: {exc.strerror}") from None
    finally:
        os.close(fd)
        os.unlink(probe)


CHECKS: dict[Callable[[str], Path], Callable[[Path], None]] = {
    Path: check_input_file, input_file: check_input_file, input_dir: check_input_dir,
    input_path: check_input_path, output_dir: check_output_dir, output_file: check_output_file,
}
