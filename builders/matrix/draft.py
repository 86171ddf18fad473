"""What :mod:`builders.matrix.build` read of ``matrix.yaml``, each value with the key path it is
written at: the input of the semantic rules (:mod:`builders.matrix.rules`) and of the model.

The YAML is read once into these values; a value the schema refused, or one of the wrong type,
is left out (``None``, or missing from its :class:`Items` or :class:`Section`), and the name of a
refused key is kept in ``refused`` where a rule must tell "refused" from "absent". A variant's
values are merged once, by :func:`overlay` (family defaults, then the version's own keys; a
mapping merges one level down), and every merged value keeps the key of the level it came from,
so a rule on a merged variant reports at the line that wrote the value.

Adding a key to the matrix:

1. shape: declare it in ``builders/schema/matrix.schema.json`` (its ``description`` is the hint a
   wrong value gets);
2. read: a field here (``At`` for a scalar, ``Items`` for a list, ``Section`` for a mapping), or a
   new ``...Draft`` class and a field of :class:`Draft` for a new top-level section, read in
   :mod:`builders.matrix.build` (``read_<section>(root.node("<section>"))``, through the
   ``RawMapping`` methods only). A key of a variant is a :class:`Level` field and one line of
   ``read_level``: :func:`overlay` merges it with no change;
3. check: a pure ``*_problem`` function in :mod:`builders.matrix.findings` that returns a
   ``Violation``, applied to the read value in :mod:`builders.matrix.rules` (or
   :mod:`builders.matrix.variant_rules` for accelerators): ``self.check(draft.x.y, y_problem)``;
4. model: a frozen field or dataclass in :mod:`builders.matrix.model`, filled by ``build.assemble``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Generic, TypeVar

from builders.matrix.family import Accelerator
from builders.matrix.model import Dropped, Exclusion

KeyPath = tuple[str | int, ...]
T = TypeVar("T")


@dataclass(frozen=True)
class At(Generic[T]):
    """A scalar read from the matrix, and where it is written."""

    value: T
    key: KeyPath


@dataclass(frozen=True)
class Items:
    """A list read from the matrix: its accepted entries (scalars :class:`At`, lists :class:`Items`,
    mappings :class:`Section`), each with its own key."""

    key: KeyPath
    entries: tuple[Any, ...] = ()

    def strings(self) -> list[At[str]]:
        return [e for e in self.entries if isinstance(e, At) and isinstance(e.value, str)]

    def values(self) -> tuple[Any, ...]:
        """The entries as plain values (lists as tuples), for the model."""
        return tuple(plain(e) for e in self.entries)


@dataclass(frozen=True)
class Section:
    """A mapping read from the matrix: its accepted entries by name (values :class:`At`, :class:`Items`
    or :class:`Section`)."""

    key: KeyPath
    entries: tuple[tuple[str, Any], ...] = ()

    def get(self, name: str) -> Any:
        return dict(self.entries).get(name)

    def names(self) -> list[str]:
        return [name for name, _ in self.entries]

    def text(self, name: str) -> At[str] | None:
        """The entry ``name`` when it is a string."""
        value = self.get(name)
        return value if isinstance(value, At) and isinstance(value.value, str) else None

    def plain(self) -> dict[str, Any]:
        return {name: plain(value) for name, value in self.entries}


def plain(value: Any) -> Any:
    """A read value without its keys: a scalar, a tuple (a list) or a dict (a mapping)."""
    if isinstance(value, At):
        return value.value
    if isinstance(value, Items):
        return value.values()
    if isinstance(value, Section):
        return value.plain()
    return value


def value_of(value: Any) -> Any:
    return value.value if isinstance(value, At) else None


@dataclass(frozen=True, kw_only=True)
class Level:
    """One level of a family: its defaults (``accelerators.cuda``), a version's own keys
    (``accelerators.cuda.versions.13.2``), or the two merged."""

    key: KeyPath
    label: At[str] | None = None
    notes: At[str] | None = None
    arch_list: At[str] | Section | None = None  # one list for every platform, or one per platform
    toolkit: Section | None = None
    runtime_requirements: Items | None = None
    exclude_libs: Section | None = None
    system_libs: Section | None = None
    rpath: Items | None = None  # the older spelling of runtime_dirs: entries for an ELF in site-packages/<pkg>/
    runtime_dirs: Items | None = None
    smoke_runners: Section | None = None
    variant_properties: Items | None = None
    wheel_size_budget_mb: At[Any] | Section | None = None  # one for every platform, or one per platform ("*")
    refused: frozenset[str] = frozenset()  # own keys the schema refused (a merged level: of any level)


MERGED = tuple(f.name for f in fields(Level) if f.name not in ("key", "refused"))


def overlay(defaults: Level, own: Level) -> Level:
    """The one merge of a variant: a mapping in both merges one level down, anything else in ``own`` replaces."""
    merged = {name: _one_down(getattr(defaults, name), getattr(own, name)) for name in MERGED}
    return Level(key=own.key, refused=defaults.refused | own.refused, **merged)


def _one_down(base: Any, top: Any) -> Any:
    if top is None:
        return base
    if isinstance(top, Section) and isinstance(base, Section):
        return Section(key=top.key, entries=tuple({**dict(base.entries), **dict(top.entries)}.items()))
    return top


@dataclass(frozen=True, kw_only=True)
class VariantDraft:
    """One variant as read: its own levels (the family's, then the version's) and their merge."""

    accelerator: Accelerator
    version: str | None
    levels: tuple[Level, ...]
    merged: Level

    @property
    def key(self) -> KeyPath:
        return self.merged.key

    def arch_lists(self) -> list[tuple[str, str]]:
        """The merged arch lists by platform (``*``: every platform), sorted."""
        arch = self.merged.arch_list
        if isinstance(arch, At):
            return [("*", arch.value)]
        return sorted((name, value.value) for name, value in (arch.entries if arch else ())
                      if isinstance(value, At) and isinstance(value.value, str))


@dataclass(frozen=True, kw_only=True)
class FamilyDraft:
    """``accelerators.<family>``: its defaults and its variants; ``complete`` when every version was
    readable (a refused ``versions`` or version leaves the family without those variants)."""

    accelerator: Accelerator
    defaults: Level
    variants: tuple[VariantDraft, ...]
    versioned: bool
    complete: bool


@dataclass(frozen=True, kw_only=True)
class PlatformDraft:
    name: str
    key: KeyPath
    os: str | None
    arch: str | None
    wheel_platform: At[str] | None
    runner: str | None
    base_image: At[str] | None
    deployment_target: At[Any] | None
    mps_min_macos: At[Any] | None


@dataclass(frozen=True, kw_only=True)
class ProjectDraft:
    """``project``: what the rules check, with keys, and the rest for the model."""

    name: str | None
    import_name: str | None
    version: At[str] | None
    released: At[str] | None
    source: At[str] | None
    requires_python: At[str] | None
    cxx_standard: At[int] | None
    wheel_size_budget_mb: At[Any] | None
    build_command: Items | None
    build_env: Section | None
    core: At[Any] | Items | Section | None
    core_commands: Items | None
    environment_pass: Items | None
    build_variables: Section | None
    variant_variables: Section | None
    exclude: Items | None
    dependencies: Items | None
    optional_dependencies: Section | None
    extension_modules: Items | None
    smoke_script: At[str] | None
    smoke_timeout: At[Any] | None
    timeouts: Section | None
    packages: Items | None = None
    wheel_shape: At[str] | None = None
    sbom_components: Items | None = None


@dataclass(frozen=True, kw_only=True)
class WheelVariantsDraft:
    key: KeyPath
    layout: At[str] | None
    providers: Section | None
    priorities: Items | None


@dataclass(frozen=True, kw_only=True)
class LifecycleDraft:
    """``channels.test`` or ``channels.nightly``: a pre-release channel (:mod:`builders.matrix.release_channels`)."""

    name: str
    key: KeyPath
    layout: At[str] | None
    keep: At[int] | None = None
    base_version: At[str] | None = None


@dataclass(frozen=True, kw_only=True)
class ChannelsDraft:
    pypi: Section | None
    base_url: At[str] | None
    layout: At[str] | None
    lifecycle: tuple[LifecycleDraft, ...] = ()
    promotion: Section | None = None  # channels.promotion (builders.matrix.promotion_policy)


@dataclass(frozen=True, kw_only=True)
class Draft:
    """The whole matrix as read (``None``: a section absent or refused)."""

    dropped: tuple[Dropped, ...]
    project: ProjectDraft | None
    pythons: Items | None
    pythons_listed: int  # entries in the list, read or not
    platforms: tuple[PlatformDraft, ...]
    platform_names: list[str] | None  # every name under platforms (refused or not), None without the mapping
    families: tuple[FamilyDraft, ...]
    accelerators_complete: bool  # the mapping is there and every family in it was readable
    wheel_variants: WheelVariantsDraft | None
    exclusions: tuple[At[Exclusion], ...]
    channels: ChannelsDraft | None
    compile_cache: Section | None = None  # the shared compiler cache (its shape is all the schema's)
    runner_costs: Section | None = None  # what self-hosted runners cost (its shape is all the schema's)

    @property
    def variants(self) -> tuple[VariantDraft, ...]:
        return tuple(v for f in self.families for v in f.variants)
