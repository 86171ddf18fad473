"""ROCm variants, built on AMD's TheRock packages.

The local engine never fetches TheRock: a ROCm target builds here only if a hipcc of the
variant's release is already installed (``ROCM_PATH`` or PATH). Otherwise the reason says so
and points at the container image, where the toolkit is installed from TheRock's index.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ToolchainError
from ..model import Accelerator
from ..process import Call, LogLike

if TYPE_CHECKING:
    from ..host import Host
    from ..targets import Target


class RocmToolchain:
    accelerator = Accelerator.ROCM

    def unavailable(self, target: Target, host: Host) -> str | None:
        want = target.variant.version or ""
        have = host.hipcc_version
        if have is not None and (have == want or have.startswith(want + ".")):
            return None
        found = f"found hipcc {have}" if have else "no hipcc on PATH"
        return (f"TheRock ROCm {want} toolkit is not installed on this host ({found}); the local engine does not "
                f"fetch TheRock packages: use the container engine ({target.containerfile}) or CI")

    def toolkit_root(self, target: Target, cache: Path, host: Host) -> str | None:
        """The installed toolkit (never fetched here): the folder above ``bin/hipcc``."""
        return str(Path(host.hipcc).parent.parent) if host.hipcc else None

    def provision(self, target: Target, cache: Path, env: Mapping[str, str], log: LogLike) -> None:
        """Nothing is installed: the toolkit must already be on PATH."""
        if shutil.which("hipcc", path=env.get("PATH")) is None:
            raise ToolchainError(f"hipcc not found on PATH for {target.id}")

    def check(self, target: Target, root: str | None, call: Call) -> None:
        """Its release was checked against the matrix when the host was probed."""


ROCM = RocmToolchain()
