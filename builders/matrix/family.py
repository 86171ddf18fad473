"""Accelerator families as the matrix sees them: an open set of names, each with its facts.

The matrix sits below :mod:`builders.families` and names no family. What the matrix rules need
to know of a family (its arch grammar, whether a variant must list archs, its display name,
where its Containerfile is) is pure data, :class:`FamilyFacts`, that the family's own module in
``builders/families/`` declares with :func:`declare` when it is imported. Nothing here imports a
family (the import graph keeps pointing down: the matrix imports no family, families import the
matrix), so a family is declared only once its module is imported: by the family registry the
first time a family is asked for (:func:`builders.families.registry.load_builtin`, which a
program calls before it reads a matrix: :func:`admitted` refuses to answer before), or by a test
that declares its own (``tests/unit/test_dummy_family.py``).

:class:`Accelerator` is the family as a value: one object per declared name (``is`` compares,
as it did when it was an enum), ``Accelerator(name)`` for a declared name and ``ValueError``
for any other; the matrix schema's list of family names is :func:`admitted`, read at validation.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

ANY_ARCH = re.compile(r"[a-z0-9][a-z0-9_.-]*")
FAMILY_NAME = re.compile(r"[a-z][a-z0-9]*")


def as_written(entry: str) -> tuple[str, ...]:
    """An arch-list entry as a variant property value: itself."""
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
    # one arch-list entry as the values the family's variant provider reports (PEP 825 ``{arch}``)
    arch_properties: Callable[[str], tuple[str, ...]] = as_written

    @property
    def containerfile_shown(self) -> str:
        return self.containerfile or f"builders/resources/containers/{self.name}.Containerfile"


class Accelerator:
    """A declared accelerator family (``Accelerator(name)``); ``value`` is its name."""

    __slots__ = ("facts", "value")
    value: str
    facts: FamilyFacts

    def __new__(cls, value: str) -> Accelerator:
        try:
            return _DECLARED[value]
        except (KeyError, TypeError):
            raise ValueError(f"{value!r} is not a declared accelerator family (declared: {', '.join(names()) or 'none'}; "
                             "builders.families.registry.load_builtin() declares builders' own)") from None

    @classmethod
    def _make(cls, facts: FamilyFacts) -> Accelerator:
        self = object.__new__(cls)
        object.__setattr__(self, "value", facts.name)
        object.__setattr__(self, "facts", facts)
        return self

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Accelerator is immutable (set {name})")

    def __reduce__(self) -> tuple[type[Accelerator], tuple[str]]:
        return Accelerator, (self.value,)

    def __copy__(self) -> Accelerator:
        return self

    def __deepcopy__(self, memo: object) -> Accelerator:
        return self

    def __repr__(self) -> str:
        return f"Accelerator({self.value!r})"


# Every declared family by name: the matrix's open set (filled by :func:`declare`, emptied by :func:`withdraw`).
_DECLARED: dict[str, Accelerator] = {}


def declare(facts: FamilyFacts) -> Accelerator:
    """Declare a family (once per name; declaring the same facts again returns the same value)."""
    if not FAMILY_NAME.fullmatch(facts.name):
        raise ValueError(f"family name {facts.name!r} is not lower-case letters and digits")
    known = _DECLARED.get(facts.name)
    if known is not None:
        if known.facts != facts:
            raise ValueError(f"family {facts.name!r} is declared twice, with different facts")
        return known
    made = Accelerator._make(facts)
    _DECLARED[facts.name] = made
    return made


def withdraw(name: str) -> None:
    """Forget a declared family (tests that declare one of their own clean up with it)."""
    _DECLARED.pop(name, None)


def names() -> tuple[str, ...]:
    """Every declared family's name, sorted: the schema's ``accelerators`` keys."""
    return tuple(sorted(_DECLARED))


def admitted() -> tuple[str, ...]:
    """The family names a matrix may use (:func:`names`); refused while none is declared, which means the
    program never asked the family registry (the loader cannot: it sits below the families)."""
    declared = names()
    if not declared:
        raise RuntimeError("no accelerator family is declared: call builders.families.registry.load_builtin() "
                           "before reading a matrix (builders.cli.main does)")
    return declared
