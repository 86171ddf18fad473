"""Intel XPU variant: the oneAPI DPC++ compiler (``icpx -fsycl``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

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


XPU = XpuToolchain()
