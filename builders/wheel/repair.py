"""Repair: make a raw wheel self-contained for its platform policy, with the variant's rules.

Linux uses auditwheel (``--exclude`` for every library a runtime requirement provides, so it
is never grafted), macOS uses delocate; Windows wheels are not repaired (their DLLs come
from runtime requirements). The command is written once, here, and runs where the build
ran: on this host with builders' own auditwheel, in the build image with the image's, and
as cibuildwheel's repair command. A wheel that cannot reach the matrix's policy (a
newer-glibc build host) fails here, never retagged.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from builders.base.errors import BuildersError, EngineError, RepairError
from builders.base.process import Call, ProcessError
from builders.families import family_for
from builders.matrix.model import OS
from builders.matrix.targets import Target


@dataclass(frozen=True, kw_only=True)
class Tools:
    """How the repair tools are invoked where the repair runs."""

    auditwheel: tuple[str, ...] = ("auditwheel",)
    delocate: tuple[str, ...] = ("delocate-wheel",)

    @classmethod
    def of(cls, python: str) -> Tools:
        """The tools installed with builders, run by its interpreter ``python``."""
        return cls(auditwheel=(python, "-m", "auditwheel"), delocate=(python, "-m", "delocate.cmd.delocate_wheel"))


def repair_argv(target: Target, wheel: str, out_dir: str, tools: Tools = Tools()) -> tuple[str, ...] | None:
    """The repair of ``wheel`` into ``out_dir`` for ``target``'s platform; None where nothing is repaired."""
    plat = target.platform
    if plat.os is OS.LINUX:
        head = (*tools.auditwheel, "repair", "--plat", plat.wheel_platform, "--only-plat")
    elif plat.os is OS.MACOS:
        head = (*tools.delocate, "--require-archs", plat.arch)
    else:
        return None
    return (*head, *excluded(target), "-w", out_dir, wheel)


def excluded(target: Target) -> tuple[str, ...]:
    """``--exclude`` for each library a runtime requirement provides, and for the GPU driver's (auditwheel takes
    globs): code linked against the toolkit's driver stub needs ``libcuda.so.1``, which only the driver has."""
    driver = family_for(target.variant.accelerator).driver_libraries
    return tuple(arg for lib in (*sorted(target.variant.exclude_libs), *driver) for arg in ("--exclude", lib))


def diagnose_argv(target: Target, wheel: str, tools: Tools = Tools()) -> tuple[str, ...] | None:
    """The command that says which policy ``wheel`` could reach (auditwheel show), where there is one."""
    return (*tools.auditwheel, "show", wheel) if target.platform.os is OS.LINUX else None


def repair_command(target: Target) -> str:
    """The repair as one shell command with cibuildwheel's ``{wheel}`` and ``{dest_dir}`` placeholders."""
    argv = repair_argv(target, "{wheel}", "{dest_dir}")
    if argv is None:
        return ""
    return " ".join(a if a in ("{wheel}", "{dest_dir}") else shlex.quote(a) for a in argv)


def failed(target: Target, exc: ProcessError, diagnose: tuple[str, ...] | None, call: Call) -> RepairError:
    """The error for a repair that failed, with the policy the wheel could reach instead."""
    achieved = achievable_policy(diagnose, call) if diagnose else None
    image = f" ({target.platform.base_image})" if target.platform.base_image else ""
    return RepairError(f"cannot reach {target.platform.wheel_platform} where this wheel was built (it qualifies "
                       f"for {achieved or 'no manylinux policy'}); use --engine container, which builds in the "
                       f"policy's image{image}, or build --local-only, which tags wheels at this host's own level "
                       f"for testing (never published)\nauditwheel said:\n{exc.tail}")


def achievable_policy(diagnose: tuple[str, ...], call: Call) -> str | None:
    """The most compatible platform tag ``auditwheel show`` grants the wheel."""
    try:
        out = call(list(diagnose)).stdout
    except ProcessError:
        return None
    match = re.search(r'platform tag:\s*"([^"]+)"', out)
    return match.group(1) if match else None


def only_wheel(folder: Path, what: str, error: type[BuildersError] = EngineError) -> Path:
    """The one wheel ``what`` left in ``folder``; anything else is an ``error``."""
    wheels = sorted(folder.glob("*.whl"))
    if len(wheels) != 1:
        raise error(f"{what} left {len(wheels)} wheels in {folder}, expected one: {[w.name for w in wheels]}")
    return wheels[0]
