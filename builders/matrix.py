"""Load ``matrix.yaml``: schema check, then semantic checks, then frozen model.

Every problem found is reported at once, each with ``file:line:column``, the key path and,
for a misspelt key, the key that was probably meant.
"""

from __future__ import annotations

import difflib
import fnmatch
import json
from collections.abc import Iterator, Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from . import yamlmarks
from .errors import MatrixError, Problem, raise_problems
from .policy import dropped_admitted_by
from .model import (
    OS,
    Accelerator,
    Channels,
    Dropped,
    DroppedKind,
    Exclusion,
    Matrix,
    Platform,
    Project,
    PythonVersion,
    Toolkit,
    Variant,
)
from .yamlmarks import Marks

GPU_FAMILIES = frozenset({Accelerator.CUDA, Accelerator.ROCM})


@cache
def schema() -> dict[str, Any]:
    """The JSON Schema shipped in the package (also what editors use)."""
    text = resources.files("builders").joinpath("schema/matrix.schema.json").read_text()
    return json.loads(text)


def load(path: Path | str) -> Matrix:
    """Read and validate ``path``; raise :class:`MatrixError` listing every problem."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise MatrixError([Problem(message=f"cannot read matrix {path}: {exc.strerror}")]) from exc
    return loads(text, path)


def loads(text: str, path: Path | str = "matrix.yaml") -> Matrix:
    """Validate matrix ``text`` as if read from ``path`` (used by tests, no I/O)."""
    path = Path(path)
    data, marks = yamlmarks.load(text, str(path))
    raise_problems(list(schema_problems(data, marks)))
    builder = _Builder(data, marks, path)
    matrix = builder.build()
    raise_problems(builder.problems)
    return matrix


# --- schema ------------------------------------------------------------------------------


def schema_problems(data: Any, marks: Marks) -> Iterator[Problem]:
    validator = jsonschema.Draft202012Validator(schema())
    errors = sorted(validator.iter_errors(data), key=lambda e: marks.at(tuple(e.absolute_path)).line)
    for error in errors:
        yield from _explain(error, marks)


def _explain(error: jsonschema.ValidationError, marks: Marks) -> Iterator[Problem]:
    path = tuple(error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = sorted(error.schema.get("properties", {}))
        for key in sorted(set(error.instance) - set(allowed)):
            yield Problem(
                message=f"unknown key {key!r}",
                location=marks.at((*path, key)),
                hint=_suggest(key, allowed),
            )
        return
    if error.validator == "propertyNames":
        name = error.instance
        choices = error.schema.get("propertyNames", {}).get("enum", [])
        yield Problem(
            message=f"{name!r} is not allowed here ({_cause(error)})",
            location=marks.at((*path, name)),
            hint=_suggest(str(name), choices),
        )
        return
    if error.validator == "enum":
        yield Problem(message=error.message, location=marks.at(path), hint=_suggest(str(error.instance), error.validator_value))
        return
    if error.validator == "oneOf":
        desc = ", ".join(sorted({_cause(e) for e in error.context}))
        yield Problem(message=f"does not match any allowed form: {desc}", location=marks.at(path))
        return
    yield Problem(message=error.message, location=marks.at(path))


def _cause(error: jsonschema.ValidationError) -> str:
    deepest = error.context[-1] if error.context else error
    return deepest.message


def _suggest(word: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(word, [str(c) for c in choices], n=1, cutoff=0.6)
    if close:
        return f"did you mean {close[0]!r}?"
    return f"allowed: {', '.join(map(str, choices))}" if choices else ""


# --- semantic checks and model -------------------------------------------------------------


class _Builder:
    """Turns schema-valid data into the model, collecting semantic problems."""

    def __init__(self, data: dict[str, Any], marks: Marks, path: Path) -> None:
        self.data = data
        self.marks = marks
        self.path = path
        self.problems: list[Problem] = []

    def problem(self, key: tuple[str | int, ...], message: str, *, hint: str = "", dropped: bool = False) -> None:
        self.problems.append(Problem(message=message, location=self.marks.at(key), hint=hint, dropped=dropped))

    def build(self) -> Matrix:
        dropped = self.dropped()
        platforms = self.platforms(dropped)
        variants = self.variants({p.name for p in platforms})
        matrix = Matrix(
            path=self.path,
            project=self.project(dropped),
            pythons=self.pythons(dropped),
            platforms=platforms,
            variants=variants,
            channels=self.channels({p.name for p in platforms}, {v.label for v in variants}),
            exclusions=self.exclusions(),
            dropped=dropped,
        )
        self.check_exclusions(matrix)
        return matrix

    def dropped(self) -> tuple[Dropped, ...]:
        out = []
        for i, entry in enumerate(self.data.get("dropped", [])):
            if "python" in entry:
                kind, value = DroppedKind.PYTHON, entry["python"]
            elif "feature" in entry:
                kind, value = DroppedKind.MPS_MACOS, entry["macos"]
            else:
                kind, value = DroppedKind.CXX_STANDARD, str(entry["cxx_standard"])
            loc = self.marks.at(("dropped", i))
            out.append(Dropped(kind=kind, value=value, since=entry["since"], reason=entry["reason"], location=loc))
        return tuple(out)

    def project(self, dropped: tuple[Dropped, ...]) -> Project:
        raw = self.data["project"]
        requires = self._specifier(raw["requires_python"])
        self._check_dropped_project(raw, requires, dropped)
        self._requirements(raw.get("dependencies", []), ("project", "dependencies"))
        for extra, reqs in raw.get("optional_dependencies", {}).items():
            self._requirements(reqs, ("project", "optional_dependencies", extra))
        build, smoke = raw["build"], raw.get("smoke", {})
        return Project(
            name=raw["name"],
            import_name=raw["import_name"],
            version=self._version(raw["version"]),
            released=raw.get("released"),
            source=(self.path.parent / raw["source"]),
            requires_python=requires,
            cxx_standard=raw.get("cxx_standard"),
            wheel_size_budget_mb=float(raw["wheel_size_budget_mb"]) if "wheel_size_budget_mb" in raw else None,
            build_command=tuple(build["command"]),
            build_env=tuple(sorted(build.get("env", {}).items())),
            dependencies=tuple(raw.get("dependencies", ())),
            optional_dependencies=tuple((extra, tuple(reqs)) for extra, reqs in raw.get("optional_dependencies", {}).items()),
            extension_modules=tuple(raw.get("extension_modules", ())),
            smoke_script=self._smoke_script(smoke.get("script")),
            smoke_timeout=float(smoke.get("timeout", 300)),
        )

    def _check_dropped_project(self, raw: Mapping[str, Any], requires: SpecifierSet, dropped: tuple[Dropped, ...]) -> None:
        for d in dropped_admitted_by(requires, dropped):
            self.problem(("project", "requires_python"), f"Requires-Python {requires} admits Python {d.value}: {d.describe()}",
                         hint=f"exclude it, e.g. '>={_next_minor(d.value)}'", dropped=True)
        cxx = raw.get("cxx_standard")
        for d in dropped:
            if d.kind is DroppedKind.CXX_STANDARD and cxx is not None and cxx <= int(d.value):
                self.problem(("project", "cxx_standard"), f"C++{cxx} is not allowed: {d.describe()}", dropped=True)

    def _smoke_script(self, text: str | None) -> Path | None:
        if text is None:
            return None
        path = (self.path.parent / text).resolve()
        if not path.is_file():
            self.problem(("project", "smoke", "script"), f"smoke script {text!r} does not exist (looked for {path})",
                         hint="the path is relative to the matrix file")
        return path

    def _requirements(self, texts: list[str], key: tuple[str | int, ...]) -> None:
        for i, text in enumerate(texts):
            self._requirement(text, (*key, i))

    def _version(self, text: str) -> Version:
        try:
            version = Version(text)
        except InvalidVersion:
            self.problem(("project", "version"), f"{text!r} is not a PEP 440 version")
            return Version("0")
        if version.local:
            self.problem(("project", "version"), f"{text!r} has a local label; labels come from the variants",
                         hint=f"use {version.public!r}")
        return version

    def _specifier(self, text: str) -> SpecifierSet:
        try:
            return SpecifierSet(text)
        except InvalidSpecifier:
            self.problem(("project", "requires_python"), f"{text!r} is not a PEP 440 version specifier")
            return SpecifierSet()

    def pythons(self, dropped: tuple[Dropped, ...]) -> tuple[PythonVersion, ...]:
        by_value = {d.value: d for d in dropped if d.kind is DroppedKind.PYTHON}
        out = []
        for i, text in enumerate(self.data["pythons"]):
            if text in by_value:
                self.problem(("pythons", i), f"Python {text} is listed, but {by_value[text].describe()}",
                             hint=f"remove {text!r} from pythons", dropped=True)
                continue
            out.append(PythonVersion.parse(text))
        return tuple(out)

    def platforms(self, dropped: tuple[Dropped, ...]) -> tuple[Platform, ...]:
        out = []
        for name, raw in self.data["platforms"].items():
            key = ("platforms", name)
            arch = raw["arch"]
            wheel_arch = {"AMD64": "amd64"}.get(arch, arch)
            if not raw["wheel_platform"].endswith(wheel_arch):
                self.problem((*key, "wheel_platform"), f"{raw['wheel_platform']!r} does not match arch {arch!r}")
            if not name.startswith(raw["os"] + "-"):
                self.problem((*key, "os"), f"platform {name!r} does not match os {raw['os']!r}")
            self._check_mps(key, raw, dropped)
            out.append(Platform(name=name, os=OS(raw["os"]), arch=arch, wheel_platform=raw["wheel_platform"],
                                runner=raw["runner"], base_image=raw.get("base_image"),
                                deployment_target=raw.get("deployment_target"), mps_min_macos=raw.get("mps_min_macos"),
                                location=self.marks.at(key)))
        return tuple(out)

    def _check_mps(self, key: tuple[str, ...], raw: Mapping[str, Any], dropped: tuple[Dropped, ...]) -> None:
        mps = raw.get("mps_min_macos")
        if mps is None:
            return
        for d in dropped:
            if d.kind is DroppedKind.MPS_MACOS and Version(mps).major <= Version(d.value).major:
                self.problem((*key, "mps_min_macos"), f"MPS is enabled from macOS {mps}, but {d.describe()}",
                             hint=f"set mps_min_macos above {d.value}", dropped=True)

    def variants(self, platforms: set[str]) -> tuple[Variant, ...]:
        out: list[Variant] = []
        for family_name, family in self.data["accelerators"].items():
            out.extend(self._family(Accelerator(family_name), family, platforms))
        seen: dict[str, Variant] = {}
        for v in out:
            if v.label in seen:
                self.problems.append(Problem(message=f"label {v.label!r} is used twice", location=v.location,
                                             hint=f"first used at {seen[v.label].location}"))
            seen[v.label] = v
        return tuple(out)

    def _family(self, accel: Accelerator, raw: dict[str, Any], platforms: set[str]) -> Iterator[Variant]:
        key: tuple[str, ...] = ("accelerators", accel.value)
        defaults = {k: v for k, v in raw.items() if k != "versions"}
        versions = raw.get("versions")
        if versions is None:
            if "label" not in raw:
                self.problem(key, f"accelerator {accel.value!r} has neither versions nor a label",
                             hint="add 'label:' for a single variant, or 'versions:'")
                return
            yield self._variant(accel, None, defaults, key, platforms)
            return
        for version, fields in versions.items():
            merged = _merge(defaults, fields)
            vkey = (*key, "versions", version)
            if "label" not in merged:
                self.problem(vkey, f"version {version!r} has no label", hint="add label: (e.g. cu132)")
                continue
            yield self._variant(accel, version, merged, vkey, platforms)

    def _variant(self, accel: Accelerator, version: str | None, raw: dict[str, Any], key: tuple[str, ...],
                 platforms: set[str]) -> Variant:
        arch_lists = self._arch_lists(accel, raw.get("arch_list"), (*key, "arch_list"), platforms)
        self._requirements(raw.get("runtime_requirements", []), (*key, "runtime_requirements"))
        toolkit = raw.get("toolkit", {})
        self._requirements(toolkit.get("requirements", []), (*key, "toolkit", "requirements"))
        providers = self._providers(raw.get("exclude_libs", {}), raw.get("runtime_requirements", []), key)
        for i, entry in enumerate(raw.get("rpath", [])):
            if not entry.startswith("$ORIGIN"):
                self.problem((*key, "rpath", i), f"RPATH entry {entry!r} is not relative to $ORIGIN",
                             hint="absolute RPATHs leak the build machine's layout into the wheel")
        for name in raw.get("smoke_runners", {}):
            if name not in platforms:
                self.problem((*key, "smoke_runners", name), f"unknown platform {name!r}", hint=_suggest(name, sorted(platforms)))
        return Variant(
            accelerator=accel, version=version, label=raw["label"], notes=raw.get("notes", ""),
            arch_lists=arch_lists,
            toolkit=Toolkit(requirements=tuple(toolkit.get("requirements", ())), index_url=toolkit.get("index_url"),
                            root=toolkit.get("root"), system_repository=toolkit.get("system_repository"),
                            system_packages=tuple(toolkit.get("system_packages", ())),
                            system_repository_key=toolkit.get("system_repository_key"), max_gcc=toolkit.get("max_gcc")),
            runtime_requirements=tuple(raw.get("runtime_requirements", ())),
            lib_providers=providers,
            rpath=tuple(raw.get("rpath", ())),
            smoke_runners=tuple(sorted((k, tuple(v)) for k, v in raw.get("smoke_runners", {}).items())),
            location=self.marks.at(key),
        )

    def _providers(self, raw: Mapping[str, str], runtime: list[str], key: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
        """Excluded library -> providing requirement; the provider must be a runtime requirement."""
        declared = {_req_name(r) for r in runtime} - {None}
        for lib, text in raw.items():
            name = _req_name(text)
            if name is None:
                self.problem((*key, "exclude_libs", lib), f"{text!r} is not a requirement name (with optional extras)")
            elif name not in declared:
                self.problem((*key, "exclude_libs", lib), f"{lib} is provided by {text!r}, which is not among the "
                             "variant's runtime_requirements", hint="add it to runtime_requirements, or stop excluding the library")
        return tuple(sorted(raw.items()))

    def _arch_lists(self, accel: Accelerator, raw: str | dict[str, str] | None, key: tuple[str, ...],
                    platforms: set[str]) -> tuple[tuple[str, str], ...]:
        if raw is None:
            if accel in GPU_FAMILIES:
                self.problem(key[:-1], f"{accel.value} variant has no arch_list", hint="add arch_list: '8.0;9.0;...'")
            return ()
        if isinstance(raw, str):
            return (("*", raw),)
        for name in raw:
            if name not in platforms:
                self.problem((*key, name), f"unknown platform {name!r}", hint=_suggest(name, sorted(platforms)))
        return tuple(sorted(raw.items()))

    def _requirement(self, text: str, key: tuple[str | int, ...]) -> None:
        try:
            Requirement(text)
        except InvalidRequirement as exc:
            self.problem(key, f"not a valid requirement: {exc}")

    def channels(self, platforms: set[str], labels: set[str]) -> Channels:
        raw = self.data["channels"]
        for name, label in raw["pypi"].items():
            if name not in platforms:
                self.problem(("channels", "pypi", name), f"unknown platform {name!r}", hint=_suggest(name, sorted(platforms)))
            if label not in labels:
                self.problem(("channels", "pypi", name), f"unknown variant label {label!r}", hint=_suggest(label, sorted(labels)))
        return Channels(pypi=tuple(sorted(raw["pypi"].items())), index_base_url=raw["index"]["base_url"],
                        index_layout=raw["index"]["layout"])

    def exclusions(self) -> tuple[Exclusion, ...]:
        return tuple(
            Exclusion(pattern=e["targets"], reason=e["reason"], location=self.marks.at(("exclude", i)))
            for i, e in enumerate(self.data.get("exclude", []))
        )

    def check_exclusions(self, matrix: Matrix) -> None:
        """An exclusion that matches no candidate target is stale: probably a typo."""
        from .targets import candidate_ids  # targets depends on the model only

        ids = candidate_ids(matrix)
        for i, excl in enumerate(matrix.exclusions):
            if not fnmatch.filter(ids, excl.pattern):
                self.problem(("exclude", i, "targets"), f"exclusion {excl.pattern!r} matches no target",
                             hint="target ids look like cu132-cp312-linux-x86_64")


def _req_name(text: str) -> str | None:
    try:
        return canonicalize_name(Requirement(text).name)
    except InvalidRequirement:
        return None


def _next_minor(release: str) -> str:
    major, minor = release.split(".")[:2]
    return f"{major}.{int(minor) + 1}"


def _merge(defaults: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Family defaults overlaid by a version's keys; nested mappings merge one level down."""
    out = dict(defaults)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    return out
