"""The release matrix as immutable values.

Built once by :mod:`builders.matrix.build` from what it read of ``matrix.yaml`` (after the rules of
:mod:`builders.matrix.rules` accepted it); nothing downstream sees YAML or dicts. Every value is frozen and hashable so that
targets can be set members and cache keys.
"""

from __future__ import annotations

import datetime
import enum
import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version

from builders.base.errors import Location, SelectionError
from builders.matrix.compile_cache import CompileCache
from builders.matrix.family import Accelerator
from builders.matrix.findings import expand_env
from builders.matrix.promotion_policy import PromotionPolicy
from builders.matrix.release_channels import ChannelName, ReleaseChannel
from builders.matrix.runner_costs import RunnerCost
from builders.matrix.runpath import origin_entry
from builders.matrix.wheel_shape import PER_PYTHON, WheelShape

Pairs = tuple[tuple[str, str], ...]
NULL_VARIANT = "null"


class OS(enum.Enum):
    LINUX = "linux"
    WINDOWS = "windows"
    MACOS = "macos"


@dataclass(frozen=True, kw_only=True, order=True)
class PythonVersion:
    """A CPython release line; ``free_threaded`` is the ``t`` build (PEP 703)."""

    major: int
    minor: int
    free_threaded: bool = False

    @classmethod
    def parse(cls, text: str) -> PythonVersion:
        """``"3.14t"`` -> PythonVersion(3, 14, free_threaded=True)."""
        ft = text.endswith("t")
        major, minor = text.removesuffix("t").split(".")
        return cls(major=int(major), minor=int(minor), free_threaded=ft)

    @property
    def interpreter(self) -> str:
        """The wheel's python tag: ``cp314``."""
        return f"cp{self.major}{self.minor}"

    @property
    def abi(self) -> str:
        """The wheel's ABI tag and the target-id part: ``cp314t``."""
        return self.interpreter + ("t" if self.free_threaded else "")

    @property
    def release(self) -> str:
        """``3.14`` (no ``t``), for Requires-Python and interpreter lookup."""
        return f"{self.major}.{self.minor}"

    def __str__(self) -> str:
        return self.release + ("t" if self.free_threaded else "")


@dataclass(frozen=True, kw_only=True)
class Platform:
    name: str
    os: OS
    arch: str
    wheel_platform: str
    runner: str
    base_image: str | None = None
    deployment_target: str | None = None
    mps_min_macos: str | None = None  # checked at load against dropped MPS releases; nothing reads it after
    location: Location = field(compare=False, repr=False)

    @property
    def image_digest(self) -> str | None:
        """A tag can be moved to other content, a digest cannot, so a release builds only on digests."""
        _, at, digest = (self.base_image or "").partition("@")
        return digest if at else None


@dataclass(frozen=True, kw_only=True)
class ToolkitInstaller:
    """A vendor's offline installer (Windows), pinned by URL and sha256 (``${VAR}``: from the environment)."""

    url: str
    sha256: str
    root: str


@dataclass(frozen=True, kw_only=True)
class Toolkit:
    """How a variant's compiler toolchain is obtained (pinned pip requirements)."""

    requirements: tuple[str, ...] = ()
    index_url: str | None = None
    root: str | None = None
    system_repository: str | None = None
    system_packages: tuple[str, ...] = ()
    system_repository_key: str | None = None
    max_gcc: int | None = None
    windows_installer: ToolkitInstaller | None = None


