"""The container engine: the same build recipe inside a docker/podman image of the variant.

The build runs with networking off: the source is mounted read-only, the build
requirements are resolved on the host into a wheelhouse mounted read-only, and the
target's work folder is the only writable mount. Repair runs in the same container with the
image's auditwheel; the smoke test runs in a fresh container of the same image (with
network, for the runtime requirements), the wheel and the probe copied in. Containers are
always removed, also on failure or interrupt. Podman and docker differ only where
:class:`builders.engines.images.Dialect` says (network, removal, the image build's environment).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import tomllib
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from builders.base.errors import EngineError, NotBuildableHere
from builders.base.once import Once
from builders.base.process import Completed, Log, LogLike, run
from builders.base.runnerspec import Pairs
from builders.engines import images
from builders.engines.factory import EngineFactory, EngineSetup
from builders.families import family_for
from builders.families.provision import pip_download
from builders.matrix.compile_cache import Backend
from builders.matrix.model import OS
from builders.matrix.targets import Target
from builders.pipeline.host import Host, find_engine, foreign, missing_container_engine, unbuildable
from builders.pipeline.interpreters import image_interpreter
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
    settings,
)
from builders.pipeline.private_source import copy_command
from builders.pipeline.remotecache import AT_RUN, CONTAINER_SCCACHE
from builders.wheel.repair import Tools
from builders.wheel.smoke import UV_CACHE_MOUNT

__all__ = ["Container", "ContainerEngine", "ContainerSpec", "NotBuildableHere", "container_env", "find_engine",
           "reap_stale"]

CONTAINER_CA = "/run/builders/ca.crt"
OWNER_LABEL = "builders.owner-pid"
MAX_LIFETIME = 4 * 3600  # seconds; longer than any build's timeout
INBOX = "/tmp"  # where the smoke container receives the wheel and the probe
# CMake (>= 3.17) reads the launcher from the environment; every builders image has ccache
# (a pass-through stand-in where the base has no package; builders/resources/containers/install-build-deps.sh).
CCACHE_ENV = {"CCACHE_DIR": "/ccache", "CCACHE_BASEDIR": "/tmp/src", "CMAKE_C_COMPILER_LAUNCHER": "ccache",
              "CMAKE_CXX_COMPILER_LAUNCHER": "ccache"}
IMAGE_PYTHON = "python3"  # on PATH in every builders and manylinux image; the same for every target's copy
OFFLINE_PIP = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": "/wheels"}
BASE_ENV = {"HOME": "/tmp", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


@dataclass(frozen=True, kw_only=True)
class Mount:
    """A host folder seen inside the container (``--volume``), read-only unless ``writable``."""

    source: str
    target: str
    writable: bool = False

    def argv(self) -> list[str]:
        return ["--volume", f"{self.source}:{self.target}:{'rw' if self.writable else 'ro'}"]


@dataclass(frozen=True, kw_only=True)
class ContainerSpec:
    """A fresh container of ``image`` run with ``engine`` (podman, docker), its mounts, its whole environment
    ``env`` and network or none (a :class:`~builders.base.runnerspec.RunnerSpec`)."""

    image: str
    engine: str
    base: str = ""  # the image's base, for messages
    mounts: tuple[Mount, ...] = ()
    network: bool = False
    env: Pairs = ()
    host_network: bool = False  # the host's network (a shared compiler cache on the host's loopback or beyond)
    passed: tuple[str, ...] = ()  # host variables given to each command by name at run time (never in a plan)

    kind = "container"
    on_host = False

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "image": self.image, "base": self.base, "engine": self.engine,
                "network": self.network,
                "mounts": [f"{m.source}:{m.target}:{'rw' if m.writable else 'ro'}" for m in self.mounts],
                "env": dict(self.env), "unset": [], "inherits": {}}

    def key(self) -> dict[str, Any]:
        return {"kind": self.kind, "image": self.image, "inherits": {}}

    def describe(self) -> str:
        return f"{self.engine} {self.image}"

    def where(self, path: str) -> str:
        return f"in image {self.image} (base {self.base})"

    def sees(self, folder: Path) -> str | None:
        return next((m.target for m in self.mounts if m.source == str(folder)), None)

    def open(self, host_env: Mapping[str, str], log: Log) -> Container:
        return Container(self, host_env=host_env, log=log)


class Container:
    """A running container of ``spec``: a :class:`~builders.base.process.Runner`; removed on exit, always."""

    def __init__(self, spec: ContainerSpec, *, host_env: Mapping[str, str], log: LogLike) -> None:
        self.spec, self.host_env, self.log = spec, host_env, log
        self.image = spec.image
        self.name = f"builders-{uuid.uuid4().hex[:12]}"

    def __enter__(self) -> Container:
        # --rm and a bounded sleep: even if this process is SIGKILLed the container ends by
        # itself, and the next run reaps it earlier (reap_stale) by its owner label.
        argv = [self.spec.engine, "run", "--rm", "--detach", "--name", self.name, "--label",
                f"{OWNER_LABEL}={os.getpid()}", *self.network()]
        for mount in self.spec.mounts:
            argv += mount.argv()
        try:
            run([*argv, "--entrypoint", "sleep", self.image, str(MAX_LIFETIME)], env=self.host_env, log=self.log,
                timeout=300)
        except BaseException:
            self._remove()
            raise
        return self

    def network(self) -> list[str]:
        if self.spec.host_network:
            return ["--network", "host"]
        return images.Dialect(exe=self.spec.engine).network(self.spec.network)

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._remove()

    def _remove(self) -> None:
        run(images.Dialect(exe=self.spec.engine).remove(self.name), env=self.host_env, log=self.log, check=False,
            timeout=120, cancellable=False)

    def __call__(self, argv: Sequence[str], *, cwd: str | None = None, separate_stderr: bool = False,
                 timeout: float | None = 1800) -> Completed:
        return self.run(argv, env={}, cwd=cwd, separate_stderr=separate_stderr, timeout=timeout)

    def run(self, argv: Sequence[str], *, env: Mapping[str, str], cwd: str | None = None,
            separate_stderr: bool = False, timeout: float | None = None) -> Completed:
        """``argv`` inside the container with its environment plus ``env`` (shown in the log)."""
        cmd = [self.spec.engine, "exec"]
        for key, value in sorted({**dict(self.spec.env), **env}.items()):
            cmd += ["--env", f"{key}={value}"]
        cmd += [arg for name in self.spec.passed if name in self.host_env for arg in ("--env", name)]
        if cwd:
            cmd += ["--workdir", cwd]
        return run([*cmd, self.name, *argv], env=self.host_env, log=self.log, separate_stderr=separate_stderr,
                   timeout=timeout, shown_env=env or None)

    def copy_in(self, source: Path, dest: str) -> None:
        run([self.spec.engine, "cp", str(source), f"{self.name}:{dest}"], env=self.host_env, log=self.log)


@dataclass
class ContainerEngine:
    """Builds in the variant's image with ``exe`` (podman or docker)."""

    exe: str
    pythons: tuple[str, ...]
    cache: Path
    host_env: Mapping[str, str]
    base_image: str | None = None
    name: str = "container"
    _once: Once = field(default_factory=Once, repr=False)
    _specs: dict[Target, images.ImageSpec] = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def ca_bundle(self) -> Path | None:
        return images.host_ca_bundle(self.host_env)

    def image_spec(self, target: Target) -> images.ImageSpec:
        """The target's image, computed once per engine: its tag hashes the Containerfile and its scripts."""
        spec = self._specs.get(target)
        if spec is None:
            spec = self._specs[target] = images.image_spec(target, self.pythons, self.host_env, self.base_image)
        return spec

    def plan(self, target: Target, ctx: Context) -> Resolved:
        return resolve_with(unbuildable_in_image, target, ctx, lambda: self.recipe(target, ctx))

    def recipe(self, target: Target, ctx: Context) -> Recipe:
        work = ctx.work(target)
        python = image_interpreter(target.python)
        mounts = (Mount(source=str(ctx.source), target="/src"), Mount(source=str(work), target="/work", writable=True),
                  Mount(source=str(self.build_requirements(ctx.source)), target="/wheels"),
                  Mount(source=str(self.compiler_cache(target)), target="/ccache", writable=True))
        return Recipe(engine=self.name, runner=shared_cache(self.runner(target, mounts, network=False), ctx),
                      smoke_runner=self.smoke_runner(target), interpreter=python, smoke_interpreter=python,
                      toolchain=self.toolchain(target), source="/tmp/src", work="/work", build_cwd="/tmp",
                      prepare=(self.copy_source(ctx),),
                      smoke_scratch="/tmp/smoke", smoke_inbox=INBOX, build_env=pairs({**OFFLINE_PIP, **CCACHE_ENV}),
                      repair_tools=Tools(), provision=self.provisions(target, ctx.source),
                      smoke_interpreters=tuple((str(p), image_interpreter(p)) for p in target.tested_pythons))

    @staticmethod
    def copy_source(ctx: Context) -> Command:
        """The source is mounted read-only; the build gets a copy of its own, less build outputs (the private
        copy, :mod:`builders.pipeline.private_source`): less what the run left out of the source, as paths relative
        to it, and less the output folder where it lies inside."""
        output = os.path.relpath(ctx.output, ctx.source)
        skip = () if output.startswith("..") else (output,)
        return copy_command(IMAGE_PYTHON, "/src", "/tmp/src", skip=tuple(sorted({*ctx.source_excluded, *skip})))

    def provisions(self, target: Target, source: Path) -> Provision:
        """What :meth:`provision` makes ready: the image, the offline wheelhouse, the compiler cache."""
        return Provision(image=self.image_spec(target).tag, wheelhouse=str(self.build_requirements(source)),
                         folders=(str(self.compiler_cache(target)),))

    def runner(self, target: Target, mounts: tuple[Mount, ...], *, network: bool,
               env: Mapping[str, str] = BASE_ENV) -> ContainerSpec:
        spec = self.image_spec(target)
        return ContainerSpec(image=spec.tag, engine=self.exe, mounts=mounts, base=spec.base, network=network,
                             env=pairs(env))

    def smoke_runner(self, target: Target) -> ContainerSpec:
        """A fresh container of the image, with network: pip gets the host's index and CA bundle, nothing else."""
        env = dict(BASE_ENV)
        # uv's cache, kept across smoke containers: the runtime wheels are downloaded once.
        mounts: tuple[Mount, ...] = (Mount(source=str(self.cache.parent / "uv"), target=UV_CACHE_MOUNT, writable=True),)
        if self.ca_bundle is not None:
            env |= {"PIP_CERT": CONTAINER_CA, "SSL_CERT_FILE": CONTAINER_CA}
            mounts += (Mount(source=str(self.ca_bundle), target=CONTAINER_CA),)
        if self.host_env.get("PIP_INDEX_URL"):
            env["PIP_INDEX_URL"] = self.host_env["PIP_INDEX_URL"]
        return self.runner(target, mounts, network=True, env=env)

    def toolchain(self, target: Target) -> ToolchainPin:
        """The image is the toolchain: its tag covers the pins; the toolkit root is inside it."""
        variant = target.variant
        root = family_for(variant.accelerator).image_toolkit_root(variant.toolkit)
        return ToolchainPin(accelerator=variant.accelerator.value, version=variant.version,
                            pins=variant.toolkit.requirements, index_url=variant.toolkit.index_url, root=root,
                            provider=f"image {self.image_spec(target).tag}")

    def provision(self, plan: BuildPlan, log: LogLike) -> None:
        """The image (built if no image has its tag), the offline wheelhouse and the compiler cache, once each."""
        self.image(plan.target, log)
        source, timeout = Path(plan.source), plan.target.project.timeouts.provision
        self._once(f"wheels:{source}", lambda: self.download_requirements(source, log, timeout))
        self.compiler_cache(plan.target).mkdir(parents=True, exist_ok=True)

    def image(self, target: Target, log: LogLike) -> str:
        """The target's image tag, built first if no image has that tag (checked once per run)."""
        spec, timeout = self.image_spec(target), target.project.timeouts.provision
        self._once(f"image:{spec.tag}", lambda: images.ensure(self.exe, spec, self.host_env, log, self.ca_bundle,
                                                               timeout=timeout))
        return spec.tag

    def compiler_cache(self, target: Target) -> Path:
        """A ccache folder per image: same compilers, same cache; kept across runs."""
        return self.cache.parent / "ccache" / self.image_spec(target).tag.rsplit(":", 1)[-1]

    def build_requirements(self, source: Path) -> Path:
        """Where the source's build requirements are downloaded as wheels (the build is offline)."""
        return self.cache / f"build-requirements-{_key(_requirements(source))}"

    def download_requirements(self, source: Path, log: LogLike, timeout: float = 3600) -> Path:
        wanted = _requirements(source)
        return pip_download(f"build-requirements-{_key(wanted)}", wanted, self.cache, self.host_env, log,
                            timeout=timeout)


