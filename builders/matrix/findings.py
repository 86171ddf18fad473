"""The small pure checks of matrix values: each takes a value (and what it depends on) and returns
a :class:`Violation` saying what is wrong and how to fix it, or None.

They know nothing of YAML or of where a value is written: :mod:`builders.matrix.rules` applies them
to the values :mod:`builders.matrix.build` read and reports each at its ``file:line:col``. What they
accept:

- names are PEP 508 names, ``released`` a real date, ``version`` a public PEP 440 version.
- paths (``project.source``, ``smoke.script``) are relative and stay inside the matrix's
  folder, and exist.
- runtime folders (``runtime_dirs``): relative to site-packages, ending in it (``nvidia/cu13/lib``) or in
  the environment's ``lib`` folder (``../..``) or below it (see :mod:`builders.matrix.runpath`).
- RPATH entries (the older ``rpath``): ``$ORIGIN`` followed by ``/name`` or ``/..`` segments. With the extension
  assumed directly in its top-level package folder (``site-packages/pkg/``, the shallowest
  place it can be), the normalised path must stay in ``site-packages`` (at most one net
  ``..``), or lead exactly into the environment's ``lib`` folder, where wheels install data
  files (``$ORIGIN/../../..``, three ``..``), or below it. No ``:`` (one entry per item).
- URLs: ``https``; ``http`` only to this machine (127.0.0.0/8, localhost, ::1); ``file``;
  no credentials, quotes, spaces or HTML-special characters. ``${VAR}`` stands for a value
  from the environment, filled in by :func:`expand_env` where it is used.
- placeholders: only the documented ``{name}`` ones; ``channels.index.layout`` takes ``{label}``
  and is a relative path without ``..``.
- platforms: named ``{os}-{arch}``; ``wheel_platform`` a real tag for that os and arch
  (``manylinux_2_Y_arch``/``musllinux_1_Y_arch``, ``win_amd64``/``win_arm64``,
  ``macosx_X_Y_arch`` matching ``deployment_target``).
- a size budget and a timeout are finite and above 0; every arch list is a list of real GPU
  architectures of its family.
"""

from __future__ import annotations

import datetime
import difflib
import ipaddress
import math
import re
import string
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from builders.base import placeholders
from builders.base.arch import ARCHES
from builders.base.errors import EngineError
from builders.matrix.family import Accelerator

LAYOUT_PLACEHOLDERS = ("label",)
LEGACY_MANYLINUX = {"1": "2_5", "2010": "2_12", "2014": "2_17"}
ENV_REF = re.compile(r"\$\{([A-Z_][A-Z0-9_]*)\}")
IMAGE_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
URL_UNSAFE = re.compile(r"[\s<>\"'`\\{}|^]")
LAYOUT_CHARS = re.compile(r"[A-Za-z0-9._{}/-]+")


@dataclass(frozen=True)
class Violation:
    """What a rule found wrong with a matrix value, and how to fix it (``dropped``: it names
    something this release dropped, which makes the error a :class:`~builders.base.errors.DroppedError`)."""

    message: str
    hint: str = ""
    dropped: bool = False


def short(text: str, limit: int = 200) -> str:
    """``text`` cut to ``limit`` characters (a hostile value must not flood the message)."""
    return text if len(text) <= limit else text[:limit] + "..."


def suggest(word: str, choices: list[str]) -> str:
    """The hint for a misspelt name: the closest choice (difflib), else every choice."""
    close = difflib.get_close_matches(word, [str(c) for c in choices], n=1, cutoff=0.6)
    if close:
        return f"did you mean {close[0]!r}?"
    return f"allowed: {', '.join(map(str, choices))}" if choices else ""


# A platform without `runner:` runs on GitHub's hosted runner for its system (the ones the shipped matrix names).
DEFAULT_RUNNERS = {("linux", "x86_64"): "ubuntu-24.04", ("linux", "aarch64"): "ubuntu-24.04-arm",
                   ("windows", "AMD64"): "windows-2025", ("macos", "arm64"): "macos-15"}
DEFAULT_PLATFORMS = frozenset(f"{os_name} {arch}" for os_name, arch in DEFAULT_RUNNERS)


def default_base_image(wheel_platform: str) -> str | None:
    """A manylinux platform without `base_image:` builds in the PyPA's image of its policy (by tag)."""
    return f"quay.io/pypa/{wheel_platform}" if wheel_platform.startswith("manylinux_") else None


