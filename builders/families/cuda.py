"""CUDA variants: toolkits installed from pinned pip requirements (``cuda-toolkit[...]``).

The runtime (``libcudart``) reports its version without a GPU; a device is ``nvidia-smi -L``
listing a GPU, or ``/dev/nvidia0``. The driver's libraries (libcuda, libnvidia-*) are never bundled.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from builders.base.errors import ToolchainError
from builders.base.process import Call, LogLike
from builders.families import cuda_layout, fatbin
from builders.families.base import MadeBy, ToolkitEnv, builders_containerfile, image_toolkit_root, pip_toolkit_args
from builders.families.cpu import cxx_unavailable
from builders.families.machine import Machine, listed
from builders.families.provision import install_key, pip_prefix
from builders.matrix.family import Accelerator, FamilyFacts
from builders.matrix.model import OS, Toolkit, Variant

if TYPE_CHECKING:
    from builders.families.hostfacts import Host
    from builders.matrix.targets import Target


def sm_arch(entry: str) -> tuple[str, ...]:
    """An arch-list entry as nvidia's variant provider reports ``sm_arch``: ``9.0`` is ``90_real``,
    ``12.0+PTX`` is ``120_real`` and ``120_virtual``."""
    base = entry.removesuffix("+PTX")
    sm = base.replace(".", "")
    return (f"{sm}_real", *([f"{sm}_virtual"] if base != entry else []))


ACCELERATOR = Accelerator(FamilyFacts(
    module=__name__, name="cuda", display="CUDA", needs_arch_list=True, arch_properties=sm_arch,
    arch_entry=re.compile(r"[0-9]+\.[0-9]+[af]?(\+PTX)?"), arch_example="CUDA compute capabilities such as 8.0;9.0;12.0+PTX"))
NVIDIA_GPU = re.compile(r"^GPU \d+: .+$", re.M)


def runtime_version(version: str) -> int:
    """The integer ``cudaRuntimeGetVersion`` reports for CUDA ``13.2``: 13020."""
    major, minor = (int(p) for p in version.split(".")[:2])
    return major * 1000 + minor * 10


class CudaFamily:
    accelerator = ACCELERATOR
    asks: tuple[str, ...] = ("nvcc",)
    on_path: str | None = None
    pins_on_host = True
    containerfile = builders_containerfile("cuda")
    cmake_languages: tuple[str, ...] = ("CUDA",)
    runtime_probe: Mapping[str, Any] | None = {
        "libraries": ["libcudart.so*", "cudart64_*.dll", "libcudart*.dylib"], "symbol": "cudaRuntimeGetVersion"}
    needs_device = True
    device_files: tuple[str, ...] = ("nvidia0",)
    device_tools: tuple[tuple[str, ...], ...] = (("nvidia-smi", "-L"),)
    render_nodes = False
    device_help = "nvidia-smi -L or /dev/nvidia0"
    driver_libraries: tuple[str, ...] = ("libcuda.so*", "libnvidia-*.so*")

    def probe_host(self, env: Mapping[str, str]) -> tuple[tuple[str, str, str], ...]:
        return ()  # the host C++ compiler is probed for every family (the toolkit is pip-installed)

    def unavailable(self, target: Target, host: Host) -> str | None:
        if host.os is not OS.LINUX:
            return "the local engine provisions CUDA toolkits from pip wheels on Linux only"
        if not target.variant.toolkit.requirements:
            return f"matrix declares no toolkit requirements for {target.variant.label}"
        return cxx_unavailable(target, host)

    def toolkit_root(self, target: Target, cache: Path, host: Host) -> str | None:
        """``<cache>/cuda-<pin>-<key>/<toolkit.root>``: one folder per install (:func:`prefix`)."""
        return str(self.prefix(target, cache) / (target.variant.toolkit.root or ""))

    @staticmethod
    def prefix(target: Target, cache: Path) -> Path:
        """``cuda-13.2.2-<key>``: the pin for people, the key (requirements with their extras, the index as the
        matrix writes it) so that two installs of one pin with other components never share a folder."""
        toolkit = target.variant.toolkit
        return cache / f"cuda-{_pin(toolkit.requirements)}-{install_key(toolkit.requirements, toolkit.index_url)}"

    def provision(self, target: Target, cache: Path, env: Mapping[str, str], log: LogLike) -> None:
        """Install the pinned toolkit, laid out as CMake expects (:mod:`builders.families.cuda_layout`), once per
        install key; a finished install is reused."""
        toolkit = target.variant.toolkit
        index_url = target.variant.toolkit_url("index_url", env) or None
        prefix = pip_prefix(self.prefix(target, cache).name, toolkit.requirements, cache, env, log, index_url,
                            timeout=target.project.timeouts.provision,
                            finish=lambda tmp: cuda_layout.lay_out(tmp / (toolkit.root or ""), env, log))
        nvcc = prefix / (toolkit.root or "") / "bin" / "nvcc"
        if not nvcc.exists():
            raise ToolchainError(f"{target.variant.location}: toolkit installed to {prefix} has no "
                                 f"{nvcc.relative_to(prefix)} (check accelerators.cuda toolkit.root)")

    def check(self, target: Target, root: str | None, call: Call) -> None:
        """``nvcc`` where the build runs reports the matrix's release and lists every declared arch."""
        nvcc = f"{root}/bin/nvcc"
        check_nvcc(target, call([nvcc, "--version"]).stdout, call([nvcc, "--list-gpu-arch"]).stdout)

    def toolkit_env(self, root: str) -> ToolkitEnv:
        """nvcc first on PATH, and named where CMake (``CUDACXX``, ``CUDAToolkit_ROOT``), setuptools-style
        scripts (``CUDA_HOME``, ``CUDA_PATH``) and ``-DCMAKE_CUDA_COMPILER`` passers look: a host's own CUDA
        (this host has one on PATH) is never found first."""
        nvcc = f"{root}/bin/nvcc"
        return ToolkitEnv(first_on_path=f"{root}/bin", variables=(
            ("CUDACXX", nvcc), ("CMAKE_CUDA_COMPILER", nvcc), ("CUDA_HOME", root), ("CUDA_PATH", root),
            ("CUDAToolkit_ROOT", root)))

    def made_by(self, fh: IO[bytes]) -> tuple[MadeBy, ...]:
        """The release each cubin's ptxas (or nvlink) recorded (:mod:`builders.families.fatbin`)."""
        return fatbin.made_by(fh)

    def image_args(self, target: Target, env: Mapping[str, str], unset: set[str] | None) -> dict[str, str]:
        return {**pip_toolkit_args(target, env, unset), "MAX_GCC": str(target.variant.toolkit.max_gcc or "")}

    def image_toolkit_root(self, toolkit: Toolkit) -> str | None:
        return image_toolkit_root(toolkit)

    def expected_runtime_version(self, variant: Variant) -> int | None:
        return runtime_version(variant.version) if variant.version else None

    def smoke_summary(self, seen: Mapping[str, Any]) -> dict[str, Any]:
        """results.json's CUDA fields: the runtime's version and where libcudart was loaded from."""
        return {"cuda_runtime_version": seen.get("runtime_version"), "cudart_path": seen.get("runtime_library")}

    def judge_device(self, machine: Machine) -> tuple[list[str], list[str]]:
        gpus, why = listed(machine, "nvidia-smi", NVIDIA_GPU, "GPU")
        node = ["/dev/nvidia0"] if "/dev/nvidia0" in machine.files else []
        found = gpus + node
        return found, [] if found else [why, "/dev/nvidia0: absent"]


