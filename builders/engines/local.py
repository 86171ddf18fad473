"""The local engine: build on this host with a discovered interpreter and provisioned toolchain."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from builders.base.once import Once
from builders.base.process import Log
from builders.build.host import unbuildable
from builders.build.plan import (
    BuildPlan,
    Context,
    Provision,
    Recipe,
    Resolved,
    RunnerSpec,
    Skipped,
    ToolchainPin,
    assemble,
    pairs,
)
from builders.families import toolchain_for
from builders.spec.targets import Target
from builders.wheel.repair import Tools
from builders.wheel.smoke import HIDDEN_ENV


def host_toolchain(target: Target, ctx: Context) -> ToolchainPin:
    """The variant's toolkit on this host: pinned pip wheels in the cache, or the host's compilers."""
    variant = target.variant
    root = toolchain_for(variant.accelerator).toolkit_root(target, ctx.cache, ctx.host)
    pin = ToolchainPin(accelerator=variant.accelerator.value, version=variant.version, root=root)
    if toolchain_for(variant.accelerator).pins_on_host:
        return replace(pin, pins=variant.toolkit.requirements, index_url=variant.toolkit.index_url,
                       provider="pip install --target (cached per pin)")
    return replace(pin, provider=f"installed at {root}") if root else pin


def host_provision(target: Target, toolchain: ToolchainPin) -> Provision:
    """What :meth:`LocalEngine.provision` makes ready: the pinned toolkit installed where the plan finds it, or
    the compiler the toolchain needs on PATH; nothing for the host's own compiler."""
    if toolchain.pins:
        return Provision(pins=toolchain.pins, index_url=toolchain.index_url, into=toolchain.root)
    return Provision(on_path=toolchain_for(target.variant.accelerator).on_path)


def host_smoke_runner(target: Target) -> RunnerSpec:
    """The host without the project's build variables: an installed wheel must not need them."""
    return RunnerSpec(kind="host", unset=tuple(sorted({*target.project.build_env_names, *HIDDEN_ENV})))


@dataclass
class LocalEngine:
    cache: Path
    env: Mapping[str, str]
    name: str = "local"
    _once: Once = field(default_factory=Once, repr=False)

    def plan(self, target: Target, ctx: Context) -> Resolved:
        reason = unbuildable(target, ctx.host, self.name)
        if reason:
            return Skipped(id=target.id, reason=reason)
        python = str(ctx.host.interpreter(target.python.abi))
        work, toolchain = str(ctx.work(target)), host_toolchain(target, ctx)
        recipe = Recipe(
            engine=self.name, runner=RunnerSpec(kind="host", inherits=ctx.inherits()),
            smoke_runner=host_smoke_runner(target), interpreter=python, smoke_interpreter=python,
            toolchain=toolchain, provision=host_provision(target, toolchain), source=str(ctx.source), work=work, build_cwd=str(ctx.source),
            smoke_scratch=f"{work}/smoke", smoke_inbox="", repair_tools=Tools.of(ctx.tools_python),
            repair_env=pairs({"PATH": ctx.tools_path}))
        return assemble(target, ctx, recipe)

    def provision(self, plan: BuildPlan, log: Log) -> None:
        """The variant's toolchain on this host (pinned toolkits cached under ``cache``), once per root."""
        target = plan.target
        key = f"toolchain:{plan.toolchain.accelerator}:{plan.toolchain.root}"
        self._once(key, lambda: toolchain_for(target.variant.accelerator).provision(target, self.cache, self.env, log))
