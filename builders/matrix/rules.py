"""The semantic rules, run over what :mod:`builders.matrix.build` read (:mod:`builders.matrix.draft`):
each value is checked where it is written, each variant on its merged values, then what spans the
matrix (labels, targets, channels, wheel variants). Every problem is kept, at its ``file:line:col``.

A rule whose input is missing or refused by the schema is skipped (the schema has said why).
The checks themselves are the small functions of :mod:`builders.matrix.findings`,
:mod:`builders.matrix.properties` and :mod:`builders.matrix.policy`; what this module adds is
which value each applies to (the accelerators' and wheel variants' in
:mod:`builders.matrix.variant_rules`). What they require of the matrix beyond its shape:

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
- the release lifecycle (:mod:`builders.matrix.release_channels`): ``channels.test.layout`` and
  ``channels.nightly.layout`` follow the rule of ``channels.index.layout``; no two channels'
  indexes nest for any label; a nightly ``base_version`` is a plain release after ``project.version``.
- ``channels.promotion`` (:mod:`builders.matrix.promotion_policy`): its limits above 0, each
  ``accept_not_runnable`` glob matching a planned (not excluded) target.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.specifiers import SpecifierSet

from builders.base.arch import ARCHES
from builders.base.errors import Problem
from builders.base.yamlmarks import Marks
from builders.matrix import promotion_policy
from builders.matrix.draft import (
    At,
    ChannelsDraft,
    Draft,
    Items,
    PlatformDraft,
    ProjectDraft,
    Section,
)
from builders.matrix.findings import (
    VARIANT_FACTS,
    Violation,
    arch_problem,
    base_image_problem,
    date_problem,
    fact_problem,
    fill_problem,
    layout_problem,
    module_problem,
    next_minor,
    path_problem,
    platform_name_problem,
    positive_problem,
    runner_problem,
    specifier_problem,
    suggest,
    url_problem,
    variable_problem,
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
from builders.matrix.release_channels import ChannelName, base_version_problem, overlap_problems
from builders.matrix.variant_rules import VariantRules
from builders.matrix.wheel_shape import WheelShape, shape_problem

MAX_TARGETS = 4_000  # candidate targets; a release of ~1,000 plans in about 0.4 s
BUILD_PLACEHOLDERS = ("python", "source", "outdir", *VARIANT_FACTS)
CORE_PLACEHOLDERS = ("source", "builddir", "coredir", *VARIANT_FACTS)
Ids = dict[tuple[str, str], list[str]]


def check(draft: Draft, marks: Marks, *, base: Path, check_source: bool, check_script: bool) -> list[Problem]:
    """Every problem the rules find in ``draft`` (in the order found; the loader sorts them by place)."""
    rules = Rules(marks=marks, base=base, check_source=check_source, check_script=check_script)
    rules.run(draft)
    return rules.problems


@dataclass(kw_only=True)
class Rules(VariantRules):
    """Applies every rule to a draft, collecting problems with their places."""

    base: Path
    check_source: bool
    check_script: bool

    def run(self, draft: Draft) -> None:
        requires = self.project(draft.project, draft.dropped)
        pythons = self.pythons(draft, requires)
        platforms = draft.platform_names
        for p in draft.platforms:
            self.platform(p, draft.dropped)
        if draft.project is not None:
            self.contract(draft.project, platforms or [])
        labels = self.accelerators(draft, platforms)
        if draft.project is not None and labels is not None:
            self.variant_variables(draft.project, labels, [f.accelerator.value for f in draft.families])
        self.timeout_keys(draft, labels)
        self.wheel_variants(draft.wheel_variants)
        ids = None
        if pythons is not None and platforms is not None and labels is not None:
            ids = {(label, p): [_tid(label, py, p) for py in pythons] for label in labels for p in platforms}
            self.check_targets(ids, draft.exclusions, shared_ids(draft.project, labels, platforms))
        self.channels(draft.channels, platforms, labels, ids, draft.exclusions)
        if draft.channels is not None:
            self.promotion(draft.channels, ids, draft.exclusions)
        if draft.channels is not None:
            version = draft.project.version if draft.project else None
            self.lifecycle(draft.channels, labels, version.value if version and isinstance(version.value, str) else None)

    def timeout_keys(self, draft: Draft, labels: list[str] | None) -> None:
        """Each per-variant timeout (``build: {default: 3600, cuda: 36000}``) names a family or a variant label."""
        timeouts = draft.project.timeouts if draft.project else None
        if timeouts is None or labels is None:
            return
        known = sorted({"default", *labels, *(f.accelerator.value for f in draft.families)})
        for _stage, table in timeouts.entries:
            for name, value in table.entries if isinstance(table, Section) else ():
                if name not in known:
                    self.report(getattr(value, "key", table.key), Violation(
                        f"timeout for {name!r}, which is no family or variant label of this matrix",
                        hint=suggest(name, known)))

    # project

    def project(self, p: ProjectDraft | None, dropped: tuple[Dropped, ...]) -> SpecifierSet | None:
        if p is None:
            return None
        self.check(p.version, version_problem)
        self.check(p.released, date_problem)
        self.check(p.wheel_size_budget_mb, positive_problem)
        self.check(p.wheel_shape, shape_problem)
        self.check(p.smoke_timeout, positive_problem)
        for part in p.build_command.strings() if p.build_command else ():
            self.report(part.key, fill_problem(part.value, BUILD_PLACEHOLDERS))
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
                self.report(part.key, fill_problem(part.value, CORE_PLACEHOLDERS))
        core_dir = p.build_env.get("core_dir") if p.build_env else None
        if p.core is not None and core_dir is None:
            self.report(p.core.key, Violation("build.core needs build.env.core_dir: the variable through which "
                                              "each per-Python build finds the installed core",
                                              hint="add e.g. `core_dir: MYPROJECT_CORE_DIR` under build.env"))
        elif core_dir is not None and p.core is None:
            self.report(core_dir.key, Violation("build.env.core_dir names a variable for build.core, "
                                                "and there is no build.core", hint="add build.core, or remove core_dir"))

    def contract(self, p: ProjectDraft, platforms: list[str]) -> None:
        """Conditional extension modules name real extras, platforms and Pythons; build.variables stay the project's."""
        extras = p.optional_dependencies.names() if p.optional_dependencies else []
        for entry in p.extension_modules.entries if p.extension_modules else ():
            if isinstance(entry, Section):
                self.report(entry.key, module_problem(entry.plain(), extras, platforms))
        carried = [str(v.value) for _, v in p.build_env.entries if isinstance(v, At)] if p.build_env else []
        for name, value in p.build_variables.entries if p.build_variables else ():
            self.report(value.key, variable_problem(name, carried)
                        or (fact_problem(value.value) if isinstance(value, At) else None))

    def variant_variables(self, p: ProjectDraft, labels: list[str], families: list[str]) -> None:
        """build.variant_variables is keyed by a family or label the matrix has; its values' placeholders are the
        variant's facts; a name builders or build.env sets is refused as in build.variables."""
        carried = [str(v.value) for _, v in p.build_env.entries if isinstance(v, At)] if p.build_env else []
        for key, table in p.variant_variables.entries if p.variant_variables else ():
            if key not in labels and key not in families:
                self.report(table.key, Violation(f"build.variant_variables.{key} names no accelerator family or "
                                                 "variant label of this matrix",
                                                 hint=f"one of {', '.join(sorted({*families, *labels}))}"))
            for name, value in table.entries if isinstance(table, Section) else ():
                self.report(value.key, variable_problem(name, carried)
                            or (fact_problem(value.value) if isinstance(value, At) else None))

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
        if p.runner is None:
            self.report(p.key, runner_problem(p.name, os_name, arch))

    # targets and channels

    def check_targets(self, ids: Ids, exclusions: tuple[At[Exclusion], ...], shared: Sequence[str] = ()) -> None:
        every = [tid for group in ids.values() for tid in group]
        if len(every) > MAX_TARGETS:
            self.report(("pythons",), Violation(f"the matrix has {len(every):,} candidate targets, more than {MAX_TARGETS:,}",
                                                hint="variants x pythons x platforms: is a list generated by mistake?"))
            return
        for excl in exclusions:
            if not fnmatch.filter([*every, *shared], excl.value.pattern):
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

    def promotion(self, c: ChannelsDraft, ids: Ids | None, exclusions: tuple[At[Exclusion], ...]) -> None:
        """``channels.promotion``: its limits above 0, each ``accept_not_runnable`` glob accepting some planned (not
        excluded) target."""
        if c.promotion is None:
            return
        for name in promotion_policy.LIMITS:
            limit = c.promotion.get(name)
            if isinstance(limit, At):
                self.check(limit, positive_problem)
        accepts = c.promotion.get(promotion_policy.ACCEPT)
        if ids is None or not isinstance(accepts, Items):
            return
        planned = [tid for group in ids.values() for tid in group
                   if not any(fnmatch.fnmatchcase(tid, e.value.pattern) for e in exclusions)]
        for entry in accepts.entries:
            glob = entry.text("targets") if isinstance(entry, Section) else None
            if glob is not None:
                self.check(glob, promotion_policy.glob_problem, planned)

    def lifecycle(self, c: ChannelsDraft, labels: list[str] | None, release: str | None) -> None:
        """The pre-release channels (:mod:`builders.matrix.release_channels`): each layout's form, a nightly's
        ``base_version``, and no two channels' indexes nesting."""
        layouts = [(ChannelName.RELEASE, c.layout)] + [(ChannelName(d.name), d.layout) for d in c.lifecycle]
        for d in c.lifecycle:
            self.check(d.layout, layout_problem)
            self.check(d.base_version, base_version_problem, release)
        written = [(name, at.key, at.value) for name, at in layouts  # a malformed layout is reported above
                   if at is not None and isinstance(at.value, str) and layout_problem(at.value) is None]
        for key, finding in overlap_problems(written, labels):
            self.report(key, finding)


def shared_ids(p: ProjectDraft | None, labels: Iterable[str], platforms: Iterable[str]) -> list[str]:
    """The ids of a shared wheel's targets (``cu132-abi3-linux-x86_64``): an exclusion may name one."""
    text = p.wheel_shape.value if p is not None and p.wheel_shape is not None else None
    if not isinstance(text, str) or shape_problem(text):
        return []
    shape = WheelShape.parse(text)
    return [f"{label}-{shape.id_part}-{platform}" for label in labels for platform in platforms] if shape.shared else []


def _tid(label: str, python: PythonVersion, platform: str) -> str:
    from builders.matrix.targets import target_id  # targets depends on the model only

    return target_id(label, python, platform)