def _pin(requirements: tuple[str, ...]) -> str:
    """``cuda-toolkit[...]==13.2.2`` -> ``13.2.2``: the cache key of a toolkit."""
    for req in requirements:
        match = re.search(r"==\s*([0-9][0-9.]*)", req)
        if match:
            return match.group(1)
    raise ToolchainError(f"CUDA toolkit requirements {list(requirements)} pin no exact version (use ==)")


def arch_numbers(arch_list: str) -> list[str]:
    """``7.5;8.0;12.0+PTX`` -> ``["75", "80", "120"]``."""
    return [a.removesuffix("+PTX").replace(".", "") for a in arch_list.split(";") if a]


def check_nvcc(target: Target, version_out: str, arch_out: str) -> None:
    """The toolkit is the matrix's release and can build every declared arch."""
    variant = target.variant
    match = re.search(r"release (\d+\.\d+)", version_out)
    if not match or match.group(1) != variant.version:
        found = match.group(1) if match else "unknown"
        raise ToolchainError(f"{variant.location}: nvcc reports CUDA {found}, matrix says {variant.version}")
    supported = set(re.findall(r"compute_(\d+)", arch_out))
    missing = [a for a in arch_numbers(target.arch_list or "") if a not in supported]
    if missing:
        raise ToolchainError(f"{variant.location}: arch_list for {target.platform.name} has "
                             f"{', '.join(missing)} which nvcc {variant.version} cannot build "
                             f"(it lists compute_{min(supported, key=int, default='?')}..compute_{max(supported, key=int, default='?')})")


CUDA = FAMILY = CudaFamily()