def variable_problem(name: str, carried: list[str]) -> Violation | None:
    """A ``build.variables`` name that the pipeline or a ``build.env`` setting also sets would be overwritten."""
    if name == "SOURCE_DATE_EPOCH" or name in carried:
        return Violation(f"build.variables.{name} is set by builders itself (SOURCE_DATE_EPOCH, or a build.env setting)",
                         hint="give the constant another name, or drop it")
    return None


def module_problem(entry: Mapping[str, object], extras: list[str], platforms: list[str]) -> Violation | None:
    """A conditional extension module names an extra the project has, platforms the matrix lists, real Pythons."""
    extra, module = entry.get("extra"), entry.get("module")
    if isinstance(extra, str) and extra not in extras:
        return Violation(f"extension module {module} needs extra {extra!r}, which "
                         "optional_dependencies does not list", hint=suggest(extra, extras))
    named = entry.get("platforms")
    unknown = sorted(set(named if isinstance(named, tuple | list) else ()) - set(platforms))
    if unknown:
        return Violation(f"extension module {module}: no platform {', '.join(unknown)} in the matrix",
                         hint=suggest(unknown[0], platforms))
    pythons = entry.get("pythons")
    return specifier_problem(pythons) if isinstance(pythons, str) else None


def runner_problem(name: str, os_name: str, arch: str) -> Violation | None:
    """A platform without ``runner:`` needs a GitHub hosted runner default for its system."""
    if (os_name, arch) in DEFAULT_RUNNERS:
        return None
    return Violation(f"platform {name} has no runner, and {os_name}-{arch} has no default one",
                     hint=f"add `runner:` (defaults exist for {', '.join(sorted(DEFAULT_PLATFORMS))})")


def version_problem(text: str) -> Violation | None:
    try:
        version = Version(text)
    except InvalidVersion:
        return Violation(f"{text!r} is not a PEP 440 version", hint="e.g. 2.15.0")
    if version.local:
        return Violation(f"{text!r} has a local label; labels come from the variants", hint=f"use {version.public!r}")
    return None


def date_problem(text: str) -> Violation | None:
    try:
        if re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", text):
            datetime.date.fromisoformat(text)
            return None
    except ValueError:
        pass
    return Violation(f"{text!r} is not a date", hint="write a real calendar date as YYYY-MM-DD, e.g. 2026-10-28")


def specifier_problem(text: str) -> Violation | None:
    try:
        SpecifierSet(text)
    except InvalidSpecifier:
        return Violation(f"{text!r} is not a PEP 440 version specifier", hint="e.g. '>=3.11'")
    return None


def requirement_problem(text: str) -> Violation | None:
    try:
        Requirement(text)
    except InvalidRequirement as exc:
        return Violation(f"not a valid requirement: {short(str(exc))}", hint="a PEP 508 requirement, e.g. 'numpy>=2.1'")
    return None


def positive_problem(value: int | str) -> Violation | None:
    """A size or a time: a finite number above 0 (a YAML float arrives as its text)."""
    number = float(value)
    if math.isfinite(number) and number > 0:
        return None
    return Violation(f"{value} must be a number above 0", hint="a budget or a timeout of 0 refuses everything")


