"""The cibuildwheel engine: the Python x platform loop delegated to cibuildwheel.

cibuildwheel builds and repairs (with builders' one repair command); the pipeline then
labels, verifies and smoke-tests, once each, as for every engine. Options are computed from
the matrix for a group of targets that share a variant and a platform: the build selector,
the architectures, the variant's environment (``MACOSX_DEPLOYMENT_TARGET`` among it) and the
repair command (auditwheel, delocate; none on Windows).

Where it runs is cibuildwheel's own split: natively on macOS and Windows runners (no
container, no image; the toolchain is the host's, as for the local engine), and on Linux
inside the variant's image, which the container engine builds. ``build --engine cibw
--dry-run`` prints the cibuildwheel command with its options; a dry run also plans a
macOS or Windows target on another OS as its CI runner would run it (a real build of it
there is skipped with the reason).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from builders.base.arch import canonical_arch
from builders.base.errors import EngineError
from builders.base.process import Log
from builders.engines.container import (
    CONTAINER_CA,
    ContainerEngine,
    container_env,
    described,
    image_settings,
    unbuildable_in_image,
    working_engine,
)
from builders.engines.factory import EngineFactory, EngineSetup
from builders.engines.images import Dialect
from builders.engines.local import (
    HostSpec,
    LocalEngine,
    host_provision,
    host_smoke_runner,
    host_toolchain,
    private_copy,
)
from builders.matrix.model import OS, PythonVersion
from builders.matrix.targets import Target
from builders.pipeline.host import Host
from builders.pipeline.plan import (
    BuildPlan,
    Command,
    Context,
    Provision,
    Recipe,
    Resolved,
    assemble,
    pairs,
    resolve_with,
    settings,
)
from builders.wheel.repair import repair_command

PLATFORMS = {OS.LINUX: "linux", OS.MACOS: "macos", OS.WINDOWS: "windows"}
ARCHS = {OS.LINUX: "CIBW_ARCHS_LINUX", OS.MACOS: "CIBW_ARCHS_MACOS", OS.WINDOWS: "CIBW_ARCHS_WINDOWS"}
# On a CI runner builders runs in nox's session venv, whose interpreter is the PATH's ``python``.
RUNNER_TOOLS_PYTHON = "python"


def identifier(target: Target) -> str:
    """cibuildwheel's build identifier: ``cp314t-manylinux_x86_64``, ``cp312-macosx_arm64``, ``cp313-win_amd64``."""
    plat = target.platform
    suffix = {OS.LINUX: f"manylinux_{plat.arch}", OS.MACOS: f"macosx_{plat.arch}",
              OS.WINDOWS: f"win_{plat.arch.lower()}"}[plat.os]
    return f"{target.python.abi}-{suffix}"


def runner_python(python: PythonVersion) -> str:
    """The interpreter a CI runner offers for ``python``, by the name builders looks for (``python3.14t``)."""
    return f"python{python.release}{'t' if python.free_threaded else ''}"


def cibw_options(targets: Sequence[Target], *, image: str | None, engine: str = "", env: Mapping[str, str],
                 ca_bundle: Path | None = None) -> dict[str, str]:
    """The ``CIBW_*`` environment for one (variant, platform) group of targets.

    The architectures are the matrix's spelling, which is cibuildwheel's (``x86_64``, ``arm64``,
    ``AMD64``); the image, the container engine and the CA bundle concern Linux only.
    """
    first = targets[0]
    if any((t.variant, t.platform) != (first.variant, first.platform) for t in targets):
        raise EngineError("a cibuildwheel group must share one variant and one platform")
    plat = first.platform
    settings = {**container_env(first, env), **dict(first.env)}
    options = {"CIBW_BUILD": " ".join(identifier(t) for t in targets), "CIBW_BUILD_FRONTEND": "pip",
               ARCHS[plat.os]: plat.arch, "CIBW_REPAIR_WHEEL_COMMAND": repair_command(first)}
    if plat.os is OS.LINUX:
        options |= {f"CIBW_MANYLINUX_{plat.arch.upper()}_IMAGE": image or "", "CIBW_CONTAINER_ENGINE": engine}
        # cibuildwheel's container installs build requirements: docker's only way out may be the host's network.
        create = [f"--volume={ca_bundle}:{CONTAINER_CA}:ro"] if ca_bundle is not None else []
        create += ["--network=host"] if Dialect(exe=engine).docker else []
        if create:
            options["CIBW_CONTAINER_ENGINE"] += f"; create_args: {' '.join(create)}"
        if ca_bundle is not None:
            settings |= {"PIP_CERT": CONTAINER_CA, "SSL_CERT_FILE": CONTAINER_CA}
    options["CIBW_ENVIRONMENT"] = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(settings.items()))
    return options


