"""Accelerator families as the matrix sees them: an open set of names, each with its facts.

The matrix sits below :mod:`builders.families` and names no family. What the matrix rules need
to know of a family (its arch grammar, whether a variant must list archs, its display name,
where its Containerfile is) is pure data, :class:`FamilyFacts`, defined by the family's own
module and handed to the loader by its caller (``load(path, families=...)``): nothing is
declared anywhere, so no import order matters and a test's own family is just another argument.

:class:`Accelerator` is the family as a value (its facts; ``value`` is its name): two are equal
when their facts are.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

ANY_ARCH = re.compile(r"[a-z0-9][a-z0-9_.-]*")
FAMILY_NAME = re.compile(r"[a-z][a-z0-9]*")


def as_written(entry: str) -> tuple[str, ...]:
    return (entry,)


@dataclass(frozen=True, kw_only=True)
class FamilyFacts:
    """What the matrix, the target records and the report know of a family (pure data)."""

    name: str  # the key under ``accelerators:`` in matrix.yaml: ``cuda``
    display: str  # how the report names it: ``CUDA`` (``CUDA 13.2``)
    arch_entry: re.Pattern[str] = ANY_ARCH  # one entry of an ``arch_list``
    arch_example: str = "architecture names separated by ';'"  # the hint when an entry does not match
    needs_arch_list: bool = False  # a GPU family: every variant declares the archs it is built for
    containerfile: str = ""  # the Containerfile as target records show it (default: builders' own, by name)
    module: str = ""  # the module defining the family's ``FAMILY`` (how builders.families.family_for finds it)
    # one arch-list entry as the values the family's variant provider reports (PEP 825 ``{arch}``)
    arch_properties: Callable[[str], tuple[str, ...]] = as_written

    @property
    def containerfile_shown(self) -> str:
        return self.containerfile or f"builders/resources/containers/{self.name}.Containerfile"


@dataclass(frozen=True)
class Accelerator:
    """A family as the matrix model holds it (``variant.accelerator``); ``value`` is its name."""

    facts: FamilyFacts

    @property
    def value(self) -> str:
        return self.facts.name

    def __repr__(self) -> str:
        return f"Accelerator({self.value!r})"


def by_name(families: Iterable[Accelerator]) -> dict[str, Accelerator]:
    """The families a matrix may use (what the loader was given), by name; a name given twice is refused."""
    out: dict[str, Accelerator] = {}
    for family in families:
        if not FAMILY_NAME.fullmatch(family.value):
            raise ValueError(f"family name {family.value!r} is not lower-case letters and digits")
        if out.setdefault(family.value, family) != family:
            raise ValueError(f"family {family.value!r} is given twice, with different facts")
    return out
