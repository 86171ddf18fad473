"""Intel XPU variant: the oneAPI DPC++ compiler (``icpx -fsycl``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ToolchainError

from ..model import Accelerator

if TYPE_CHECKING:
    from ..host import Host
    from ..targets import Target


class XpuToolchain:
    accelerator = Accelerator.XPU

    def unavailable(self, target: Target, host: Host) -> str | None:
        if host.icpx is None:
            return ("oneAPI DPC++ compiler (icpx) not found on this host; the local engine does not install oneAPI: "
                    f"use the container engine ({target.containerfile}) or CI")
        return None


    def provision(self, target: Target, cache: Path, env: Mapping[str, str], log: Path | None) -> dict[str, str]:
        """Use the installed toolkit; never fetched by the local engine (see module doc)."""
        from ..host import detect

        reason = self.unavailable(target, detect((), env))
        if reason:
            raise ToolchainError(reason)
        return {}


XPU = XpuToolchain()