@dataclass
class CibwEngine:
    """cibuildwheel on this host: natively for macOS and Windows targets, in the variant's image for Linux ones.

    ``container`` builds the Linux images (None when no Linux target is built here), ``local``
    provisions a native build's toolchain, and ``foreign`` (a dry run) plans a macOS or Windows
    target of another OS as its CI runner would run it.
    """

    container: ContainerEngine | None = None
    local: LocalEngine | None = None
    foreign: bool = False
    name: str = "cibw"

    def plan(self, target: Target, ctx: Context) -> Resolved:
        if self.foreign and target.platform.os not in (OS.LINUX, ctx.host.os):
            return assemble(target, ctx, self.runner_recipe(target, ctx))
        return resolve_with(unbuildable_in_image, target, ctx, lambda: self.recipe(target, ctx))

    def recipe(self, target: Target, ctx: Context) -> Recipe:
        if target.platform.os is OS.LINUX:
            return self.linux_recipe(target, ctx)
        return self.native_recipe(target, ctx, str(ctx.host.interpreter(target.python.abi)), here=True)

    def runner_recipe(self, target: Target, ctx: Context) -> Recipe:
        """``target`` as its CI runner builds it: the runner's interpreter and toolchain, nothing of this host."""
        runner = Host(os=target.platform.os, arch=canonical_arch(target.platform.arch))
        return self.native_recipe(target, replace(ctx, host=runner), runner_python(target.python), here=False)

    def native_recipe(self, target: Target, ctx: Context, python: str, *, here: bool) -> Recipe:
        """cibuildwheel on the host itself (macOS, Windows): no container, no image; smoke in a venv there."""
        work, toolchain = str(ctx.work(target)), host_toolchain(target, ctx)
        build = self.command(target, ctx, work, settings(target, toolchain.root, ctx.epoch), here=here)
        keep = ctx.host_passed() if here else ()  # a clean build environment on this host (cibuildwheel builds here)
        return Recipe(engine=self.name, runner=HostSpec(inherits=ctx.inherits() if here else (), keep=keep if here else None),
                      host_vars=keep,
                      smoke_runner=host_smoke_runner(target), interpreter=identifier(target), smoke_interpreter=python,
                      toolchain=toolchain, source=f"{work}/src", work=work, build_cwd=f"{work}/src",
                      prepare=(self.copy(ctx, work, here=here),),
                      smoke_scratch=f"{work}/smoke", smoke_inbox="", build=build,
                      provision=host_provision(target, toolchain, ctx.cache))

    def linux_recipe(self, target: Target, ctx: Context) -> Recipe:
        """cibuildwheel on this host, its builds in the variant's image; smoke in a fresh container of it."""
        container, work = self._container(), str(ctx.work(target))
        return Recipe(engine=self.name, runner=HostSpec(inherits=ctx.inherits()),
                      smoke_runner=container.smoke_runner(target),
                      interpreter=identifier(target), smoke_interpreter=container.recipe(target, ctx).interpreter,
                      toolchain=container.toolchain(target), source=f"{work}/src", work=work,
                      build_cwd=f"{work}/src", smoke_scratch="/tmp/smoke", smoke_inbox="/tmp",
                      prepare=(self.copy(ctx, work, here=True),),
                      build=self.command(target, ctx, work, image_settings(target, ctx.epoch), here=True),
                      provision=Provision(image=container.image_spec(target).tag))

    def command(self, target: Target, ctx: Context, work: str, variables: Mapping[str, str], *, here: bool) -> Command:
        """cibuildwheel for exactly this target, into ``<work>/raw`` (``here``: on this host, else on the runner)."""
        linux = target.platform.os is OS.LINUX
        container = self._container() if linux else None
        options = cibw_options([target], image=container.image_spec(target).tag if container else None,
                               engine=container.exe if container else "", env=variables,
                               ca_bundle=container.ca_bundle if container else None)
        python = ctx.tools_python if here else RUNNER_TOOLS_PYTHON
        argv = (python, "-m", "cibuildwheel", "--platform", PLATFORMS[target.platform.os],
                "--output-dir", f"{work}/raw", f"{work}/src")
        env = {**options, "SOURCE_DATE_EPOCH": str(ctx.epoch), **({"PATH": ctx.tools_path} if here else {})}
        return Command(argv=argv, env=pairs(env), cwd=f"{work}/src", timeout=target.project.timeouts.limit("build", target.variant)[0])

    @staticmethod
    def copy(ctx: Context, work: str, *, here: bool) -> Command:
        """cibuildwheel gets the target's own copy of the source (:mod:`builders.pipeline.private_source`)."""
        return private_copy(ctx.tools_python if here else RUNNER_TOOLS_PYTHON, ctx, f"{work}/src")

    def provision(self, plan: BuildPlan, log: Log) -> None:
        """The Linux image (built once), or a native build's toolchain on this host."""
        if plan.target.platform.os is OS.LINUX:
            self._container().image(plan.target, log)
        elif self.local is None:
            raise EngineError(f"{plan.id}: the cibw engine was given no way to provision this host's toolchain")
        else:
            self.local.provision(plan, log)

    def _container(self) -> ContainerEngine:
        if self.container is None:
            raise EngineError("cibuildwheel builds Linux targets in the variant's image, and no container engine "
                              "was given (podman or docker)")
        return self.container


