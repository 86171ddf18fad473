"""The cibuildwheel engine: the Python x platform loop delegated to cibuildwheel.

cibuildwheel builds and repairs (with builders' one repair command); the pipeline then
labels, verifies and smoke-tests, once each, as for every engine. Options are computed from
the matrix for a group of targets that share a variant and a platform: the build selector,
the variant's image as the manylinux image, the variant's environment and the repair
command. This is the route for macOS and Windows runners in CI and an alternative on Linux;
``build --engine cibw --dry-run`` prints the cibuildwheel command with its options.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..buildplan import BuildPlan, Command, Context, Recipe, Resolved, RunnerSpec, pairs, resolve_with
from ..errors import EngineError
from ..model import OS
from ..process import LogLike
from ..repair import repair_command
from ..targets import Target
from .container import CONTAINER_CA, ContainerEngine, container_env, image_settings
from .local import host_smoke_runner

PLATFORMS = {OS.LINUX: "linux", OS.MACOS: "macos", OS.WINDOWS: "windows"}


def identifier(target: Target) -> str:
    """cibuildwheel's build identifier: ``cp314t-manylinux_x86_64``, ``cp312-macosx_arm64``."""
    plat = target.platform
    suffix = {OS.LINUX: f"manylinux_{plat.arch}", OS.MACOS: f"macosx_{plat.arch}", OS.WINDOWS: "win_amd64"}[plat.os]
    return f"{target.python.abi}-{suffix}"


def cibw_options(targets: Sequence[Target], *, image: str | None, engine: str, env: Mapping[str, str],
                 ca_bundle: Path | None = None) -> dict[str, str]:
    """The ``CIBW_*`` environment for one (variant, platform) group of targets."""
    first = targets[0]
    if any((t.variant, t.platform) != (first.variant, first.platform) for t in targets):
        raise EngineError("a cibuildwheel group must share one variant and one platform")
    plat = first.platform
    settings = {**container_env(first, env), **dict(first.env)}
    options = {"CIBW_BUILD": " ".join(identifier(t) for t in targets), "CIBW_BUILD_FRONTEND": "pip",
               "CIBW_REPAIR_WHEEL_COMMAND": repair_command(first)}
    if plat.os is OS.LINUX:
        options |= {"CIBW_ARCHS_LINUX": plat.arch, f"CIBW_MANYLINUX_{plat.arch.upper()}_IMAGE": image or "",
                    "CIBW_CONTAINER_ENGINE": engine}
        if ca_bundle is not None:
            options["CIBW_CONTAINER_ENGINE"] += f"; create_args: --volume={ca_bundle}:{CONTAINER_CA}:ro"
            settings |= {"PIP_CERT": CONTAINER_CA, "SSL_CERT_FILE": CONTAINER_CA}
    options["CIBW_ENVIRONMENT"] = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(settings.items()))
    return options


@dataclass
class CibwEngine:
    """Runs cibuildwheel on this host; on Linux inside the variant's image (built by the container engine)."""

    container: ContainerEngine
    name: str = "cibw"

    def plan(self, target: Target, ctx: Context) -> Resolved:
        return resolve_with(self.name, target, ctx, lambda: self.recipe(target, ctx))

    def recipe(self, target: Target, ctx: Context) -> Recipe:
        linux = target.platform.os is OS.LINUX
        work = str(ctx.work(target))
        if linux:
            smoke_runner, smoke_python = self.container.smoke_runner(target), self.container.recipe(target, ctx).interpreter
        else:
            smoke_runner, smoke_python = host_smoke_runner(target), str(ctx.host.interpreter(target.python.abi))
        return Recipe(engine=self.name, runner=RunnerSpec(kind="host", inherits=ctx.inherits()),
                      smoke_runner=smoke_runner, interpreter=identifier(target), smoke_interpreter=smoke_python,
                      toolchain=self.container.toolchain(target), source=str(ctx.source), work=work,
                      build_cwd=str(ctx.source), smoke_scratch="/tmp/smoke" if linux else f"{work}/smoke",
                      smoke_inbox="/tmp" if linux else "", build=self.command(target, ctx, work))

    def command(self, target: Target, ctx: Context, work: str) -> Command:
        """cibuildwheel for exactly this target, into ``<work>/raw``."""
        image = self.container.image_spec(target).tag if target.platform.os is OS.LINUX else None
        options = cibw_options([target], image=image, engine=self.container.exe,
                               env=image_settings(target, ctx.epoch), ca_bundle=self.container.ca_bundle)
        argv = (ctx.tools_python, "-m", "cibuildwheel", "--platform", PLATFORMS[target.platform.os],
                "--output-dir", f"{work}/raw", str(ctx.source))
        env = {**options, "PATH": ctx.tools_path, "SOURCE_DATE_EPOCH": str(ctx.epoch)}
        return Command(argv=argv, env=pairs(env), cwd=str(ctx.source), timeout=target.project.timeouts.build)

    def provision(self, plan: BuildPlan, log: LogLike) -> None:
        if plan.target.platform.os is OS.LINUX:
            self.container.image(plan.target, log)
