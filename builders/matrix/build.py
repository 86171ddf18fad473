"""The one pass over ``matrix.yaml`` after the schema: every mapping is visited once, into the
keyed values of :mod:`builders.matrix.draft`; each variant is merged once (:func:`draft.overlay`);
and, once the rules have accepted them, the same values become the frozen model
(:func:`assemble`).

This module is the only reader of the parsed YAML. It trusts nothing the schema refused (the
``bad`` key paths of :func:`builders.matrix.schema.check_schema`): those values are left out, so
that the rules still run on whatever else parsed.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from builders.base.errors import Location
from builders.base.yamlmarks import Marks
from builders.matrix import compile_cache, promotion_policy, release_channels, runner_costs
from builders.matrix.draft import (
    At,
    ChannelsDraft,
    Draft,
    FamilyDraft,
    Items,
    KeyPath,
    Level,
    LifecycleDraft,
    PlatformDraft,
    ProjectDraft,
    Section,
    VariantDraft,
    WheelVariantsDraft,
    overlay,
    plain,
    value_of,
)
from builders.matrix.family import Accelerator
from builders.matrix.findings import DEFAULT_RUNNERS, default_base_image
from builders.matrix.model import (
    OS,
    Channels,
    Dropped,
    DroppedKind,
    Exclusion,
    ExtensionModule,
    Matrix,
    Pairs,
    Platform,
    Project,
    PythonVersion,
    SbomComponent,
    Timeouts,
    Toolkit,
    ToolkitInstaller,
    Variant,
    VariantProvider,
    WheelVariants,
)
from builders.matrix.properties import arch_entries, expand_properties
from builders.matrix.release_channels import ChannelName
from builders.matrix.runpath import runtime_dirs_of
from builders.matrix.wheel_shape import PER_PYTHON, WheelShape


class RawMapping:
    """One mapping of the parsed YAML, visited once: a copy of its entries, and the schema's refusals."""

    def __init__(self, mapping: Mapping[str, Any], key: KeyPath, bad: Collection[KeyPath]) -> None:
        self.key = key
        self.bad = bad
        self.entries = dict(mapping.items())  # the one visit of this mapping

    def names(self) -> list[str]:
        """Every key, refused or not."""
        return list(self.entries)

    def refused(self, name: str) -> bool:
        return (*self.key, name) in self.bad

    def raw(self, name: str, kind: type | tuple[type, ...] = object) -> Any:
        """The value of ``name`` unless refused or not a ``kind`` (a bool is not an int)."""
        return None if self.refused(name) else of_kind(self.entries.get(name), kind)

    def at(self, name: str, kind: type | tuple[type, ...] = object) -> At[Any] | None:
        value = self.raw(name, kind)
        return None if value is None else At(value, (*self.key, name))

    def node(self, name: str) -> RawMapping | None:
        value = self.raw(name, dict)
        return None if value is None else RawMapping(value, (*self.key, name), self.bad)

    def children(self) -> list[tuple[str, Any]]:
        """The entries the schema accepted, as read values."""
        read = ((name, read_value(value, (*self.key, name), self.bad))
                for name, value in self.entries.items() if not self.refused(name))
        return [(name, value) for name, value in read if value is not None]

    def table(self, name: str) -> Section | None:
        node = self.node(name)
        return None if node is None else Section(key=node.key, entries=tuple(node.children()))

    def items(self, name: str) -> Items | None:
        value = self.raw(name, list)
        return None if value is None else read_list(value, (*self.key, name), self.bad)

    def value(self, name: str) -> At[Any] | Items | Section | None:
        return None if self.refused(name) or name not in self.entries else read_value(
            self.entries[name], (*self.key, name), self.bad)


def of_kind(value: Any, kind: type | tuple[type, ...]) -> Any:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and int in kinds and bool not in kinds):
        return None
    return value


def read_value(value: Any, key: KeyPath, bad: Collection[KeyPath]) -> At[Any] | Items | Section | None:
    if value is None:
        return None
    if isinstance(value, dict):
        node = RawMapping(value, key, bad)
        return Section(key=key, entries=tuple(node.children()))
    if isinstance(value, list):
        return read_list(value, key, bad)
    return At(value, key)


def read_list(value: list[Any], key: KeyPath, bad: Collection[KeyPath]) -> Items:
    entries = (read_value(v, (*key, i), bad) for i, v in enumerate(value) if (*key, i) not in bad)
    return Items(key=key, entries=tuple(e for e in entries if e is not None))


# --- the one pass -------------------------------------------------------------------------------


