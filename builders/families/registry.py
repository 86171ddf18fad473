"""The registry of accelerator families: builders' own, listed in :data:`BUILTIN`, and any registered from outside.

Nothing is imported when this module is: the first question asked of the registry
(:func:`families`, :func:`family_for`, :func:`register`, :func:`declared`, or :func:`load_builtin`
itself) imports each module named in :data:`BUILTIN` once and registers the ``FAMILY`` it
defines; importing a family module declares its matrix facts (:func:`builders.matrix.family.declare`). ``tests/importgraph.py`` reads
:data:`BUILTIN` as this module importing each family module listed, so a family module must not
import this registry (nor anything that does, such as :mod:`builders.families.device`): the
layering test would see the cycle. A test or a plugin adds a family of its own with
:func:`register` (``tests/dummy_family/npu.py``).

The matrix loader sits below this package and cannot ask it (that would be an upward import and
a cycle: the family modules import the matrix model): a program that reads a matrix calls
:func:`load_builtin` first, as :func:`builders.cli.main`, the benchmarks and the test suite's
conftest do, so the schema admits every family builders has; one that forgets is told so
(:func:`builders.matrix.family.admitted`).
"""

from __future__ import annotations

import importlib
import inspect
from functools import cache

from builders.families.base import Family, Toolchain
from builders.matrix.family import Accelerator

PACKAGE = "builders.families"
# builders' own families, one module each under builders/families/ (a test checks that every
# module of the package defining ``FAMILY`` is listed here).
BUILTIN: tuple[str, ...] = ("cpu", "cuda", "rocm", "xpu")
_REGISTRY: dict[str, Family] = {}


def protocol_members() -> tuple[str, ...]:
    """Every attribute and method a family must have (:class:`Family` and :class:`Toolchain`)."""
    names: set[str] = set()
    for proto in (Toolchain, Family):
        names |= set(inspect.get_annotations(proto))
        names |= {n for n, v in vars(proto).items() if callable(v) and not n.startswith("_")}
    return tuple(sorted(names))


@cache
def load_builtin() -> None:
    """Import every module of :data:`BUILTIN` (once) and register its ``FAMILY``."""
    for name in BUILTIN:
        _add(importlib.import_module(f"{PACKAGE}.{name}").FAMILY)


def register(family: Family) -> Family:
    """Add ``family`` to the registry; refused when it lacks a member of the protocol or its
    accelerator was not declared to the matrix."""
    load_builtin()
    return _add(family)


def _add(family: Family) -> Family:
    missing = [name for name in protocol_members() if not hasattr(family, name)]
    if missing:
        raise TypeError(f"{family!r} is not a Family: it has no {', '.join(missing)}")
    name = family.accelerator.value
    if Accelerator(name) is not family.accelerator:
        raise TypeError(f"{family!r}: accelerator {name!r} was not declared with builders.matrix.family.declare")
    _REGISTRY[name] = family
    return family


def unregister(name: str) -> None:
    """Forget a registered family (tests that register their own clean up with it)."""
    _REGISTRY.pop(name, None)


def families() -> tuple[Family, ...]:
    """Every registered family, by name."""
    load_builtin()
    return tuple(_REGISTRY[name] for name in sorted(_REGISTRY))


def declared() -> tuple[str, ...]:
    """The names of every registered family, builders' own loaded first: what a matrix may use."""
    return tuple(f.accelerator.value for f in families())


def family_for(accelerator: Accelerator) -> Family:
    load_builtin()
    try:
        return _REGISTRY[accelerator.value]
    except KeyError:
        raise LookupError(f"no family module registered for accelerator {accelerator.value!r}") from None


toolchain_for = family_for  # the toolchain is the family (the name the build code knows)
