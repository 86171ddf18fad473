"""The rules on accelerators and wheel variants, over :mod:`builders.matrix.draft` values: each
level's own values where they are written (a family's defaults once, not once per version), each
variant on its merged values (a label; a GPU family's arch list; every excluded library's provider
among its runtime requirements; its PEP 825 properties), then what spans the variants (unique
labels; with ``wheel_variants`` declared, each namespace has a provider there, ``priorities``
lists every provider once, and no two variants have the same property set).

:class:`Reporter` is what every rule reports through; :class:`builders.matrix.rules.Rules` adds the
rest of the matrix.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from builders.base.errors import Problem
from builders.base.yamlmarks import Marks
from builders.matrix.draft import (
    At,
    Draft,
    FamilyDraft,
    Items,
    KeyPath,
    Level,
    Section,
    VariantDraft,
    WheelVariantsDraft,
)
from builders.matrix.family import Accelerator
from builders.matrix.findings import (
    Violation,
    arch_list_problem,
    budget_problem,
    provider_problem,
    req_name,
    requirement_problem,
    root_problem,
    rpath_problem,
    runtime_dir_problem,
    suggest,
    url_problem,
)
from builders.matrix.properties import (
    arch_entries,
    expand_properties,
    property_problem,
    property_template_problem,
    variant_layout_problem,
)

URL_KEYS = ("index_url", "system_repository", "system_repository_key")


@dataclass(kw_only=True)
class Reporter:
    """Collects problems, each at the ``file:line:col`` of the key it names."""

    marks: Marks
    problems: list[Problem] = field(default_factory=list)

    def report(self, key: KeyPath, finding: Violation | None) -> None:
        if finding is not None:
            self.problems.append(Problem(message=finding.message, location=self.marks.at(key), hint=finding.hint,
                                         dropped=finding.dropped))

    def check(self, value: At[Any] | None, rule: Callable[..., Violation | None], *args: Any, **kwargs: Any) -> None:
        """Apply ``rule(value, *args)`` to a value that was read, at its place."""
        if value is not None:
            self.report(value.key, rule(value.value, *args, **kwargs))

    def requirements(self, items: Items | None) -> None:
        for text in items.strings() if items else ():
            self.report(text.key, requirement_problem(text.value))

    def known_platform(self, key: KeyPath, name: str, platforms: list[str] | None) -> None:
        if platforms is not None and name not in platforms:
            self.report(key, Violation(f"unknown platform {name!r}", hint=suggest(name, sorted(platforms))))


@dataclass(kw_only=True)
class VariantRules(Reporter):
    """The accelerator and wheel-variant rules."""

    # (label, its variant wheel's properties, where they are declared) of every variant that has them checked
    property_sets: list[tuple[str, frozenset[str], KeyPath]] = field(default_factory=list)
    told: set[KeyPath] = field(default_factory=set)

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
        for entry in level.runtime_dirs.strings() if level.runtime_dirs else ():
            self.report(entry.key, runtime_dir_problem(entry.value))
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
        for name, text in level.arch_list.entries if isinstance(level.arch_list, Section) else ():
            self.known_platform(text.key, name, platforms)
            if isinstance(text, At) and isinstance(text.value, str):
                self.report(text.key, arch_list_problem(accel, text.value))
        for name, runner in level.smoke_runners.entries if level.smoke_runners else ():
            self.known_platform(runner.key, name, platforms)
        self.size_budget(level, platforms)

    def size_budget(self, level: Level, platforms: list[str] | None) -> None:
        """``wheel_size_budget_mb``: numbers above 0, for platforms the matrix has (``*``: any other)."""
        budget = level.wheel_size_budget_mb
        if isinstance(budget, At):
            self.check(budget, budget_problem)
        for name, value in budget.entries if isinstance(budget, Section) else ():
            if name != "*":
                self.known_platform(value.key, name, platforms)
            if isinstance(value, At):
                self.report(value.key, budget_problem(value.value))

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
            requires = provider.get("requires") if isinstance(provider, Section) else None
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


def _no_label(accel: Accelerator, v: VariantDraft) -> Violation:
    if v.version is None:
        return Violation(f"accelerator {accel.value!r} has neither versions nor a label",
                         hint="add 'label:' for a single variant, or 'versions:'")
    return Violation(f"version {v.version!r} has no label", hint="add label: (e.g. cu132)")
