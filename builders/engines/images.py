"""Build images per accelerator family: the family's Containerfile + its build arguments from the matrix.

The tag is content-addressed (hash of the Containerfile, the scripts it copies, the arguments
and the platform it is for), so a laptop and CI computing the same matrix agree on the image,
a changed pin or base gives a new tag instead of a stale image, and an x86_64 and an aarch64
image never share a tag, even built from one ``--base-image``.
"""

from __future__ import annotations

import datetime
import hashlib
import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from importlib import resources
from pathlib import Path

from builders.base import folderlock
from builders.base.errors import EngineError
from builders.base.process import LogLike, as_log, run
from builders.families import family_for
from builders.families.base import TOOLKIT_PREFIX, expand
from builders.families.base import image_toolkit_root as toolkit_root
from builders.matrix.model import Accelerator, Matrix
from builders.matrix.targets import Target
from builders.pipeline.caches import Entry


def _containers_dir() -> Path:
    """Package data, so an installed builders finds them; a build context must be a real folder."""
    folder = resources.files("builders").joinpath("resources", "containers")
    if not isinstance(folder, Path):
        raise EngineError(f"builders' Containerfiles are not on the file system ({folder}); install builders unzipped")
    return folder


CONTAINERS_DIR = _containers_dir()
__all__ = ["CONTAINERS_DIR", "TOOLKIT_PREFIX", "ImageSpec", "expand", "image_spec", "toolkit_root"]


@dataclass(frozen=True, kw_only=True)
class ImageSpec:
    family: Accelerator
    containerfile: Path
    args: tuple[tuple[str, str], ...]
    platform: str  # the matrix platform, ``linux-aarch64``: one base reference may serve several
    arch: str

    @cached_property
    def tag(self) -> str:
        h = hashlib.sha256(self.containerfile.read_bytes())
        h.update(f"\0platform={self.platform}\0arch={self.arch}".encode())
        for script in sorted(copied_files(self.containerfile)):
            h.update(script.encode() + (self.containerfile.parent / script).read_bytes())
        for key, value in self.args:
            h.update(f"\0{key}={value}".encode())
        return f"localhost/builders-{self.family.value}:{h.hexdigest()[:16]}"

    @property
    def base(self) -> str:
        """The base image it is built on (``--base-image``, else the platform's: settled once, in :func:`image_spec`)."""
        return dict(self.args)["BASE_IMAGE"]


def copied_files(containerfile: Path) -> list[str]:
    """Files a Containerfile COPYs from its context (the build context is its folder)."""
    names: list[str] = []
    for line in containerfile.read_text().splitlines():
        if line.startswith("COPY "):
            names += line.split()[1:-1]
    return names


def declared_args(containerfile: Path) -> set[str]:
    return {m.group(1) for m in re.finditer(r"^ARG\s+([A-Z_][A-Z0-9_]*)", containerfile.read_text(), re.M)}


def image_spec(target: Target, pythons: tuple[str, ...], env: Mapping[str, str], base_image: str | None = None,
               *, unset: set[str] | None = None) -> ImageSpec:
    """``base_image`` (as the options table settled it) overrides the platform's here and only here; ``unset``
    collects what a dry run could not fill."""
    family = family_for(target.variant.accelerator)
    base = base_image or target.platform.base_image
    if not base:
        raise EngineError(f"{target.platform.name} names no base_image; container builds are for Linux platforms")
    args = {"BASE_IMAGE": base, "PYTHONS": " ".join(pythons), **family.image_args(target, env, unset)}
    return ImageSpec(family=family.accelerator, containerfile=family.containerfile,
                     args=tuple(sorted(args.items())), platform=target.platform.name, arch=target.platform.arch)


CA_SECRET = "ca"  # the build secret the Containerfiles mount at /run/builders/ca.crt (RUN --mount=type=secret)


@dataclass(frozen=True, kw_only=True)
class Dialect:
    """Where podman and docker differ, in one place: pieces of argv and of the environment.

    Networking: a docker daemon run without a bridge (``dockerd --bridge=none``, as here) gives a
    container no network but the host's, and one with a bridge but ``--iptables=false`` gives it no
    NAT to the outside; the host's network works with every daemon. So docker containers that need
    the network (image builds, the smoke test's install) share the host's; podman keeps its own.
    Containers that must not reach the network run with ``--network none`` on both.
    """

    exe: str

    @property
    def docker(self) -> bool:
        return Path(self.exe).name.startswith("docker")

    def network(self, online: bool) -> list[str]:
        """The ``--network`` argv of a container (or an image build) that needs the network or must not have it."""
        if not online:
            return ["--network", "none"]
        return ["--network", "host"] if self.docker else []

    def remove(self, name: str) -> list[str]:
        """podman's ``rm --force`` waits 10 s for a SIGTERM that ``sleep`` as PID 1 ignores; docker has no ``--time``."""
        return [self.exe, "rm", "--force", *([] if self.docker else ["--time", "0"]), name]

    def build_env(self) -> dict[str, str]:
        """Docker: BuildKit, which build secrets need (the classic builder has none); buildah: keep layers."""
        return {"DOCKER_BUILDKIT": "1"} if self.docker else {"BUILDAH_LAYERS": "true"}

    def build_problem(self, env: Mapping[str, str], log: LogLike = None) -> str | None:
        """Why this engine cannot build the Containerfiles (they mount the CA bundle as a build secret), or None.

        Podman (buildah) always can. A docker CLI can with BuildKit: through the buildx plugin, or built in
        (18.09 to 22.x); from 23.0 on a CLI without buildx has only the classic builder.
        """
        if not self.docker:
            return None
        helped = run([self.exe, "build", "--help"], env={**env, **self.build_env()}, log=log, check=False, timeout=60)
        if helped.returncode == 0 and "--secret" in helped.stdout:
            return None
        return (f"{helped.argv[0]} cannot build with BuildKit, which the Containerfiles need (the CA bundle is a build "
                "secret, RUN --mount=type=secret): install the docker buildx plugin, or put a docker CLI with BuildKit "
                "built in (18.09 to 22.x, such as Debian's docker.io /usr/bin/docker) first on PATH")


