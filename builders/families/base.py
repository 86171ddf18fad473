"""What an accelerator family is: the :class:`Family` protocol, and the pieces families share.

A family is one module of ``builders/families/`` (plus its Containerfile) that holds
everything builders knows about it and nothing else does: the facts the matrix needs
(:class:`builders.matrix.family.FamilyFacts`: display name, arch grammar, whether a variant must
list archs), its toolchain (can this host build it, where is the toolkit, provision, check),
its build image (Containerfile and build arguments), its smoke runtime probe, its device rule
and the driver libraries no wheel may bundle. The registry (:mod:`builders.families`) finds
the modules; code outside this package asks the family, never names one.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol

from builders.base.process import Call, LogLike
from builders.matrix.family import Accelerator
from builders.matrix.findings import ENV_REF
from builders.matrix.model import Toolkit, Variant

if TYPE_CHECKING:
    from builders.families.hostfacts import Host
    from builders.families.machine import Machine
    from builders.matrix.targets import Target

TOOLKIT_PREFIX = "/opt/toolkit"  # where an image installs a pip toolkit (``toolkit.root`` is below it)


@dataclass(frozen=True, kw_only=True)
class ToolkitEnv:
    """How a build sees a toolkit and no other: a folder put first on PATH, and the variables the ecosystem's
    build systems read (CMake's ``CUDACXX`` and ``CUDAToolkit_ROOT``, setuptools' ``CUDA_HOME``, ...)."""

    first_on_path: str = ""
    variables: tuple[tuple[str, str], ...] = ()


SYSTEM_PREFIXES = ("/usr", "/usr/local")  # where a distribution's packages put a toolkit among everything else


def own_tree(root: str) -> bool:
    """Whether ``root`` is a toolkit's own folder, to name and put first. A system prefix is not: its ``bin``
    first on PATH would put the system's Python and compilers ahead of the host's, and ``ROCM_PATH=/usr``
    sends Debian's hipcc looking for device libraries where Debian does not keep them (measured:
    "cannot find ROCm device library"); a distribution's toolkit finds its own parts."""
    return root.rstrip("/") not in ("", *SYSTEM_PREFIXES)


@dataclass(frozen=True, kw_only=True)
class MadeBy:
    """What a piece of device code in an ELF file records of the toolkit that compiled it."""

    what: str  # "sm_80 cubin (ptxas)"
    release: str  # "13.2"


class Toolchain(Protocol):
    accelerator: Accelerator
    asks: tuple[str, ...]  # the tools its check asks where the build runs (none: nothing to ask)
    on_path: str | None  # the compiler provision requires on PATH (nothing installed), if any
    pins_on_host: bool  # the local engine installs the toolkit from the variant's pinned requirements

    def probe_host(self, env: Mapping[str, str]) -> tuple[tuple[str, str, str], ...]:
        """The family's compilers on this host, for :attr:`Host.tools`: (name, resolved path, version or "")."""

    def unavailable(self, target: Target, host: Host) -> str | None:
        """Why this host cannot provide the target's toolchain, or None."""

    def toolkit_root(self, target: Target, cache: Path, host: Host) -> str | None:
        """Where the target's toolkit is (or will be, once provisioned) on this host; pure."""

    def provision(self, target: Target, cache: Path, env: Mapping[str, str], log: LogLike) -> None:
        """Make the toolchain ready on this host (pinned toolkits installed once into ``cache``)."""

    def check(self, target: Target, root: str | None, call: Call) -> None:
        """The toolkit at ``root``, asked through ``call`` where the build runs, is what the matrix says."""

    def toolkit_env(self, root: str) -> ToolkitEnv:
        """The build environment that makes the toolkit at ``root`` the one every build system finds (pure)."""


