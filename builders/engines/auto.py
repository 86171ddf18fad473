"""The ``auto`` engine: a container engine when one works on this host, else this host, and why."""

from __future__ import annotations

from builders.base.errors import EngineError
from builders.engines import container, local
from builders.engines.factory import EngineFactory, EngineSetup
from builders.families.hostfacts import Host
from builders.matrix.targets import Target
from builders.pipeline.engine import Engine


def make(setup: EngineSetup) -> tuple[Engine, str]:
    """A container engine when one works, else this host, and why."""
    try:
        engine, why = container.FACTORY.make(setup)
    except EngineError:
        missing = container.missing_container_engine(setup.env, setup.container_engine)
        return local.FACTORY.make(setup)[0], f"auto: {missing}"
    return engine, f"auto: {why}"


def unbuildable(target: Target, host: Host) -> str | None:
    return (container.FACTORY if host.container_engines else local.FACTORY).unbuildable(target, host)


FACTORY = EngineFactory(name="auto", make=make, unbuildable=unbuildable, containers=True,
                        help="a container engine if one works, else local (it says why)")
