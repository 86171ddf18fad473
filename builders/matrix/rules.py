"""The semantic rules, run over what :mod:`builders.matrix.build` read (:mod:`builders.matrix.draft`):
each value is checked where it is written, each variant on its merged values, then what spans the
matrix (labels, targets, channels, wheel variants). Every problem is kept, at its ``file:line:col``.

A rule whose input is missing or refused by the schema is skipped (the schema has said why).
The checks themselves are the small functions of :mod:`builders.matrix.findings`,
:mod:`builders.matrix.properties` and :mod:`builders.matrix.policy`; what this module adds is
which value each applies to. What they require of the matrix beyond its shape:

- ``pythons``: CPython minor versions ``3.N`` (``t`` for free-threaded, from 3.13 on) that
  ``requires_python`` admits, not dropped; at most :data:`MAX_TARGETS` candidate targets in all.
- ``build.command`` takes ``{python}``, ``{source}``, ``{outdir}``; ``build.core``'s commands take
  ``{source}``, ``{builddir}``, ``{coredir}`` and need ``build.env.core_dir``.
- paths (``project.source``, ``smoke.script``) are checked only for a command that uses them
  (``build`` and ``smoke``), and ``source`` not when ``--source`` gives it.
- labels are unique; a GPU family's variant lists its archs; each excluded library's provider is
  among the variant's runtime requirements; a platform's PyPI default is built there.
- wheel variants (PEP 825): with ``wheel_variants`` declared, each namespace has a provider there,
  ``priorities`` lists every provider once, and no two variants have the same property set.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.specifiers import SpecifierSet

from builders.base.arch import ARCHES
from builders.base.errors import Problem
from builders.base.yamlmarks import Marks
from builders.matrix.draft import (
    At,
    ChannelsDraft,
    Draft,
    FamilyDraft,
    Items,
    KeyPath,
    Level,
    PlatformDraft,
    ProjectDraft,
    Table,
    VariantDraft,
    WheelVariantsDraft,
)
from builders.matrix.family import Accelerator
from builders.matrix.findings import (
    LAYOUT_PLACEHOLDERS,
    Violation,
    arch_list_problem,
    arch_problem,
    base_image_problem,
    date_problem,
    layout_problem,
    next_minor,
    path_problem,
    placeholder_problem,
    platform_name_problem,
    positive_problem,
    provider_problem,
    req_name,
    requirement_problem,
    root_problem,
    rpath_problem,
    specifier_problem,
    suggest,
    url_problem,
    version_problem,
    wheel_platform_problem,
)
from builders.matrix.model import Dropped, DroppedKind, Exclusion, PythonVersion
from builders.matrix.policy import (
    dropped_admitted_by,
    dropped_python_problem,
    mps_problem,
    pypi_default_problem,
    python_problem,
)
from builders.matrix.properties import (
    arch_entries,
    expand_properties,
    property_problem,
    property_template_problem,
    variant_layout_problem,
)

MAX_TARGETS = 4_000  # candidate targets; a release of ~1,000 plans in about 0.4 s
BUILD_PLACEHOLDERS = ("python", "source", "outdir")
CORE_PLACEHOLDERS = ("source", "builddir", "coredir")
URL_KEYS = ("index_url", "system_repository", "system_repository_key")
Ids = dict[tuple[str, str], list[str]]


def check(draft: Draft, marks: Marks, *, base: Path, check_source: bool, check_script: bool) -> list[Problem]:
    """Every problem the rules find in ``draft`` (in the order found; the loader sorts them by place)."""
    rules = Rules(marks=marks, base=base, check_source=check_source, check_script=check_script)
    rules.run(draft)
    return rules.problems


@dataclass
class Rules:
    """Applies every rule to a draft, collecting problems with their places."""

    marks: Marks
    base: Path
    check_source: bool
    check_script: bool
    problems: list[Problem] = field(default_factory=list)
    # (label, its variant wheel's properties, where they are declared) of every variant that has them checked
    property_sets: list[tuple[str, frozenset[str], KeyPath]] = field(default_factory=list)
    told: set[KeyPath] = field(default_factory=set)

    def report(self, key: KeyPath, finding: Violation | None) -> None:
        if finding is not None:
            self.problems.append(Problem(message=finding.message, location=self.marks.at(key), hint=finding.hint,
                                         dropped=finding.dropped))

    def check(self, value: At[Any] | None, rule: Callable[..., Violation | None], *args: Any, **kwargs: Any) -> None:
        """Apply ``rule(value, *args)`` to a value that was read, at its place."""
        if value is not None:
            self.report(value.key, rule(value.value, *args, **kwargs))

    def run(self, draft: Draft) -> None:
        requires = self.project(draft.project, draft.dropped)
        pythons = self.pythons(draft, requires)
        platforms = draft.platform_names
        for p in draft.platforms:
            self.platform(p, draft.dropped)
        labels = self.accelerators(draft, platforms)
        self.wheel_variants(draft.wheel_variants)
        ids = None
        if pythons is not None and platforms is not None and labels is not None:
            ids = {(label, p): [_tid(label, py, p) for py in pythons] for label in labels for p in platforms}
            self.check_targets(ids, draft.exclusions)
        self.channels(draft.channels, platforms, labels, ids, draft.exclusions)

    # project

    def project(self, p: ProjectDraft | None, dropped: tuple[Dropped, ...]) -> SpecifierSet | None:
        if p is None:
            return None
        self.check(p.version, version_problem)
        self.check(p.released, date_problem)
        self.check(p.wheel_size_budget_mb, positive_problem)
        self.check(p.smoke_timeout, positive_problem)
        for part in p.build_command.strings() if p.build_command else ():
            self.report(part.key, placeholder_problem(part.value, BUILD_PLACEHOLDERS))
        self.core(p)
        if self.check_source:
            self.check(p.source, lambda text: path_problem(self.base, text, folder=True))
        if self.check_script:
            self.check(p.smoke_script, lambda text: path_problem(self.base, text, folder=False))
        self.requirements(p.dependencies)
        for _, reqs in p.optional_dependencies.entries if p.optional_dependencies else ():
            self.requirements(reqs if isinstance(reqs, Items) else None)
        self.cxx(p.cxx_standard, dropped)
        return self.requires_python(p.requires_python, dropped)

    def core(self, p: ProjectDraft) -> None:
        """``build.core``'s placeholders; the core and the variable that carries its folder come together."""
        for command in p.core_commands.entries if p.core_commands else ():
            for part in command.strings() if isinstance(command, Items) else ():
                self.report(part.key, placeholder_problem(part.value, CORE_PLACEHOLDERS))
        core_dir = p.build_env.get("core_dir") if p.build_env else None
        if p.core is not None and core_dir is None:
            self.report(p.core.key, Violation("build.core needs build.env.core_dir: the variable through which "
                                              "each per-Python build finds the installed core",
                                              hint="add e.g. `core_dir: MYPROJECT_CORE_DIR` under build.env"))
        elif core_dir is not None and p.core is None:
            self.report(core_dir.key, Violation("build.env.core_dir names a variable for build.core, "
                                                "and there is no build.core", hint="add build.core, or remove core_dir"))

    def requires_python(self, text: At[str] | None, dropped: tuple[Dropped, ...]) -> SpecifierSet | None:
        self.check(text, specifier_problem)
        if text is None or specifier_problem(text.value):
            return None
        spec = SpecifierSet(text.value)
        for d in dropped_admitted_by(spec, dropped):
            self.report(text.key, Violation(f"Requires-Python {spec} admits Python {d.value}: {d.describe()}",
                                            hint=f"exclude it, e.g. '>={next_minor(d.value)}'", dropped=True))
        return spec

    def cxx(self, cxx: At[int] | None, dropped: tuple[Dropped, ...]) -> None:
        for d in dropped:
            if d.kind is DroppedKind.CXX_STANDARD and cxx is not None and cxx.value <= int(d.value):
                self.report(cxx.key, Violation(f"C++{cxx.value} is not allowed: {d.describe()}", dropped=True))

    def requirements(self, items: Items | None) -> None:
        for text in items.strings() if items else ():
            self.report(text.key, requirement_problem(text.value))

    # pythons and platforms

    def pythons(self, draft: Draft, requires: SpecifierSet | None) -> list[PythonVersion] | None:
        if draft.pythons is None:
            return None
        entries, dropped = draft.pythons.strings(), draft.dropped
        minors = [PythonVersion.parse(e.value).minor for e in entries]
        minors += [PythonVersion.parse(d.value).minor for d in dropped if d.kind is DroppedKind.PYTHON]
        out = []
        for entry in entries:
            gone = dropped_python_problem(entry.value, dropped)
            own = PythonVersion.parse(entry.value).minor
            self.report(entry.key, gone or python_problem(entry.value, requires, [m for m in minors if m != own]))
            if gone is None:
                out.append(PythonVersion.parse(entry.value))
        return out if len(entries) == draft.pythons_listed else None

    def platform(self, p: PlatformDraft, dropped: tuple[Dropped, ...]) -> None:
        os_name, arch = p.os, p.arch
        if os_name is None or arch is None:
            return
        self.report((*p.key, "arch"), arch_problem(os_name, arch))
        if arch not in ARCHES[os_name]:
            return
        self.report(p.key, platform_name_problem(p.name, os_name, arch))
        target = p.deployment_target.value if p.deployment_target and isinstance(p.deployment_target.value, str) else None
        self.check(p.wheel_platform, lambda tag: wheel_platform_problem(os_name, arch, tag, target))
        for given in (p.deployment_target, p.mps_min_macos):
            if os_name != "macos" and given is not None:
                self.report(given.key, Violation(f"{given.key[-1]} applies to macOS platforms only", hint="remove it"))
        if p.mps_min_macos is not None and isinstance(p.mps_min_macos.value, str):
            self.check(p.mps_min_macos, mps_problem, dropped)
        self.check(p.base_image, base_image_problem)

    def known_platform(self, key: KeyPath, name: str, platforms: list[str] | None) -> None:
        if platforms is not None and name not in platforms:
            self.report(key, Violation(f"unknown platform {name!r}", hint=suggest(name, sorted(platforms))))

    # accelerators

    def accelerators(self, draft: Draft, platforms: list[str] | None) -> list[str] | None:
        """Every family's rules; the labels of all variants when every variant had one."""
        labels: list[tuple[str, KeyPath]] = []
        complete = draft.accelerators_complete
        for family in draft.families:
            found, whole = self.family(family, platforms)
            complete = complete and whole
            labels += found
        self.unique_labels(labels)
        return [label for label, _ in labels] if complete else None

    def family(self, family: FamilyDraft, platforms: list[str] | None) -> tuple[list[tuple[str, KeyPath]], bool]:
        """The family's own values, each version's, then each variant merged; the labels found."""
        accel = family.accelerator
        self.level(accel, family.defaults, platforms)
        out: list[tuple[str, KeyPath]] = []
        complete = family.complete
        for variant in family.variants:
            if family.versioned:
                self.level(accel, variant.levels[-1], platforms)
            label = self.variant(variant)
            complete = complete and label is not None
            out += [(label, variant.key)] if label is not None else []
        return out, complete

    def level(self, accel: Accelerator, level: Level, platforms: list[str] | None) -> None:
        """The rules on one level's own values (a family's defaults, or a version's)."""
        for entry in level.rpath.strings() if level.rpath else ():
            self.report(entry.key, rpath_problem(entry.value))
        self.requirements(level.runtime_requirements)
        toolkit = level.toolkit
        if toolkit is not None:
            requirements = toolkit.get("requirements")
            self.requirements(requirements if isinstance(requirements, Items) else None)
            for name in URL_KEYS:
                self.check(toolkit.text(name), url_problem, variables=True)
            self.check(toolkit.text("root"), root_problem)
        if isinstance(level.arch_list, At):
            self.check(level.arch_list, lambda text: arch_list_problem(accel, text))
        for name, text in level.arch_list.entries if isinstance(level.arch_list, Table) else ():
            self.known_platform(text.key, name, platforms)
            if isinstance(text, At) and isinstance(text.value, str):
                self.report(text.key, arch_list_problem(accel, text.value))
        for name, runner in level.smoke_runners.entries if level.smoke_runners else ():
            self.known_platform(runner.key, name, platforms)

    def variant(self, v: VariantDraft) -> str | None:
        """Rules on a variant's merged values; its label."""
        accel, m = v.accelerator, v.merged
        if "label" in m.refused:
            return None
        if m.label is None:
            self.report(v.key, _no_label(accel, v))
            return None
        if accel.facts.needs_arch_list and m.arch_list is None and "arch_list" not in m.refused:
            self.report(v.key, Violation(f"{accel.value} variant has no arch_list",
                                         hint=f"add arch_list: {accel.facts.arch_example}"))
        self.providers(m)
        self.variant_properties(v, m.label.value)
        return m.label.value

    def variant_properties(self, v: VariantDraft, label: str) -> None:
        """The variant wheel's properties: the nearest level's ``variant_properties``, expanded and checked."""
        m = v.merged
        if "variant_properties" in m.refused or "arch_list" in m.refused:
            return
        lists = v.arch_lists()
        if any(arch_list_problem(v.accelerator, text) for _, text in lists):
            return  # said at the arch list
        arches = arch_entries(lists)
        found: set[str] = set()
        for template in m.variant_properties.strings() if m.variant_properties else ():
            problem = property_template_problem(template.value, version=v.version, arches=arches)
            props = [] if problem else expand_properties([template.value], accel=v.accelerator, version=v.version,
                                                         arches=arches)
            problem = problem or next(filter(None, map(property_problem, props)), None)
            if problem:
                if template.key not in self.told:  # a family's entry: once, not per version
                    self.told.add(template.key)
                    self.report(template.key, problem)
                return
            found.update(props)
        where = m.variant_properties.key[:-1] if m.variant_properties else v.key
        self.property_sets.append((label, frozenset(found), where))

    def providers(self, m: Level) -> None:
        """Each excluded library's provider is among the variant's runtime requirements."""
        if m.runtime_requirements is None and "runtime_requirements" in m.refused:
            return
        runtime = [t.value for t in m.runtime_requirements.strings()] if m.runtime_requirements else []
        declared = {req_name(r) for r in runtime} - {None}
        for lib, text in m.exclude_libs.entries if m.exclude_libs else ():
            if isinstance(text, At) and isinstance(text.value, str):
                self.report(text.key, provider_problem(lib, text.value, declared))

    def unique_labels(self, labels: list[tuple[str, KeyPath]]) -> None:
        seen: dict[str, KeyPath] = {}
        for label, key in labels:
            if label in seen:
                self.report(key, Violation(f"label {label!r} is used twice",
                                           hint=f"first used at {self.marks.at(seen[label])}"))
            seen.setdefault(label, key)

    # wheel variants

    def wheel_variants(self, w: WheelVariantsDraft | None) -> None:
        """``wheel_variants``: layout, providers, priorities; every property's namespace has a provider and no
        two variants share a property set (variantlib would label both alike, or hash them alike)."""
        if w is None:
            return
        self.check(w.layout, variant_layout_problem)
        providers = w.providers.entries if w.providers else ()
        for _, provider in providers:
            requires = provider.get("requires") if isinstance(provider, Table) else None
            self.requirements(requires if isinstance(requires, Items) else None)
        names = [name for name, _ in providers]
        priorities = w.priorities.strings() if w.priorities else []
        for entry in priorities:
            if entry.value not in names:
                self.report(entry.key, Violation(f"{entry.value!r} has no provider under wheel_variants.providers",
                                                 hint=suggest(entry.value, names) or "declare its provider"))
        listed = [entry.value for entry in priorities]
        if w.priorities is not None and w.providers is not None:
            for name, provider in providers:
                if name not in listed:
                    self.report(provider.key, Violation(f"provider {name!r} is not in wheel_variants.priorities",
                                                        hint="list every provider's namespace once in priorities"))
        self.property_namespaces(names if w.providers is not None else None)

    def property_namespaces(self, providers: list[str] | None) -> None:
        seen: dict[frozenset[str], tuple[str, KeyPath]] = {}
        for label, props, where in self.property_sets:
            missing = sorted({p.split(" :: ")[0] for p in props} - set(providers)) if providers is not None else []
            if missing:
                self.report(where, Violation(f"variant {label!r} has properties in namespace {missing[0]!r}, which has "
                                             "no provider", hint=f"declare wheel_variants.providers.{missing[0]}"))
            if props in seen:
                first, at = seen[props]
                what = "no properties (both would be the null variant)" if not props else "the same properties"
                self.report(where, Violation(f"variants {first!r} and {label!r} have {what}",
                                             hint=f"give one of them other variant_properties (first at {self.marks.at(at)})"))
            seen.setdefault(props, (label, where))

    # targets and channels

    def check_targets(self, ids: Ids, exclusions: tuple[At[Exclusion], ...]) -> None:
        every = [tid for group in ids.values() for tid in group]
        if len(every) > MAX_TARGETS:
            self.report(("pythons",), Violation(f"the matrix has {len(every):,} candidate targets, more than {MAX_TARGETS:,}",
                                                hint="variants x pythons x platforms: is a list generated by mistake?"))
            return
        for excl in exclusions:
            if not fnmatch.filter(every, excl.value.pattern):
                self.report((*excl.key, "targets"), Violation(f"exclusion {excl.value.pattern!r} matches no target",
                                                              hint="target ids look like cu132-cp312-linux-x86_64"))

    def channels(self, c: ChannelsDraft | None, platforms: list[str] | None, labels: list[str] | None,
                 ids: Ids | None, exclusions: tuple[At[Exclusion], ...]) -> None:
        if c is None:
            return
        rules = [e.value for e in exclusions]
        for name, label in c.pypi.entries if c.pypi else ():
            self.known_platform(label.key, name, platforms)
            text = label.value if isinstance(label, At) and isinstance(label.value, str) else None
            if labels is not None and text is not None and text not in labels:
                self.report(label.key, Violation(f"unknown variant label {text!r}", hint=suggest(text, sorted(labels))))
            elif ids is not None and (text, name) in ids:
                self.report(label.key, pypi_default_problem(name, str(text), ids[(str(text), name)], rules))
        self.check(c.base_url, url_problem)
        self.check(c.layout, layout_problem)


def _tid(label: str, python: PythonVersion, platform: str) -> str:
    from builders.matrix.targets import target_id  # targets depends on the model only

    return target_id(label, python, platform)


def _no_label(accel: Accelerator, v: VariantDraft) -> Violation:
    if v.version is None:
        return Violation(f"accelerator {accel.value!r} has neither versions nor a label",
                         hint="add 'label:' for a single variant, or 'versions:'")
    return Violation(f"version {v.version!r} has no label", hint="add label: (e.g. cu132)")


__all__ = ["LAYOUT_PLACEHOLDERS", "MAX_TARGETS", "check"]
