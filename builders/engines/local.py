"""The local engine: build on this host with a discovered interpreter and provisioned toolchain; its runner
spec, :class:`HostSpec`, is this host (the cibw engine's too)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from builders.base.once import Once
from builders.base.process import HostRunner, Log, Runner
from builders.base.runnerspec import Pairs
from builders.engines.factory import EngineFactory, EngineSetup
from builders.families import installer, toolchain_for
from builders.matrix.targets import Target
from builders.pipeline.host import unbuildable
from builders.pipeline.plan import (
    BuildPlan,
    Command,
    Context,
    Provision,
    Recipe,
    Resolved,
    ToolchainPin,
    pairs,
    resolve_with,
)
from builders.pipeline.private_source import copy_command
from builders.wheel.repair import Tools
from builders.wheel.smoke import HIDDEN_ENV


@dataclass(frozen=True, kw_only=True)
class HostSpec:
    """Commands on this host: its environment (only ``keep`` of it, where given) less ``unset``, plus ``env`` (a
    :class:`~builders.base.runnerspec.RunnerSpec`)."""

    env: Pairs = ()  # set on top of the host's environment
    unset: tuple[str, ...] = ()  # variables taken out of the host's environment
    inherits: Pairs = ()  # the build-relevant variables it inherits (plan.BUILD_INPUT_VARS): part of the digest
    keep: tuple[str, ...] | None = None  # the host variables kept (Context.host_passed); None: all of them

    kind = "host"
    on_host = True

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "env": dict(self.env), "unset": list(self.unset), "inherits": dict(self.inherits),
                "keep": None if self.keep is None else list(self.keep)}

    def key(self) -> dict[str, Any]:
        return {"kind": self.kind, "image": "", "inherits": dict(self.inherits)}

    def describe(self) -> str:
        return "host"

    def where(self, path: str) -> str:
        return f"at {path}"

    def sees(self, folder: Path) -> str | None:
        return str(folder)

    @contextlib.contextmanager
    def open(self, host_env: Mapping[str, str], log: Log) -> Iterator[Runner]:
        yield HostRunner({**kept(host_env, self.keep, self.unset), **dict(self.env)}, log)


def kept(host_env: Mapping[str, str], keep: tuple[str, ...] | None, unset: tuple[str, ...]) -> dict[str, str]:
    """The part of this host's environment a runner starts from: ``keep`` of it (None: all), less ``unset``."""
    return {k: v for k, v in host_env.items() if k not in unset and (keep is None or k in keep)}


def host_toolchain(target: Target, ctx: Context) -> ToolchainPin:
    """The variant's toolkit on this host: pinned pip wheels in the cache, or the host's compilers."""
    variant = target.variant
    root = toolchain_for(variant.accelerator).toolkit_root(target, ctx.cache, ctx.host)
    pin = ToolchainPin(accelerator=variant.accelerator.value, version=variant.version, root=root)
    if toolchain_for(variant.accelerator).pins_on_host:
        return replace(pin, pins=variant.toolkit.requirements, index_url=variant.toolkit.index_url,
                       provider="pip install --target (cached per pin)")
    return replace(pin, provider=f"installed at {root}") if root else pin


def host_provision(target: Target, toolchain: ToolchainPin, cache: Path) -> Provision:
    """The pinned toolkit where the plan finds it, the vendor's installer (Windows), or a compiler on PATH."""
    if (found := installer.windows_installer(target)) is not None:
        return Provision(installer=installer.lines(found, str(installer.folder(target, cache))))
    if toolchain.pins:
        return Provision(pins=toolchain.pins, index_url=toolchain.index_url, into=toolchain.root)
    return Provision(on_path=toolchain_for(target.variant.accelerator).on_path)


def private_copy(python: str, ctx: Context, dest: str) -> Command:
    """The source less what the run left out of it (its VCS's ignored files, the output folder where it lies
    inside); the output folder is never copied, whatever the list says, since it may lie inside the tree."""
    return copy_command(python, str(ctx.source), dest, skip=(*ctx.source_excluded, str(ctx.output)))


def host_smoke_runner(target: Target) -> HostSpec:
    """The host without the project's build variables: an installed wheel must not need them."""
    return HostSpec(unset=tuple(sorted({*target.project.build_env_names, *HIDDEN_ENV})))


@dataclass
class LocalEngine:
    cache: Path
    env: Mapping[str, str]
    name: str = "local"
    _once: Once = field(default_factory=Once, repr=False)

    def plan(self, target: Target, ctx: Context) -> Resolved:
        return resolve_with(unbuildable, target, ctx, lambda: self.recipe(target, ctx))

    def recipe(self, target: Target, ctx: Context) -> Recipe:
        python = str(ctx.host.interpreter(target.python.abi))
        work, toolchain = str(ctx.work(target)), host_toolchain(target, ctx)
        source = f"{work}/src"  # the target's own copy: no build reuses another's objects
        keep = ctx.host_passed()  # a clean build environment: host variables reach the build only by name
        return Recipe(
            engine=self.name, runner=HostSpec(inherits=ctx.inherits(), keep=keep), host_vars=keep,
            smoke_runner=host_smoke_runner(target), interpreter=python, smoke_interpreter=python,
            toolchain=toolchain, provision=host_provision(target, toolchain, ctx.cache), source=source, work=work,
            prepare=(private_copy(ctx.tools_python, ctx, source),),
            build_cwd=source, smoke_scratch=f"{work}/smoke", smoke_inbox="",
            repair_tools=Tools.of(ctx.tools_python), repair_env=pairs({"PATH": ctx.tools_path}),
            smoke_interpreters=tuple((str(p), str(ctx.host.interpreter(p.abi) or "")) for p in target.tested_pythons))

    def provision(self, plan: BuildPlan, log: Log) -> None:
        """The variant's toolchain on this host (pinned toolkits cached under ``cache``), once per root."""
        target = plan.target
        key = f"toolchain:{plan.toolchain.accelerator}:{plan.toolchain.root}"
        self._once(key, lambda: toolchain_for(target.variant.accelerator).provision(target, self.cache, self.env, log))


def make(setup: EngineSetup) -> tuple[LocalEngine, str]:
    return LocalEngine(cache=setup.cache, env=setup.env), "asked for"


FACTORY = EngineFactory(name="local", help="this host", make=make, unbuildable=unbuildable)
