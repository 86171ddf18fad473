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

    def provision(self, target: Target, cache: Path, env: Mapping[str, str], log: Path | None) -> dict[str, str]:
        """Use the installed toolkit (never fetched here): its root is above ``bin/hipcc``."""
        found = shutil.which("hipcc", path=env.get("PATH"))
        if found is None:
            raise ToolchainError(f"hipcc not found on PATH for {target.id}")
        return {"toolkit_root": str(Path(found).resolve().parent.parent)}


ROCM = RocmToolchain()
