"""CPU variant: the host compiler; C++20 support is required only when the project declares it."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from builders.base.process import Call, LogLike
from builders.spec.model import Accelerator

if TYPE_CHECKING:
    from builders.spec.hostfacts import Host
    from builders.spec.targets import Target


def cxx_unavailable(target: Target, host: Host) -> str | None:
    """Why the host compiler cannot build the project's declared C++ standard (None: it can)."""
    wants = target.project.cxx_standard
    if wants is not None and wants >= 20 and host.cxx20 is None:
        return f"project.cxx_standard is {wants} and there is no C++20 compiler: {host.cxx20_problem}"
    return None


class CpuToolchain:
    accelerator = Accelerator.CPU
    asks: tuple[str, ...] = ()
    on_path: str | None = None

    def unavailable(self, target: Target, host: Host) -> str | None:
        return cxx_unavailable(target, host)

    def toolkit_root(self, target: Target, cache: Path, host: Host) -> str | None:
        return None

    def provision(self, target: Target, cache: Path, env: Mapping[str, str], log: LogLike) -> None:
        """The host compiler needs nothing installed; its C++ support was probed."""

    def check(self, target: Target, root: str | None, call: Call) -> None:
        """Nothing to ask: the compiler was probed with the host."""


CPU = CpuToolchain()
