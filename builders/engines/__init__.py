"""Build engines: where a target's commands run (this host, a container, cibuildwheel).

An engine is a recipe (how a target's build looks on it: runners, interpreter, toolchain,
paths; pure), provisioning (toolchains or images, each made once per run behind a lock) and
a :class:`~builders.base.process.Runner` per plan (:func:`open_runner`). Build, label, repair,
verify and smoke are written once, in :mod:`builders.build.pipeline`, against the runner.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator, Mapping
from typing import Protocol, TypeVar

from builders.base.process import HostRunner, Log, Runner
from builders.build.plan import BuildPlan, Context, Resolved, RunnerSpec
from builders.spec.targets import Target

T = TypeVar("T")


class Engine(Protocol):
    name: str

    def plan(self, target: Target, ctx: Context) -> Resolved:
        """The target's build plan with this engine (pure), or why it cannot be built here."""
        ...

    def provision(self, plan: BuildPlan, log: Log) -> None:
        """Make what the plan needs (toolkit, image, offline wheelhouse), each once per run."""
        ...


def missing_container_engine(env: Mapping[str, str], preferred: str | None = None) -> str:
    """Why no container engine works here, engine by engine: not on PATH, or found but not answering
    (``find_engine`` counts one only when ``ENGINE info`` succeeds)."""
    from builders.build.host import CONTAINER_ENGINES

    parts = []
    for name in [preferred] if preferred else CONTAINER_ENGINES:
        exe = shutil.which(name, path=env.get("PATH"))
        parts.append(f"{name}: not found on PATH" if exe is None else
                     f"{name}: {exe} is there, but `{name} info` fails (is its service running, may this user use it?)")
    return "no working container engine (" + "; ".join(parts) + ")"


@contextlib.contextmanager
def open_runner(spec: RunnerSpec, host_env: Mapping[str, str], log: Log) -> Iterator[Runner]:
    """A runner for ``spec``: this host, or a fresh container removed on exit (always)."""
    if spec.kind == "host":
        env = {k: v for k, v in host_env.items() if k not in spec.unset}
        yield HostRunner({**env, **dict(spec.env)}, log)
        return
    from builders.engines.container import Container

    with Container(spec, host_env=host_env, log=log) as container:
        yield container
