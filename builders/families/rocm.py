"""ROCm variants, built on AMD's TheRock packages.

The local engine never fetches TheRock: a ROCm target builds here only if a hipcc of the
variant's release is already installed (``ROCM_PATH`` or PATH). Otherwise the reason says so
and points at the container image, where the toolkit is installed from TheRock's index (or,
with ``BUILDERS_ROCM_SOURCE=debian``, from Debian's HIP packages; see builders/engines/images.py).

Where the build runs, ``hipcc --version`` must report the matrix's HIP release, and the clang
it drives must list every arch of the target's ``arch_list`` as an ``amdgcn`` processor.

The image takes its toolkit from TheRock's index, or with ``BUILDERS_ROCM_SOURCE=debian`` from
Debian's HIP packages (:func:`rocm_source_args`). A device is ``/dev/kfd`` plus a gfx agent in
``rocminfo`` or a GPU in ``amd-smi list``.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from builders.base.errors import EngineError, ToolchainError
from builders.base.process import Call, LogLike, ProcessError, run
from builders.families.base import (
    MadeBy,
    ToolkitEnv,
    builders_containerfile,
    found_tool,
    image_toolkit_root,
    own_tree,
    pip_toolkit_args,
)
from builders.families.machine import Machine, listed
from builders.matrix.family import Accelerator, FamilyFacts
from builders.matrix.model import Toolkit, Variant

if TYPE_CHECKING:
    from builders.families.hostfacts import Host
    from builders.matrix.targets import Target


ACCELERATOR = Accelerator(FamilyFacts(
    module=__name__, name="rocm", display="ROCm", needs_arch_list=True,
    arch_entry=re.compile(r"gfx[0-9a-f]{3,4}(:(sramecc|xnack)[+-])*"), arch_example="AMD GPU targets such as gfx90a;gfx942"))
# Where the image takes its toolkit from ($BUILDERS_ROCM_SOURCE; the options table's default is the first).
ROCM_SOURCES = ("therock", "debian")
ROCM_SOURCE_ENV = "BUILDERS_ROCM_SOURCE"  # declared in builders/cli/options.py; read from the env an engine passes
ROCM_AGENT = re.compile(r"^\s*Name:\s+(gfx[0-9a-f]+)\s*$", re.M)
AMD_SMI_GPU = re.compile(r"^GPU: \d+\s*$", re.M)


class RocmFamily:
    accelerator = ACCELERATOR
    asks: tuple[str, ...] = ("hipcc", "clang")
    on_path: str | None = "hipcc"
    pins_on_host = False
    containerfile = builders_containerfile("rocm")
    cmake_languages: tuple[str, ...] = ("HIP",)
    # HIP_VERSION = major * 10**7 + minor * 10**5 + build (70253211 for HIP 7.2): the release is // 10**5.
    runtime_probe: Mapping[str, Any] | None = {
        "libraries": ["libamdhip64.so*"], "symbol": "hipRuntimeGetVersion", "divisor": 100_000}
    needs_device = True
    device_files: tuple[str, ...] = ("kfd",)
    device_tools: tuple[tuple[str, ...], ...] = (("rocminfo",), ("amd-smi", "list"))
    render_nodes = False
    device_help = "/dev/kfd and rocminfo or amd-smi"
    driver_libraries: tuple[str, ...] = ("libhsakmt.so*", "libdrm_amdgpu.so*", "libamdhip64_driver*")

    def probe_host(self, env: Mapping[str, str]) -> tuple[tuple[str, str, str], ...]:
        return found_tool("hipcc", env, lambda exe: hipcc_version(exe, env))

    def unavailable(self, target: Target, host: Host) -> str | None:
        want = target.variant.version or ""
        have = host.tool_version("hipcc")
        if have is not None and (have == want or have.startswith(want + ".")):
            return None
        found = f"found hipcc {have}" if have else "no hipcc on PATH"
        return (f"TheRock ROCm {want} toolkit is not installed on this host ({found}); the local engine does not "
                f"fetch TheRock packages: use the container engine ({target.containerfile}) or CI")

    def toolkit_root(self, target: Target, cache: Path, host: Host) -> str | None:
        """The installed toolkit (never fetched here): the folder above ``bin/hipcc``."""
        hipcc = host.tool("hipcc")
        return str(Path(hipcc).parent.parent) if hipcc else None

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

    def toolkit_env(self, root: str) -> ToolkitEnv:
        """hipcc first on PATH, and the root where hipcc, ``find_package(hip)`` and CMake's HIP language look
        (``ROCM_PATH``, ``HIP_PATH``; ``HIP_PLATFORM`` so hipcc never guesses the NVIDIA backend)."""
        if not own_tree(root):
            return ToolkitEnv()  # Debian's HIP under /usr: its hipcc finds its own parts (own_tree)
        return ToolkitEnv(first_on_path=f"{root}/bin", variables=(
            ("ROCM_PATH", root), ("HIP_PATH", root), ("HIP_PLATFORM", "amd")))

    def made_by(self, fh: IO[bytes]) -> tuple[MadeBy, ...]:
        return ()  # HIP code objects record their clang, not a ROCm release: nothing checked yet

    def image_args(self, target: Target, env: Mapping[str, str], unset: set[str] | None) -> dict[str, str]:
        return {**pip_toolkit_args(target, env, unset), **rocm_source_args(target, env)}

    def image_toolkit_root(self, toolkit: Toolkit) -> str | None:
        return image_toolkit_root(toolkit)

    def expected_runtime_version(self, variant: Variant) -> int | None:
        return runtime_release(variant.version) if variant.version else None

    def smoke_summary(self, seen: Mapping[str, Any]) -> dict[str, Any]:
        return {}

    def judge_device(self, machine: Machine) -> tuple[list[str], list[str]]:
        agents, rocminfo = listed(machine, "rocminfo", ROCM_AGENT, "gfx agent")
        gpus, amd_smi = listed(machine, "amd-smi", AMD_SMI_GPU, "GPU")
        missing = [] if "/dev/kfd" in machine.files else ["/dev/kfd: absent (no amdgpu kernel driver)"]
        if not agents and not gpus:
            missing.append(f"{rocminfo}; {amd_smi}")
        return ["/dev/kfd", *agents, *gpus], missing


def rocm_source_args(target: Target, env: Mapping[str, str]) -> dict[str, str]:
    """``ROCM_SOURCE`` from ``$BUILDERS_ROCM_SOURCE`` (settled by the options table: TheRock unless it says
    otherwise) and its packages.

    ``debian`` installs the matrix's ``toolkit.system_packages`` from the base's Debian mirror
    (``resources/containers/install-rocm.sh``): a stand-in for TheRock where its index cannot be reached.
    """
    variant, source = target.variant, env.get(ROCM_SOURCE_ENV)
    if source is None:
        raise EngineError(f"{ROCM_SOURCE_ENV} is not in the environment the image's arguments are computed from: "
                          "builders' options table settles it (python -m builders sets it); a caller past the "
                          f"command line sets it too, to one of {', '.join(ROCM_SOURCES)}")
    if source not in ROCM_SOURCES:
        raise EngineError(f"BUILDERS_ROCM_SOURCE={source!r} is not a ROCm source; use one of {', '.join(ROCM_SOURCES)}")
    toolkit, where = variant.toolkit, f"{variant.label} ({variant.location})"
    if source == "debian" and not toolkit.system_packages:
        raise EngineError(f"BUILDERS_ROCM_SOURCE=debian installs the matrix's toolkit.system_packages, and {where} "
                          "names none: use a matrix that declares Debian's HIP packages, or unset BUILDERS_ROCM_SOURCE")
    if source == "therock" and not toolkit.requirements:
        raise EngineError(f"{where} names no toolkit.requirements to install from TheRock; a matrix of Debian's HIP "
                          "packages (toolkit.system_packages) builds with BUILDERS_ROCM_SOURCE=debian")
    packages = "\n".join(toolkit.system_packages) if source == "debian" else ""
    return {"ROCM_SOURCE": source, "TOOLKIT_SYSTEM_PACKAGES": packages}


def hipcc_version(exe: str, env: Mapping[str, str]) -> str | None:
    """The HIP release ``hipcc --version`` reports (``7.2.4``), or None."""
    try:
        out = run([exe, "--version"], env=env, timeout=60).stdout
    except ProcessError:
        return None
    match = re.search(r"HIP version:\s*([0-9.]+)", out)
    return match.group(1) if match else None


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


ROCM = FAMILY = RocmFamily()
