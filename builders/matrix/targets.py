"""Expansion of the matrix into targets, target ids, and selection by glob.

All pure: a target is a function of the matrix alone. Host facts (what can be built here)
live in :mod:`builders.pipeline.host`.
"""

from __future__ import annotations

import difflib
import fnmatch
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

from packaging.requirements import Requirement
from packaging.tags import Tag
from packaging.utils import canonicalize_name
from packaging.version import Version

from builders.base.errors import DroppedError, Problem, SelectionError
from builders.matrix.model import OS, ExtensionModule, Matrix, Platform, Project, PythonVersion, Variant
from builders.matrix.policy import dropped_pythons, exclusion_for
from builders.matrix.wheel_shape import PER_PYTHON, WheelShape


def target_id(label: str, python: PythonVersion, platform: str) -> str:
    """``cu132-cp314t-linux-x86_64``."""
    return f"{label}-{python.abi}-{platform}"


@dataclass(frozen=True, kw_only=True)
class Target:
    """One wheel of the release: a variant x Python x platform."""

    project: Project = field(repr=False)
    variant: Variant = field(repr=False)
    python: PythonVersion
    platform: Platform = field(repr=False)
    on_pypi: bool = False
    index_path: str = ""  # its folder in the wheelhouse (the release channel's layout)
    channels: tuple[str, ...] = ()  # where the matrix's channel publishes it: PyPI, index folders
    # A shared wheel (project.wheel_shape): ``python`` builds it, and each of ``smoke_pythons`` smoke-tests it.
    shape: WheelShape = PER_PYTHON
    smoke_pythons: tuple[PythonVersion, ...] = ()

    @property
    def id(self) -> str:
        if self.shape.shared:
            return shared_id(self.variant.label, self.shape, self.platform.name)
        return target_id(self.variant.label, self.python, self.platform.name)

    @property
    def tested_pythons(self) -> tuple[PythonVersion, ...]:
        """The Pythons the wheel is smoke-tested on: its own, or every listed one that installs a shared wheel."""
        return self.smoke_pythons or (self.python,)

    def on_python(self, python: PythonVersion) -> Target:
        """The same wheel as seen from ``python`` (its smoke test there): id and file name stay the wheel's."""
        return replace(self, python=python)

    @cached_property
    def version(self) -> Version:
        """The labelled version: ``2.15.0+cu132``."""
        return Version(f"{self.project.version.public}+{self.variant.label}")

    @property
    def tag(self) -> Tag:
        """The tag pip matches on this target's Python (a shared wheel's first, ``cp312-abi3-...``)."""
        if self.shape.shared:
            return min(self.tags, key=str)
        return Tag(self.python.interpreter, self.python.abi, self.platform.wheel_platform)

    @property
    def tags(self) -> frozenset[Tag]:
        return self.shape.tags(self.platform.wheel_platform) if self.shape.shared else frozenset({self.tag})

    @cached_property
    def wheel_name(self) -> str:
        return self.wheel_name_on(self.platform.wheel_platform)

    def wheel_name_on(self, wheel_platform: str) -> str:
        """The file name with ``wheel_platform`` (a Linux build's ``linux_x86_64`` before repair)."""
        if self.shape.shared:
            tag = Tag(self.shape.interpreter(), self.shape.abi_text, wheel_platform)
        else:
            tag = Tag(self.python.interpreter, self.python.abi, wheel_platform)
        return wheel_filename(self.project.name, self.version, tag)

    @cached_property
    def requirements(self) -> tuple[Requirement, ...]:
        """The wheel's whole Requires-Dist: the project's (extras marked), then the variant's."""
        return (*self.project.requirements, *self.variant.requirements)

    @property
    def extension_modules(self) -> tuple[str, ...]:
        """Every plain entry, and each conditional one whose platforms and Pythons include this target's."""
        return (*self.project.extension_modules, *(m.module for m in self._conditional_modules))

    @property
    def bare_modules(self) -> tuple[str, ...]:
        """Those of :attr:`extension_modules` that must import in a venv with the wheel alone (no extra)."""
        return (*self.project.extension_modules, *(m.module for m in self._conditional_modules if m.extra is None))

    @property
    def _conditional_modules(self) -> tuple[ExtensionModule, ...]:
        python = f"{self.python.major}.{self.python.minor}"
        return tuple(m for m in self.project.conditional_modules
                     if (not m.platforms or self.platform.name in m.platforms)
                     and (m.pythons is None or m.pythons.contains(python, prereleases=True)))

    @property
    def declared_requirements(self) -> tuple[Requirement, ...] | None:
        """None where the project lists no dependencies: the build's own list stands, with the variant's added."""
        return self.requirements if self.project.declares_requirements else None

    @property
    def size_budget(self) -> tuple[float, str] | None:
        """The largest wheel allowed, in MiB, and the matrix key that says so: the variant's for this platform,
        else the project's; None: no budget."""
        found = self.variant.size_budget(self.platform.name)
        mb = self.project.wheel_size_budget_mb
        return found or ((mb, "project.wheel_size_budget_mb") if mb is not None else None)

    @property
    def arch_list(self) -> str | None:
        return self.variant.arch_list(self.platform.name)

    @property
    def runner(self) -> str:
        return self.platform.runner

    @property
    def smoke_runner(self) -> tuple[str, ...]:
        return self.variant.smoke_runner(self.platform.name) or (self.platform.runner,)

    @property
    def containerfile(self) -> str | None:
        if self.platform.os is not OS.LINUX:
            return None
        return self.variant.accelerator.facts.containerfile_shown

    @property
    def env(self) -> tuple[tuple[str, str], ...]:
        """``toolkit_root`` is left out: a host path the toolchain fills in at build time."""
        values = {
            "accelerator": self.variant.accelerator.value,
            "accelerator_version": self.variant.version or "",
            "version": str(self.version),
            "gpu_archs": self.arch_list or "",
            "rpath": ";".join(self.variant.rpath),
        }
        env = [(var, values[setting]) for setting, var in self.project.build_env if setting in values]
        if self.platform.deployment_target:
            env.append(("MACOSX_DEPLOYMENT_TARGET", self.platform.deployment_target))
        return tuple(sorted(env))

    def record(self) -> dict[str, object]:
        """The full plan record of this target, as JSON-ready data."""
        return {
            "id": self.id,
            "variant": self.variant.label,
            "accelerator": self.variant.accelerator.value,
            "accelerator_version": self.variant.version,
            "python": str(self.python),
            "abi": self.python.abi,
            "platform": self.platform.name,
            "version": str(self.version),
            "wheel": self.wheel_name,
            "tags": sorted(str(t) for t in self.tags),
            "requires_python": str(self.project.requires_python),
            "requirements": [str(r) for r in self.requirements],
            "arch_list": self.arch_list,
            "env": dict(self.env),
            "exclude_libs": sorted(self.variant.exclude_libs),
            "rpath": list(self.variant.rpath),
            "channels": list(self.channels),
            "runner": self.runner,
            "smoke_runner": list(self.smoke_runner),
            "base_image": self.platform.base_image,
            "containerfile": self.containerfile,
            **self._shape_record(),
        }

    def _shape_record(self) -> dict[str, object]:
        """A shared wheel's shape and smoke Pythons (absent for a per-Python one: its record, and digest, stay)."""
        if not self.shape.shared:
            return {}
        return {"abi": self.shape.abi_text, "wheel_shape": f"{self.shape.interpreter()}-{self.shape.abi_text}",
                "smoke_pythons": [str(p) for p in self.tested_pythons]}


