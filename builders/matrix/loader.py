"""Load ``matrix.yaml``: the safe reader, the schema, every semantic rule, then the frozen model.

One run reports every problem. The semantic rules run on whatever parsed, skipping only a
rule whose input is missing or ill-typed (the schema has already said why); problems come
out in file order, each with ``file:line:column``, the key path and how to fix it (the
message shows the first 50).

The input is read by :mod:`builders.base.untrusted` (at most :data:`MATRIX_LIMIT` bytes of UTF-8)
and parsed by :mod:`builders.base.yamlmarks` (core YAML only, alias and depth caps). The rules
are the small ``*_problem`` functions below; what they accept:

- ``pythons``: CPython minor versions ``3.N`` (``t`` for free-threaded, which exists from
  3.13 on) that ``requires_python`` admits; at most 32 of them and :data:`MAX_TARGETS`
  candidate targets in all. ``3.1`` next to 3.11 is flagged as a 3.10 read as a number.
- labels: a PEP 440 local version segment in normal form (``[a-z0-9]+(\\.[a-z0-9]+)*``),
  which is also a safe path component.
- platforms: named ``{os}-{arch}``; ``wheel_platform`` a real tag for that os and arch
  (``manylinux_2_Y_arch``/``musllinux_1_Y_arch``, ``win_amd64``/``win_arm64``,
  ``macosx_X_Y_arch`` matching ``deployment_target``).
- names are PEP 508 names, ``released`` a real date, ``version`` a public PEP 440 version.
- paths (``project.source``, ``smoke.script``) are relative and stay inside the matrix's
  folder, and exist; checked only for a command that uses them (``build`` and ``smoke``:
  ``builds=True``), and ``source`` not when ``--source`` gives it, absolute or missing as it may be.
- RPATH entries: ``$ORIGIN`` followed by ``/name`` or ``/..`` segments. With the extension
  assumed directly in its top-level package folder (``site-packages/pkg/``, the shallowest
  place it can be), the normalised path must stay in ``site-packages`` (at most one net
  ``..``), or lead exactly into the environment's ``lib`` folder, where wheels install data
  files (``$ORIGIN/../../..``, three ``..``), or below it. No ``:`` (one entry per item).
- URLs: ``https``; ``http`` only to this machine (127.0.0.0/8, localhost, ::1); ``file``;
  no credentials, quotes, spaces or HTML-special characters. ``${VAR}`` stands for a value
  from the environment, filled in by :func:`expand_env` where it is used.
- placeholders: ``build.command`` takes ``{python}``, ``{source}``, ``{outdir}``; ``build.core``'s
  commands take ``{source}``, ``{builddir}``, ``{coredir}``, and need ``build.env.core_dir``;
  ``channels.index.layout`` takes ``{label}`` and is a relative path without ``..``.
- a size budget and a smoke timeout are finite and above 0; every arch list is a list of
  real GPU architectures of its family; a platform's PyPI default is built there.
- wheel variants (PEP 825): ``variant_properties`` take ``{version}``, ``{major}``, ``{arch}``
  and expand to ``namespace :: feature :: value`` properties; with ``wheel_variants`` declared,
  each namespace has a provider there, ``priorities`` lists every provider once, and no two
  variants have the same property set (at most one null variant); the variant index's layout
  is a relative folder without ``..``.
"""

from __future__ import annotations

import datetime
import difflib
import fnmatch
import ipaddress
import json
import math
import re
import string
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jsonschema
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from builders.base import untrusted, yamlmarks
from builders.base.arch import ARCHES
from builders.base.errors import SHOWN_PROBLEMS, EngineError, InputError, MatrixError, Problem, raise_problems
from builders.base.yamlmarks import Marks
from builders.matrix.family import names as family_names
from builders.matrix.model import (
    OS,
    Accelerator,
    Channels,
    Dropped,
    DroppedKind,
    Exclusion,
    ExtensionModule,
    Matrix,
    Platform,
    Project,
    PythonVersion,
    Timeouts,
    Toolkit,
    Variant,
    VariantProvider,
    WheelVariants,
)
from builders.matrix.policy import admits_release, dropped_admitted_by, exclusion_for

KeyPath = tuple[str | int, ...]

MATRIX_LIMIT = untrusted.MIB
MAX_TARGETS = 4_000  # candidate targets; a release of ~1,000 plans in about 0.4 s
FREE_THREADED_SINCE = (3, 13)
BUILD_PLACEHOLDERS = ("python", "source", "outdir")
CORE_PLACEHOLDERS = ("source", "builddir", "coredir")
LAYOUT_PLACEHOLDERS = ("label",)
URL_KEYS = ("index_url", "system_repository", "system_repository_key")

LEGACY_MANYLINUX = {"1": "2_5", "2010": "2_12", "2014": "2_17"}
ENV_REF = re.compile(r"\$\{([A-Z_][A-Z0-9_]*)\}")
IMAGE_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
URL_UNSAFE = re.compile(r"[\s<>\"'`\\{}|^]")
LAYOUT_CHARS = re.compile(r"[A-Za-z0-9._{}/-]+")
# PEP 825 as variantlib 0.2.2 reads it: namespace :: feature :: value
VARIANT_PROPERTY = re.compile(r"([a-z0-9_]+)\s*::\s*([a-z0-9_]+)\s*::\s*([a-z0-9_.]+)")
PROPERTY_PLACEHOLDERS = ("version", "major", "arch")


def schema() -> dict[str, Any]:
    """The JSON Schema shipped in the package (also what editors use), with the declared families
    (:mod:`builders.matrix.family`) as the names ``accelerators`` admits."""
    return _schema(family_names())


@cache
def _schema(families: tuple[str, ...]) -> dict[str, Any]:
    text = resources.files("builders").joinpath("schema/matrix.schema.json").read_text(encoding="utf-8")
    data = json.loads(text)
    data["properties"]["accelerators"]["propertyNames"] = {"enum": list(families)}
    return data


def load(path: Path | str, *, source: Path | None = None, builds: bool = True) -> Matrix:
    """Read and validate ``path``; raise :class:`MatrixError` listing every problem.

    ``source`` is a source tree given on the command line (``--source``): it replaces
    ``project.source``, which then is not checked at all. ``builds=False`` is for a command that
    neither builds nor smoke-tests (``verify``, ``audit``, ``plan``...): it uses neither the source
    tree nor the smoke script, so neither is checked (a downloaded wheel verifies without them).
    """
    try:
        text = untrusted.read_text(path, what="matrix", limit=MATRIX_LIMIT)
    except InputError as exc:
        raise MatrixError(exc.problems) from None
    return loads(text, path, source=source, builds=builds)


def loads(text: str, path: Path | str = "matrix.yaml", *, source: Path | None = None, builds: bool = True) -> Matrix:
    """Validate matrix ``text`` as if read from ``path`` (used by tests, no I/O but path checks; see :func:`load`)."""
    path = Path(path)
    parsed = yamlmarks.parse(text, str(path))
    found, bad = check_schema(parsed.data, parsed.marks, parsed.invalid)
    rules = _Rules(parsed.data, parsed.marks, bad, base=path.parent, check_source=builds and source is None,
                   check_script=builds)
    raise_problems(sorted([*parsed.problems, *found, *rules.run()], key=_file_order))
    return _Model(parsed.data, parsed.marks, path).build(source)


def _file_order(problem: Problem) -> tuple[int, int]:
    return (problem.location.line, problem.location.column) if problem.location else (0, 0)


# --- ${VAR}: one expansion for every engine -------------------------------------------------


