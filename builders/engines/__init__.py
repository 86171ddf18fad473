"""Build engines: where a target's commands run (this host, a container, cibuildwheel), by name.

An engine is a recipe (how a target's build looks on it: runners, interpreter, toolchain,
paths; pure), provisioning (toolchains or images, each made once per run behind a lock) and
the runner specs its plans hold, each of which opens itself
(:class:`~builders.base.runnerspec.RunnerSpec`). Build, label, repair, verify and smoke are
written once, in :mod:`builders.pipeline.executor`, against the runner.

Adding an engine is one module: its engine, its runner spec if it needs a new kind, and an
:class:`~builders.engines.factory.EngineFactory` named ``FACTORY``, its module listed in
:data:`BUILTIN` (a test checks that every engine module is), or :func:`register`-ed from
outside (``tests/dummy_engine.py``). Importing this package imports no engine module: the
first question asked of the registry (:func:`names`, :func:`named`, :func:`factories`,
:func:`for_ci`, :func:`register`) imports those of :data:`BUILTIN`, once.
Every command finds an engine here, by name (:func:`named`).
"""

from __future__ import annotations

import importlib
from functools import cache

from builders.base.errors import EngineError
from builders.engines.factory import EngineFactory, EngineSetup
from builders.matrix.targets import Target
from builders.pipeline.engine import Engine

__all__ = ["BUILTIN", "DEFAULT", "Engine", "EngineError", "EngineFactory", "EngineSetup", "builtin", "factories",
           "for_ci", "help_text", "named", "names", "register"]

PACKAGE = "builders.engines"
# builders' own engines, one module each under builders/engines/, in the order ``--engine`` lists them
# (tests/importgraph.py reads this tuple as this package importing each).
BUILTIN: tuple[str, ...] = ("local", "container", "cibw", "auto")
DEFAULT = "local"  # ``--engine``'s default: this host
_REGISTRY: dict[str, EngineFactory] = {}


@cache
def builtin() -> tuple[EngineFactory, ...]:
    """The ``FACTORY`` of each module of :data:`BUILTIN`, imported (and registered) on the first call."""
    made = tuple(importlib.import_module(f"{PACKAGE}.{name}").FACTORY for name in BUILTIN)
    for factory in made:
        _REGISTRY.setdefault(factory.name, factory)
    return made


def register(factory: EngineFactory) -> EngineFactory:
    """Make ``factory``'s engine choosable by name (``build --engine NAME``); a name is taken once."""
    builtin()
    if _REGISTRY.get(factory.name, factory) is not factory:
        raise EngineError(f"an engine named {factory.name!r} is registered already")
    _REGISTRY[factory.name] = factory
    return factory


def factories() -> tuple[EngineFactory, ...]:
    """Every engine: builders' own in :data:`BUILTIN` order, then those registered from outside."""
    builtin()
    return tuple(_REGISTRY.values())


def names() -> tuple[str, ...]:
    return tuple(f.name for f in factories())


def named(name: str) -> EngineFactory:
    """The engine registered as ``name``, or an :class:`EngineError` listing those that are."""
    builtin()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise EngineError(f"no engine named {name!r} (engines: {', '.join(_REGISTRY)})") from None


def for_ci(target: Target) -> EngineFactory:
    """The engine the release workflow builds ``target`` with: the first that claims its system
    (``EngineFactory.ci_for``: Linux wheels in the variant's image, macOS and Windows with cibuildwheel)."""
    for factory in factories():
        if target.platform.os in factory.ci_for:
            return factory
    raise EngineError(f"no engine builds {target.platform.os.value} wheels in CI (engines: {', '.join(names())})")


def help_text() -> str:
    """``--engine``'s help: each engine in a clause."""
    return "; ".join(f"{f.name}: {f.help}" for f in factories())
