"""``promote WHEEL``: turn a labelled default-variant wheel into the PyPI wheel."""

from __future__ import annotations

from pathlib import Path

from builders.base.console import Console
from builders.cli import load
from builders.cli.arguments import Options
from builders.index.pages import find_wheels
from builders.matrix.model import Matrix
from builders.wheel.archive import Wheel
from builders.wheel.pypi_form import PromoteError, promotable, promote, target_of
from builders.wheel.variant import split_label

HELP = "turn a labelled default-variant wheel into the PyPI wheel"
DESCRIPTION = ("Write the PyPI wheel for WHEEL (e.g. 2.15.0+cu132 -> 2.15.0): version and "
                "dist-info renamed, METADATA Version and Requires-Dist set for the PyPI channel, "
                "RECORD regenerated, every other member byte-identical; then verify it. Only the "
                "PyPI default variant of the wheel's platform is accepted, and only once WHEEL "
                "verifies as its labelled target (exit 15 otherwise, and for a folder without "
                "one unless --allow-empty; exit 7 if the result fails verify).")


def execute(opts: Options, console: Console) -> int:
    m = load.matrix(opts)
    wheels = [Wheel(opts.wheel)] if opts.wheel.is_file() else defaults_under(m, opts.wheel, allow_empty=opts.allow_empty)
    if not wheels:
        console.line(f"{opts.wheel}: nothing promoted, none of its wheels is a labelled wheel of a PyPI default "
                     f"variant ({pypi_defaults(m)}); --allow-empty, so nothing was written")
    checked = [(wheel, promotable(m, wheel)) for wheel in wheels]  # every input verified before any write
    for wheel, target in checked:
        result = promote(m, wheel, opts.output, checked=target)
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