def expand_env(value: str | None, env: Mapping[str, str], *, key: str) -> str:
    """``value`` with each ``${VAR}`` taken from ``env``; the result must be a safe URL.

    ``key`` names where the value is used (``m.yaml:12:9: accelerators.rocm...index_url``);
    an unset or empty variable, or a value that is not a safe URL, is an :class:`EngineError`
    naming it. Every engine (local toolchains, container images, cibuildwheel) calls this.
    """
    if not value:
        return ""

    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        if not env.get(name):
            raise EngineError(f"{key}: needs ${{{name}}} from the environment, and it is not set\n"
                              f"    hint: export {name}=https://... (registry addresses never go in the repository)")
        return env[name]

    expanded = ENV_REF.sub(one, value)
    finding = url_problem(expanded)
    if finding:
        raise EngineError(f"{key}: {value} expands to {expanded!r}: {finding.message}")
    return expanded


def toolkit_url(variant: Variant, name: str, env: Mapping[str, str]) -> str:
    """``variant.toolkit.<name>`` (``index_url``, ``system_repository``...) expanded for use."""
    where = variant.location
    return expand_env(getattr(variant.toolkit, name), env, key=f"{where}: {where.key}.toolkit.{name}")


def runtime_indexes(variant: Variant, env: Mapping[str, str]) -> tuple[str, ...]:
    """The extra package indexes a variant's wheels install their runtime requirements from: its
    ``toolkit.index_url`` expanded (TheRock's for ``rocm[libraries]``, which no default index has), or
    none when it names none (cuda, cpu: the default index has them). An unset variable is the
    :class:`EngineError` of :func:`toolkit_url`, naming it and the variant's ``file:line``."""
    url = toolkit_url(variant, "index_url", env)
    return (url,) if url else ()


# --- schema --------------------------------------------------------------------------------


def check_schema(data: Any, marks: Marks, invalid: Iterable[KeyPath] = ()) -> tuple[list[Problem], set[KeyPath]]:
    """Schema problems, and the paths whose values the semantic rules must not trust.

    ``invalid`` are values the YAML reader already refused (``!!int abc``): not reported again.
    """
    report = _SchemaReport(marks)
    refused = set(invalid)
    report.bad.update(refused)
    for error in jsonschema.Draft202012Validator(schema()).iter_errors(data):
        if tuple(error.absolute_path) not in refused:
            report.add(error)
    return report.problems, report.bad


class _SchemaReport:
    def __init__(self, marks: Marks) -> None:
        self.marks = marks
        self.problems: list[Problem] = []
        self.bad: set[KeyPath] = set()

    def add(self, error: jsonschema.ValidationError) -> None:
        path = tuple(error.absolute_path)
        schema_: Any = error.schema
        if error.validator == "additionalProperties" and isinstance(error.instance, dict):
            allowed = sorted(schema_.get("properties", {}))
            for key in [k for k in error.instance if k not in allowed]:
                self.bad.add((*path, key))
                self.problem((*path, key), f"unknown key {key!r}", allowed, key)
        elif list(error.schema_path)[-2:-1] == ["propertyNames"]:
            name = str(error.instance)
            self.bad.add((*path, name))
            choices = schema_.get("enum", []) if isinstance(schema_, dict) else []
            self.problem((*path, name), f"{name!r} is not allowed here ({_short(error.message)})", choices, name,
                         hint=_schema_hint(error))
        elif error.validator != "required":
            self.bad.add(path)
            self.problem(path, _message(error), hint=_schema_hint(error))
        else:
            self.problem(path, error.message)

    def problem(self, path: KeyPath, message: str, choices: Iterable[str] = (), word: str = "", hint: str = "") -> None:
        if word and choices and len(self.problems) < SHOWN_PROBLEMS:  # difflib only for what is shown
            hint = _suggest(word, list(choices))
        self.problems.append(Problem(message=message, location=self.marks.at(path), hint=hint))


def _message(error: jsonschema.ValidationError) -> str:
    instance: Any = error.instance
    value: Any = error.validator_value
    if error.validator == "type":
        return f"must be {_a(value)}, not {_kind(instance)}"
    if error.validator in ("maxItems", "maxProperties"):
        return f"has {len(instance)} entries, more than the {value} allowed"
    if error.validator == "uniqueItems":
        return f"lists {_short(repr(_first_repeat(instance)), 60)} more than once"
    if error.validator == "oneOf":
        return f"does not match any allowed form: {', '.join(sorted({_short(_cause(e)) for e in error.context}))}"
    return _short(error.message)


def _first_repeat(items: list[Any]) -> Any:
    seen: list[Any] = []
    for item in items:
        if item in seen:
            return item
        seen.append(item)
    return None


def _schema_hint(error: jsonschema.ValidationError) -> str:
    value: Any = error.validator_value
    if error.validator == "enum":
        return _suggest(str(error.instance), [str(v) for v in value])
    schema_: Any = error.schema
    return str(schema_.get("description", "")) if isinstance(schema_, dict) else ""


def _a(types: str | list[str]) -> str:
    names = [types] if isinstance(types, str) else types
    return " or ".join(("an " if t[0] in "aeiou" else "a ") + t for t in names)


