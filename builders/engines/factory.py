"""How an engine is named and made for a run: :class:`EngineFactory` from a run's :class:`EngineSetup`.

Each engine module defines one ``FACTORY``; the registry (:mod:`builders.engines`) finds them by
name, which is how every command finds an engine. What the pipeline then asks of the engine made
is :class:`builders.pipeline.engine.Engine`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from builders.families.hostfacts import Host
from builders.matrix.model import OS, Matrix
from builders.matrix.targets import Target
from builders.pipeline.engine import Engine


@dataclass(frozen=True, kw_only=True)
class EngineSetup:
    """What an engine is made from: the run's matrix, targets and host, and the command line's options."""

    matrix: Matrix
    targets: tuple[Target, ...]
    host: Host
    env: Mapping[str, str] = field(hash=False)
    cache: Path  # the toolchain cache
    container_engine: str | None = None  # --container-engine: podman or docker (None: the first that works)
    base_image: str | None = None  # --base-image
    dry_run: bool = False  # a dry run may plan what this host cannot build (cibuildwheel's CI runners)


def never_in_image(target: Target) -> bool:
    return False


@dataclass(frozen=True, kw_only=True)
class EngineFactory:
    """An engine by name: why a target cannot be built here with it (pure), and the engine made for a run."""

    name: str
    help: str  # one clause of ``build --engine``'s help
    make: Callable[[EngineSetup], tuple[Engine, str]]  # the engine and why; EngineError when it cannot run here
    unbuildable: Callable[[Target, Host], str | None]
    containers: bool = False  # it may need a container engine: the host's are probed for it
    in_image: Callable[[Target], bool] = never_in_image  # it builds the target in the variant's image
    ci_for: frozenset[OS] = frozenset()  # the release workflow builds these systems' wheels with it