@dataclass(frozen=True, kw_only=True)
class Excluded:
    """A candidate the matrix excludes, with the reason to show in its place."""

    id: str
    reason: str
    where: str


def wheel_filename(name: str, version: Version, tag: Tag) -> str:
    """The PEP 427 file name; the inverse of ``packaging.utils.parse_wheel_filename``."""
    dist = canonicalize_name(name).replace("-", "_")
    return f"{dist}-{version}-{tag.interpreter}-{tag.abi}-{tag.platform}.whl"


def shared_id(label: str, shape: WheelShape, platform: str) -> str:
    """``cu132-abi3-linux-x86_64``, ``cu132-py3-linux-x86_64``: a shared wheel's one target per (variant, platform)."""
    return f"{label}-{shape.id_part}-{platform}"


def expand(matrix: Matrix) -> tuple[tuple[Target, ...], tuple[Excluded, ...]]:
    """All targets of the matrix, and the excluded candidates with their reasons."""
    if matrix.project.wheel_shape.shared:
        return expand_shared(matrix)
    targets: list[Target] = []
    excluded: list[Excluded] = []
    for variant in matrix.variants:
        for platform in matrix.platforms:
            on_pypi = matrix.channels.pypi_label(platform.name) == variant.label
            for python in matrix.pythons:
                tid = target_id(variant.label, python, platform.name)
                rule = exclusion_for(tid, matrix.exclusions)
                if rule is not None:
                    excluded.append(Excluded(id=tid, reason=rule.reason, where=str(rule.location)))
                    continue
                published = matrix.channels.published_at(matrix.channel, variant.label, on_pypi=on_pypi)
                targets.append(Target(project=matrix.project, variant=variant, python=python, platform=platform,
                                      on_pypi=on_pypi, index_path=matrix.channels.index_path(variant.label),
                                      channels=published))
    return tuple(targets), tuple(excluded)