def read(data: Any, bad: Collection[KeyPath], marks: Marks, families: Mapping[str, Accelerator]) -> Draft:
    """Everything in ``data`` the schema did not refuse, each value with its key; each mapping visited once
    (``families``: those the loader was given, by name)."""
    root = RawMapping(data, (), bad) if isinstance(data, dict) else RawMapping({}, (), bad)
    platforms = root.node("platforms")
    accelerators = root.node("accelerators")
    drafts, complete = read_families(accelerators, families)
    pythons = root.raw("pythons", list)
    return Draft(
        dropped=read_dropped(root.items("dropped"), marks), project=read_project(root.node("project")),
        pythons=root.items("pythons"), pythons_listed=len(pythons) if pythons is not None else 0,
        platforms=read_platforms(platforms), platform_names=platforms.names() if platforms else None,
        families=drafts, accelerators_complete=complete, wheel_variants=read_wheel_variants(root.node("wheel_variants")),
        exclusions=read_exclusions(root.items("exclude"), marks), channels=read_channels(root.node("channels")),
        compile_cache=root.table(compile_cache.KEY), runner_costs=root.table(runner_costs.KEY),
    )


def read_dropped(entries: Items | None, marks: Marks) -> tuple[Dropped, ...]:
    out = []
    for entry in entries.entries if entries else ():
        if not isinstance(entry, Section):
            continue
        fields = entry.plain()
        kind, value = dropped_kind(fields)
        since, reason = value_of(entry.text("since")), value_of(entry.text("reason"))
        if kind is not None and since is not None and reason is not None:
            out.append(Dropped(kind=kind, value=value, since=since, reason=reason, location=marks.at(entry.key)))
    return tuple(out)


def dropped_kind(entry: Mapping[str, Any]) -> tuple[DroppedKind | None, str]:
    """What a ``dropped`` entry drops (the schema's oneOf: a Python, MPS on a macOS, a C++ standard)."""
    if isinstance(entry.get("python"), str):
        return DroppedKind.PYTHON, entry["python"]
    if entry.get("feature") == "mps" and isinstance(entry.get("macos"), str):
        return DroppedKind.MPS_MACOS, entry["macos"]
    if isinstance(entry.get("cxx_standard"), int) and not isinstance(entry["cxx_standard"], bool):
        return DroppedKind.CXX_STANDARD, str(entry["cxx_standard"])
    return None, ""


def read_project(node: RawMapping | None) -> ProjectDraft | None:
    if node is None:
        return None
    build, smoke = node.node("build"), node.node("smoke")
    core = build.value("core") if build else None
    commands = core.get("commands") if isinstance(core, Section) else None
    return ProjectDraft(
        name=node.raw("name", str), import_name=node.raw("import_name", str), version=node.at("version", str),
        released=node.at("released", str), source=node.at("source", str),
        requires_python=node.at("requires_python", str), cxx_standard=node.at("cxx_standard", int),
        wheel_size_budget_mb=node.at("wheel_size_budget_mb", (int, str)),
        build_command=build.items("command") if build else None, build_env=build.table("env") if build else None,
        core=core, core_commands=commands if isinstance(commands, Items) else None,
        environment_pass=build.items("environment_pass") if build else None,
        build_variables=build.table("variables") if build else None,
        variant_variables=build.table("variant_variables") if build else None,
        exclude=build.items("exclude") if build else None,
        dependencies=node.items("dependencies"), optional_dependencies=node.table("optional_dependencies"),
        extension_modules=node.items("extension_modules"),
        smoke_script=smoke.at("script", str) if smoke else None,
        smoke_timeout=smoke.at("timeout", (int, str)) if smoke else None, timeouts=node.table("timeouts"),
        packages=node.items("packages"),
        wheel_shape=node.at("wheel_shape", str), sbom_components=node.items("sbom_components"),
    )


def read_platforms(node: RawMapping | None) -> tuple[PlatformDraft, ...]:
    out = []
    for name in node.names() if node else ():
        entry = node.node(name) if node else None
        if entry is not None:
            out.append(PlatformDraft(
                name=name, key=entry.key, os=entry.raw("os", str), arch=entry.raw("arch", str),
                wheel_platform=entry.at("wheel_platform", str), runner=entry.raw("runner", str),
                base_image=entry.at("base_image", str), deployment_target=entry.at("deployment_target"),
                mps_min_macos=entry.at("mps_min_macos")))
    return tuple(out)


