"""A dummy accelerator family, NPU: one module and ``npu.Containerfile`` beside it, nothing else.

It shows what adding a family takes (tests/unit/test_dummy_family.py passes it explicitly and runs the
matrix, plans, images, device judgement, smoke planning, verify and the report on it): its
matrix facts (passed to the loader by the test), and every member of :class:`builders.families.base.Family`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from builders.base.errors import ToolchainError
from builders.base.process import Call, LogLike
from builders.families.base import MadeBy, ToolkitEnv, found_tool, image_toolkit_root
from builders.families.machine import Machine, listed
from builders.matrix.family import Accelerator, FamilyFacts
from builders.matrix.model import Toolkit, Variant

if TYPE_CHECKING:
    from builders.families.hostfacts import Host
    from builders.matrix.targets import Target

HERE = Path(__file__).resolve().parent
ACCELERATOR = Accelerator(FamilyFacts(
    module=__name__, name="npu", display="NPU", needs_arch_list=True, arch_entry=re.compile(r"npu[0-9]+"),
    arch_example="NPU generations such as npu3;npu4", containerfile=str(HERE / "npu.Containerfile")))
NPU_LISTED = re.compile(r"^(npu\d+): .+$", re.M)


class NpuFamily:
    accelerator = ACCELERATOR
    asks: tuple[str, ...] = ("npucc",)
    on_path: str | None = "npucc"
    pins_on_host = False
    containerfile = HERE / "npu.Containerfile"
    cmake_languages: tuple[str, ...] = ()
    runtime_probe: Mapping[str, Any] | None = {"libraries": ["libnpurt.so*"], "symbol": "npuRuntimeGetVersion"}
    needs_device = True
    device_files: tuple[str, ...] = ("npu0",)
    device_tools: tuple[tuple[str, ...], ...] = (("npu-smi", "list"),)
    render_nodes = False
    device_help = "/dev/npu0 and an NPU in npu-smi list"
    driver_libraries: tuple[str, ...] = ("libnpu_driver.so*",)

    def probe_host(self, env: Mapping[str, str]) -> tuple[tuple[str, str, str], ...]:
        return found_tool("npucc", env)

    def unavailable(self, target: Target, host: Host) -> str | None:
        return None if host.tool("npucc") else "no npucc on this host: use the container engine"

    def toolkit_root(self, target: Target, cache: Path, host: Host) -> str | None:
        npucc = host.tool("npucc")
        return str(Path(npucc).parent.parent) if npucc else None

    def provision(self, target: Target, cache: Path, env: Mapping[str, str], log: LogLike) -> None:
        """Nothing is installed: npucc must be on PATH."""

    def check(self, target: Target, root: str | None, call: Call) -> None:
        out = call([f"{root}/bin/npucc", "--version"]).stdout
        if f"NPU SDK {target.variant.version}" not in out:
            raise ToolchainError(f"{target.variant.location}: npucc is not NPU SDK {target.variant.version}")

    def image_args(self, target: Target, env: Mapping[str, str], unset: set[str] | None) -> dict[str, str]:
        return {"NPU_SDK_REQUIREMENTS": "\n".join(target.variant.toolkit.requirements)}

    def toolkit_env(self, root: str) -> ToolkitEnv:
        return ToolkitEnv(first_on_path=f"{root}/bin", variables=(("NPU_SDK_ROOT", root),))

    def made_by(self, fh: IO[bytes]) -> tuple[MadeBy, ...]:
        return ()

    def image_toolkit_root(self, toolkit: Toolkit) -> str | None:
        return image_toolkit_root(toolkit)

    def expected_runtime_version(self, variant: Variant) -> int | None:
        major, minor = (int(p) for p in (variant.version or "0.0").split(".")[:2])
        return major * 100 + minor

    def smoke_summary(self, seen: Mapping[str, Any]) -> dict[str, Any]:
        return {"npu_runtime_version": seen.get("runtime_version")}

    def judge_device(self, machine: Machine) -> tuple[list[str], list[str]]:
        npus, why = listed(machine, "npu-smi", NPU_LISTED, "NPU")
        missing = [] if "/dev/npu0" in machine.files else ["/dev/npu0: absent"]
        if not npus:
            missing.append(why)
        return ["/dev/npu0", *npus], missing


FAMILY = NpuFamily()
