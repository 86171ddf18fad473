"""What this host can build, as plain facts, and the reason a target cannot be built here.

``detect`` is the only effectful function; ``unbuildable`` is pure, so tests describe any host
in one line (``Host(os=OS.LINUX, arch="x86_64", interpreters=...)``).
"""

from __future__ import annotations

import platform as _platform
import shutil
import sys
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor

from builders.base.arch import canonical_arch
from builders.families.hostfacts import Host
from builders.matrix.model import OS, PythonVersion
from builders.matrix.targets import Target
from builders.pipeline import interpreters, platform_policy

CONTAINER_ENGINES = ("podman", "docker")
SEARCHED = {OS.LINUX: "pyenv, uv and PATH", OS.MACOS: "pyenv, uv and PATH",
            OS.WINDOWS: "the runner's tool cache, the py launcher and PATH"}  # see builders.pipeline.interpreters


def detect(pythons: Iterable[PythonVersion], env: Mapping[str, str], *, engines: bool = True) -> Host:
    """Probe this machine: interpreters, compilers and (with ``engines``) container engines, in parallel."""
    from builders.families import probe_compilers

    os_ = {"linux": OS.LINUX, "darwin": OS.MACOS, "win32": OS.WINDOWS}[sys.platform]
    arch = canonical_arch(_platform.machine())
    with ThreadPoolExecutor(max_workers=4) as pool:
        found = pool.submit(interpreters.discover, pythons, env, os_, arch)
        compilers = pool.submit(probe_compilers, env)
        working = [(e, pool.submit(engine_works, e, env)) for e in (CONTAINER_ENGINES if engines else ())]
        return Host(
            os=os_,
            arch=arch,
            interpreters=tuple(sorted((abi, str(p)) for abi, p in found.result().items())),
            container_engines=tuple(e for e, ok in working if ok.result()),
            ccache=shutil.which("ccache", path=env.get("PATH")),
            glibc=platform_policy.host_glibc() if os_ is OS.LINUX else None,
            glibcxx=platform_policy.host_glibcxx(arch) if os_ is OS.LINUX else None,
            **compilers.result(),
        )


ENGINE_INFO_TIMEOUT = 180  # seconds


def engine_works(name: str, env: Mapping[str, str]) -> bool:
    """A container engine counts only if its daemon/runtime answers, not just its client."""
    from builders.base.process import ProcessError, run

    exe = shutil.which(name, path=env.get("PATH"))
    if exe is None:
        return False
    try:
        # `podman info` waits for the storage lock, which a parallel `podman build` or push holds for
        # a while (measured: over 20 s when two images jobs ran at once): slow is not broken.
        run([exe, "info", "--format", "{{.Host.Arch}}" if name == "podman" else "{{.ServerVersion}}"], env=env,
            timeout=ENGINE_INFO_TIMEOUT)
    except ProcessError:
        return False
    return True


def find_engine(env: Mapping[str, str], preferred: str | None = None) -> str | None:
    """The first working container engine (``preferred`` first), or None."""
    for name in ([preferred] if preferred else CONTAINER_ENGINES):
        if engine_works(name, env):
            return name
    return None


def missing_container_engine(env: Mapping[str, str], preferred: str | None = None) -> str:
    """Why no container engine works here, engine by engine: not on PATH, or found but not answering
    (``find_engine`` counts one only when ``ENGINE info`` succeeds)."""
    parts = []
    for name in [preferred] if preferred else CONTAINER_ENGINES:
        exe = shutil.which(name, path=env.get("PATH"))
        parts.append(f"{name}: not found on PATH" if exe is None else
                     f"{name}: {exe} is there, but `{name} info` fails (is its service running, may this user use it?)")
    return "no working container engine (" + "; ".join(parts) + ")"


def foreign(target: Target, host: Host) -> str | None:
    """Why ``target`` needs another kind of host (OS, architecture), or None."""
    plat = target.platform
    if plat.os is not host.os or canonical_arch(plat.arch) != host.arch:
        return f"needs a {plat.name} host (this is {host.platform}); CI runner: {plat.runner}"
    return None


def unbuildable(target: Target, host: Host) -> str | None:
    """Why ``target`` cannot be built on ``host`` itself (its interpreter, its toolchain), or None if it can."""
    from builders.families import toolchain_for

    reason = foreign(target, host)
    if reason and target.variant.toolkit.windows_installer is not None:  # say what its runner installs, and why not here
        also = toolchain_for(target.variant.accelerator).unavailable(target, host)
        return f"{reason}; {also}" if also else reason
    if reason:
        return reason
    if host.interpreter(target.python.abi) is None:
        kind = "free-threaded CPython" if target.python.free_threaded else "CPython"
        return f"no {kind} {target.python} interpreter found (searched {SEARCHED.get(host.os, SEARCHED[OS.LINUX])})"
    return toolchain_for(target.variant.accelerator).unavailable(target, host)