@dataclass(frozen=True, kw_only=True)
class Variant:
    """One accelerator version: the unit that carries a local-version label."""

    accelerator: Accelerator
    version: str | None
    label: str
    notes: str = ""
    arch_lists: Pairs = ()
    toolkit: Toolkit = Toolkit()
    runtime_requirements: tuple[str, ...] = ()
    lib_providers: Pairs = ()
    system_libs: Pairs = ()  # library -> the system package that provides it (no pip requirement)
    # folders the runtime requirements install their libraries into, relative to site-packages (matrix.runpath)
    runtime_dirs: tuple[str, ...] = ()
    smoke_runners: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # PEP 825 properties of its variant wheel ("nvidia :: sm_arch :: 90_real"), placeholders filled, sorted;
    # none: the null variant
    properties: tuple[str, ...] = ()
    size_budgets: tuple[tuple[str, float], ...] = ()  # wheel_size_budget_mb (MiB) by platform name, "*": any other
    location: Location = field(compare=False, repr=False)

    def size_budget(self, platform: str) -> tuple[float, str] | None:
        """The variant's budget for ``platform`` (its own entry, else ``*``) and the matrix key that sets it."""
        budgets = dict(self.size_budgets)
        for name in (platform, "*"):
            if name in budgets:
                where = "" if name == "*" and len(budgets) == 1 else f"[{name}]"
                return budgets[name], f"{self.location.key}.wheel_size_budget_mb{where}"
        return None

    @property
    def variant_label(self) -> str:
        """``null`` (PEP 825's reserved label) for the variant without properties."""
        return self.label if self.properties else NULL_VARIANT

    @property
    def rpath(self) -> tuple[str, ...]:
        """The RUNPATH entries an ELF file directly in ``site-packages/<pkg>/`` needs (what a build that sets its
        extension's RPATH itself may ask for through ``build.env.rpath``; repair gives every ELF its own)."""
        return tuple(e for e in (origin_entry("pkg", d) for d in self.runtime_dirs) if e is not None)

    def arch_list(self, platform: str) -> str | None:
        """The GPU arch list for ``platform`` (``*`` is the all-platform default)."""
        lists = dict(self.arch_lists)
        return lists.get(platform, lists.get("*"))

    def smoke_runner(self, platform: str) -> tuple[str, ...] | None:
        return dict(self.smoke_runners).get(platform)

    def toolkit_url(self, name: str, env: Mapping[str, str]) -> str:
        """An unset ``${VAR}`` is an error naming this variant's ``file:line``."""
        where = self.location
        return expand_env(getattr(self.toolkit, name), env, key=f"{where}: {where.key}.toolkit.{name}")

    def runtime_indexes(self, env: Mapping[str, str]) -> tuple[str, ...]:
        """Extra indexes for runtime requirements no default index has (TheRock's for ``rocm[libraries]``)."""
        url = self.toolkit_url("index_url", env)
        return (url,) if url else ()

    @cached_property
    def requirements(self) -> tuple[Requirement, ...]:
        """The variant's own runtime requirements (the accelerator's runtime wheels), parsed once."""
        return tuple(Requirement(r) for r in self.runtime_requirements)

    @property
    def exclude_libs(self) -> frozenset[str]:
        """Library names (or globs) that are never bundled: a runtime requirement or a system package provides them."""
        return frozenset(lib for lib, _ in (*self.lib_providers, *self.system_libs))

    def system_package_for(self, library: str) -> str | None:
        """The system package declared to provide ``library`` (first matching glob of ``system_libs``)."""
        return next((package for pattern, package in self.system_libs if fnmatch.fnmatchcase(library, pattern)), None)

    def provider_for(self, library: str) -> Requirement | None:
        """The requirement declared to provide ``library`` (first matching glob)."""
        for pattern, requirement in self.lib_providers:
            if fnmatch.fnmatchcase(library, pattern):
                return Requirement(requirement)
        return None


@dataclass(frozen=True, kw_only=True)
class Exclusion:
    pattern: str
    reason: str
    location: Location = field(compare=False, repr=False)


class DroppedKind(enum.Enum):
    PYTHON = "python"
    MPS_MACOS = "mps-macos"
    CXX_STANDARD = "cxx_standard"


@dataclass(frozen=True, kw_only=True)
class Dropped:
    """Something this release no longer supports, enforced wherever it is asked for."""

    kind: DroppedKind
    value: str
    since: str
    reason: str
    location: Location = field(compare=False, repr=False)

    def describe(self) -> str:
        what = {
            DroppedKind.PYTHON: f"Python {self.value}",
            DroppedKind.MPS_MACOS: f"MPS acceleration on macOS {self.value}",
            DroppedKind.CXX_STANDARD: f"C++{self.value}",
        }[self.kind]
        return f"{what} was dropped in {self.since}: {self.reason}"


@dataclass(frozen=True, kw_only=True)
class Channels:
    """``channels``: where the release lifecycle publishes (:mod:`builders.matrix.release_channels`).

    ``pypi`` and ``index_layout`` are the release channel's (its PyPI default variant per platform, its
    per-variant indexes); ``lifecycle`` holds every declared channel, release first; ``promotion`` is what
    ``promote-release`` holds a release to (:mod:`builders.matrix.promotion_policy`).
    """

    pypi: Pairs
    index_base_url: str
    index_layout: str
    lifecycle: tuple[ReleaseChannel, ...] = ()
    promotion: PromotionPolicy = field(default_factory=PromotionPolicy)

    def pypi_label(self, platform: str) -> str | None:
        """The variant label published without a label on PyPI for ``platform``."""
        return dict(self.pypi).get(platform)

    def index_path(self, label: str) -> str:
        return self.index_layout.format(label=label)

    def published_at(self, channel: ChannelName, label: str, *, on_pypi: bool) -> tuple[str, ...]:
        """Where ``channel`` publishes a ``label`` wheel: on release its index, and PyPI for the platform's
        default; on a pre-release channel its own index only (never PyPI)."""
        if channel is ChannelName.RELEASE:
            return ("pypi", self.index_path(label)) if on_pypi else (self.index_path(label),)
        return (self.channel(channel).index_path(label),)

    def channel(self, name: ChannelName | str) -> ReleaseChannel:
        """The declared channel ``name``; KeyError names the declared ones."""
        wanted = ChannelName(name)
        found = next((c for c in self.lifecycle if c.name is wanted), None)
        if found is None:
            raise KeyError(f"the matrix declares no {wanted.value} channel (declared: "
                           f"{', '.join(c.name.value for c in self.lifecycle)})")
        return found

    def index_url(self, channel: ReleaseChannel, label: str) -> str:
        return self.index_base_url + channel.index_path(label)


