"""Build engines: where a target's commands run (this host, a container, cibuildwheel), by name.

An engine is a recipe (how a target's build looks on it: runners, interpreter, toolchain,
paths; pure), provisioning (toolchains or images, each made once per run behind a lock) and
the runner specs its plans hold, each of which opens itself
(:class:`~builders.base.runnerspec.RunnerSpec`). Build, label, repair, verify and smoke are
written once, in :mod:`builders.pipeline.executor`, against the runner.

Adding an engine is one module: its engine, its runner spec if it needs a new kind, and an
:class:`~builders.pipeline.engine.EngineFactory` named ``FACTORY``, listed in :data:`BUILTIN`
(a test checks that every engine module is), or :func:`register`-ed from outside.
Every command finds an engine here, by name (:func:`named`).
"""

from __future__ import annotations

from builders.base.errors import EngineError
from builders.engines import cibw, container, local
from builders.matrix.hostfacts import Host
from builders.matrix.targets import Target
from builders.pipeline.engine import Engine, EngineFactory, EngineSetup

__all__ = ["BUILTIN", "DEFAULT", "Engine", "EngineFactory", "EngineSetup", "factories", "for_ci", "help_text", "named", "names",
           "register"]


def make_auto(setup: EngineSetup) -> tuple[Engine, str]:
    """A container engine when one works, else this host, and why."""
    try:
        engine, why = container.FACTORY.make(setup)
    except EngineError:
        missing = container.missing_container_engine(setup.env, setup.container_engine)
        return local.FACTORY.make(setup)[0], f"auto: {missing}"
    return engine, f"auto: {why}"


def unbuildable_auto(target: Target, host: Host) -> str | None:
    return (container.FACTORY if host.container_engines else local.FACTORY).unbuildable(target, host)


AUTO = EngineFactory(name="auto", make=make_auto, unbuildable=unbuildable_auto, containers=True,
                     help="a container engine when one works, else local, and it says which and why")
# The engines builders brings, in the order ``--engine`` lists them.
BUILTIN: tuple[EngineFactory, ...] = (local.FACTORY, container.FACTORY, cibw.FACTORY, AUTO)
_REGISTRY: dict[str, EngineFactory] = {f.name: f for f in BUILTIN}
DEFAULT = local.FACTORY.name  # ``--engine``'s default: this host


def register(factory: EngineFactory) -> EngineFactory:
    """Make ``factory``'s engine choosable by name (``build --engine NAME``); a name is taken once."""
    if _REGISTRY.get(factory.name, factory) is not factory:
        raise EngineError(f"an engine named {factory.name!r} is registered already")
    _REGISTRY[factory.name] = factory
    return factory


def factories() -> tuple[EngineFactory, ...]:
    return tuple(_REGISTRY.values())


def names() -> tuple[str, ...]:
    return tuple(_REGISTRY)


def named(name: str) -> EngineFactory:
    """The engine registered as ``name``, or an :class:`EngineError` listing those that are."""
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
    raise EngineError(f"no engine builds {target.platform.os.value} wheels in CI (engines: {', '.join(_REGISTRY)})")


def help_text() -> str:
    """``--engine``'s help: each engine in a clause."""
    return "; ".join(f"{f.name}: {f.help}" for f in factories())
