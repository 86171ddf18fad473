"""The registry of accelerator families: every module of :mod:`builders.families` that defines ``FAMILY``.

:func:`discover` (called once, when the package is imported) imports each module of the
package and registers the ``FAMILY`` it defines; tests/importgraph.py reads that as this
module importing every module that assigns ``FAMILY``, so a family module must not import this
registry (nor anything that does, such as :mod:`builders.families.device`): the layering test
would see the cycle.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

from builders.families.base import Family, Toolchain
from builders.matrix.family import Accelerator

PACKAGE = "builders.families"
_REGISTRY: dict[str, Family] = {}


def protocol_members() -> tuple[str, ...]:
    """Every attribute and method a family must have (:class:`Family` and :class:`Toolchain`)."""
    names: set[str] = set()
    for proto in (Toolchain, Family):
        names |= set(inspect.get_annotations(proto))
        names |= {n for n, v in vars(proto).items() if callable(v) and not n.startswith("_")}
    return tuple(sorted(names))


def register(family: Family) -> Family:
    """Add ``family`` to the registry; refused when it lacks a member of the protocol or its
    accelerator was not declared to spec."""
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
    return tuple(_REGISTRY[name] for name in sorted(_REGISTRY))


def family_for(accelerator: Accelerator) -> Family:
    try:
        return _REGISTRY[accelerator.value]
    except KeyError:
        raise LookupError(f"no family module registered for accelerator {accelerator.value!r}") from None


toolchain_for = family_for  # the toolchain is the family (the name the build code knows)


def discover() -> None:
    """Import every module of the package; register each ``FAMILY`` found."""
    package = importlib.import_module(PACKAGE)
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{PACKAGE}.{info.name}")
        family = getattr(module, "FAMILY", None)
        if family is not None:
            register(family)
