"""The container engine: the same build recipe inside a docker/podman image of the variant.

The build step runs with networking off: the source is mounted read-only, the build
requirements are resolved on the host into a wheelhouse mounted read-only, and the output
folder is the only writable mount. Label, repair and verify run on the host as for every
engine; the smoke test runs in a fresh container of the same image (with network, for the
runtime requirements). Containers are always removed, also on failure or interrupt.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import tomllib
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .. import images
from ..errors import EngineError
from ..interpreters import find_in
from ..model import Accelerator
from ..process import Result, run
from ..smoke import SmokeOutcome, smoke_with, stage
from ..targets import Target
from ..toolchains.cuda import check_nvcc
from ..toolchains.provision import pip_download

CONTAINER_CA = "/run/builders/ca.crt"
SMOKE_MOUNT = "/run/builders/smoke"  # the staged probe, project script and facts
OWNER_LABEL = "builders.owner-pid"
MAX_LIFETIME = 4 * 3600  # seconds; longer than any build's timeout
# CMake (>= 3.17) reads the launcher from the environment; set only where the image has ccache.
CCACHE_ENV = {"CCACHE_DIR": "/ccache", "CCACHE_BASEDIR": "/src", "CMAKE_C_COMPILER_LAUNCHER": "ccache",
              "CMAKE_CXX_COMPILER_LAUNCHER": "ccache"}


class NotBuildableHere(EngineError):
    """The target cannot be built with this engine here (e.g. no such interpreter in the image)."""

    exit_code = 18


@dataclass(frozen=True)
class Mount:
    source: Path
    target: str
    read_only: bool = True

    def argv(self) -> list[str]:
        return ["--volume", f"{self.source}:{self.target}:{'ro' if self.read_only else 'rw'}"]


class Container:
    """A running container with ``call``, ``copy_into`` and ``copy_out``; removed on exit, always."""

    def __init__(self, engine: str, image: str, *, host_env: Mapping[str, str], log: Path | None,
                 mounts: Sequence[Mount] = (), env: Mapping[str, str] | None = None, network: bool = False) -> None:
        self.engine, self.image, self.host_env, self.log = engine, image, host_env, log
        self.mounts, self.env, self.network = tuple(mounts), dict(env or {}), network
        self.name = f"builders-{uuid.uuid4().hex[:12]}"

    def __enter__(self) -> Container:
        # --rm and a bounded sleep: even if this process is SIGKILLed the container ends by
        # itself, and the next run reaps it earlier (reap_stale) by its owner label.
        argv = [self.engine, "run", "--rm", "--detach", "--name", self.name, "--label", f"{OWNER_LABEL}={os.getpid()}",
                *([] if self.network else ["--network", "none"])]
        for mount in self.mounts:
            argv += mount.argv()
        try:
            run([*argv, "--entrypoint", "sleep", self.image, str(MAX_LIFETIME)], env=self.host_env, log=self.log, timeout=300)
        except BaseException:
            self._remove()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._remove()

    def _remove(self) -> None:
        run([self.engine, "rm", "--force", "--time", "0", self.name], env=self.host_env, log=self.log, check=False, timeout=120)

    def call(self, argv: Sequence[str], *, cwd: str | None = None, separate_stderr: bool = False,
             timeout: float | None = 1800) -> Result:
        """Run ``argv`` inside the container with the container's environment."""
        cmd = [self.engine, "exec"]
        for key, value in sorted(self.env.items()):
            cmd += ["--env", f"{key}={value}"]
        if cwd:
            cmd += ["--workdir", cwd]
        return run([*cmd, self.name, *argv], env=self.host_env, log=self.log, separate_stderr=separate_stderr, timeout=timeout)

    def copy_into(self, source: Path, dest: str) -> None:
        run([self.engine, "cp", str(source), f"{self.name}:{dest}"], env=self.host_env, log=self.log)

    def copy_out(self, source: str, dest: Path) -> None:
        run([self.engine, "cp", f"{self.name}:{source}", str(dest)], env=self.host_env, log=self.log)