def budget_problem(value: object) -> Violation | None:
    """A size budget: a number above 0 (the schema refuses any other text; this says so at its place too)."""
    try:
        return positive_problem(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return Violation(f"{value!r} is not a size in MiB", hint="write a number above 0, e.g. 850")


def path_problem(base: Path, text: str, *, folder: bool) -> Violation | None:
    """A path in the matrix: relative, inside the matrix's folder, and present."""
    what = "source folder" if folder else "file"
    if Path(text).is_absolute() or text.startswith("~"):
        return Violation(f"{what} {text!r} is absolute", hint="paths in the matrix are relative to the matrix file"
                         + ("; give a tree elsewhere with --source DIR" if folder else ""))
    root = base.resolve()
    target = (root / text).resolve()
    if not target.is_relative_to(root):
        return Violation(f"{what} {text!r} leads outside the matrix's folder ({root})",
                         hint="keep it inside the repository" + ("; give a tree elsewhere with --source DIR" if folder else ""))
    try:
        exists, right_kind = target.exists(), (target.is_dir() if folder else target.is_file())
    except OSError:
        exists = right_kind = False
    if not right_kind:
        problem = f"is not a {'folder' if folder else 'file'}" if exists else "does not exist"
        return Violation(f"{what} {text!r} {problem} (looked for {target})",
                         hint="the path is relative to the matrix file" + ("; --source DIR overrides it" if folder else ""))
    return None


# The variant's facts a build variable, build.command and build.core may hold as {name}
# (builders.pipeline.plan.variable_values fills them).
VARIANT_FACTS = ("label", "accelerator", "accelerator_version", "version", "platform", "gpu_archs", "cmake_archs",
                 "toolkit_root", "rpath")


def fill_problem(text: str, allowed: tuple[str, ...]) -> Violation | None:
    """A ``{name}`` that is not one of ``allowed`` (a typo would reach the build as written); ``${VAR}`` and any
    other brace are the command's own (:mod:`builders.base.placeholders`)."""
    found = placeholders.unknown(text, allowed)
    if not found:
        return None
    return Violation(f"unknown placeholder {{{found[0]}}} in {short(text)!r}",
                     hint=f"the placeholders here are {', '.join('{' + a + '}' for a in allowed)}; a shell's ${{VAR}} "
                          f"stays as written; write {{{{{found[0]}}}}} for a literal {{{found[0]}}}")


def fact_problem(text: str) -> Violation | None:
    """A build variable's ``{placeholders}`` are the variant's facts (:data:`VARIANT_FACTS`)."""
    return fill_problem(text, VARIANT_FACTS)


def placeholder_problem(text: str, allowed: tuple[str, ...]) -> Violation | None:
    """Only the documented ``{name}`` placeholders, with no format spec or conversion."""
    fix = f"the placeholders here are {', '.join('{' + a + '}' for a in allowed)}; write {{{{ and }}}} for a literal brace"
    try:
        fields = [(name, spec, conv) for _, name, spec, conv in string.Formatter().parse(text) if name is not None]
    except ValueError as exc:
        return Violation(f"{short(text)!r}: {exc}", hint=fix)
    for name, spec, conv in fields:
        if name not in allowed or spec or conv:
            shown = "{" + name + (f"!{conv}" if conv else "") + (f":{spec}" if spec else "") + "}"
            return Violation(f"unknown placeholder {short(shown, 60)} in {short(text)!r}", hint=fix)
    return None


def layout_problem(text: str) -> Violation | None:
    """The index layout is a relative URL path with ``{label}``: no ``..``, nothing absolute."""
    found = placeholder_problem(text, LAYOUT_PLACEHOLDERS)
    if found:
        return found
    if "{label}" not in text:
        return Violation(f"layout {text!r} has no {{label}}: every variant would share one index", hint="e.g. whl/{label}/")
    if text.startswith("/") or not LAYOUT_CHARS.fullmatch(text):
        return Violation(f"layout {text!r} must be a relative path of letters, digits, '.', '_', '-' and '/'",
                         hint="e.g. whl/{label}/")
    if any(part in ("", ".", "..") for part in text.rstrip("/").split("/")):
        return Violation(f"layout {text!r} has an empty, '.' or '..' segment", hint="e.g. whl/{label}/")
    return None


def rpath_problem(entry: str) -> Violation | None:
    """An RPATH entry: ``$ORIGIN`` and ``/name`` or ``/..`` segments that stay in the environment
    (see the module docstring for the rule)."""
    if ":" in entry:
        return Violation(f"RPATH entry {entry!r} holds several paths", hint="give one path per list item")
    head, _, rest = entry.partition("/")
    if head not in ("$ORIGIN", "${ORIGIN}"):
        return Violation(f"RPATH entry {entry!r} is not relative to $ORIGIN", hint="start it with '$ORIGIN/': absolute "
                         "RPATHs leak the build machine's layout into the wheel")
    segments = rest.split("/") if rest else []
    if any(s in ("", ".") or "$" in s or "\\" in s for s in segments):
        return Violation(f"RPATH entry {entry!r} has an empty, '.' or variable segment", hint="e.g. $ORIGIN/../nvidia/cu13/lib")
    ups = _climbs(segments)
    if ups == 0 or ups == 2:
        return None
    return Violation(f"RPATH entry {entry!r} climbs out of site-packages",
                     hint="an extension lies in site-packages/<package>/: one '..' reaches site-packages "
                          "($ORIGIN/../nvidia/cu13/lib), three reach the environment's lib folder ($ORIGIN/../../..)")


def runtime_dir_problem(entry: str) -> Violation | None:
    """A runtime folder: relative to site-packages, ``/name`` or ``..`` segments that end in site-packages or in
    the environment's ``lib`` folder (two levels up) or below it."""
    hint = "a folder relative to site-packages, e.g. nvidia/cu13/lib (../.. is the environment's lib folder)"
    if ":" in entry or entry.startswith("/") or "$" in entry or "\\" in entry:
        return Violation(f"runtime folder {entry!r} is not one relative path", hint=hint)
    segments = entry.split("/")
    if any(s in ("", ".") for s in segments):
        return Violation(f"runtime folder {entry!r} has an empty or '.' segment", hint=hint)
    ups = _climbs(["..", *segments])
    if ups in (0, 2):
        return None
    return Violation(f"runtime folder {entry!r} leaves the environment's lib folder", hint=hint)


def _climbs(segments: list[str]) -> int:
    """How many levels above site-packages the normalised path ends, from ``site-packages/pkg``."""
    path = ["pkg"]
    for segment in segments:
        if segment == ".." and path and path[-1] != "..":
            path.pop()
        else:
            path.append(segment)
    return len(path) - len([p for p in path if p != ".."])


def url_problem(text: str, *, variables: bool = False) -> Violation | None:
    """https, http only to this machine, or file; no credentials or HTML-special characters.

    With ``variables``, ``${VAR}`` references are allowed and the URL itself is checked when
    they are filled in (:func:`expand_env`).
    """
    if variables and "$" in text:
        return env_ref_problem(text)
    if URL_UNSAFE.search(text) or "$" in text:
        return Violation(f"URL {short(text)!r} holds a space, a quote, '$' or a character special in HTML",
                         hint="percent-encode it (%20, %22...)")
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as exc:
        return Violation(f"{short(text)!r} is not a valid URL: {exc}")
    if parts.username or parts.password:
        return Violation(f"URL {short(text)!r} carries credentials", hint="credentials never go in the repository")
    return _scheme_problem(text, parts.scheme, parts.hostname or "")


def _scheme_problem(text: str, scheme: str, host: str) -> Violation | None:
    if scheme == "file" or (scheme == "https" and host):
        return None
    if scheme == "http" and _loopback(host):
        return None
    if scheme == "http":
        return Violation(f"URL {short(text)!r} is plain http", hint="use https (http only reaches 127.0.0.1, localhost, ::1)")
    return Violation(f"{short(text)!r} is not an https URL", hint="e.g. https://download.example.org/")


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def env_ref_problem(text: str) -> Violation | None:
    """Every ``$`` starts a ``${NAME}`` reference; the rest of the text is safe in a URL."""
    rest = ENV_REF.sub("", text)
    if "$" in rest:
        return Violation(f"{short(text)!r} has a '$' that is not a ${{VAR}} reference",
                         hint="write ${NAME} with NAME in capitals, digits and '_'")
    if URL_UNSAFE.search(rest):
        return Violation(f"URL {short(text)!r} holds a space, a quote or a character special in HTML")
    return None



def arch_list_problem(accel: Accelerator, text: str) -> Violation | None:
    """A ``;``-separated list of the family's real architectures, each once."""
    pattern, example = accel.facts.arch_entry, accel.facts.arch_example
    entries = text.split(";")
    for entry in entries:
        if not pattern.fullmatch(entry):
            return Violation(f"{short(entry, 60)!r} in arch list is not a {accel.value} architecture", hint=f"write {example}")
    if len(set(entries)) != len(entries):
        return Violation("the arch list names an architecture twice", hint="list each once")
    return None



def platform_name_problem(name: str, os_name: str, arch: str) -> Violation | None:
    expected = f"{os_name}-{ARCHES[os_name][arch][0]}"
    if name == expected:
        return None
    return Violation(f"platform {name!r} does not match its os and arch ({os_name}, {arch})", hint=f"did you mean {expected!r}?")


def base_image_problem(ref: str) -> Violation | None:
    """A reference pinned by digest (``repo@sha256:<64 hex>``, ``repo:tag@sha256:...``) must carry a whole
    sha256 digest: a truncated or mistyped one would fail only when CI pulls the image."""
    name, at, digest = ref.partition("@")
    if not at or (name and IMAGE_DIGEST.fullmatch(digest)):
        return None
    return Violation(f"{ref!r} is not pinned by a valid digest: after the image name, '@' takes sha256: and 64 "
                     "lower-case hex digits", hint="copy the digest from `skopeo inspect docker://IMAGE` "
                     "(\"Digest\"), or remove the '@...' part")


def arch_problem(os_name: str, arch: str) -> Violation | None:
    known = ARCHES[os_name]
    if arch in known:
        return None
    return Violation(f"arch {arch!r} is not how {os_name} names a CPU", hint=f"use one of {', '.join(known)}")


def wheel_platform_problem(os_name: str, arch: str, tag: str, deployment_target: str | None) -> Violation | None:
    """A real platform tag for ``os_name`` on ``arch``."""
    want = ARCHES[os_name][arch][1]
    if os_name == "windows":
        return None if tag == f"win_{want}" else Violation(f"{tag!r} does not match arch {arch!r}", hint=f"use 'win_{want}'")
    if os_name == "macos":
        return _macos_tag_problem(tag, want, deployment_target)
    return _linux_tag_problem(tag, want)


def _linux_tag_problem(tag: str, want: str) -> Violation | None:
    legacy = re.fullmatch(r"manylinux(1|2010|2014)_(\w+)", tag)
    if legacy:
        return Violation(f"{tag!r} is a legacy alias", hint=f"write manylinux_{LEGACY_MANYLINUX[legacy.group(1)]}_{want}")
    match = re.fullmatch(r"(manylinux|musllinux)_([0-9]+)_([0-9]+)_(\w+)", tag)
    if not match:
        return Violation(f"{tag!r} is not a Linux platform tag", hint=f"e.g. manylinux_2_28_{want} or musllinux_1_2_{want}")
    family, major, minor, tag_arch = match.groups()
    if tag_arch != want:
        return Violation(f"{tag!r} does not match arch {want!r}", hint=f"use {family}_{major}_{minor}_{want}")
    if (family, major) not in (("manylinux", "2"), ("musllinux", "1")) or int(minor) > 99:
        return Violation(f"{tag!r} names no real C library version", hint=f"glibc is 2.x (manylinux_2_28_{want}), musl 1.x")
    return None


def _macos_tag_problem(tag: str, want: str, deployment_target: str | None) -> Violation | None:
    match = re.fullmatch(r"macosx_([0-9]+)_([0-9]+)_(\w+)", tag)
    if not match:
        return Violation(f"{tag!r} is not a macOS platform tag", hint=f"e.g. macosx_14_0_{want}")
    major, minor, tag_arch = match.groups()
    if tag_arch not in (want, "universal2"):
        return Violation(f"{tag!r} does not match arch {want!r}", hint=f"use macosx_{major}_{minor}_{want}")
    if not 10 <= int(major) <= 99 or (want == "arm64" and int(major) < 11):
        return Violation(f"{tag!r} names no macOS release that runs on {want}", hint=f"e.g. macosx_14_0_{want}")
    if deployment_target and deployment_target != f"{int(major)}.{int(minor)}":
        return Violation(f"{tag!r} does not match deployment_target {deployment_target}",
                         hint=f"use macosx_{deployment_target.replace('.', '_')}_{want}")
    return None



def root_problem(text: str) -> Violation | None:
    if ".." in text.replace("\\", "/").split("/"):
        return Violation(f"toolkit root {text!r} climbs with '..'", hint="name the folder under the install prefix, or an absolute path")
    return None



def provider_problem(lib: str, text: str, declared: set[str | None]) -> Violation | None:
    name = req_name(text)
    if name is None:
        return Violation(f"{text!r} is not a requirement name (with optional extras)", hint="e.g. cuda-toolkit[cudart]")
    if name not in declared:
        return Violation(f"{lib} is provided by {text!r}, which is not among the variant's runtime_requirements",
                         hint="add it to runtime_requirements, or stop excluding the library")
    return None


def req_name(text: str) -> str | None:
    try:
        return canonicalize_name(Requirement(text).name)
    except InvalidRequirement:
        return None


def next_minor(release: str) -> str:
    major, minor = release.split(".")[:2]
    return f"{major}.{int(minor) + 1}"


def expand_env(value: str | None, env: Mapping[str, str], *, key: str) -> str:
    """The one expansion every engine calls: an unset variable or unsafe URL is an :class:`EngineError` naming
    ``key`` (``m.yaml:12:9: accelerators.rocm...index_url``)."""
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

