"""Repair: make a raw wheel self-contained for its platform policy, with the variant's rules.

Linux uses auditwheel (``--exclude`` for every library a runtime requirement provides, so it
is never grafted), macOS uses delocate; Windows wheels are not repaired (their DLLs come
from runtime requirements). The command is written once, here, and runs where the build
ran: on this host with builders' own auditwheel, in the build image with the image's, and
as cibuildwheel's repair command. A wheel that cannot reach the matrix's policy (a
newer-glibc build host) fails here, never retagged.
"""

from __future__ import annotations

import io
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from builders.base.errors import BuildersError, EngineError, RepairError
from builders.base.process import Call, ProcessError
from builders.families import family_for
from builders.matrix.model import OS
from builders.matrix.targets import Target
from builders.wheel import elf
from builders.wheel.archive import Wheel


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


# auditwheel's own words for the causes it can name (auditwheel.repair and auditwheel.main_repair).
MISSING_LIBRARY = re.compile(r'required library "(?P<lib>[^"]+)" could not be located')
POLICY_CAUSES = ("too-recent versioned symbols", "black-listed symbols", "unsupported ISA extensions", "UCS2 build")


def failed(target: Target, exc: ProcessError, diagnose: tuple[str, ...] | None, call: Call, *,
           wheel: Path | None = None, local_only: bool = False) -> RepairError:
    """The error for a repair that failed, with auditwheel's own cause: a library it could not locate (and the
    ELF files of ``wheel`` that need it), the platform policy (with the policy the wheel could reach), or what
    it said. ``local_only``: the run already tags wheels at this host's level, so that is no way out."""
    said = f"\nauditwheel said:\n{exc.tail}"
    missing = MISSING_LIBRARY.search(exc.tail)
    if missing:
        return RepairError(missing_library(missing["lib"], wheel) + said)
    cause = next((c for c in POLICY_CAUSES if c in exc.tail), None)
    if cause is None:
        return RepairError(f"auditwheel could not repair the wheel for {target.platform.wheel_platform}" + said)
    achieved = achievable_policy(diagnose, call) if diagnose else None
    return RepairError(f"cannot reach {target.platform.wheel_platform} where this wheel was built ({cause}; it "
                       f"qualifies for {achieved or 'no manylinux policy'}); {_ways_out(target, cause, local_only)}"
                       + said)


def missing_library(lib: str, wheel: Path | None) -> str:
    """Why auditwheel could not locate ``lib``, naming the wheel's ELF files that need it."""
    try:
        needers = needing(wheel, lib) if wheel is not None else []
    except (BuildersError, OSError):  # an unreadable wheel: the cause stays auditwheel's
        needers = []
    who = f"{', '.join(needers)} need{'s' if len(needers) == 1 else ''}" if needers else "an ELF file of the wheel needs"
    return (f"{who} {lib}, which auditwheel could not locate: neither in the wheel where the RUNPATH of "
            f"{'that file' if len(needers) == 1 else 'those files'} looks (a library bundled beside it needs an "
            f"$ORIGIN entry to its folder, e.g. $ORIGIN/lib) nor on this host's library path; a library that a "
            "runtime requirement provides belongs in the variant's exclude_libs")


def needing(wheel: Path, lib: str) -> list[str]:
    """The members of ``wheel`` (ELF files) whose DT_NEEDED names ``lib`` (read with the capped reader)."""
    found: list[str] = []
    with Wheel(wheel).open() as reader:
        for info in reader.infos:
            data = b"".join(reader.stream(info))
            if data.startswith(elf.MAGIC) and _needs(data, lib):
                found.append(info.filename)
    return found


def _needs(data: bytes, lib: str) -> bool:
    try:
        return lib in elf.parse(io.BytesIO(data)).needed
    except elf.ElfParseError:
        return False


def _ways_out(target: Target, cause: str, local_only: bool) -> str:
    """What to do: build in the policy's image, or (not already so) tag at this host's level for testing."""
    image = f" ({target.platform.base_image})" if target.platform.base_image else ""
    if cause == "unsupported ISA extensions":
        return "the code was compiled for a newer CPU than the policy allows: drop -march=native or -m flags"
    container = f"use --engine container, which builds in the policy's image{image}"
    if local_only:
        return container
    return (f"{container}, or build --local-only, which tags wheels at this host's own level for testing "
            "(never published)")


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