def _requirements(source: Path) -> list[str]:
    try:
        system = tomllib.loads((source / "pyproject.toml").read_text()).get("build-system", {})
    except (OSError, tomllib.TOMLDecodeError):
        system = {}
    requires = system.get("requires", ["setuptools>=40.8.0"])  # pip's default for a project without one
    return [*requires, "cmake>=3.24", "ninja>=1.10"]  # the last two only where the image's are too old


def shared_cache(spec: ContainerSpec, ctx: Context) -> ContainerSpec:
    """The build's container as the run's shared compiler cache needs it: the host's network, the store's
    credentials passed by name, the host's sccache mounted read-only (none of it part of the runner's key)."""
    remote = ctx.compile_cache
    if remote is None or not remote.active:
        return spec
    mounts = spec.mounts
    if remote.backend is Backend.SCCACHE and remote.sccache:
        mounts += (Mount(source=str(Path(remote.sccache).resolve()), target=CONTAINER_SCCACHE),)
    return dataclasses.replace(spec, mounts=mounts, host_network=True, passed=AT_RUN)


def _key(requirements: list[str]) -> str:
    return hashlib.sha256("\n".join(requirements).encode()).hexdigest()[:12]


def container_env(target: Target, env: Mapping[str, str]) -> dict[str, str]:
    """Only the target's declared settings (and ``build.environment_pass``) cross into the container, never
    the rest of the host's environment."""
    names = (set(dict(target.env)) | {var for _, var in target.project.build_env} | {"SOURCE_DATE_EPOCH"}
             | set(target.project.environment_pass))
    return {k: v for k, v in env.items() if k in names}