def make(setup: EngineSetup) -> tuple[CibwEngine, str]:
    """cibuildwheel: natively for macOS and Windows targets; in the variant's image for Linux targets, which
    needs a working container engine when this Linux host could build them."""
    host, targets = setup.host, setup.targets
    plats = {t.platform.os for t in targets}
    notes = [f"natively for {' and '.join(sorted(o.value for o in plats - {OS.LINUX}))}"] if plats - {OS.LINUX} else []
    container = None
    if host.os is OS.LINUX and any(t.platform.name == host.platform for t in targets):
        container = working_engine(setup, "--engine cibw builds Linux targets in the variant's image with a "
                                          "container engine, and none works here")
        notes.insert(0, f"Linux in the variant's image with {described(container)}")
    foreign = sorted({f"{t.platform.name} on {t.platform.runner}" for t in targets
                      if t.platform.os not in (OS.LINUX, host.os)})
    if setup.dry_run and foreign:
        notes.append(f"planned as the CI runner would run it: {', '.join(foreign)}")
    why = "; ".join(notes) or f"no target of {host.platform}"
    local = LocalEngine(cache=setup.cache, env=setup.env)
    return CibwEngine(container=container, local=local, foreign=setup.dry_run), f"cibuildwheel: {why}"


def in_image(target: Target) -> bool:
    """Linux targets build in the variant's image; macOS and Windows ones natively."""
    return target.platform.os is OS.LINUX


FACTORY = EngineFactory(
    name="cibw", make=make, unbuildable=unbuildable_in_image, containers=True, in_image=in_image,
    ci_for=frozenset({OS.MACOS, OS.WINDOWS}),
    help="cibuildwheel: native on macOS and Windows, the variant's image on Linux (a dry run plans them as CI "
         "would)")
