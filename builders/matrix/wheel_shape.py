"""``project.wheel_shape``: one wheel per Python (the default), or one wheel for every Python of a (variant, platform).

A shared wheel is built once, verified once and smoke-tested on each listed Python that installs it. Which
Pythons install it follows the tag rules (PEP 425, PEP 384, PEP 703, PEP 803):

- ``py3-none``: no Python ABI at all (libraries loaded with ctypes): every CPython 3, free-threaded too.
- ``abi3`` (``cp312-abi3``): the stable ABI from its minimum on, GIL builds only: a free-threaded CPython
  accepts no ``abi3`` wheel (3.13t, 3.14t; and from 3.15 only ``abi3t``).
- ``abi3.abi3t`` (``cp315-abi3.abi3t``, PEP 803, 3.15 on): GIL builds through ``abi3``, free-threaded
  builds through ``abi3t``.

The value names the wheel's ``{python tag}-{abi tag}``; ``abi3`` alone (or ``abi3.abi3t``) takes its minimum
from the lowest listed Python. Pure: the expansion (:mod:`builders.matrix.targets`) applies it.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Protocol

from packaging.tags import Tag

from builders.matrix.findings import Violation


class Release(Protocol):
    """What a shape asks of a Python (:class:`builders.matrix.model.PythonVersion`, whose module holds shapes)."""

    @property
    def major(self) -> int: ...
    @property
    def minor(self) -> int: ...
    @property
    def free_threaded(self) -> bool: ...

ABI3T_FROM = (3, 15)  # PEP 803: the first CPython with the free-threaded stable ABI
PATTERN = r"^(per-python|py3-none|(cp3[0-9]+-)?abi3(\.abi3t)?)$"  # the schema's pattern for the key


class ShapeKind(enum.Enum):
    PER_PYTHON = "per-python"
    ABI3 = "abi3"
    ABI3_ABI3T = "abi3.abi3t"
    PY3_NONE = "py3-none"


@dataclass(frozen=True, kw_only=True)
class WheelShape:
    """What the wheel's ``{python}-{abi}`` tags are, and so which Pythons share it."""

    kind: ShapeKind = ShapeKind.PER_PYTHON
    minimum: tuple[int, int] | None = None  # abi3's floor (``cp312-abi3``: (3, 12)); None: the lowest listed

    @classmethod
    def parse(cls, text: str) -> WheelShape:
        """``"cp312-abi3"`` -> WheelShape(ABI3, (3, 12)); the schema has refused anything else already."""
        head, _, rest = text.partition("-") if text.startswith("cp") else ("", "", text)
        minimum = (int(head[2]), int(head[3:])) if head else None
        return cls(kind=ShapeKind(rest), minimum=minimum)

    @property
    def shared(self) -> bool:
        """One wheel for every Python of a (variant, platform)."""
        return self.kind is not ShapeKind.PER_PYTHON

    @property
    def id_part(self) -> str:
        """The target id's Python part: ``cu132-abi3-linux-x86_64``, ``cu132-py3-linux-x86_64``."""
        return "py3" if self.kind is ShapeKind.PY3_NONE else self.kind.value

    @property
    def abi_text(self) -> str:
        """The file name's (compressed) ABI tag: ``none``, ``abi3``, ``abi3.abi3t``."""
        return "none" if self.kind is ShapeKind.PY3_NONE else self.kind.value

    def settled(self, pythons: Iterable[Release]) -> WheelShape:
        """The shape with its minimum filled from the lowest listed Python (abi3.abi3t: never below 3.15)."""
        if self.kind in (ShapeKind.PER_PYTHON, ShapeKind.PY3_NONE) or self.minimum is not None:
            return self
        lowest = min(((p.major, p.minor) for p in pythons), default=ABI3T_FROM)
        return replace(self, minimum=max(lowest, ABI3T_FROM) if self.kind is ShapeKind.ABI3_ABI3T else lowest)

    def interpreter(self) -> str:
        """The file name's Python tag: ``py3`` or ``cp312`` (the stable ABI's minimum)."""
        if self.kind is ShapeKind.PY3_NONE or self.minimum is None:
            return "py3"
        return f"cp{self.minimum[0]}{self.minimum[1]}"

    def tags(self, wheel_platform: str) -> frozenset[Tag]:
        """Every tag of the shared wheel's name (a compressed ABI tag set expands to one tag per ABI)."""
        return frozenset(Tag(self.interpreter(), abi, wheel_platform) for abi in self.abi_text.split("."))

    def why_not(self, python: Release) -> str | None:
        """Why ``python`` cannot install this shape's wheel (the PEP rule), or None if it can."""
        release = (python.major, python.minor)
        if self.kind in (ShapeKind.PER_PYTHON, ShapeKind.PY3_NONE):
            return None
        floor = self.minimum or ABI3T_FROM
        if release < floor:
            return f"a {self.interpreter()}-{self.abi_text} wheel needs CPython {floor[0]}.{floor[1]} or newer"
        if python.free_threaded and (self.kind is ShapeKind.ABI3 or release < ABI3T_FROM):
            return ("a free-threaded CPython installs no abi3 wheel (PEP 703); only abi3t wheels, from 3.15 "
                    "(PEP 803: wheel_shape abi3.abi3t)")
        return None


PER_PYTHON = WheelShape()


def shape_problem(text: str) -> Violation | None:
    """A value no CPython has (``cp39-abi3.abi3t``: abi3t starts at 3.15), or none the key knows."""
    if not re.match(PATTERN, text):
        return Violation(f"wheel_shape {text!r} is not a wheel shape",
                         hint="per-python, py3-none, abi3, abi3.abi3t, cpXY-abi3 or cpXY-abi3.abi3t")
    shape = WheelShape.parse(text)
    if shape.kind is ShapeKind.ABI3_ABI3T and shape.minimum is not None and shape.minimum < ABI3T_FROM:
        return Violation(f"wheel_shape {text!r}: abi3t exists from CPython 3.15 on (PEP 803)",
                         hint="cp315-abi3.abi3t or later, or abi3 for GIL builds only")
    return None