@dataclass(frozen=True, kw_only=True)
class ContainerEngine:
    """Builds in the variant's image with ``exe`` (podman or docker)."""

    exe: str
    pythons: tuple[str, ...]
    cache: Path
    host_env: Mapping[str, str]
    base_image: str | None = None
    name: str = "container"
    _ready: set[str] = field(default_factory=set, compare=False, repr=False)

    @property
    def ca_bundle(self) -> Path | None:
        return images.host_ca_bundle(self.host_env)

    def image_spec(self, target: Target) -> images.ImageSpec:
        return images.image_spec(target, self.pythons, self.host_env, self.base_image)

    def image(self, target: Target, log: Path | None) -> str:
        """The target's image tag, built first if no image has that tag (checked once per run)."""
        tag = self.image_spec(target).tag
        if tag not in self._ready:
            images.ensure(self.exe, self.image_spec(target), self.host_env, log, self.ca_bundle)
            self._ready.add(tag)
        return tag

    def provision(self, target: Target, env: Mapping[str, str], log: Path) -> dict[str, str]:
        """The image is the toolchain: build (or reuse) it; the toolkit root is inside it."""
        self.image(target, log)
        if target.variant.accelerator is Accelerator.CPU:
            return {}
        return {"toolkit_root": images.toolkit_root(target.variant.toolkit)}

    def build(self, target: Target, source: Path, out_dir: Path, env: Mapping[str, str], log: Path) -> Path:
        wheels = self.build_requirements(source, log)
        ccache = self.compiler_cache(target)
        mounts = [Mount(source, "/src"), Mount(out_dir, "/out", read_only=False), Mount(wheels, "/wheels"),
                  Mount(ccache, "/ccache", read_only=False)]
        inner = {**container_env(target, env), "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": "/wheels",
                 "PIP_DISABLE_PIP_VERSION_CHECK": "1", "HOME": "/tmp"}
        with Container(self.exe, self.image(target, log), host_env=self.host_env, log=log, mounts=mounts, env=inner) as c:
            python = self.interpreter_in(c, target)
            if c.call(["sh", "-c", "command -v ccache || true"]).stdout.strip():
                c.env.update(CCACHE_ENV)
            if target.variant.accelerator is Accelerator.CUDA:
                self._check_cuda(c, target)
            # Distribution interpreters may lack pip; a venv has it (from ensurepip, offline).
            c.call([python, "-m", "venv", "/tmp/buildenv"], timeout=300)
            values = {"python": "/tmp/buildenv/bin/python", "source": "/src", "outdir": "/out"}
            c.call([part.format(**values) for part in target.project.build_command], cwd="/tmp", timeout=3600)
        built = sorted(out_dir.glob("*.whl"))
        if len(built) != 1:
            raise EngineError(f"container build of {target.id} produced {len(built)} wheels, expected one")
        return built[0]

    def compiler_cache(self, target: Target) -> Path:
        """A ccache folder per image: same compilers, same cache; kept across runs."""
        path = self.cache.parent / "ccache" / self.image_spec(target).tag.rsplit(":", 1)[-1]
        path.mkdir(parents=True, exist_ok=True)
        return path

    def smoke(self, wheel: Path, target: Target, env: Mapping[str, str], log: Path) -> SmokeOutcome:
        """Install and probe in a fresh container of the image; the staged probe folder is mounted read-only."""
        with tempfile.TemporaryDirectory(prefix="builders-smoke-") as tmp:
            stage(Path(tmp), [target])
            mounts = [Mount(wheel.parent, "/wheel"), Mount(Path(tmp), SMOKE_MOUNT)]
            with Container(self.exe, self.image(target, log), host_env=self.host_env, log=log,
                           mounts=[*mounts, *self._ca_mounts()], env=self._smoke_env(), network=True) as c:
                return smoke_with(c.call, python=self.interpreter_in(c, target), wheel=f"/wheel/{wheel.name}",
                                  staged=SMOKE_MOUNT, scratch="/tmp/smoke", target=target)

    def _ca_mounts(self) -> list[Mount]:
        return [] if self.ca_bundle is None else [Mount(self.ca_bundle, CONTAINER_CA)]

    def _smoke_env(self) -> dict[str, str]:
        """pip inside the smoke container: the host's index and CA bundle, nothing else of the host."""
        inner = {"HOME": "/tmp", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
        if self.ca_bundle is not None:
            inner |= {"PIP_CERT": CONTAINER_CA, "SSL_CERT_FILE": CONTAINER_CA}
        if self.host_env.get("PIP_INDEX_URL"):
            inner["PIP_INDEX_URL"] = self.host_env["PIP_INDEX_URL"]
        return inner

    def interpreter_in(self, c: Container, target: Target) -> str:
        python = find_in(c.call, target.python)
        if python is None:
            kind = "free-threaded CPython" if target.python.free_threaded else "CPython"
            raise NotBuildableHere(f"no {kind} {target.python} in image {c.image} (base {self.base_image or target.platform.base_image})")
        return python

    def _check_cuda(self, c: Container, target: Target) -> None:
        nvcc = f"{images.toolkit_root(target.variant.toolkit)}/bin/nvcc"
        check_nvcc(target, c.call([nvcc, "--version"]).stdout, c.call([nvcc, "--list-gpu-arch"]).stdout)

    def build_requirements(self, source: Path, log: Path) -> Path:
        """The source's build requirements as wheels, resolved on the host (the build is offline)."""
        requires = tomllib.loads((source / "pyproject.toml").read_text())["build-system"]["requires"]
        extra = ["cmake>=3.24", "ninja>=1.10"]  # used only when the image's own are too old
        key = hashlib.sha256("\n".join([*requires, *extra]).encode()).hexdigest()[:12]
        return pip_download(f"build-requirements-{key}", [*requires, *extra], self.cache, self.host_env, log)


def container_env(target: Target, env: Mapping[str, str]) -> dict[str, str]:
    """Only the target's declared settings cross into the container, never the host's environment."""
    names = set(dict(target.env)) | {var for _, var in target.project.build_env} | {"SOURCE_DATE_EPOCH"}
    return {k: v for k, v in env.items() if k in names}


def find_engine(env: Mapping[str, str], preferred: str | None = None) -> str | None:
    """The first working container engine (``preferred`` first), or None."""
    from ..host import engine_works

    for name in ([preferred] if preferred else ["podman", "docker"]):
        if engine_works(name, env):
            return name
    return None



def reap_stale(engine: str, env: Mapping[str, str], log: Path | None = None) -> list[str]:
    """Remove containers left by a pipeline process that no longer exists (e.g. SIGKILLed)."""
    listed = run([engine, "ps", "--all", "--filter", f"label={OWNER_LABEL}", "--format",
                  f'{{{{.Names}}}} {{{{index .Labels "{OWNER_LABEL}"}}}}'], env=env, log=log, check=False).stdout
    stale = [name for name, pid in (line.split() for line in listed.splitlines() if len(line.split()) == 2)
             if not _alive(int(pid))]
    for name in stale:
        run([engine, "rm", "--force", "--time", "0", name], env=env, log=log, check=False)
    return stale


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