def image_settings(target: Target, epoch: int) -> dict[str, str]:
    """The build variables of ``target`` in its image (the toolkit root is the image's)."""
    root = family_for(target.variant.accelerator).image_toolkit_root(target.variant.toolkit)
    return settings(target, root, epoch)


def reap_stale(engine: str, env: Mapping[str, str], log: LogLike = None) -> list[str]:
    """Remove containers left by a pipeline process that no longer exists (e.g. SIGKILLed)."""
    stale = [name for name, pid in owners(engine, env, log).items() if not _alive(pid)]
    for name in stale:
        run(images.Dialect(exe=engine).remove(name), env=env, log=log, check=False)
    return stale


def owners(engine: str, env: Mapping[str, str], log: LogLike = None) -> dict[str, int]:
    """Every builders container (also stopped ones) and the pid of the pipeline process that started it.

    ``ps --format`` reads labels differently in docker (``.Label "k"``) and podman (``index .Labels "k"``);
    ``inspect``'s ``.Config.Labels`` is the same in both. Docker names start with ``/`` there.
    """
    names = run([engine, "ps", "--all", "--filter", f"label={OWNER_LABEL}", "--format", "{{.Names}}"], env=env,
                log=log, check=False, separate_stderr=True).stdout.split()
    if not names:
        return {}
    template = f'{{{{.Name}}}} {{{{index .Config.Labels "{OWNER_LABEL}"}}}}'
    listed = run([engine, "container", "inspect", "--format", template, *names], env=env, log=log, check=False,
                 separate_stderr=True).stdout  # a container removed meanwhile is an error on stderr, the rest listed
    rows = (line.split() for line in listed.splitlines())
    return {name.lstrip("/"): int(pid) for name, pid in (r for r in rows if len(r) == 2) if pid.isdigit()}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def unbuildable_in_image(target: Target, host: Host) -> str | None:
    """Why ``target`` cannot be built here in the variant's image: another platform, or no working container
    engine (a target that is not Linux's: as on the host itself)."""
    if target.platform.os is not OS.LINUX:
        return unbuildable(target, host)
    return foreign(target, host) or (None if host.container_engines else
                                     "no working container engine (docker or podman) on this host")


def working_engine(setup: EngineSetup, what: str) -> ContainerEngine:
    """The container engine with the first that works (``--container-engine`` first), containers a killed run
    left behind removed first; else an :class:`EngineError` naming ``what`` needed it and what is missing."""
    exe = find_engine(setup.env, setup.container_engine)
    if exe is None:
        raise EngineError(f"{what}: {missing_container_engine(setup.env, setup.container_engine)}")
    engine = ContainerEngine(exe=exe, pythons=images.image_pythons(setup.matrix), cache=setup.cache,
                             host_env=setup.env, base_image=setup.base_image)
    reap_stale(exe, setup.env)
    return engine


def described(engine: ContainerEngine) -> str:
    return engine.exe + (f", base {engine.base_image}" if engine.base_image else "")


def make(setup: EngineSetup) -> tuple[ContainerEngine, str]:
    engine = working_engine(setup, "--engine container cannot run here")
    return engine, described(engine)


def always(target: Target) -> bool:
    return True


FACTORY = EngineFactory(name="container", help="the variant's image with docker/podman", make=make,
                        unbuildable=unbuildable_in_image, containers=True, in_image=always,
                        ci_for=frozenset({OS.LINUX}))
