"""CPU variant: the host compiler; C++20 support is required only when the project declares it.

Its smoke jobs need no device (said here, not left out), its image installs no toolkit.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from builders.base.process import Call, LogLike
from builders.families.base import MadeBy, ToolkitEnv, builders_containerfile
from builders.matrix.family import Accelerator, FamilyFacts
from builders.matrix.model import Toolkit, Variant

if TYPE_CHECKING:
    from builders.families.hostfacts import Host
    from builders.families.machine import Machine
    from builders.matrix.targets import Target


def cxx_unavailable(target: Target, host: Host) -> str | None:
    """Why the host compiler cannot build the project's declared C++ standard (None: it can)."""
    wants = target.project.cxx_standard
    if wants is not None and wants >= 20 and host.cxx20 is None:
        return f"project.cxx_standard is {wants} and there is no C++20 compiler: {host.cxx20_problem}"
    return None


ACCELERATOR = Accelerator(FamilyFacts(module=__name__, name="cpu", display="CPU"))


class CpuFamily:
    accelerator = ACCELERATOR
    asks: tuple[str, ...] = ()
    on_path: str | None = None
    pins_on_host = False
    containerfile = builders_containerfile("cpu")
    cmake_languages: tuple[str, ...] = ()
    runtime_probe: Mapping[str, Any] | None = None
    needs_device = False  # a cpu wheel is smoke-tested on any machine
    device_files: tuple[str, ...] = ()
    device_tools: tuple[tuple[str, ...], ...] = ()
    render_nodes = False
    device_help = "no device needed"
    driver_libraries: tuple[str, ...] = ()

    def probe_host(self, env: Mapping[str, str]) -> tuple[tuple[str, str, str], ...]:
        return ()  # the host C++ compiler is probed for every family

    def unavailable(self, target: Target, host: Host) -> str | None:
        return cxx_unavailable(target, host)

    def toolkit_root(self, target: Target, cache: Path, host: Host) -> str | None:
        return None

    def provision(self, target: Target, cache: Path, env: Mapping[str, str], log: LogLike) -> None:
        """The host compiler needs nothing installed; its C++ support was probed."""

    def check(self, target: Target, root: str | None, call: Call) -> None:
        """Nothing to ask: the compiler was probed with the host."""

    def image_args(self, target: Target, env: Mapping[str, str], unset: set[str] | None) -> dict[str, str]:
        return {}

    def toolkit_env(self, root: str) -> ToolkitEnv:
        return ToolkitEnv()  # the host's own compiler: nothing to put first

    def made_by(self, fh: IO[bytes]) -> tuple[MadeBy, ...]:
        return ()

    def image_toolkit_root(self, toolkit: Toolkit) -> str | None:
        return None  # the image's own compiler

    def expected_runtime_version(self, variant: Variant) -> int | None:
        return None

    def smoke_summary(self, seen: Mapping[str, Any]) -> dict[str, Any]:
        return {}

    def judge_device(self, machine: Machine) -> tuple[list[str], list[str]]:
        return ["no device needed"], []


CPU = FAMILY = CpuFamily()
