"""The hostile-input corpus: one :class:`Case` per input, run by ``test_hostile.py``.

Each case writes its input files into a fresh folder (bytes, or made by a function of that
folder: wheels come from ``make_wheels.py``), runs ``python -m builders ARGV`` there under a
memory and CPU limit, and states what must come out: the documented exit code, a
``file:line:column`` where the input has lines, and a phrase of the message. The runner also
checks: no traceback, no hang (a generous wall-time bound; 20 s of CPU), and nothing written outside the case
folder.

Cases live in ``cases_*.py`` modules, each exporting ``CASES``; ids are unique.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

# What a case folder holds: file name -> bytes, or a function that writes into the folder.
Content = bytes | str | Callable[[Path], None]


@dataclass(frozen=True)
class Case:
    id: str
    argv: tuple[str, ...]  # "{dir}" is the case folder, "{out}" an output folder inside it
    files: dict[str, Content] = field(default_factory=dict)
    exit_code: int = 3
    message: str = ""  # a phrase stderr must contain (case-insensitive)
    location: str | None = None  # "file:line" prefix stderr must contain, e.g. "m.yaml:12"
    stdin: str | None = None
    stdout_closed: bool = False  # stdout is a pipe whose reader has already gone (`plan | head`)


def matrix_case(case_id: str, text: str | bytes, *, exit_code: int = 3, message: str = "",
                line: int | None = None, command: str = "plan") -> Case:
    """A matrix given to ``COMMAND --matrix m.yaml``; ``line`` is where the error must point."""
    return Case(id=case_id, argv=(command, "--matrix", "{dir}/m.yaml"), files={"m.yaml": text}, exit_code=exit_code,
                message=message, location=f"m.yaml:{line}:" if line is not None else None)
