"""ROCm variants, built on AMD's TheRock packages.

The local engine never fetches TheRock: a ROCm target builds here only if a hipcc of the
variant's release is already installed (``ROCM_PATH`` or PATH). Otherwise the reason says so
and points at the container image, where the toolkit is installed from TheRock's index (or,
with ``BUILDERS_ROCM_SOURCE=debian``, from Debian's HIP packages; see builders/engines/images.py).

Where the build runs, ``hipcc --version`` must report the matrix's HIP release, and the clang
it drives must list every arch of the target's ``arch_list`` as an ``amdgcn`` processor.
"""

from __future__ import annotations

import re
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


class RocmToolchain:
    accelerator = Accelerator.ROCM
    asks: tuple[str, ...] = ("hipcc", "clang")
    on_path: str | None = "hipcc"

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
        if shutil.which(str(self.on_path), path=env.get("PATH")) is None:
            raise ToolchainError(f"{self.on_path} not found on PATH for {target.id}")

    def check(self, target: Target, root: str | None, call: Call) -> None:
        """``hipcc`` where the build runs is the matrix's release, and its clang can build every declared arch."""
        if root is None:
            raise ToolchainError(f"{target.variant.location}: no ROCm toolkit root for {target.id} (no hipcc found)")
        version_out = call([f"{root}/bin/hipcc", "--version"]).stdout
        clang = f"{installed_dir(version_out) or f'{root}/lib/llvm/bin'}/clang"
        check_hipcc(target, version_out, call([clang, "--target=amdgcn-amd-amdhsa", "--print-supported-cpus"]).stdout)


def runtime_release(version: str) -> int:
    """``major * 100 + minor`` for ROCm ``7.2`` (702): ``hipRuntimeGetVersion() // 100000`` of that release."""
    major, minor = (int(p) for p in version.split(".")[:2])
    return major * 100 + minor


def installed_dir(version_out: str) -> str | None:
    """The folder of the clang hipcc drives (``InstalledDir:`` in ``hipcc --version``)."""
    match = re.search(r"^InstalledDir:\s*(\S+)", version_out, re.M)
    return match.group(1) if match else None


def offload_archs(arch_list: str) -> list[str]:
    """``gfx90a:xnack+;gfx942`` -> ``["gfx90a", "gfx942"]``: the processors, without target features."""
    return [a.split(":")[0] for a in arch_list.split(";") if a]


def check_hipcc(target: Target, version_out: str, cpus_out: str) -> None:
    """The toolkit is the matrix's HIP release and its clang knows every declared ``--offload-arch``."""
    variant = target.variant
    match = re.search(r"HIP version:\s*(\d+\.\d+)", version_out)
    if not match or match.group(1) != variant.version:
        found = match.group(1) if match else "unknown"
        raise ToolchainError(f"{variant.location}: hipcc reports HIP {found}, matrix says ROCm {variant.version}")
    supported = {word for word in cpus_out.split() if word.startswith("gfx")}
    missing = [a for a in offload_archs(target.arch_list or "") if a not in supported]
    if missing:
        known = " ".join(sorted(supported, key=lambda a: (len(a), a))) or "none"
        raise ToolchainError(f"{variant.location}: arch_list for {target.platform.name} has {', '.join(missing)} "
                             f"which hipcc {match.group(1)} cannot build (its clang lists: {known})")


ROCM = RocmToolchain()
