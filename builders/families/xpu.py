"""Intel XPU variant: the oneAPI DPC++ compiler (``icpx -fsycl``).

The Linux image installs oneAPI from the matrix's system repository; a Windows build job
installs it with Intel's offline installer (``toolkit.windows_installer``,
:mod:`builders.families.installer`), which runs on a Windows runner only. A device is a
``/dev/dri/renderD*`` node (of Intel's PCI vendor, where sysfs says) and, where ``sycl-ls`` is
installed, a Level Zero or OpenCL GPU in its list.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import IO, TYPE_CHECKING, Any

from builders.base.errors import ToolchainError
from builders.base.process import Call, LogLike
from builders.families import installer
from builders.families.base import (
    MadeBy,
    ToolkitEnv,
    builders_containerfile,
    expand,
    found_tool,
    image_toolkit_root,
    own_tree,
    toolkit_bin_arg,
)
from builders.families.machine import Machine, listed
from builders.matrix.family import Accelerator, FamilyFacts
from builders.matrix.model import OS, Toolkit, Variant

if TYPE_CHECKING:
    from builders.families.hostfacts import Host
    from builders.matrix.targets import Target


ACCELERATOR = Accelerator(FamilyFacts(module=__name__, name="xpu", display="XPU"))
INTEL_VENDOR = "0x8086"
SYCL_GPU = re.compile(r"^.*(?:level_zero|opencl):gpu.*$", re.M)


class XpuFamily:
    accelerator = ACCELERATOR
    asks: tuple[str, ...] = ()
    on_path: str | None = "icpx"
    pins_on_host = False
    containerfile = builders_containerfile("xpu")
    cmake_languages: tuple[str, ...] = ()
    runtime_probe: Mapping[str, Any] | None = None
    needs_device = True
    device_files: tuple[str, ...] = ()
    device_tools: tuple[tuple[str, ...], ...] = (("sycl-ls",),)
    render_nodes = True
    device_help = "/dev/dri/renderD* and sycl-ls where installed"
    driver_libraries: tuple[str, ...] = ("libze_intel_gpu.so*", "libigdrcl.so*")

    def probe_host(self, env: Mapping[str, str]) -> tuple[tuple[str, str, str], ...]:
        return found_tool("icpx", env)

    def unavailable(self, target: Target, host: Host) -> str | None:
        found = installer.windows_installer(target)
        if found is not None and host.os is not OS.WINDOWS:
            return (f"oneAPI DPC++ for Windows comes from Intel's offline installer ({found.url}), which its build "
                    f"job runs on a {target.platform.runner} runner; it cannot run on this {host.os.value} host")
        if found is None and host.tool("icpx") is None:
            return ("oneAPI DPC++ compiler (icpx) not found on this host; the local engine does not install oneAPI: "
                    f"use the container engine ({target.containerfile}) or CI")
        return None

    def toolkit_root(self, target: Target, cache: Path, host: Host) -> str | None:
        """The installed toolkit: the Windows installer's root, else the folder above ``bin/icpx``."""
        if (found := installer.windows_installer(target)) is not None:
            return found.root
        icpx = host.tool("icpx")
        return str(Path(icpx).parent.parent) if icpx else None

    def provision(self, target: Target, cache: Path, env: Mapping[str, str], log: LogLike) -> None:
        """Windows: Intel's offline installer, checked against its pinned sha256. Elsewhere nothing is
        installed: the toolkit must already be on PATH."""
        if (found := installer.windows_installer(target)) is not None:
            installer.install(target, found, installer.folder(target, cache), env, log)
            return
        if shutil.which(str(self.on_path), path=env.get("PATH")) is None:
            raise ToolchainError(f"{self.on_path} not found on PATH for {target.id}")

    def check(self, target: Target, root: str | None, call: Call) -> None:
        """Its release was checked against the matrix when the host was probed."""

    def toolkit_env(self, root: str) -> ToolkitEnv:
        """icpx first on PATH, and the variables oneAPI's ``setvars.sh`` sets for it: ``CMPLR_ROOT`` (the
        compiler's release folder), ``ONEAPI_ROOT`` where that folder sits in oneAPI's ``compiler/<release>``."""
        if not own_tree(root):
            return ToolkitEnv()
        parent = PurePosixPath(root).parent
        top = (("ONEAPI_ROOT", str(parent.parent)),) if parent.name == "compiler" else ()
        return ToolkitEnv(first_on_path=f"{root}/bin", variables=(("CMPLR_ROOT", root), *top))

    def made_by(self, fh: IO[bytes]) -> tuple[MadeBy, ...]:
        return ()  # SYCL device images record no oneAPI release that is read here

    def image_args(self, target: Target, env: Mapping[str, str], unset: set[str] | None) -> dict[str, str]:
        variant = target.variant
        return {"TOOLKIT_SYSTEM_REPOSITORY": expand(variant, "system_repository", env, unset),
                "TOOLKIT_SYSTEM_REPOSITORY_KEY": expand(variant, "system_repository_key", env, unset),
                "TOOLKIT_SYSTEM_PACKAGES": "\n".join(variant.toolkit.system_packages), **toolkit_bin_arg(variant)}

    def image_toolkit_root(self, toolkit: Toolkit) -> str | None:
        return image_toolkit_root(toolkit)

    def expected_runtime_version(self, variant: Variant) -> int | None:
        return None  # no runtime probe: the oneAPI runtimes report no version without a device

    def smoke_summary(self, seen: Mapping[str, Any]) -> dict[str, Any]:
        return {}

    def judge_device(self, machine: Machine) -> tuple[list[str], list[str]]:
        nodes = [node for node, vendor in machine.render_vendors if vendor in ("", INTEL_VENDOR)]
        missing = [] if nodes else [_render_problem(machine)]
        sycl = machine.tool("sycl-ls")
        gpus: list[str] = []
        if sycl is not None and sycl.problem != "not on PATH":  # sycl-ls counts only where it is installed
            gpus, why = listed(machine, "sycl-ls", SYCL_GPU, "Level Zero or OpenCL GPU")
            missing += [why] if why else []
        return [*nodes, *gpus], missing


def _render_problem(machine: Machine) -> str:
    if not machine.render_vendors:
        return "/dev/dri/renderD*: none"
    others = ", ".join(f"{node} (vendor {vendor})" for node, vendor in machine.render_vendors)
    return f"/dev/dri/renderD*: none of Intel's (vendor {INTEL_VENDOR}): {others}"


XPU = FAMILY = XpuFamily()