def read_families(node: RawMapping | None, known: Mapping[str, Accelerator]) -> tuple[tuple[FamilyDraft, ...], bool]:
    """Every family under ``accelerators`` (each one of ``known``: the schema refused any other), and whether
    all were readable."""
    if node is None:
        return (), False
    out, complete = [], True
    for name in node.names():
        family = node.node(name)
        if family is None:
            complete = complete and node.refused(name)
            continue
        out.append(read_family(known[name], family))
    return tuple(out), complete


def read_family(accel: Accelerator, node: RawMapping) -> FamilyDraft:
    defaults = read_level(node)
    versions = node.node("versions")
    if versions is None:
        refused = node.refused("versions") or node.raw("versions") is not None
        variants = () if refused else (VariantDraft(accelerator=accel, version=None, levels=(defaults,), merged=defaults),)
        return FamilyDraft(accelerator=accel, defaults=defaults, variants=variants, versioned=refused, complete=not refused)
    out, complete = [], True
    for version in versions.names():
        own = versions.node(version)
        if own is None:
            complete = False
            continue
        level = read_level(own)
        out.append(VariantDraft(accelerator=accel, version=version, levels=(defaults, level),
                                merged=overlay(defaults, level)))
    return FamilyDraft(accelerator=accel, defaults=defaults, variants=tuple(out), versioned=True, complete=complete)


def read_level(node: RawMapping) -> Level:
    """A family's defaults or a version's own keys (``versions`` is not one of them)."""
    arch = node.raw("arch_list", (str, dict))
    budget = node.raw("wheel_size_budget_mb", (int, str, dict))
    return Level(
        key=node.key, label=node.at("label", str), notes=node.at("notes", str),
        arch_list=node.at("arch_list") if isinstance(arch, str) else node.table("arch_list") if arch is not None else None,
        toolkit=node.table("toolkit"), runtime_requirements=node.items("runtime_requirements"),
        exclude_libs=node.table("exclude_libs"), system_libs=node.table("system_libs"), rpath=node.items("rpath"),
        runtime_dirs=node.items("runtime_dirs"),
        smoke_runners=node.table("smoke_runners"), variant_properties=node.items("variant_properties"),
        wheel_size_budget_mb=node.table("wheel_size_budget_mb") if isinstance(budget, dict)
        else node.at("wheel_size_budget_mb", (int, str)) if budget is not None else None,
        refused=frozenset(name for name in node.names() if node.refused(name)),
    )


def read_wheel_variants(node: RawMapping | None) -> WheelVariantsDraft | None:
    if node is None:
        return None
    return WheelVariantsDraft(key=node.key, layout=node.at("layout", str), providers=node.table("providers"),
                              priorities=node.items("priorities"))


def read_exclusions(entries: Items | None, marks: Marks) -> tuple[At[Exclusion], ...]:
    out = []
    for entry in entries.entries if entries else ():
        if isinstance(entry, Section):
            targets, reason = entry.text("targets"), entry.text("reason")
            if targets is not None and reason is not None:
                excl = Exclusion(pattern=targets.value, reason=reason.value, location=marks.at(entry.key))
                out.append(At(excl, entry.key))
    return tuple(out)


def read_channels(node: RawMapping | None) -> ChannelsDraft | None:
    if node is None:
        return None
    index = node.node("index")
    return ChannelsDraft(pypi=node.table("pypi"), base_url=index.at("base_url", str) if index else None,
                         layout=index.at("layout", str) if index else None, lifecycle=read_lifecycle(node),
                         promotion=node.table(promotion_policy.KEY))


def read_lifecycle(node: RawMapping) -> tuple[LifecycleDraft, ...]:
    """The pre-release channels declared under ``channels`` (test, nightly), in that order."""
    out = []
    for name in (c.value for c in release_channels.PRE_RELEASE_ORDER):
        entry = node.node(name)
        if entry is not None:
            out.append(LifecycleDraft(name=name, key=entry.key, layout=entry.at("layout", str),
                                      keep=entry.at("keep", int), base_version=entry.at("base_version", str)))
    return tuple(out)


# --- the model, from values every rule accepted --------------------------------------------------


def assemble(draft: Draft, marks: Marks, path: Path, source: Path | None) -> Matrix:
    """The frozen model of a draft with no problem (every required value is there)."""
    assert draft.project is not None and draft.pythons is not None and draft.channels is not None
    gone = {d.value for d in draft.dropped if d.kind is DroppedKind.PYTHON}
    return Matrix(
        path=path, project=project(draft.project, path, source, marks),
        pythons=tuple(PythonVersion.parse(e.value) for e in draft.pythons.strings() if e.value not in gone),
        platforms=tuple(platform(p, marks) for p in draft.platforms),
        variants=tuple(variant(v, marks) for v in draft.variants), channels=channels(draft.channels, marks),
        exclusions=tuple(e.value for e in draft.exclusions), dropped=draft.dropped,
        wheel_variants=wheel_variants(draft.wheel_variants, marks) if draft.wheel_variants else None,
        compile_cache=compile_cache.parse(plain(draft.compile_cache), marks.at(draft.compile_cache.key))
        if draft.compile_cache else None,
        runner_costs=runner_costs.parse(plain(draft.runner_costs)) if draft.runner_costs else (),
    )