@dataclass(frozen=True, kw_only=True)
class VariantProvider:
    """A PEP 825 provider plugin: what tells an installer which properties of ``namespace`` the machine has."""

    namespace: str
    requires: tuple[str, ...]
    plugin_api: str
    optional: bool = False


@dataclass(frozen=True, kw_only=True)
class WheelVariants:
    """``wheel_variants``: the variant-enabled index beside the per-label ones (PEP 825)."""

    layout: str  # relative folder of the variant index, e.g. "variants/"
    priorities: tuple[str, ...]  # namespaces, most preferred first
    providers: tuple[VariantProvider, ...]  # in priority order
    location: Location = field(compare=False, repr=False)


@dataclass(frozen=True, kw_only=True)
class Timeouts:
    """Seconds each stage's commands may run (``project.timeouts``; every key optional).

    The smoke probe's own limit is ``smoke.timeout``; ``install`` bounds the smoke test's venv
    and the installation of the wheel with its requirements.
    """

    provision: float = 3600.0
    build: float = 3600.0
    repair: float = 1800.0
    install: float = 1800.0
    # stage -> (family name or variant label, seconds): ``build: {default: 3600, cuda: 36000}``
    per_variant: tuple[tuple[str, tuple[tuple[str, float], ...]], ...] = ()

    def limit(self, stage: str, variant: Variant) -> tuple[float, str]:
        """The seconds ``stage`` may run for ``variant`` and the matrix key that says so (its label's entry,
        then its family's, then the stage's default)."""
        table = dict(dict(self.per_variant).get(stage, ()))
        for key in (variant.label, variant.accelerator.value):
            if key in table:
                return table[key], f"project.timeouts.{stage}[{key}]"
        return getattr(self, stage), f"project.timeouts.{stage}" + ("[default]" if table else "")


@dataclass(frozen=True, kw_only=True)
class ExtensionModule:
    """An ``extension_modules`` entry with conditions: a module that exists only on some platforms or Pythons
    (``platforms``, ``pythons``), or that imports only with an extra installed (``extra``: it must be in the
    wheel, and is not imported in the bare venv)."""

    module: str
    extra: str | None = None
    platforms: tuple[str, ...] = ()  # empty: every platform
    pythons: SpecifierSet | None = None  # None: every Python (compared as "3.12")


@dataclass(frozen=True, kw_only=True)
class SbomComponent:
    """Code a wheel holds that no file of it shows (linked statically, vendored): ``project.sbom_components``,
    listed in every wheel's SBOM."""

    name: str
    version: str
    purl: str | None = None
    license: str | None = None  # an SPDX expression


