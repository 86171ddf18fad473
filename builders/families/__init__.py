"""Accelerator toolchains: one module per family, behind one Protocol and a registry.

A toolchain answers two questions: can this host build a target (pure, from host facts),
and, in the build stage, how to provision the compiler it needs.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from builders.base.process import Call, LogLike, ProcessError, run
from builders.spec.model import Accelerator

if TYPE_CHECKING:
    from builders.spec.hostfacts import Host
    from builders.spec.targets import Target


class Toolchain(Protocol):
    accelerator: Accelerator
    asks: tuple[str, ...]  # the tools its check asks where the build runs (none: nothing to ask)
    on_path: str | None  # the compiler provision requires on PATH (nothing installed), if any

    def unavailable(self, target: Target, host: Host) -> str | None:
        """Why this host cannot provide the target's toolchain, or None."""

    def toolkit_root(self, target: Target, cache: Path, host: Host) -> str | None:
        """Where the target's toolkit is (or will be, once provisioned) on this host; pure."""

    def provision(self, target: Target, cache: Path, env: Mapping[str, str], log: LogLike) -> None:
        """Make the toolchain ready on this host (pinned toolkits installed once into ``cache``)."""

    def check(self, target: Target, root: str | None, call: Call) -> None:
        """The toolkit at ``root``, asked through ``call`` where the build runs, is what the matrix says."""


def toolchain_for(accelerator: Accelerator) -> Toolchain:
    from builders.families import cpu, cuda, rocm, xpu

    registry: dict[Accelerator, Toolchain] = {
        Accelerator.CPU: cpu.CPU, Accelerator.CUDA: cuda.CUDA, Accelerator.ROCM: rocm.ROCM, Accelerator.XPU: xpu.XPU,
    }
    return registry[accelerator]


CXX20_PROBE = ("#include <concepts>\n#include <span>\ntemplate <std::integral T> T twice(T v) { return v * 2; }\n"
               "int main() { int a[2]{1, 2}; std::span<int> s{a}; return twice(s[0]) - 2; }\n")


def probe_compilers(env: Mapping[str, str]) -> dict[str, Any]:
    """Host compiler facts for :class:`builders.build.host.Host`."""
    cxx, problem = probe_cxx20(env)
    hipcc, icpx = (shutil.which(name, path=env.get("PATH")) for name in ("hipcc", "icpx"))
    return {"cxx20": cxx, "cxx20_problem": problem, "hipcc_version": _hipcc_version(env),
            "hipcc": str(Path(hipcc).resolve()) if hipcc else None, "icpx": str(Path(icpx).resolve()) if icpx else None}


def probe_cxx20(env: Mapping[str, str]) -> tuple[str | None, str]:
    """The first C++ compiler that really compiles C++20, or the reason there is none."""
    names = [env["CXX"]] if env.get("CXX") else ["c++", "g++", "clang++"]
    for name in names:
        exe = shutil.which(name, path=env.get("PATH"))
        if exe is None:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp) / "probe.cpp"
            src.write_text(CXX20_PROBE)
            try:
                run([exe, "-std=c++20", "-fsyntax-only", str(src)], env=env, timeout=60)
            except ProcessError as exc:
                return None, f"{exe} cannot compile C++20: {exc.tail.splitlines()[-1] if exc.tail else exc.returncode}"
        return exe, ""
    return None, f"no C++ compiler found (tried {', '.join(names)})"


def _hipcc_version(env: Mapping[str, str]) -> str | None:
    exe = shutil.which("hipcc", path=env.get("PATH"))
    if exe is None:
        return None
    try:
        out = run([exe, "--version"], env=env, timeout=60).stdout
    except ProcessError:
        return None
    match = re.search(r"HIP version:\s*([0-9.]+)", out)
    return match.group(1) if match else None