def project(p: ProjectDraft, path: Path, source: Path | None, marks: Marks | None = None) -> Project:
    assert p.name is not None and p.import_name is not None and p.version and p.requires_python and p.source
    script = value_of(p.smoke_script)
    return Project(
        name=p.name, import_name=p.import_name, version=Version(p.version.value), released=value_of(p.released),
        source=source if source is not None else path.parent / p.source.value,
        requires_python=SpecifierSet(p.requires_python.value), cxx_standard=value_of(p.cxx_standard),
        wheel_size_budget_mb=float(p.wheel_size_budget_mb.value) if p.wheel_size_budget_mb else None,
        build_command=plain(p.build_command) or (), build_env=tuple(sorted(plain(p.build_env).items()) if p.build_env else ()),
        core_commands=plain(p.core_commands) or (), environment_pass=plain(p.environment_pass) or (),
        dependencies=plain(p.dependencies) or (),
        optional_dependencies=tuple(plain(p.optional_dependencies).items()) if p.optional_dependencies else (),
        build_variables=tuple(sorted(plain(p.build_variables).items())) if p.build_variables else (),
        variant_variables=variant_variables(plain(p.variant_variables) or {}),
        source_exclude=tuple(plain(p.exclude)) if p.exclude is not None else None,
        declares_requirements=p.dependencies is not None or p.optional_dependencies is not None,
        requirements_location=requirements_location(p, marks),
        extension_modules=tuple(m for m in plain(p.extension_modules) or () if isinstance(m, str)),
        conditional_modules=conditional_modules(plain(p.extension_modules) or ()),
        smoke_script=(path.parent / script).resolve() if script is not None else None,
        smoke_timeout=float(p.smoke_timeout.value) if p.smoke_timeout else 300.0,
        timeouts=timeouts(plain(p.timeouts) or {}),
        packages=plain(p.packages) or (),
        wheel_shape=WheelShape.parse(p.wheel_shape.value) if p.wheel_shape else PER_PYTHON,
        sbom_components=sbom_components(plain(p.sbom_components) or ()),
    )


def sbom_components(raw: Iterable[Any]) -> tuple[SbomComponent, ...]:
    """``project.sbom_components`` (the schema has checked each entry's keys), sorted by name and version."""
    out = [SbomComponent(name=e["name"], version=str(e["version"]), purl=e.get("purl"), license=e.get("license"))
           for e in raw if isinstance(e, Mapping) and isinstance(e.get("name"), str) and "version" in e]
    return tuple(sorted(out, key=lambda c: (c.name, c.version)))


def variant_variables(raw: dict[str, dict[str, str]]) -> tuple[tuple[str, Pairs], ...]:
    """``build.variant_variables``: (family or variant label, its variables), each sorted."""
    return tuple(sorted((key, tuple(sorted(table.items()))) for key, table in raw.items()))


def timeouts(raw: Mapping[str, Any]) -> Timeouts:
    """``project.timeouts``: each stage a number, or (``build``, ``repair``) a mapping of ``default`` and family
    names or variant labels to numbers."""
    plain_values = {k: float(v) for k, v in raw.items() if not isinstance(v, Mapping)}
    tables = {k: v for k, v in raw.items() if isinstance(v, Mapping)}
    defaults = {k: float(v["default"]) for k, v in tables.items() if "default" in v}
    per_variant = tuple(sorted((k, tuple(sorted((n, float(x)) for n, x in v.items() if n != "default")))
                               for k, v in tables.items()))
    return Timeouts(**plain_values, **defaults, per_variant=per_variant)


def requirements_location(p: ProjectDraft, marks: Marks | None) -> Location | None:
    """Where the matrix declares the project's requirements: ``dependencies``, else ``optional_dependencies``."""
    written = p.dependencies or p.optional_dependencies
    return marks.at(written.key) if marks is not None and written is not None else None