def expand_shared(matrix: Matrix) -> tuple[tuple[Target, ...], tuple[Excluded, ...]]:
    """One target per (variant, platform): built on the lowest listed Python that installs the wheel (a GIL
    build first), smoke-tested on each listed one that installs it. A listed Python the shape cannot serve
    (below the abi3 minimum, free-threaded for abi3), or whose per-Python id an exclusion names, is excluded
    with its reason; a shared id an exclusion names, or one with no Python left, is excluded whole."""
    shape = matrix.project.wheel_shape.settled(matrix.pythons)
    targets: list[Target] = []
    excluded: list[Excluded] = []
    for variant in matrix.variants:
        for platform in matrix.platforms:
            tid = shared_id(variant.label, shape, platform.name)
            pythons, left_out = _shared_pythons(matrix, shape, variant.label, platform.name)
            rule = exclusion_for(tid, matrix.exclusions)
            if rule is not None or not pythons:  # excluded whole: its reason, or its Pythons' first one
                first = Excluded(id=tid, reason=rule.reason, where=str(rule.location)) if rule else left_out[0]
                excluded.append(replace(first, id=tid))
                continue
            excluded.extend(left_out)
            builder = min(pythons, key=lambda p: (p.free_threaded, p))
            on_pypi = matrix.channels.pypi_label(platform.name) == variant.label
            targets.append(Target(project=matrix.project, variant=variant, python=builder, platform=platform,
                                  on_pypi=on_pypi, index_path=matrix.channels.index_path(variant.label),
                                  channels=matrix.channels.published_at(matrix.channel, variant.label, on_pypi=on_pypi),
                                  shape=shape, smoke_pythons=pythons))
    return tuple(targets), tuple(excluded)


def _shared_pythons(matrix: Matrix, shape: WheelShape, label: str,
                    platform: str) -> tuple[tuple[PythonVersion, ...], list[Excluded]]:
    """The listed Pythons that smoke-test a shared wheel, and the others as exclusions with their reasons."""
    kept: list[PythonVersion] = []
    left_out: list[Excluded] = []
    for python in matrix.pythons:
        tid = target_id(label, python, platform)
        rule = exclusion_for(tid, matrix.exclusions)
        why = shape.why_not(python)
        if rule is not None:
            left_out.append(Excluded(id=tid, reason=rule.reason, where=str(rule.location)))
        elif why is not None:
            left_out.append(Excluded(id=tid, reason=why, where=f"{matrix.path}: project.wheel_shape"))
        else:
            kept.append(python)
    return tuple(kept), left_out


