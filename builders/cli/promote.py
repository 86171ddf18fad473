"""``promote WHEEL``: turn a labelled default-variant wheel into the PyPI wheel."""

from __future__ import annotations

import argparse
from pathlib import Path

from builders.base.console import Console
from builders.cli import add_matrix_option, input_path, output_dir
from builders.matrix import loader as matrix_mod
from builders.matrix.model import Matrix
from builders.release.index import find_wheels
from builders.release.promote import PromoteError, promotable, promote, target_of
from builders.wheel.archive import Wheel
from builders.wheel.variant import split_label


def configure_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("promote", help="turn a labelled default-variant wheel into the PyPI wheel",
                       description="Write the PyPI wheel for WHEEL (e.g. 2.15.0+cu132 -> 2.15.0): version and "
                                   "dist-info renamed, METADATA Version and Requires-Dist set for the PyPI channel, "
                                   "RECORD regenerated, every other member byte-identical; then verify it. Only the "
                                   "PyPI default variant of the wheel's platform is accepted, and only once WHEEL "
                                   "verifies as its labelled target (exit 15 otherwise, and for a folder without "
                                   "one unless --allow-empty; exit 7 if the result fails verify).")
    add_matrix_option(p)
    p.add_argument("wheel", type=input_path, metavar="WHEEL",
                   help="a wheel, or a folder: every PyPI-default wheel under it (others are left alone)")
    p.add_argument("--output", type=output_dir, default=Path("wheelhouse/pypi"), metavar="DIR",
                   help="where the PyPI wheel is written (default: wheelhouse/pypi/)")
    p.add_argument("--allow-empty", action="store_true",
                   help="a folder of wheels none of which is a PyPI-default wheel (a release of cu134-* only) "
                        "promotes nothing: write nothing, say why, exit 0 (default: exit 15). A folder with no "
                        "wheels at all is still an error")
    p.set_defaults(execute=execute)


def execute(args: argparse.Namespace, console: Console) -> int:
    m = matrix_mod.load(args.matrix, builds=False)
    wheels = [Wheel(args.wheel)] if args.wheel.is_file() else defaults_under(m, args.wheel, allow_empty=args.allow_empty)
    if not wheels:
        console.line(f"{args.wheel}: nothing promoted, none of its wheels is a labelled wheel of a PyPI default "
                     f"variant ({pypi_defaults(m)}); --allow-empty, so nothing was written")
    checked = [(wheel, promotable(m, wheel)) for wheel in wheels]  # every input verified before any write
    for wheel, target in checked:
        result = promote(m, wheel, args.output, checked=target)
        console.line(f"{wheel.path.name} -> {result.path} (verified for {result.target.id}, channel pypi)")
    return 0


def defaults_under(m: Matrix, folder: Path, *, allow_empty: bool = False) -> list[Wheel]:
    """The labelled wheels under ``folder`` whose variant is the PyPI default of their platform: at least one,
    unless ``allow_empty`` (a selection without a default variant has none to promote, by design)."""
    paths = find_wheels(folder)
    if not paths:
        raise PromoteError(f"{folder}: no wheels (*.whl) under this folder, nothing to promote")
    found = []
    for path in paths:
        if split_label(path.name)[1] is not None:
            continue  # a wheel variant (builders variants), never promoted
        wheel = Wheel(path)
        if wheel.version.local and target_of(m, wheel).on_pypi:
            found.append(wheel)
    if not found and not allow_empty:
        raise PromoteError(f"{folder}: none of its {len(paths)} wheel(s) is a labelled wheel of a PyPI default "
                           f"variant ({pypi_defaults(m)}), nothing to promote (--allow-empty accepts that)")
    return found


def pypi_defaults(m: Matrix) -> str:
    """``cpu on linux-x86_64, ...``: the variants whose wheels go to PyPI, for messages."""
    return ", ".join(f"{label} on {platform}" for platform, label in m.channels.pypi)