def platform(p: PlatformDraft, marks: Marks) -> Platform:
    assert p.os is not None and p.arch is not None and p.wheel_platform is not None
    return Platform(name=p.name, os=OS(p.os), arch=p.arch, wheel_platform=p.wheel_platform.value,
                    runner=p.runner or DEFAULT_RUNNERS[(p.os, p.arch)],
                    base_image=value_of(p.base_image) or default_base_image(p.wheel_platform.value),
                    deployment_target=value_of(p.deployment_target),
                    mps_min_macos=value_of(p.mps_min_macos), location=marks.at(p.key))


def conditional_modules(entries: tuple[Any, ...]) -> tuple[ExtensionModule, ...]:
    """The ``extension_modules`` entries with an extra, platforms or pythons (checked by ``findings.module_problem``)."""
    return tuple(ExtensionModule(module=e["module"], extra=e.get("extra"), platforms=tuple(e.get("platforms", ())),
                                 pythons=SpecifierSet(e["pythons"]) if "pythons" in e else None)
                 for e in entries if isinstance(e, dict))


def variant(v: VariantDraft, marks: Marks) -> Variant:
    m = v.merged
    assert m.label is not None
    arch_lists = tuple(v.arch_lists())
    return Variant(
        accelerator=v.accelerator, version=v.version, label=m.label.value, notes=value_of(m.notes) or "",
        arch_lists=arch_lists, toolkit=toolkit(plain(m.toolkit) or {}),
        runtime_requirements=plain(m.runtime_requirements) or (),
        lib_providers=tuple(sorted((plain(m.exclude_libs) or {}).items())),
        system_libs=tuple(sorted((plain(m.system_libs) or {}).items())),
        runtime_dirs=runtime_dirs_of(plain(m.runtime_dirs) or (), plain(m.rpath) or ()),
        smoke_runners=tuple(sorted((plain(m.smoke_runners) or {}).items())),
        size_budgets=size_budgets(m.wheel_size_budget_mb),
        properties=tuple(expand_properties(plain(m.variant_properties) or (), accel=v.accelerator, version=v.version,
                                           arches=arch_entries(arch_lists))),
        location=marks.at(v.key),
    )


def size_budgets(node: At[Any] | Section | None) -> tuple[tuple[str, float], ...]:
    """A variant's ``wheel_size_budget_mb`` by platform (``*``: every platform), sorted."""
    raw = plain(node) if isinstance(node, Section) else {"*": node.value} if node is not None else {}
    return tuple(sorted((name, float(mb)) for name, mb in raw.items()))


def toolkit(raw: dict[str, Any]) -> Toolkit:
    return Toolkit(requirements=raw.get("requirements", ()), index_url=raw.get("index_url"), root=raw.get("root"),
                   system_repository=raw.get("system_repository"), system_packages=raw.get("system_packages", ()),
                   system_repository_key=raw.get("system_repository_key"), max_gcc=raw.get("max_gcc"),
                   windows_installer=installer(raw.get("windows_installer")))


def installer(raw: Any) -> ToolkitInstaller | None:
    """``toolkit.windows_installer`` as the model's :class:`ToolkitInstaller`; absent (or refused by the schema,
    so a key of it is missing) it is none."""
    keys = ("url", "sha256", "root")
    if not isinstance(raw, dict) or not all(isinstance(raw.get(k), str) for k in keys):
        return None
    return ToolkitInstaller(url=raw["url"], sha256=raw["sha256"], root=raw["root"])


def channels(c: ChannelsDraft, marks: Marks) -> Channels:
    assert c.base_url is not None and c.layout is not None
    release = release_channels.release_channel(c.layout.value, location=marks.at(("channels", "index")))
    lifecycle = tuple(release_channels.pre_release_channel(
        ChannelName(d.name), layout=d.layout.value, keep=value_of(d.keep), base_version=value_of(d.base_version),
        location=marks.at(d.key)) for d in c.lifecycle if d.layout is not None)
    return Channels(pypi=tuple(sorted(plain(c.pypi).items())) if c.pypi else (), index_base_url=c.base_url.value,
                    index_layout=c.layout.value, lifecycle=(release, *lifecycle),
                    promotion=promotion_policy.parse(plain(c.promotion), ("channels", promotion_policy.KEY), marks.at))


def wheel_variants(w: WheelVariantsDraft, marks: Marks) -> WheelVariants:
    assert w.layout is not None and w.providers is not None and w.priorities is not None
    raw = plain(w.providers)
    priorities = tuple(plain(w.priorities))
    providers = {name: VariantProvider(namespace=name, requires=tuple(p["requires"]), plugin_api=p["plugin_api"],
                                       optional=bool(p.get("optional", False))) for name, p in raw.items()}
    return WheelVariants(layout=w.layout.value, priorities=priorities,
                         providers=tuple(providers[name] for name in priorities), location=marks.at(w.key))