def build_argv(engine: str, spec: ImageSpec, ca_bundle: Path | None) -> list[str]:
    """The image build; the CA bundle is a build secret, so no image layer (and not the tag) holds it."""
    argv = [engine, "build", "--file", str(spec.containerfile), "--tag", spec.tag, *Dialect(exe=engine).network(True)]
    for key, value in spec.args:
        argv += ["--build-arg", f"{key}={value}"]
    if ca_bundle is not None:
        argv += ["--secret", f"id={CA_SECRET},src={ca_bundle}"]
    return [*argv, str(spec.containerfile.parent)]


def ensure(engine: str, spec: ImageSpec, env: Mapping[str, str], log: LogLike, ca_bundle: Path | None,
           *, timeout: float = 3600) -> str:
    """The tag is content-addressed; two runs on one host that need one image build it once (a lock per
    engine and tag: the waiter finds it made)."""
    if _exists(engine, spec.tag, env, log):
        return spec.tag
    sink = as_log(log)
    with folderlock.held(image_lock_folder(engine, spec.tag), note=lambda line: sink.write(line + "\n") if sink else None):
        if _exists(engine, spec.tag, env, log):
            return spec.tag
        dialect = Dialect(exe=engine)
        problem = dialect.build_problem(env, log)
        if problem:
            raise EngineError(problem)
        run(build_argv(engine, spec, ca_bundle), env={**env, **dialect.build_env()}, log=log, timeout=timeout)
    return spec.tag


def _exists(engine: str, tag: str, env: Mapping[str, str], log: LogLike) -> bool:
    return run([engine, "image", "inspect", "--format", "{{.Id}}", tag], env=env, log=log, check=False).returncode == 0


def image_lock_folder(engine: str, tag: str) -> Path:
    """Per user (an engine's image store is the user's), engine and tag, in the temp folder: no lock outlives a boot."""
    key = hashlib.sha256(f"{os.path.basename(engine)}\0{tag}".encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"builders-images-{os.getuid()}" / key


def host_ca_bundle(env: Mapping[str, str]) -> Path | None:
    """The CA bundle to pass into builds (TLS-intercepting proxies need it)."""
    for candidate in (env.get("PIP_CERT"), env.get("SSL_CERT_FILE"), "/etc/ssl/certs/ca-certificates.crt"):
        if candidate and os.path.isfile(candidate):
            return Path(candidate)
    return None


def engine_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with the project's containers.conf for podman, unless the user chose one."""
    out = dict(env)
    out.setdefault("CONTAINERS_CONF", str(CONTAINERS_DIR / "containers.conf"))
    return out


def image_pythons(matrix: Matrix) -> tuple[str, ...]:
    """The CPython releases an image provides (free-threaded builds share the release)."""
    return tuple(dict.fromkeys(p.release for p in matrix.pythons))


# -- the images builders made, for ``builders cache`` ------------------------------------------

MADE_HERE = re.compile(r"localhost/builders-[a-z0-9]+:[0-9a-f]{16}")  # ImageSpec.tag's shape


def made_images(engine: str, env: Mapping[str, str]) -> list[Entry]:
    """The images with a tag builders gives (:attr:`ImageSpec.tag`), with their size and creation time
    (an image's layers may be shared with another's: each is counted whole)."""
    listed = run([engine, "image", "ls", "--format", "{{.Repository}}:{{.Tag}}"], env=env, check=False,
                 separate_stderr=True).stdout.split()
    tags = sorted({t for t in listed if MADE_HERE.fullmatch(t)})
    if not tags:
        return []
    out = run([engine, "image", "inspect", "--format", "{{.Size}}|{{.Created}}", *tags], env=env, check=False,
              separate_stderr=True).stdout.splitlines()
    return [Entry(kind="image", key=tag, size=int(size or 0), used=_created(created), where=engine)
            for tag, (size, _, created) in zip(tags, (line.partition("|") for line in out), strict=False)]


def _created(text: str) -> float:
    """``2026-11-30 21:10:10.54 +0000 UTC`` (podman) or ``2026-11-30T21:10:10.54Z`` (docker) -> epoch seconds."""
    match = re.match(r"(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d:\d\d)", text.strip())
    if not match:
        return 0.0
    return datetime.datetime.fromisoformat(f"{match[1]}T{match[2]}+00:00").timestamp()


def remove_image(engine: str, tag: str, env: Mapping[str, str]) -> str | None:
    """Remove one image by its tag; why it could not be removed (a container uses it), or None."""
    proc = run([engine, "image", "rm", tag], env=env, check=False)
    return None if proc.returncode == 0 else (proc.stdout.strip().splitlines() or ["failed"])[-1]