@dataclass(frozen=True, kw_only=True)
class Selection:
    """What the user asked for: exact ids, include globs and skip globs (all optional)."""

    targets: tuple[str, ...] = ()
    select: tuple[str, ...] = ()
    skip: tuple[str, ...] = ()

    def matches(self, tid: str) -> bool:
        wanted = not (self.targets or self.select) or tid in self.targets or _any_glob(tid, self.select)
        return wanted and not _any_glob(tid, self.skip)


def _any_glob(tid: str, globs: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(tid, g) for g in globs)


def select(matrix: Matrix, selection: Selection) -> tuple[Target, ...]:
    """The targets ``selection`` picks; every selector must pick something real."""
    targets, excluded = expand(matrix)
    ids = [t.id for t in targets]
    for tid in selection.targets:
        if any(c in tid for c in "*?["):
            raise SelectionError(f"--target takes an exact id, not the glob {tid!r}; use --select {tid!r}")
    for selector in (*selection.targets, *selection.select):
        _check_selector(matrix, selector, ids, excluded)
    return tuple(t for t in targets if selection.matches(t.id))


def selected(m: Matrix, selection: Selection) -> tuple[Target, ...]:
    """The targets ``selection`` picks; an empty selection is an error naming the flags, never a run of nothing."""
    targets = select(m, selection)
    if targets:
        return targets
    given = [f"--{flag} {shlex.quote(value)}" for flag in ("target", "select", "skip")
             for value in getattr(selection, "targets" if flag == "target" else flag)]
    hint = ("; --target takes an exact id, --select a glob" if any(set(t) & set("*?[") for t in selection.targets)
            else "")
    raise SelectionError(f"nothing selected by {' '.join(given)}{hint}")


def one_target(m: Matrix, tid: str) -> Target:
    """The target ``--target ID`` names: an exact id (a glob is refused with a hint, never unpacked to nothing)."""
    return selected(m, Selection(targets=(tid,)))[0]


def _check_selector(matrix: Matrix, selector: str, ids: Sequence[str], excluded: Sequence[Excluded]) -> None:
    if fnmatch.filter(ids, selector):
        return
    hits = [e for e in excluded if fnmatch.fnmatchcase(e.id, selector)]
    if hits:
        reasons = sorted({f"{e.reason} ({e.where})" for e in hits})
        raise SelectionError(f"selector {selector!r} only matches excluded targets:\n  " + "\n  ".join(reasons))
    dropped = _dropped_matches(matrix, selector)
    if dropped:
        raise DroppedError([Problem(message=f"selector {selector!r} only names dropped targets: {d.describe()}",
                                    location=d.location, dropped=True) for d in dropped])
    close = difflib.get_close_matches(selector, ids, n=3)
    example = ids[0] if ids else "cu132-cp312-linux-x86_64"
    shared = (f" (wheel_shape {matrix.project.wheel_shape.abi_text}: one wheel per variant and platform)"
              if matrix.project.wheel_shape.shared else "")
    hint = f"; did you mean {', '.join(close)}?" if close else f"; ids look like {example}{shared} (see `nox -s plan`)"
    raise SelectionError(f"selector {selector!r} matches no target{hint}")


def _dropped_matches(matrix: Matrix, selector: str) -> list:
    """Dropped Pythons whose would-be ids match ``selector``."""
    found = []
    for python, dropped in dropped_pythons(matrix):
        would_be = [target_id(v.label, python, p.name) for v in matrix.variants for p in matrix.platforms]
        if selector == python.abi or fnmatch.filter(would_be, selector):
            found.append(dropped)
    return found
