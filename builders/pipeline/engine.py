"""What the build pipeline asks of an engine: :class:`Engine`.

An engine turns a target into a plan (pure) and makes ready what the plan needs; the plan's
runner specs (:class:`~builders.base.runnerspec.RunnerSpec`) open the runners the pipeline's
stages run in. The protocol is its consumer's, :mod:`builders.pipeline.executor`, and stays with
it, below its implementers: the engines in :mod:`builders.engines` import the plans of this package
to make theirs. How an engine is named and made for a run is the engines' own
(:mod:`builders.engines.factory`).
"""

from __future__ import annotations

from typing import Protocol

from builders.base.process import Log
from builders.matrix.targets import Target
from builders.pipeline.plan import BuildPlan, Context, Resolved


class Engine(Protocol):
    name: str

    def plan(self, target: Target, ctx: Context) -> Resolved:
        """The target's build plan with this engine (pure), or why it cannot be built here."""
        ...

    def provision(self, plan: BuildPlan, log: Log) -> None:
        """Make what the plan needs (toolkit, image, offline wheelhouse), each once per run."""
        ...
