"""builders' own accelerator families, :data:`BUILTIN`: a plain tuple of their modules, and how to find a family.

Nothing is registered anywhere. The loader is handed the families a matrix may use
(:mod:`builders.families.loader` hands it these; a test adds its own, ``tests/dummy_family/npu.py``),
and every variant of the matrix then holds its family's :class:`~builders.matrix.family.Accelerator`,
whose facts name the module that defines the family (``module``): :func:`family_for` finds a
plug-in's family the way it finds builders' own, so no import order matters. A function that asks
every family (the driver libraries no wheel may hold, the compiler launchers) takes them as an
argument, builders' own by default.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterable
from functools import cache
from types import ModuleType

from builders.families import cpu, cuda, rocm, xpu
from builders.families.base import Family, Toolchain
from builders.matrix.family import Accelerator

# builders' own families, one module each under builders/families/ (a test checks that every
# module of the package defining ``FAMILY`` is listed here).
BUILTIN: tuple[ModuleType, ...] = (cpu, cuda, rocm, xpu)


@cache
def protocol_members() -> tuple[str, ...]:
    """Every attribute and method a family must have (:class:`Family` and :class:`Toolchain`)."""
    names: set[str] = set()
    for proto in (Toolchain, Family):
        names |= set(inspect.get_annotations(proto))
        names |= {n for n, v in vars(proto).items() if callable(v) and not n.startswith("_")}
    return tuple(sorted(names))


def checked(family: Family) -> Family:
    """``family``, refused when it lacks a member of the protocol (a family that forgot its device rule
    is not taken for one that needs no device)."""
    missing = [name for name in protocol_members() if not hasattr(family, name)]
    if missing:
        raise TypeError(f"{family!r} is not a Family: it has no {', '.join(missing)}")
    return family


def families(extra: Iterable[Family] = ()) -> tuple[Family, ...]:
    """builders' own families and ``extra`` (a plug-in's), by name."""
    every = {f.accelerator.value: f for f in (*(m.FAMILY for m in BUILTIN), *extra)}
    return tuple(checked(every[name]) for name in sorted(every))


def accelerators(extra: Iterable[Family] = ()) -> tuple[Accelerator, ...]:
    """What the matrix loader is given: the accelerator of each of :func:`families`."""
    return tuple(f.accelerator for f in families(extra))


def declared() -> tuple[str, ...]:
    """The names of builders' own families: what a matrix may use unless a caller adds one."""
    return tuple(f.accelerator.value for f in families())


def family_for(accelerator: Accelerator) -> Family:
    """The family ``accelerator`` belongs to: the ``FAMILY`` of the module its facts name."""
    try:
        family: Family = importlib.import_module(accelerator.facts.module).FAMILY
    except (ImportError, ValueError, AttributeError):
        raise LookupError(f"no family module defines accelerator {accelerator.value!r} "
                          f"(its facts name module {accelerator.facts.module!r})") from None
    if family.accelerator != accelerator:
        raise LookupError(f"{accelerator.facts.module}.FAMILY is not the family of accelerator {accelerator.value!r}")
    return checked(family)


toolchain_for = family_for  # the toolchain is the family (the name the build code knows)
