"""CPU variant: the host C++ compiler, which must support C++20."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ..model import Accelerator

if TYPE_CHECKING:
    from ..host import Host
    from ..targets import Target


class CpuToolchain:
    accelerator = Accelerator.CPU

    def unavailable(self, target: Target, host: Host) -> str | None:
        if host.cxx20 is None:
            return f"no C++20 compiler: {host.cxx20_problem}"
        return None

    def provision(self, target: Target, cache: Path, env: Mapping[str, str], log: Path | None) -> dict[str, str]:
        """The host compiler needs nothing installed; its C++20 support was probed."""
        return {}


CPU = CpuToolchain()
