"""Intel XPU variant: the oneAPI DPC++ compiler (``icpx -fsycl``)."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from builders.base.errors import ToolchainError
from builders.base.process import Call, LogLike
from builders.spec.model import Accelerator

if TYPE_CHECKING:
    from builders.spec.hostfacts import Host
    from builders.spec.targets import Target


class XpuToolchain:
    accelerator = Accelerator.XPU
    asks: tuple[str, ...] = ()
    on_path: str | None = "icpx"

    def unavailable(self, target: Target, host: Host) -> str | None:
        if host.icpx is None:
            return ("oneAPI DPC++ compiler (icpx) not found on this host; the local engine does not install oneAPI: "
                    f"use the container engine ({target.containerfile}) or CI")
        return None

    def toolkit_root(self, target: Target, cache: Path, host: Host) -> str | None:
        """The installed toolkit (never fetched here): the folder above ``bin/icpx``."""
        return str(Path(host.icpx).parent.parent) if host.icpx else None

    def provision(self, target: Target, cache: Path, env: Mapping[str, str], log: LogLike) -> None:
        """Nothing is installed: the toolkit must already be on PATH."""
        if shutil.which(str(self.on_path), path=env.get("PATH")) is None:
            raise ToolchainError(f"{self.on_path} not found on PATH for {target.id}")

    def check(self, target: Target, root: str | None, call: Call) -> None:
        """Its release was checked against the matrix when the host was probed."""


XPU = XpuToolchain()
