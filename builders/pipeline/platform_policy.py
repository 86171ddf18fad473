"""The platform policy before the compile: will repair be able to tag the wheel as the matrix says?

A ``manylinux_2_28`` wheel may use no glibc symbol newer than 2.28 and no libstdc++ symbol newer
than the policy's ``GLIBCXX`` level (auditwheel's policy file). A build on a newer host links
newer symbols as soon as the code calls them, and repair refuses the wheel, after the whole compile.
So the plan compares this host's glibc and libstdc++ with each target's policy and says what will
happen, and what to do: build in the policy's image (``--engine container``), or, for testing,
``build --local-only``, which tags wheels at this host's own level (:func:`local_only`). Such a
wheel is never published: promote, index and release refuse it (:func:`local_only_problem`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import replace
from functools import cache
from importlib import util
from pathlib import Path

from builders.families.hostfacts import Host
from builders.matrix.model import OS, Matrix
from builders.matrix.targets import Target
from builders.wheel.pypi_form import manylinux, manylinux_arch

LIBSTDCXX = re.compile(r"libstdc\+\+\.so\.6\.0\.(\d+)$")
LIB_FOLDERS = ("/usr/lib/{arch}-linux-gnu", "/usr/lib64", "/lib64", "/usr/lib", "/lib/{arch}-linux-gnu")
WAYS_OUT = ("use --engine container (builds in the policy's image{image}) or build --local-only (tags wheels at "
            "this host's own level, for testing; never published)")


def version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split("."))


def host_glibc() -> str | None:
    """This host's glibc version (``2.36``), or None on another C library or system."""
    try:
        found = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (ValueError, OSError, AttributeError):
        return None
    return found.split()[-1] if found.startswith("glibc ") else None


def host_glibcxx(arch: str) -> str | None:
    """The newest ``GLIBCXX`` symbol version this host's libstdc++ has (``3.4.30``: libstdc++.so.6.0.30)."""
    for folder in LIB_FOLDERS:
        where = Path(folder.format(arch=arch))
        found = sorted(int(m.group(1)) for p in where.glob("libstdc++.so.6.0.*") if (m := LIBSTDCXX.search(p.name)))
        if found:
            return f"3.4.{found[-1]}"
    return None


@cache
def policy_glibcxx(policy: str, arch: str) -> str | None:
    """The newest ``GLIBCXX`` a manylinux policy allows, from auditwheel's own policy file (None without it)."""
    spec = util.find_spec("auditwheel")
    if spec is None or not spec.submodule_search_locations:
        return None
    data = Path(next(iter(spec.submodule_search_locations))) / "policy" / "manylinux-policy.json"
    if not data.is_file():
        return None
    for entry in json.loads(data.read_text(encoding="utf-8")):
        if entry["name"] == policy:
            levels = entry["symbol_versions"].get(arch, {}).get("GLIBCXX", [])
            return max(levels, key=version) if levels else None
    return None


def repair_risk(target: Target, host: Host) -> str | None:
    """Why repair may refuse ``target``'s wheel when it is built on ``host`` itself, and the two ways out."""
    level = manylinux(target.platform.wheel_platform)
    if target.platform.os is not OS.LINUX or level is None or host.glibc is None or level[2] != host.arch:
        return None  # another architecture is built in its own image or on its own runner, never with these libraries
    major, minor, arch = level
    policy, newer = f"manylinux_{major}_{minor}", []
    if version(host.glibc) > (major, minor):
        newer.append(f"host glibc {host.glibc} > {major}.{minor}")
    allowed = policy_glibcxx(policy, arch)
    if target.project.cxx_standard and host.glibcxx and allowed and version(host.glibcxx) > version(allowed):
        newer.append(f"host libstdc++ GLIBCXX_{host.glibcxx} > {allowed}")
    if not newer:
        return None
    image = f", {target.platform.base_image}" if target.platform.base_image else ""
    return f"may be refused at repair ({policy}): {'; '.join(newer)}; {WAYS_OUT.format(image=image)}"


def repair_warning(targets: Sequence[Target], host: Host) -> str | None:
    """One warning for a whole run built on ``host`` itself: which targets' policy the host cannot meet and why,
    or None when it meets every one (each distinct reason once, however many targets share it)."""
    risks: dict[str, list[str]] = {}
    for target in targets:
        risk = repair_risk(target, host)
        if risk is not None:
            risks.setdefault(risk, []).append(target.id)
    if not risks:
        return None
    return "; and ".join(f"{_ids(ids)}: {risk}" for risk, ids in risks.items())


def _ids(ids: Sequence[str]) -> str:
    """``cpu-cp311-linux-x86_64`` or ``12 targets (cpu-cp311-linux-x86_64, ...)``."""
    return ids[0] if len(ids) == 1 else f"{len(ids)} targets ({ids[0]}, ...)"


def host_level(host: Host) -> str | None:
    """This host's own manylinux level for its architecture (``manylinux_2_36_x86_64``), or None."""
    if host.os is not OS.LINUX or host.glibc is None:
        return None
    major, minor = host.glibc.split(".")[:2]
    return f"manylinux_{major}_{minor}_{host.arch}"


def at_host_level(platform_tag: str) -> bool:
    """Whether ``platform_tag`` is this host's own manylinux level (a ``--local-only`` wheel's): tagging at the
    host's level is then no way out of a repair failure."""
    level, glibc = manylinux(platform_tag), host_glibc()
    return level is not None and glibc is not None and version(glibc)[:2] == level[:2]


def local_only(matrix: Matrix, host: Host) -> Matrix:
    """``matrix`` with this host's Linux platform tagged at the host's own glibc level: wheels for testing here."""
    level = host_level(host)
    if level is None:
        return matrix
    platforms = tuple(replace(p, wheel_platform=level) if p.os is OS.LINUX and manylinux_arch(p.wheel_platform) == host.arch
                      else p for p in matrix.platforms)
    return replace(matrix, platforms=platforms)
