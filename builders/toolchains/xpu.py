"""Intel XPU variant: the oneAPI DPC++ compiler (``icpx -fsycl``)."""

from __future__ import annotations

import shutil
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
        """Use the installed toolkit (never fetched here): its root is above ``bin/icpx``."""
        found = shutil.which("icpx", path=env.get("PATH"))
        if found is None:
            raise ToolchainError(f"icpx not found on PATH for {target.id}")
        return {"toolkit_root": str(Path(found).resolve().parent.parent)}


XPU = XpuToolchain()
