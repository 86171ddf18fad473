"""A new engine in one module, registered with builders' engine registry from here: no edit anywhere else.

The ``dummy`` engine builds on this host, as the local engine plans it, but through a runner
spec of its own kind (``marked``): the host's environment with :data:`MARKER` set, and every
command it runs written to the target's log as ``# dummy runner: ...`` first, so a test can see
that the pipeline's stages ran through it. Importing this module registers it.
"""

from __future__ import annotations

import contextlib
import shlex
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from builders import engines
from builders.base.process import Completed, HostRunner, Log
from builders.base.runnerspec import Pairs
from builders.engines.factory import EngineFactory, EngineSetup
from builders.engines.local import LocalEngine, host_smoke_runner
from builders.matrix.targets import Target
from builders.pipeline.host import unbuildable
from builders.pipeline.plan import BuildPlan, Context, Recipe, Resolved, resolve_with

NAME = "dummy"
MARKER = "BUILDERS_DUMMY_ENGINE"
SAID = "# dummy runner: "


@dataclass(frozen=True)
class MarkedRunner:
    """This host's runner, saying each command in the log before it runs it."""

    host: HostRunner
    log: Log

    def __call__(self, argv: Sequence[str], *, cwd: str | None = None, separate_stderr: bool = False,
                 timeout: float | None = 1800) -> Completed:
        return self.run(argv, env={}, cwd=cwd, separate_stderr=separate_stderr, timeout=timeout)

    def run(self, argv: Sequence[str], *, env: Mapping[str, str], cwd: str | None = None,
            separate_stderr: bool = False, timeout: float | None = None) -> Completed:
        self.log.write(f"{SAID}{shlex.join(argv)}\n")
        return self.host.run(argv, env=env, cwd=cwd, separate_stderr=separate_stderr, timeout=timeout)

    def copy_in(self, source: Path, dest: str) -> None:
        self.log.write(f"{SAID}copy {source} to {dest}\n")
        self.host.copy_in(source, dest)


@dataclass(frozen=True, kw_only=True)
class MarkedSpec:
    """This host, marked: its environment less ``unset``, plus ``MARKER=1``."""

    unset: tuple[str, ...] = ()
    inherits: Pairs = ()

    kind = "marked"
    on_host = True

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "marker": MARKER, "unset": list(self.unset), "inherits": dict(self.inherits)}

    def key(self) -> dict[str, Any]:
        return {"kind": self.kind, "inherits": dict(self.inherits)}

    def describe(self) -> str:
        return f"host, marked {MARKER}"

    def where(self, path: str) -> str:
        return f"at {path} (on the marked host)"

    def sees(self, folder: Path) -> str | None:
        return str(folder)

    @contextlib.contextmanager
    def open(self, host_env: Mapping[str, str], log: Log) -> Iterator[MarkedRunner]:
        env = {k: v for k, v in host_env.items() if k not in self.unset}
        yield MarkedRunner(HostRunner({**env, MARKER: "1"}, log), log)


@dataclass
class DummyEngine:
    """The local engine's recipe, run through :class:`MarkedSpec` runners."""

    local: LocalEngine
    name: str = NAME

    def plan(self, target: Target, ctx: Context) -> Resolved:
        return resolve_with(unbuildable, target, ctx, lambda: self.recipe(target, ctx))

    def recipe(self, target: Target, ctx: Context) -> Recipe:
        return replace(self.local.recipe(target, ctx), engine=self.name, runner=MarkedSpec(inherits=ctx.inherits()),
                       smoke_runner=MarkedSpec(unset=host_smoke_runner(target).unset))

    def provision(self, plan: BuildPlan, log: Log) -> None:
        log.write(f"{SAID}provision {plan.id}\n")
        self.local.provision(plan, log)


def make(setup: EngineSetup) -> tuple[DummyEngine, str]:
    return DummyEngine(local=LocalEngine(cache=setup.cache, env=setup.env)), "asked for (a test's engine)"


FACTORY = engines.register(EngineFactory(name=NAME, help="a test's engine: this host, marked", make=make,
                                         unbuildable=unbuildable))