def _kind(value: Any) -> str:
    kinds = {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean", int: "an integer", float: "a number"}
    if isinstance(value, yamlmarks.YamlFloat):
        return f"the number {value}"
    return "null" if value is None else kinds.get(type(value), type(value).__name__)


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def _cause(error: jsonschema.ValidationError) -> str:
    deepest = error.context[-1] if error.context else error
    return _short(deepest.message)


def _suggest(word: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(word, [str(c) for c in choices], n=1, cutoff=0.6)
    if close:
        return f"did you mean {close[0]!r}?"
    return f"allowed: {', '.join(map(str, choices))}" if choices else ""


# --- the rules: small functions over values --------------------------------------------------


@dataclass(frozen=True)
class Finding:
    """What a rule found wrong, and how to fix it."""

    message: str
    hint: str = ""
    dropped: bool = False


def python_problem(text: str, requires: SpecifierSet | None, neighbours: Iterable[int] = ()) -> Finding | None:
    """A listed Python: free-threaded only from 3.13, admitted by ``requires_python``.

    ``neighbours`` are the minors of the other Pythons the matrix names: ``3.1`` among 3.1x
    is almost certainly 3.10 written without quotes and read as a number.
    """
    py = PythonVersion.parse(text)
    if py.free_threaded and (py.major, py.minor) < FREE_THREADED_SINCE:
        return Finding(f"Python {text}: free-threaded CPython exists from 3.13 on",
                       hint=f"list {py.release!r} instead, or remove it")
    if requires is None or admits_release(requires, py.release):
        return None
    others = sorted(neighbours)
    if py.minor < 10 and others and others[0] - 1 <= py.minor * 10 <= others[-1] + 1:
        hint = (f"{text} looks like {py.release}0 written without quotes (YAML reads 3.{py.minor}0 as the "
                f"number 3.{py.minor}): write \"{py.release}0\"")
    else:
        hint = "remove it, or change requires_python"
    return Finding(f"Python {text} is not admitted by requires_python {requires}", hint=hint)


# A platform without `runner:` runs on GitHub's hosted runner for its system (the ones the shipped matrix names).
DEFAULT_RUNNERS = {("linux", "x86_64"): "ubuntu-24.04", ("linux", "aarch64"): "ubuntu-24.04-arm",
                   ("windows", "AMD64"): "windows-2025", ("macos", "arm64"): "macos-15"}
DEFAULT_PLATFORMS = frozenset(f"{os_name} {arch}" for os_name, arch in DEFAULT_RUNNERS)


def default_base_image(wheel_platform: str) -> str | None:
    """A manylinux platform without `base_image:` builds in the PyPA's image of its policy (by tag)."""
    return f"quay.io/pypa/{wheel_platform}" if wheel_platform.startswith("manylinux_") else None


def variable_problem(name: str, carried: Iterable[str]) -> Finding | None:
    """A ``build.variables`` name that the pipeline or a ``build.env`` setting also sets would be overwritten."""
    if name == "SOURCE_DATE_EPOCH" or name in carried:
        return Finding(f"build.variables.{name} is set by builders itself (SOURCE_DATE_EPOCH, or a build.env setting)",
                       hint="give the constant another name, or drop it")
    return None


def conditional_modules(entries: Iterable[Any]) -> tuple[ExtensionModule, ...]:
    """The ``extension_modules`` entries with an extra, platforms or pythons (checked by :func:`module_problem`)."""
    return tuple(ExtensionModule(module=e["module"], extra=e.get("extra"), platforms=tuple(e.get("platforms", ())),
                                 pythons=SpecifierSet(e["pythons"]) if "pythons" in e else None)
                 for e in entries if isinstance(e, dict))


def module_problem(entry: Mapping[str, Any], extras: Iterable[str], platforms: Iterable[str]) -> Finding | None:
    """A conditional extension module names an extra the project has, platforms the matrix lists, real Pythons."""
    if "extra" in entry and entry["extra"] not in set(extras):
        return Finding(f"extension module {entry['module']} needs extra {entry['extra']!r}, which "
                       "optional_dependencies does not list", hint=_suggest(entry["extra"], list(extras)))
    unknown = sorted(set(entry.get("platforms", ())) - set(platforms))
    if unknown:
        return Finding(f"extension module {entry['module']}: no platform {', '.join(unknown)} in the matrix",
                       hint=_suggest(unknown[0], list(platforms)))
    return specifier_problem(entry["pythons"]) if "pythons" in entry else None


def version_problem(text: str) -> Finding | None:
    try:
        version = Version(text)
    except InvalidVersion:
        return Finding(f"{text!r} is not a PEP 440 version", hint="e.g. 2.15.0")
    if version.local:
        return Finding(f"{text!r} has a local label; labels come from the variants", hint=f"use {version.public!r}")
    return None


def date_problem(text: str) -> Finding | None:
    try:
        if re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", text):
            datetime.date.fromisoformat(text)
            return None
    except ValueError:
        pass
    return Finding(f"{text!r} is not a date", hint="write a real calendar date as YYYY-MM-DD, e.g. 2026-10-28")


def specifier_problem(text: str) -> Finding | None:
    try:
        SpecifierSet(text)
    except InvalidSpecifier:
        return Finding(f"{text!r} is not a PEP 440 version specifier", hint="e.g. '>=3.11'")
    return None


def requirement_problem(text: str) -> Finding | None:
    try:
        Requirement(text)
    except InvalidRequirement as exc:
        return Finding(f"not a valid requirement: {_short(str(exc))}", hint="a PEP 508 requirement, e.g. 'numpy>=2.1'")
    return None


def positive_problem(value: int | str) -> Finding | None:
    """A size or a time: a finite number above 0 (a YAML float arrives as its text)."""
    number = float(value)
    if math.isfinite(number) and number > 0:
        return None
    return Finding(f"{value} must be a number above 0", hint="a budget or a timeout of 0 refuses everything")


def path_problem(base: Path, text: str, *, folder: bool) -> Finding | None:
    """A path in the matrix: relative, inside the matrix's folder, and present."""
    what = "source folder" if folder else "file"
    if Path(text).is_absolute() or text.startswith("~"):
        return Finding(f"{what} {text!r} is absolute", hint="paths in the matrix are relative to the matrix file"
                       + ("; give a tree elsewhere with --source DIR" if folder else ""))
    root = base.resolve()
    target = (root / text).resolve()
    if not target.is_relative_to(root):
        return Finding(f"{what} {text!r} leads outside the matrix's folder ({root})",
                       hint="keep it inside the repository" + ("; give a tree elsewhere with --source DIR" if folder else ""))
    try:
        exists, right_kind = target.exists(), (target.is_dir() if folder else target.is_file())
    except OSError:
        exists = right_kind = False
    if not right_kind:
        problem = f"is not a {'folder' if folder else 'file'}" if exists else "does not exist"
        return Finding(f"{what} {text!r} {problem} (looked for {target})",
                       hint="the path is relative to the matrix file" + ("; --source DIR overrides it" if folder else ""))
    return None


def placeholder_problem(text: str, allowed: tuple[str, ...]) -> Finding | None:
    """Only the documented ``{name}`` placeholders, with no format spec or conversion."""
    fix = f"the placeholders here are {', '.join('{' + a + '}' for a in allowed)}; write {{{{ and }}}} for a literal brace"
    try:
        fields = [(name, spec, conv) for _, name, spec, conv in string.Formatter().parse(text) if name is not None]
    except ValueError as exc:
        return Finding(f"{_short(text)!r}: {exc}", hint=fix)
    for name, spec, conv in fields:
        if name not in allowed or spec or conv:
            shown = "{" + name + (f"!{conv}" if conv else "") + (f":{spec}" if spec else "") + "}"
            return Finding(f"unknown placeholder {_short(shown, 60)} in {_short(text)!r}", hint=fix)
    return None


def layout_problem(text: str) -> Finding | None:
    """The index layout is a relative URL path with ``{label}``: no ``..``, nothing absolute."""
    found = placeholder_problem(text, LAYOUT_PLACEHOLDERS)
    if found:
        return found
    if "{label}" not in text:
        return Finding(f"layout {text!r} has no {{label}}: every variant would share one index", hint="e.g. whl/{label}/")
    if text.startswith("/") or not LAYOUT_CHARS.fullmatch(text):
        return Finding(f"layout {text!r} must be a relative path of letters, digits, '.', '_', '-' and '/'",
                       hint="e.g. whl/{label}/")
    if any(part in ("", ".", "..") for part in text.rstrip("/").split("/")):
        return Finding(f"layout {text!r} has an empty, '.' or '..' segment", hint="e.g. whl/{label}/")
    return None


def rpath_problem(entry: str) -> Finding | None:
    """An RPATH entry: ``$ORIGIN`` and ``/name`` or ``/..`` segments that stay in the environment
    (see the module docstring for the rule)."""
    if ":" in entry:
        return Finding(f"RPATH entry {entry!r} holds several paths", hint="give one path per list item")
    head, _, rest = entry.partition("/")
    if head not in ("$ORIGIN", "${ORIGIN}"):
        return Finding(f"RPATH entry {entry!r} is not relative to $ORIGIN", hint="start it with '$ORIGIN/': absolute "
                       "RPATHs leak the build machine's layout into the wheel")
    segments = rest.split("/") if rest else []
    if any(s in ("", ".") or "$" in s or "\\" in s for s in segments):
        return Finding(f"RPATH entry {entry!r} has an empty, '.' or variable segment", hint="e.g. $ORIGIN/../nvidia/cu13/lib")
    ups = _climbs(segments)
    if ups == 0 or ups == 2:
        return None
    return Finding(f"RPATH entry {entry!r} climbs out of site-packages",
                   hint="an extension lies in site-packages/<package>/: one '..' reaches site-packages "
                        "($ORIGIN/../nvidia/cu13/lib), three reach the environment's lib folder ($ORIGIN/../../..)")


def _climbs(segments: list[str]) -> int:
    """How many levels above site-packages the normalised path ends, from ``site-packages/pkg``."""
    path = ["pkg"]
    for segment in segments:
        if segment == ".." and path and path[-1] != "..":
            path.pop()
        else:
            path.append(segment)
    return len(path) - len([p for p in path if p != ".."])


def url_problem(text: str, *, variables: bool = False) -> Finding | None:
    """https, http only to this machine, or file; no credentials or HTML-special characters.

    With ``variables``, ``${VAR}`` references are allowed and the URL itself is checked when
    they are filled in (:func:`expand_env`).
    """
    if variables and "$" in text:
        return env_ref_problem(text)
    if URL_UNSAFE.search(text) or "$" in text:
        return Finding(f"URL {_short(text)!r} holds a space, a quote, '$' or a character special in HTML",
                       hint="percent-encode it (%20, %22...)")
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as exc:
        return Finding(f"{_short(text)!r} is not a valid URL: {exc}")
    if parts.username or parts.password:
        return Finding(f"URL {_short(text)!r} carries credentials", hint="credentials never go in the repository")
    return _scheme_problem(text, parts.scheme, parts.hostname or "")


def _scheme_problem(text: str, scheme: str, host: str) -> Finding | None:
    if scheme == "file" or (scheme == "https" and host):
        return None
    if scheme == "http" and _loopback(host):
        return None
    if scheme == "http":
        return Finding(f"URL {_short(text)!r} is plain http", hint="use https (http only reaches 127.0.0.1, localhost, ::1)")
    return Finding(f"{_short(text)!r} is not an https URL", hint="e.g. https://download.example.org/")


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def env_ref_problem(text: str) -> Finding | None:
    """Every ``$`` starts a ``${NAME}`` reference; the rest of the text is safe in a URL."""
    rest = ENV_REF.sub("", text)
    if "$" in rest:
        return Finding(f"{_short(text)!r} has a '$' that is not a ${{VAR}} reference",
                       hint="write ${NAME} with NAME in capitals, digits and '_'")
    if URL_UNSAFE.search(rest):
        return Finding(f"URL {_short(text)!r} holds a space, a quote or a character special in HTML")
    return None


def arch_list_problem(accel: Accelerator, text: str) -> Finding | None:
    """A ``;``-separated list of the family's real architectures, each once."""
    pattern, example = accel.facts.arch_entry, accel.facts.arch_example
    entries = text.split(";")
    for entry in entries:
        if not pattern.fullmatch(entry):
            return Finding(f"{_short(entry, 60)!r} in arch list is not a {accel.value} architecture", hint=f"write {example}")
    if len(set(entries)) != len(entries):
        return Finding("the arch list names an architecture twice", hint="list each once")
    return None


def platform_name_problem(name: str, os_name: str, arch: str) -> Finding | None:
    expected = f"{os_name}-{ARCHES[os_name][arch][0]}"
    if name == expected:
        return None
    return Finding(f"platform {name!r} does not match its os and arch ({os_name}, {arch})", hint=f"did you mean {expected!r}?")


def base_image_problem(ref: str) -> Finding | None:
    """A reference pinned by digest (``repo@sha256:<64 hex>``, ``repo:tag@sha256:...``) must carry a whole
    sha256 digest: a truncated or mistyped one would fail only when CI pulls the image."""
    name, at, digest = ref.partition("@")
    if not at or (name and IMAGE_DIGEST.fullmatch(digest)):
        return None
    return Finding(f"{ref!r} is not pinned by a valid digest: after the image name, '@' takes sha256: and 64 "
                   "lower-case hex digits", hint="copy the digest from `skopeo inspect docker://IMAGE` "
                   "(\"Digest\"), or remove the '@...' part")


def arch_problem(os_name: str, arch: str) -> Finding | None:
    known = ARCHES[os_name]
    if arch in known:
        return None
    return Finding(f"arch {arch!r} is not how {os_name} names a CPU", hint=f"use one of {', '.join(known)}")


def wheel_platform_problem(os_name: str, arch: str, tag: str, deployment_target: str | None) -> Finding | None:
    """A real platform tag for ``os_name`` on ``arch``."""
    want = ARCHES[os_name][arch][1]
    if os_name == "windows":
        return None if tag == f"win_{want}" else Finding(f"{tag!r} does not match arch {arch!r}", hint=f"use 'win_{want}'")
    if os_name == "macos":
        return _macos_tag_problem(tag, want, deployment_target)
    return _linux_tag_problem(tag, want)


def _linux_tag_problem(tag: str, want: str) -> Finding | None:
    legacy = re.fullmatch(r"manylinux(1|2010|2014)_(\w+)", tag)
    if legacy:
        return Finding(f"{tag!r} is a legacy alias", hint=f"write manylinux_{LEGACY_MANYLINUX[legacy.group(1)]}_{want}")
    match = re.fullmatch(r"(manylinux|musllinux)_([0-9]+)_([0-9]+)_(\w+)", tag)
    if not match:
        return Finding(f"{tag!r} is not a Linux platform tag", hint=f"e.g. manylinux_2_28_{want} or musllinux_1_2_{want}")
    family, major, minor, tag_arch = match.groups()
    if tag_arch != want:
        return Finding(f"{tag!r} does not match arch {want!r}", hint=f"use {family}_{major}_{minor}_{want}")
    if (family, major) not in (("manylinux", "2"), ("musllinux", "1")) or int(minor) > 99:
        return Finding(f"{tag!r} names no real C library version", hint=f"glibc is 2.x (manylinux_2_28_{want}), musl 1.x")
    return None


def _macos_tag_problem(tag: str, want: str, deployment_target: str | None) -> Finding | None:
    match = re.fullmatch(r"macosx_([0-9]+)_([0-9]+)_(\w+)", tag)
    if not match:
        return Finding(f"{tag!r} is not a macOS platform tag", hint=f"e.g. macosx_14_0_{want}")
    major, minor, tag_arch = match.groups()
    if tag_arch not in (want, "universal2"):
        return Finding(f"{tag!r} does not match arch {want!r}", hint=f"use macosx_{major}_{minor}_{want}")
    if not 10 <= int(major) <= 99 or (want == "arm64" and int(major) < 11):
        return Finding(f"{tag!r} names no macOS release that runs on {want}", hint=f"e.g. macosx_14_0_{want}")
    if deployment_target and deployment_target != f"{int(major)}.{int(minor)}":
        return Finding(f"{tag!r} does not match deployment_target {deployment_target}",
                       hint=f"use macosx_{deployment_target.replace('.', '_')}_{want}")
    return None


def dropped_python_problem(text: str, dropped: Iterable[Dropped]) -> Finding | None:
    for d in dropped:
        if d.kind is DroppedKind.PYTHON and d.value == text:
            return Finding(f"Python {text} is listed, but {d.describe()}", hint=f"remove {text!r} from pythons", dropped=True)
    return None


def pypi_default_problem(platform: str, label: str, ids: list[str], exclusions: Iterable[Exclusion]) -> Finding | None:
    """The variant published on PyPI for ``platform`` must have a target there."""
    reasons = [exclusion_for(tid, exclusions) for tid in ids]
    if not ids or not all(reasons):
        return None
    first = reasons[0]
    reason = f": {first.reason}" if first else ""
    return Finding(f"the PyPI default for {platform} is {label!r}, but every {label} target on {platform} is "
                   f"excluded{reason}", hint="publish a variant that is built for this platform, or drop the entry")


def arch_values(accel: Accelerator, entries: Iterable[str]) -> list[str]:
    """Arch-list entries in the form the family's variant provider reports them (the family's
    ``arch_properties``: CUDA ``12.0+PTX`` is ``120_real`` and ``120_virtual``)."""
    return list(dict.fromkeys(value for entry in entries for value in accel.facts.arch_properties(entry)))


def arch_entries(arch_lists: Iterable[tuple[str, str]]) -> list[str]:
    """Every architecture of a variant, all platforms together, in first-seen order: one label has one
    property set on a variant index, whatever platform its wheel is for."""
    return list(dict.fromkeys(e for _platform, text in arch_lists for e in text.split(";") if e))


def expand_properties(templates: Iterable[str], *, accel: Accelerator, version: str | None,
                      arches: Iterable[str]) -> list[str]:
    """``variant_properties`` with ``{version}``, ``{major}`` and ``{arch}`` filled in (one property per
    architecture), each as ``namespace :: feature :: value``, sorted and once each."""
    values = arch_values(accel, arches)
    fill = {"version": version or "", "major": (version or "").split(".")[0]}
    out = []
    for template in templates:
        for arch in (values if "{arch}" in template else [""]):
            text = template.format(**fill, arch=arch)
            match = VARIANT_PROPERTY.fullmatch(text.strip())
            out.append(" :: ".join(match.groups()) if match else text)
    return sorted(set(out))


def property_template_problem(text: str, *, version: str | None, arches: list[str]) -> Finding | None:
    """One ``variant_properties`` entry: known placeholders, each with a value for this variant."""
    found = placeholder_problem(text, PROPERTY_PLACEHOLDERS)
    if found:
        return found
    if ("{version}" in text or "{major}" in text) and version is None:
        return Finding(f"{text!r} uses the accelerator version, and this variant has none",
                       hint="declare it under versions:, or write the value")
    if "{arch}" in text and not arches:
        return Finding(f"{text!r} uses {{arch}}, and this variant has no arch_list", hint="add arch_list, or write the values")
    return None


def property_problem(text: str) -> Finding | None:
    if VARIANT_PROPERTY.fullmatch(text):
        return None
    return Finding(f"{_short(text, 80)!r} is not a PEP 825 variant property",
                   hint="write 'namespace :: feature :: value' in lower-case letters, digits and '_' (the value also "
                        "'.'), e.g. 'nvidia :: sm_arch :: 90_real'")


def variant_layout_problem(text: str) -> Finding | None:
    """The variant index's folder: a relative path of safe segments, no ``..``, no placeholder."""
    if text.startswith("/") or not re.fullmatch(r"[A-Za-z0-9._/-]+", text) \
            or any(part in ("", ".", "..") for part in text.rstrip("/").split("/")):
        return Finding(f"layout {text!r} must be a relative folder of letters, digits, '.', '_', '-' and '/', "
                       "without '..'", hint="e.g. variants/")
    return None



# --- applying the rules to the parsed data ---------------------------------------------------


class _Rules:
    """Runs every rule on whatever parsed; a rule whose input is missing or ill-typed is skipped."""

    def __init__(self, data: Any, marks: Marks, bad: set[KeyPath], *, base: Path, check_source: bool,
                 check_script: bool) -> None:
        self.data = data
        self.marks = marks
        self.bad = bad
        self.base = base
        self.check_source, self.check_script = check_source, check_script
        self.problems: list[Problem] = []
        # (label, its variant wheel's properties, where they are declared) of every variant that has them checked
        self.property_sets: list[tuple[str, frozenset[str], KeyPath]] = []
        self.told: set[KeyPath] = set()

    def get(self, path: KeyPath, kind: type | tuple[type, ...] = object) -> Any:
        """The value at ``path`` if present, not refused by the schema, and a ``kind``."""
        value = self.data
        for i, part in enumerate(path):
            container = dict if isinstance(part, str) else list
            if not isinstance(value, container) or path[: i + 1] in self.bad:
                return None
            if isinstance(value, dict):
                value = value.get(part)
            else:
                value = value[part] if 0 <= part < len(value) else None  # type: ignore[operator,index]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if not isinstance(value, kinds) or (isinstance(value, bool) and int in kinds and bool not in kinds):
            return None
        return value

    def items(self, path: KeyPath) -> list[tuple[str, Any]]:
        value = self.get(path, dict)
        return [(k, v) for k, v in value.items() if (*path, k) not in self.bad] if value else []

    def entries(self, path: KeyPath, kind: type = str) -> list[tuple[int, Any]]:
        value = self.get(path, list)
        return [(i, v) for i, v in enumerate(value or ()) if isinstance(v, kind) and (*path, i) not in self.bad]

    def report(self, key: KeyPath, finding: Finding | None) -> None:
        if finding is not None:
            self.problems.append(Problem(message=finding.message, location=self.marks.at(key), hint=finding.hint,
                                         dropped=finding.dropped))

    def check(self, key: KeyPath, kind: type | tuple[type, ...], rule: Any, *args: Any, **kwargs: Any) -> None:
        """Apply ``rule(value, *args)`` to the value at ``key`` when it is there and a ``kind``."""
        value = self.get(key, kind)
        if value is not None:
            self.report(key, rule(value, *args, **kwargs))

    def run(self) -> list[Problem]:
        dropped = self.dropped()
        requires = self.project(dropped)
        pythons = self.pythons(requires, dropped)
        platforms = self.platforms(dropped)
        labels = self.variants(platforms)
        self.wheel_variants()
        exclusions = self.exclusions()
        if pythons is not None and platforms is not None and labels is not None:
            ids = {(label, p): [_tid(label, py, p) for py in pythons] for label in labels for p in platforms}
            self.check_targets(ids, exclusions)
            self.channels(platforms, labels, ids, exclusions)
        else:
            self.channels(platforms, labels, None, exclusions)
        return self.problems

    # dropped and project

    def dropped(self) -> tuple[Dropped, ...]:
        out = []
        for i, entry in self.entries(("dropped",), dict):
            key = ("dropped", i)
            since, reason = self.get((*key, "since"), str), self.get((*key, "reason"), str)
            kind, value = _dropped_kind({k: v for k, v in entry.items() if self.get((*key, k)) is not None})
            if kind is not None and since is not None and reason is not None:
                out.append(Dropped(kind=kind, value=value, since=since, reason=reason, location=self.marks.at(("dropped", i))))
        return tuple(out)

    def project(self, dropped: tuple[Dropped, ...]) -> SpecifierSet | None:
        key = ("project",)
        self.check((*key, "version"), str, version_problem)
        self.check((*key, "released"), str, date_problem)
        self.check((*key, "wheel_size_budget_mb"), (int, str), positive_problem)
        self.check((*key, "smoke", "timeout"), (int, str), positive_problem)
        for i, part in self.entries((*key, "build", "command")):
            self.report((*key, "build", "command", i), placeholder_problem(part, BUILD_PLACEHOLDERS))
        self.core((*key, "build"))
        extras, platforms = [k for k, _ in self.items((*key, "optional_dependencies"))], [k for k, _ in self.items(("platforms",))]
        for i, entry in self.entries((*key, "extension_modules"), dict):
            self.report((*key, "extension_modules", i), module_problem(entry, extras, platforms))
        carried = [var for _, var in self.items((*key, "build", "env")) if isinstance(var, str)]
        for name, _ in self.items((*key, "build", "variables")):
            self.report((*key, "build", "variables", name), variable_problem(name, carried))
        if self.check_source:
            self.check((*key, "source"), str, lambda text: path_problem(self.base, text, folder=True))
        if self.check_script:
            self.check((*key, "smoke", "script"), str, lambda text: path_problem(self.base, text, folder=False))
        self.requirements((*key, "dependencies"))
        for extra, _ in self.items((*key, "optional_dependencies")):
            self.requirements((*key, "optional_dependencies", extra))
        self.check_cxx(dropped)
        return self.requires_python(dropped)

    def core(self, key: KeyPath) -> None:
        """``build.core``'s placeholders; the core and the variable that carries its folder come together."""
        for n, _ in self.entries((*key, "core", "commands"), list):
            for i, part in self.entries((*key, "core", "commands", n)):
                self.report((*key, "core", "commands", n, i), placeholder_problem(part, CORE_PLACEHOLDERS))
        has_core, has_var = self.get((*key, "core")) is not None, self.get((*key, "env", "core_dir")) is not None
        if has_core and not has_var:
            self.report((*key, "core"), Finding("build.core needs build.env.core_dir: the variable through which "
                                                "each per-Python build finds the installed core",
                                                hint="add e.g. `core_dir: MYPROJECT_CORE_DIR` under build.env"))
        elif has_var and not has_core:
            self.report((*key, "env", "core_dir"), Finding("build.env.core_dir names a variable for build.core, "
                                                           "and there is no build.core", hint="add build.core, or remove core_dir"))

    def requires_python(self, dropped: tuple[Dropped, ...]) -> SpecifierSet | None:
        key = ("project", "requires_python")
        self.check(key, str, specifier_problem)
        text = self.get(key, str)
        if text is None or specifier_problem(text):
            return None
        spec = SpecifierSet(text)
        for d in dropped_admitted_by(spec, dropped):
            self.report(key, Finding(f"Requires-Python {spec} admits Python {d.value}: {d.describe()}",
                                     hint=f"exclude it, e.g. '>={_next_minor(d.value)}'", dropped=True))
        return spec

    def check_cxx(self, dropped: tuple[Dropped, ...]) -> None:
        cxx = self.get(("project", "cxx_standard"), int)
        for d in dropped:
            if d.kind is DroppedKind.CXX_STANDARD and cxx is not None and cxx <= int(d.value):
                self.report(("project", "cxx_standard"), Finding(f"C++{cxx} is not allowed: {d.describe()}", dropped=True))

    def requirements(self, key: KeyPath) -> None:
        for i, text in self.entries(key):
            self.report((*key, i), requirement_problem(text))

    # pythons and platforms

    def pythons(self, requires: SpecifierSet | None, dropped: tuple[Dropped, ...]) -> list[PythonVersion] | None:
        listed = self.get(("pythons",), list)
        if listed is None:
            return None
        entries = self.entries(("pythons",))
        minors = [PythonVersion.parse(text).minor for _, text in entries]
        minors += [PythonVersion.parse(d.value).minor for d in dropped if d.kind is DroppedKind.PYTHON]
        out = []
        for i, text in entries:
            gone = dropped_python_problem(text, dropped)
            own = PythonVersion.parse(text).minor
            self.report(("pythons", i), gone or python_problem(text, requires, [m for m in minors if m != own]))
            if gone is None:
                out.append(PythonVersion.parse(text))
        return out if len(entries) == len(listed) else None

    def platforms(self, dropped: tuple[Dropped, ...]) -> list[str] | None:
        raw = self.get(("platforms",), dict)
        if raw is None:
            return None
        for name, entry in self.items(("platforms",)):
            if isinstance(entry, dict):
                self.platform(("platforms", name), name, dropped)
        return list(raw)

    def platform(self, key: KeyPath, name: str, dropped: tuple[Dropped, ...]) -> None:
        os_name, arch = self.get((*key, "os"), str), self.get((*key, "arch"), str)
        if os_name is None or arch is None:
            return
        self.report((*key, "arch"), arch_problem(os_name, arch))
        if arch not in ARCHES[os_name]:
            return
        self.report(key, platform_name_problem(name, os_name, arch))
        target = self.get((*key, "deployment_target"), str)
        self.check((*key, "wheel_platform"), str, lambda tag: wheel_platform_problem(os_name, arch, tag, target))
        for field in ("deployment_target", "mps_min_macos"):
            if os_name != "macos" and self.get((*key, field)) is not None:
                self.report((*key, field), Finding(f"{field} applies to macOS platforms only", hint="remove it"))
        self.check((*key, "mps_min_macos"), str, _mps_problem, dropped)
        self.check((*key, "base_image"), str, base_image_problem)
        if self.get((*key, "runner")) is None and (os_name, arch) not in DEFAULT_RUNNERS:
            self.report(key, Finding(f"platform {name} has no runner, and {os_name}-{arch} has no default one",
                                     hint=f"add `runner:` (defaults exist for {', '.join(sorted(DEFAULT_PLATFORMS))})"))

    # accelerators

    def variants(self, platforms: list[str] | None) -> list[str] | None:
        labels: list[tuple[str, KeyPath]] = []
        complete = self.get(("accelerators",), dict) is not None
        for family, raw in self.items(("accelerators",)):
            if not isinstance(raw, dict):
                complete = False
                continue
            found, whole = self.family(Accelerator(family), ("accelerators", family), platforms)
            complete = complete and whole
            labels += found
        self.unique_labels(labels)
        return [label for label, _ in labels] if complete else None

    def family(self, accel: Accelerator, key: KeyPath, platforms: list[str] | None) -> tuple[list[tuple[str, KeyPath]], bool]:
        """The labels of the family's variants, and whether every variant had one."""
        self.fields(accel, key, platforms)
        versions = self.get((*key, "versions"), dict)
        if versions is None:
            if (*key, "versions") in self.bad:
                return [], False
            found = self.variant(accel, [key], platforms)
            return found or [], found is not None
        out: list[tuple[str, KeyPath]] = []
        complete = True
        for version, fields in versions.items():
            vkey = (*key, "versions", version)
            if not isinstance(fields, dict) or vkey in self.bad:
                complete = False
                continue
            self.fields(accel, vkey, platforms)
            found = self.variant(accel, [key, vkey], platforms)
            complete = complete and found is not None
            out += found or []
        return out, complete

    def fields(self, accel: Accelerator, key: KeyPath, platforms: list[str] | None) -> None:
        """The rules on one level's own values (a family's defaults, or a version's)."""
        for i, entry in self.entries((*key, "rpath")):
            self.report((*key, "rpath", i), rpath_problem(entry))
        self.requirements((*key, "runtime_requirements"))
        self.requirements((*key, "toolkit", "requirements"))
        for name in URL_KEYS:
            self.check((*key, "toolkit", name), str, url_problem, variables=True)
        self.check((*key, "toolkit", "root"), str, _root_problem)
        self.check((*key, "arch_list"), str, lambda text: arch_list_problem(accel, text))
        for name, text in self.items((*key, "arch_list")):
            self.known_platform((*key, "arch_list", name), name, platforms)
            if isinstance(text, str):
                self.report((*key, "arch_list", name), arch_list_problem(accel, text))
        for name, _ in self.items((*key, "smoke_runners")):
            self.known_platform((*key, "smoke_runners", name), name, platforms)

    def variant(self, accel: Accelerator, levels: list[KeyPath], platforms: list[str] | None) -> list[tuple[str, KeyPath]] | None:
        """Rules on the merged levels (family defaults, then the version); the label found."""
        where = levels[-1]
        if any((*k, "label") in self.bad for k in levels):
            return None
        label = next((self.get((*k, "label"), str) for k in reversed(levels) if self.get((*k, "label"), str)), None)
        if label is None:
            self.report(where, _no_label(accel, levels))
            return None
        if accel.facts.needs_arch_list and all(self.get((*k, "arch_list")) is None for k in levels) \
                and not any((*k, "arch_list") in self.bad for k in levels):
            self.report(where, Finding(f"{accel.value} variant has no arch_list",
                                       hint=f"add arch_list: {accel.facts.arch_example}"))
        self.providers(levels)
        self.variant_properties(accel, levels, label)
        return [(label, where)]

    def variant_properties(self, accel: Accelerator, levels: list[KeyPath], label: str) -> None:
        """The variant wheel's properties: the nearest level's ``variant_properties``, expanded and checked."""
        if any((*k, "variant_properties") in self.bad or (*k, "arch_list") in self.bad for k in levels):
            return
        key = next((k for k in reversed(levels) if self.get((*k, "variant_properties")) is not None), None)
        version = str(levels[-1][-1]) if len(levels) > 1 else None
        lists = self.merged_arch_lists(levels)
        if any(arch_list_problem(accel, text) for _, text in lists):
            return  # said at the arch list
        arches = arch_entries(lists)
        found: set[str] = set()
        entries = self.entries((*key, "variant_properties")) if key else []
        for i, template in entries:
            problem = property_template_problem(template, version=version, arches=arches)
            props = [] if problem else expand_properties([template], accel=accel, version=version, arches=arches)
            problem = problem or next(filter(None, map(property_problem, props)), None)
            if problem and key is not None:
                at: KeyPath = (*key, "variant_properties", i)
                if at not in self.told:  # a family's entry: once, not per version
                    self.told.add(at)
                    self.report(at, problem)
                return
            found.update(props)
        self.property_sets.append((label, frozenset(found), key or levels[-1]))

    def merged_arch_lists(self, levels: list[KeyPath]) -> list[tuple[str, str]]:
        """The arch lists as the model merges them (a version's mapping overlays the family's; a string replaces)."""
        lists: dict[str, str] = {}
        for k in levels:
            value = self.get((*k, "arch_list"))
            if isinstance(value, str):
                lists = {"*": value}
            elif isinstance(value, dict):
                lists = {**(lists if "*" not in lists else {}), **{n: v for n, v in value.items() if isinstance(v, str)}}
        return sorted(lists.items())

    # wheel variants

    def wheel_variants(self) -> None:
        """``wheel_variants``: layout, providers, priorities; every property's namespace has a provider and no
        two variants share a property set (variantlib would label both alike, or hash them alike)."""
        key: KeyPath = ("wheel_variants",)
        if self.get(key, dict) is None:
            return
        self.check((*key, "layout"), str, variant_layout_problem)
        providers = self.items((*key, "providers"))
        for name, _ in providers:
            self.requirements((*key, "providers", name, "requires"))
        names = [name for name, _ in providers]
        for i, name in self.entries((*key, "priorities")):
            if name not in names:
                self.report((*key, "priorities", i), Finding(f"{name!r} has no provider under wheel_variants.providers",
                                                             hint=_suggest(name, names) or "declare its provider"))
        listed = [name for _, name in self.entries((*key, "priorities"))]
        if self.get((*key, "priorities"), list) is not None and self.get((*key, "providers"), dict) is not None:
            for name in [n for n in names if n not in listed]:
                self.report((*key, "providers", name), Finding(f"provider {name!r} is not in wheel_variants.priorities",
                                                               hint="list every provider's namespace once in priorities"))
        self.property_namespaces(names if self.get((*key, "providers"), dict) is not None else None)

    def property_namespaces(self, providers: list[str] | None) -> None:
        seen: dict[frozenset[str], tuple[str, KeyPath]] = {}
        for label, props, where in self.property_sets:
            missing = sorted({p.split(" :: ")[0] for p in props} - set(providers)) if providers is not None else []
            if missing:
                self.report(where, Finding(f"variant {label!r} has properties in namespace {missing[0]!r}, which has no "
                                           "provider", hint=f"declare wheel_variants.providers.{missing[0]}"))
            if props in seen:
                first, at = seen[props]
                what = "no properties (both would be the null variant)" if not props else "the same properties"
                self.report(where, Finding(f"variants {first!r} and {label!r} have {what}",
                                           hint=f"give one of them other variant_properties (first at {self.marks.at(at)})"))
            seen.setdefault(props, (label, where))

    def providers(self, levels: list[KeyPath]) -> None:
        """Each excluded library's provider is among the variant's runtime requirements."""
        runtime_key = next((k for k in reversed(levels) if self.get((*k, "runtime_requirements")) is not None), None)
        if runtime_key is None and any((*k, "runtime_requirements") in self.bad for k in levels):
            return
        runtime = [t for _, t in self.entries((*runtime_key, "runtime_requirements"))] if runtime_key else []
        declared = {_req_name(r) for r in runtime} - {None}
        for key in levels:
            for lib, text in self.items((*key, "exclude_libs")):
                if isinstance(text, str):
                    self.report((*key, "exclude_libs", lib), _provider_problem(lib, text, declared))

    def unique_labels(self, labels: list[tuple[str, KeyPath]]) -> None:
        seen: dict[str, KeyPath] = {}
        for label, key in labels:
            if label in seen:
                self.report(key, Finding(f"label {label!r} is used twice", hint=f"first used at {self.marks.at(seen[label])}"))
            seen.setdefault(label, key)

    def known_platform(self, key: KeyPath, name: str, platforms: list[str] | None) -> None:
        if platforms is not None and name not in platforms:
            self.report(key, Finding(f"unknown platform {name!r}", hint=_suggest(name, sorted(platforms))))

    # exclusions and channels

    def exclusions(self) -> list[tuple[int, Exclusion]]:
        out = []
        for i, _ in self.entries(("exclude",), dict):
            targets, reason = self.get(("exclude", i, "targets"), str), self.get(("exclude", i, "reason"), str)
            if targets is not None and reason is not None:
                out.append((i, Exclusion(pattern=targets, reason=reason, location=self.marks.at(("exclude", i)))))
        return out

    def check_targets(self, ids: dict[tuple[str, str], list[str]], exclusions: list[tuple[int, Exclusion]]) -> None:
        every = [tid for group in ids.values() for tid in group]
        if len(every) > MAX_TARGETS:
            self.report(("pythons",), Finding(f"the matrix has {len(every):,} candidate targets, more than {MAX_TARGETS:,}",
                                              hint="variants x pythons x platforms: is a list generated by mistake?"))
            return
        for i, excl in exclusions:
            if not fnmatch.filter(every, excl.pattern):
                self.report(("exclude", i, "targets"), Finding(f"exclusion {excl.pattern!r} matches no target",
                                                               hint="target ids look like cu132-cp312-linux-x86_64"))

    def channels(self, platforms: list[str] | None, labels: list[str] | None,
                 ids: dict[tuple[str, str], list[str]] | None, exclusions: list[tuple[int, Exclusion]]) -> None:
        rules = [e for _, e in exclusions]
        for name, label in self.items(("channels", "pypi")):
            key = ("channels", "pypi", name)
            self.known_platform(key, name, platforms)
            if labels is not None and isinstance(label, str) and label not in labels:
                self.report(key, Finding(f"unknown variant label {label!r}", hint=_suggest(label, sorted(labels))))
            elif ids is not None and (label, name) in ids:
                self.report(key, pypi_default_problem(name, label, ids[(label, name)], rules))
        self.check(("channels", "index", "base_url"), str, url_problem)
        self.check(("channels", "index", "layout"), str, layout_problem)


def _tid(label: str, python: PythonVersion, platform: str) -> str:
    from builders.matrix.targets import target_id  # targets depends on the model only

    return target_id(label, python, platform)


def _dropped_kind(entry: Mapping[str, Any]) -> tuple[DroppedKind | None, str]:
    if isinstance(entry.get("python"), str):
        return DroppedKind.PYTHON, entry["python"]
    if entry.get("feature") == "mps" and isinstance(entry.get("macos"), str):
        return DroppedKind.MPS_MACOS, entry["macos"]
    if isinstance(entry.get("cxx_standard"), int) and not isinstance(entry["cxx_standard"], bool):
        return DroppedKind.CXX_STANDARD, str(entry["cxx_standard"])
    return None, ""


def _mps_problem(mps: str, dropped: tuple[Dropped, ...]) -> Finding | None:
    for d in dropped:
        if d.kind is DroppedKind.MPS_MACOS and Version(mps).major <= Version(d.value).major:
            return Finding(f"MPS is enabled from macOS {mps}, but {d.describe()}",
                           hint=f"set mps_min_macos above {d.value}", dropped=True)
    return None


def _root_problem(text: str) -> Finding | None:
    if ".." in text.replace("\\", "/").split("/"):
        return Finding(f"toolkit root {text!r} climbs with '..'", hint="name the folder under the install prefix, or an absolute path")
    return None


def _no_label(accel: Accelerator, levels: list[KeyPath]) -> Finding:
    if len(levels) == 1:
        return Finding(f"accelerator {accel.value!r} has neither versions nor a label",
                       hint="add 'label:' for a single variant, or 'versions:'")
    return Finding(f"version {levels[-1][-1]!r} has no label", hint="add label: (e.g. cu132)")


def _provider_problem(lib: str, text: str, declared: set[str | None]) -> Finding | None:
    name = _req_name(text)
    if name is None:
        return Finding(f"{text!r} is not a requirement name (with optional extras)", hint="e.g. cuda-toolkit[cudart]")
    if name not in declared:
        return Finding(f"{lib} is provided by {text!r}, which is not among the variant's runtime_requirements",
                       hint="add it to runtime_requirements, or stop excluding the library")
    return None


def _req_name(text: str) -> str | None:
    try:
        return canonicalize_name(Requirement(text).name)
    except InvalidRequirement:
        return None


def _next_minor(release: str) -> str:
    major, minor = release.split(".")[:2]
    return f"{major}.{int(minor) + 1}"


# --- the model (built only from data every rule accepted) -------------------------------------


class _Model:
    """Turns valid data into the frozen model."""

    def __init__(self, data: dict[str, Any], marks: Marks, path: Path) -> None:
        self.data = data
        self.marks = marks
        self.path = path

    def build(self, source: Path | None) -> Matrix:
        dropped = self.dropped()
        variants = tuple(v for name, raw in self.data["accelerators"].items() for v in self.family(Accelerator(name), raw))
        return Matrix(path=self.path, project=self.project(source), pythons=self.pythons(dropped),
                      platforms=self.platforms(), variants=variants, channels=self.channels(),
                      exclusions=self.exclusions(), dropped=dropped, wheel_variants=self.wheel_variants())

    def wheel_variants(self) -> WheelVariants | None:
        raw = self.data.get("wheel_variants")
        if raw is None:
            return None
        providers = {name: VariantProvider(namespace=name, requires=tuple(p["requires"]), plugin_api=p["plugin_api"],
                                           optional=bool(p.get("optional", False)))
                     for name, p in raw["providers"].items()}
        return WheelVariants(layout=raw["layout"], priorities=tuple(raw["priorities"]),
                             providers=tuple(providers[name] for name in raw["priorities"]),
                             location=self.marks.at(("wheel_variants",)))

    def dropped(self) -> tuple[Dropped, ...]:
        out = []
        for i, entry in enumerate(self.data.get("dropped", [])):
            kind, value = _dropped_kind(entry)
            assert kind is not None  # the schema's oneOf
            out.append(Dropped(kind=kind, value=value, since=entry["since"], reason=entry["reason"],
                               location=self.marks.at(("dropped", i))))
        return tuple(out)

    def project(self, source: Path | None) -> Project:
        raw = self.data["project"]
        build, smoke = raw["build"], raw.get("smoke", {})
        script = smoke.get("script")
        return Project(
            name=raw["name"], import_name=raw["import_name"], version=Version(raw["version"]),
            released=raw.get("released"), source=source if source is not None else self.path.parent / raw["source"],
            requires_python=SpecifierSet(raw["requires_python"]), cxx_standard=raw.get("cxx_standard"),
            wheel_size_budget_mb=float(raw["wheel_size_budget_mb"]) if "wheel_size_budget_mb" in raw else None,
            build_command=tuple(build["command"]), build_env=tuple(sorted(build.get("env", {}).items())),
            core_commands=tuple(tuple(c) for c in build.get("core", {}).get("commands", ())),
            environment_pass=tuple(build.get("environment_pass", ())),
            build_variables=tuple(sorted(build.get("variables", {}).items())),
            dependencies=tuple(raw.get("dependencies", ())),
            declares_requirements="dependencies" in raw or "optional_dependencies" in raw,
            optional_dependencies=tuple((extra, tuple(reqs)) for extra, reqs in raw.get("optional_dependencies", {}).items()),
            extension_modules=tuple(m for m in raw.get("extension_modules", ()) if isinstance(m, str)),
            conditional_modules=conditional_modules(raw.get("extension_modules", ())),
            smoke_script=(self.path.parent / script).resolve() if script is not None else None,
            smoke_timeout=float(smoke.get("timeout", 300)),
            timeouts=Timeouts(**{k: float(v) for k, v in raw.get("timeouts", {}).items()}),
        )

    def pythons(self, dropped: tuple[Dropped, ...]) -> tuple[PythonVersion, ...]:
        gone = {d.value for d in dropped if d.kind is DroppedKind.PYTHON}
        return tuple(PythonVersion.parse(text) for text in self.data["pythons"] if text not in gone)

    def platforms(self) -> tuple[Platform, ...]:
        return tuple(
            Platform(name=name, os=OS(raw["os"]), arch=raw["arch"], wheel_platform=raw["wheel_platform"],
                     runner=raw.get("runner") or DEFAULT_RUNNERS[(raw["os"], raw["arch"])],
                     base_image=raw.get("base_image") or default_base_image(raw["wheel_platform"]),
                     deployment_target=raw.get("deployment_target"),
                     mps_min_macos=raw.get("mps_min_macos"), location=self.marks.at(("platforms", name)))
            for name, raw in self.data["platforms"].items()
        )

    def family(self, accel: Accelerator, raw: dict[str, Any]) -> Iterator[Variant]:
        key: KeyPath = ("accelerators", accel.value)
        defaults = {k: v for k, v in raw.items() if k != "versions"}
        if "versions" not in raw:
            yield self.variant(accel, None, defaults, key)
            return
        for version, fields in raw["versions"].items():
            yield self.variant(accel, version, _merge(defaults, fields), (*key, "versions", version))

    def variant(self, accel: Accelerator, version: str | None, raw: dict[str, Any], key: KeyPath) -> Variant:
        arch = raw.get("arch_list")
        toolkit = raw.get("toolkit", {})
        arch_lists = (("*", arch),) if isinstance(arch, str) else tuple(sorted((arch or {}).items()))
        return Variant(
            accelerator=accel, version=version, label=raw["label"], notes=raw.get("notes", ""),
            arch_lists=arch_lists,
            toolkit=Toolkit(requirements=tuple(toolkit.get("requirements", ())), index_url=toolkit.get("index_url"),
                            root=toolkit.get("root"), system_repository=toolkit.get("system_repository"),
                            system_packages=tuple(toolkit.get("system_packages", ())),
                            system_repository_key=toolkit.get("system_repository_key"), max_gcc=toolkit.get("max_gcc")),
            runtime_requirements=tuple(raw.get("runtime_requirements", ())),
            lib_providers=tuple(sorted(raw.get("exclude_libs", {}).items())),
            system_libs=tuple(sorted(raw.get("system_libs", {}).items())),
            rpath=tuple(raw.get("rpath", ())),
            smoke_runners=tuple(sorted((k, tuple(v)) for k, v in raw.get("smoke_runners", {}).items())),
            properties=tuple(expand_properties(raw.get("variant_properties", ()), accel=accel, version=version,
                                               arches=arch_entries(arch_lists))),
            location=self.marks.at(key),
        )

    def channels(self) -> Channels:
        raw = self.data["channels"]
        return Channels(pypi=tuple(sorted(raw["pypi"].items())), index_base_url=raw["index"]["base_url"],
                        index_layout=raw["index"]["layout"])

    def exclusions(self) -> tuple[Exclusion, ...]:
        return tuple(Exclusion(pattern=e["targets"], reason=e["reason"], location=self.marks.at(("exclude", i)))
                     for i, e in enumerate(self.data.get("exclude", [])))


def _merge(defaults: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Family defaults overlaid by a version's keys; nested mappings merge one level down."""
    out = dict(defaults)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    return out