@dataclass(frozen=True, kw_only=True)
class Project:
    name: str
    import_name: str
    version: Version
    released: str | None
    source: Path
    requires_python: SpecifierSet
    cxx_standard: int | None
    wheel_size_budget_mb: float | None
    build_command: tuple[str, ...]
    build_env: Pairs
    # build.core: argv lists run once per (variant, platform); empty = no core step.
    core_commands: tuple[tuple[str, ...], ...] = ()
    # build.environment_pass: host variables every build (and core) gets, wherever it runs.
    environment_pass: tuple[str, ...] = ()
    # build.variables: constant variables every build (and core) gets, wherever it runs.
    build_variables: Pairs = ()
    # build.variant_variables: per accelerator family (cuda) or variant label (cu132), over build.variables;
    # values may hold the variant's facts as {placeholders} (builders.pipeline.plan.variable_values).
    variant_variables: tuple[tuple[str, Pairs], ...] = ()
    # build.exclude: root-relative globs the private copy and the digest leave out (None: not declared).
    source_exclude: tuple[str, ...] | None = None
    dependencies: tuple[str, ...] = ()
    # Whether the matrix lists dependencies (or optional_dependencies) at all: then a wheel's own
    # Requires-Dist is checked against them; else the build's own list stands (the variant's is added).
    declares_requirements: bool = True
    optional_dependencies: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # Where the matrix writes them (``project.dependencies``, else ``project.optional_dependencies``): a source
    # whose own metadata differs is reported there.
    requirements_location: Location | None = field(default=None, compare=False, repr=False)
    extension_modules: tuple[str, ...] = ()  # in every wheel, and imported in a bare venv
    conditional_modules: tuple[ExtensionModule, ...] = ()  # the entries with an extra, platforms or pythons
    smoke_script: Path | None = None
    smoke_timeout: float = 300.0
    timeouts: Timeouts = Timeouts()
    packages: tuple[str, ...] = ()  # top-level packages the wheel installs besides import_name
    # project.wheel_shape: one wheel per Python (default), or one per (variant, platform) for every Python
    wheel_shape: WheelShape = PER_PYTHON
    sbom_components: tuple[SbomComponent, ...] = ()

    @property
    def top_level(self) -> frozenset[str]:
        """The names the wheel may install at the top of site-packages: import_name's, ``packages``, and each
        extension module's top-level package."""
        modules = (*self.extension_modules, *(m.module for m in self.conditional_modules))
        return frozenset({self.import_name.split(".")[0], *self.packages, *(m.split(".")[0] for m in modules)})

    @property
    def canonical_name(self) -> NormalizedName:
        """The PEP 503 form every comparison of distribution names uses."""
        return canonicalize_name(self.name)

    @property
    def build_env_names(self) -> frozenset[str]:
        """The environment variables through which the project receives build settings (its constants too)."""
        per_variant = {name for _, table in self.variant_variables for name, _ in table}
        return frozenset({*(var for _, var in self.build_env), *(name for name, _ in self.build_variables), *per_variant})

    def variables_for(self, family: str, label: str) -> dict[str, str]:
        """The build variables of one variant, placeholders unfilled: build.variables, then the family's
        entry of build.variant_variables, then the variant label's (the most specific wins)."""
        tables = dict(self.variant_variables)
        return {**dict(self.build_variables), **dict(tables.get(family, ())), **dict(tables.get(label, ()))}

    @property
    def core_dir_var(self) -> str | None:
        """The variable through which the per-Python build finds the installed core (``build.env.core_dir``)."""
        return dict(self.build_env).get("core_dir")

    @cached_property
    def requirements(self) -> tuple[Requirement, ...]:
        """Requires-Dist common to every variant: dependencies, then each extra's, marked."""
        base = [Requirement(r) for r in self.dependencies]
        extras = [with_extra(Requirement(r), extra) for extra, reqs in self.optional_dependencies for r in reqs]
        return (*base, *extras)


def with_extra(req: Requirement, extra: str) -> Requirement:
    """``req`` guarded by ``extra == "<extra>"``, keeping any marker it already has."""
    guard = f'extra == "{extra}"'
    marker = f"({req.marker}) and {guard}" if req.marker else guard
    req = Requirement(str(req))
    req.marker = None
    return Requirement(f"{req}; {marker}")


@dataclass(frozen=True, kw_only=True)
class Matrix:
    """The whole validated release matrix."""

    path: Path
    project: Project
    pythons: tuple[PythonVersion, ...]
    platforms: tuple[Platform, ...]
    variants: tuple[Variant, ...]
    channels: Channels
    exclusions: tuple[Exclusion, ...]
    dropped: tuple[Dropped, ...]
    wheel_variants: WheelVariants | None = None
    compile_cache: CompileCache | None = None  # None: each machine's local ccache only
    channel: ChannelName = ChannelName.RELEASE  # whose builds it describes (:meth:`on_channel`)
    runner_costs: tuple[RunnerCost, ...] = ()  # self-hosted runners' prices (plan --rehearse)

    def platform(self, name: str) -> Platform:
        return next(p for p in self.platforms if p.name == name)

    def variant(self, label: str) -> Variant:
        return next(v for v in self.variants if v.label == label)

    def declared_channel(self, name: ChannelName | str) -> ReleaseChannel:
        """The channel ``name``, which a command asked for: one this matrix does not declare is the user's
        error, naming the declared ones and this file."""
        try:
            return self.channels.channel(name)
        except KeyError as exc:
            raise SelectionError(f"{exc.args[0]} in {self.path}") from None

    def on_channel(self, name: ChannelName | str, commit_date: datetime.date | None = None) -> Matrix:
        """The channel's version (a nightly's dev release of ``commit_date``), so every wheel name follows."""
        channel = self.channels.channel(name)
        version = channel.version(self.project.version, commit_date)
        return replace(self, project=replace(self.project, version=version), channel=channel.name)