class Family(Toolchain, Protocol):
    """One accelerator family: its toolchain and everything else builders does differently for it."""

    # the build image
    containerfile: Path  # its build context is the Containerfile's folder

    cmake_languages: tuple[str, ...]  # the CMake languages of its device code, compiled through ccache too

    def image_args(self, target: Target, env: Mapping[str, str], unset: set[str] | None) -> dict[str, str]:
        """The family's build arguments (beyond BASE_IMAGE and PYTHONS); ``unset`` as in :func:`expand`."""

    def image_toolkit_root(self, toolkit: Toolkit) -> str | None:
        """Where the toolkit is inside the family's image (None: the image's own compiler)."""

    # smoke
    runtime_probe: Mapping[str, Any] | None  # how the runtime reports its version without a device (smoke_probe.py)

    def expected_runtime_version(self, variant: Variant) -> int | None:
        """The number the runtime probe must report for ``variant`` (after the probe's divisor), if any."""

    def smoke_summary(self, seen: Mapping[str, Any]) -> dict[str, Any]:
        """The family's fields of results.json's smoke record: every key, None where ``seen`` says nothing."""

    # device: every family says whether its smoke jobs need a device, and how to see one
    needs_device: bool
    device_files: tuple[str, ...]  # names under /dev the probe records
    device_tools: tuple[tuple[str, ...], ...]  # the vendor tools asked, in order (each optional)
    render_nodes: bool  # the probe records /dev/dri/renderD* and their PCI vendors
    device_help: str  # what counts as a device, in a few words for ``smoke --help``

    def judge_device(self, machine: Machine) -> tuple[list[str], list[str]]:
        """The devices ``machine`` shows, and what was looked for in vain (pure)."""

    # verify
    driver_libraries: tuple[str, ...]  # globs of driver-side libraries: never in a wheel, always allowed as needed

    def made_by(self, fh: IO[bytes]) -> tuple[MadeBy, ...]:
        """The toolkit releases the family's device code embedded in the ELF file ``fh`` records (none read: ())."""


def builders_containerfile(name: str) -> Path:
    """``builders/resources/containers/<name>.Containerfile`` in the installed package."""
    return Path(str(resources.files("builders").joinpath("resources", "containers", f"{name}.Containerfile")))


def image_toolkit_root(toolkit: Toolkit) -> str:
    """Where a toolkit lives inside an image: ``toolkit.root``, absolute or under :data:`TOOLKIT_PREFIX`."""
    root = toolkit.root or ""
    return root if root.startswith("/") else f"{TOOLKIT_PREFIX}/{root}".rstrip("/")


def expand(variant: Variant, name: str, env: Mapping[str, str], unset: set[str] | None = None) -> str:
    """With ``unset`` (a dry run), an unset ``${VAR}`` stays and is collected: the commands shown, the gaps named."""
    value = getattr(variant.toolkit, name) or ""
    if unset is None:
        return variant.toolkit_url(name, env)
    missing = {ref for ref in ENV_REF.findall(value) if not env.get(ref)}
    unset.update(missing)
    return ENV_REF.sub(lambda m: m.group(0) if m.group(1) in missing else env[m.group(1)], value)


def pip_toolkit_args(target: Target, env: Mapping[str, str], unset: set[str] | None) -> dict[str, str]:
    """The build arguments of a toolkit installed from pinned pip requirements."""
    return {"TOOLKIT_REQUIREMENTS": "\n".join(target.variant.toolkit.requirements),
            "TOOLKIT_INDEX_URL": expand(target.variant, "index_url", env, unset), **toolkit_bin_arg(target.variant)}


def toolkit_bin_arg(variant: Variant) -> dict[str, str]:
    """``TOOLKIT_BIN``: the image's toolkit ``bin``, which its Containerfile puts first on PATH; a system prefix's
    stays where it is (:func:`own_tree`): ``/usr/local/bin``, already at the head of every base's PATH, instead."""
    root = image_toolkit_root(variant.toolkit)
    return {"TOOLKIT_BIN": f"{root}/bin" if own_tree(root) else "/usr/local/bin"}


def found_tool(name: str, env: Mapping[str, str], version: Callable[[str], str | None] | None = None
               ) -> tuple[tuple[str, str, str], ...]:
    """``name`` on ``env``'s PATH, resolved, with the version ``version(exe)`` reads (none: not asked)."""
    exe = shutil.which(name, path=env.get("PATH"))
    if exe is None:
        return ()
    return ((name, str(Path(exe).resolve()), (version(exe) if version else None) or ""),)

