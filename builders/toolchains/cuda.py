"""CUDA variants: toolkits installed from pinned pip requirements (``cuda-toolkit[...]``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..model import OS, Accelerator

if TYPE_CHECKING:
    from ..host import Host
    from ..targets import Target


def runtime_version(version: str) -> int:
    """The integer ``cudaRuntimeGetVersion`` reports for CUDA ``13.2``: 13020."""
    major, minor = (int(p) for p in version.split(".")[:2])
    return major * 1000 + minor * 10


class CudaToolchain:
    accelerator = Accelerator.CUDA

    def unavailable(self, target: Target, host: Host) -> str | None:
        if host.os is not OS.LINUX:
            return "the local engine provisions CUDA toolkits from pip wheels on Linux only"
        if not target.variant.toolkit.requirements:
            return f"matrix declares no toolkit requirements for {target.variant.label}"
        if host.cxx20 is None:
            return f"no C++20 host compiler for nvcc: {host.cxx20_problem}"
        return None


CUDA = CudaToolchain()
