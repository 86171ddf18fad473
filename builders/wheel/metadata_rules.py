"""What a wheel's METADATA must say, written once: ``verify`` and ``audit`` both apply it.

Each rule is a pure function over header values (text, as METADATA holds them) and what the
matrix expects, and returns problems with a stable code (:data:`CODES`). Each caller maps the
codes into its own finding type (verify's :class:`~builders.wheel.zipcheck.Finding`, audit's ``Drift``).

- ``name``: Name, PEP 503-normalised, is the project's.
- ``version``: Version is the expected version, written as it is normalised.
- ``requires-python-missing`` / ``-invalid`` / ``-admits-dropped`` / ``requires-python``:
  Requires-Python is present, a specifier set, admits no dropped Python, and equals the
  matrix's as a specifier set (whitespace, order and ``3.11`` against ``3.11.0`` do not
  matter). The catch-all ``requires-python`` is reported only when none of the others is:
  a set that admits a dropped Python necessarily differs from the matrix's, which admits none.
- ``requires-dist-invalid`` / ``requires-dist``: every Requires-Dist parses, and the set of
  them equals the expected requirements, compared as normalised requirements (name and extras
  PEP 503-normalised, specifier sets and markers by value). A project that declares no
  ``dependencies`` leaves its wheel's own Requires-Dist as its build wrote it: then only the
  variant's runtime requirements must be there (:attr:`Wanted.required`). With a target's marker
  environment (:attr:`Wanted.environment`) both sides are compared as what installs on that target
  (:func:`for_environment`): a requirement whose marker is false there is not expected.
"""

from __future__ import annotations

import email.message
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from packaging.markers import Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from builders.matrix.model import Dropped
from builders.matrix.policy import dropped_admitted_by
from builders.wheel.archive import header

CODES = ("name", "version", "requires-python-missing", "requires-python-invalid", "requires-python-admits-dropped",
         "requires-python", "requires-dist-invalid", "requires-dist")


@dataclass(frozen=True, kw_only=True)
class Mismatch:
    """One way METADATA differs from what the matrix expects."""

    code: str
    message: str


@dataclass(frozen=True, kw_only=True)
class Headers:
    """The headers the rules read, as text (None: the header is absent)."""

    name: str | None = None
    version: str | None = None
    requires_python: str | None = None
    requires_dist: tuple[str, ...] = ()

    @classmethod
    def of(cls, meta: email.message.Message) -> Headers:
        return cls(name=header(meta, "Name"), version=header(meta, "Version"),
                   requires_python=header(meta, "Requires-Python"),
                   requires_dist=tuple(str(v) for v in meta.get_all("Requires-Dist") or ()))


@dataclass(frozen=True, kw_only=True)
class Wanted:
    """What the matrix expects METADATA to say."""

    project: str
    version: Version
    requires_python: SpecifierSet
    requirements: tuple[Requirement, ...] | None  # the whole Requires-Dist; None: the project declares none
    dropped: tuple[Dropped, ...]
    required: tuple[Requirement, ...] = ()  # what must be there whatever the build wrote (the variant's)
    environment: Mapping[str, str] | None = None  # the target's PEP 508 markers; None: compared as written


def problems(have: Headers, want: Wanted) -> tuple[Mismatch, ...]:
    """Every problem of ``have``, in the order of :data:`CODES`; empty when METADATA is right."""
    return (*name_problems(have.name, want.project), *version_problems(have.version, want.version),
            *requires_python_problems(have.requires_python, want.requires_python, want.dropped),
            *requires_dist_problems(have.requires_dist, want.requirements, want.required, want.environment))


def name_problems(text: str | None, project: str) -> tuple[Mismatch, ...]:
    if canonicalize_name(text or "") == canonicalize_name(project):
        return ()
    return (Mismatch(code="name", message=f"METADATA Name {text!r} != {project!r} (PEP 503-normalised)"),)


def version_problems(text: str | None, want: Version) -> tuple[Mismatch, ...]:
    if text == str(want):
        return ()
    return (Mismatch(code="version", message=f"METADATA Version {text} != {want}"),)


def requires_python_problems(text: str | None, want: SpecifierSet, dropped: Iterable[Dropped]) -> tuple[Mismatch, ...]:
    """Present, valid, admitting no dropped Python and, failing nothing more specific, the matrix's set."""
    missing = text is None or not text.strip()
    try:
        have = SpecifierSet(text or "")
    except InvalidSpecifier:
        return (Mismatch(code="requires-python-invalid",
                        message=f"Requires-Python {text!r} is not a version specifier; the matrix says {want}"),)
    found = [Mismatch(code="requires-python-missing", message=f"no Requires-Python; the matrix says {want}")] if missing else []
    found += [Mismatch(code="requires-python-admits-dropped", message=f"Requires-Python {have or '(none)'} admits "
                      f"Python {d.value}: {d.describe()}; the matrix says {want}") for d in dropped_admitted_by(have, dropped)]
    if not found and have != want:
        found.append(Mismatch(code="requires-python", message=f"Requires-Python {have}, the matrix says {want}"))
    return tuple(found)


def requires_dist_problems(values: Sequence[str], want: Iterable[Requirement] | None,
                           required: Iterable[Requirement] = (),
                           environment: Mapping[str, str] | None = None) -> tuple[Mismatch, ...]:
    """Requires-Dist compared with the expected requirements as sets of normalised requirements (``want``
    None: the build's own list stands, and must hold ``required``); with ``environment``, as what installs
    there (:func:`for_environment`). The message names both sides."""
    try:
        parsed = [Requirement(v) for v in values]
    except InvalidRequirement as exc:
        return (Mismatch(code="requires-dist-invalid", message=f"unparsable Requires-Dist: {exc}"),)
    have = {requirement_key(r): str(r) for r in parsed}
    if want is None:
        lacks = sorted(str(r) for r in required if requirement_key(r) not in have)
        return (Mismatch(code="requires-dist", message=f"Requires-Dist {sorted(have.values())} lacks the variant's "
                        f"runtime requirements {lacks}"),) if lacks else ()
    want = tuple(want)
    parts = differences(parsed, want, environment)
    if not parts:
        return ()
    where = f" on {environment_name(environment)}" if environment is not None else ""
    return (Mismatch(code="requires-dist", message=f"Requires-Dist {sorted(have.values())} is not the matrix's "
                    f"{sorted(map(str, want))} (dependencies, extras and the variant's){where}: {'; '.join(parts)}"),)


def differences(have: Sequence[Requirement], want: Sequence[Requirement],
                environment: Mapping[str, str] | None = None, *, subject: str = "the wheel") -> list[str]:
    """What ``have`` (``subject``'s) lacks of ``want`` (the matrix's) and holds beyond it, as phrases (empty: the
    same); compared as written, or, with ``environment``, as what installs there."""
    if environment is None:
        mine, theirs = ({requirement_key(r): str(r) for r in side} for side in (have, want))
    else:
        extras = {*extras_named(have), *extras_named(want)}
        mine, theirs = (for_environment(side, environment, extras) for side in (have, want))
    lacks = sorted(theirs[k] for k in theirs.keys() - mine.keys())
    extra = sorted(mine[k] for k in mine.keys() - theirs.keys())
    return ([f"{subject} lacks {lacks}"] if lacks else []) + ([f"it has {extra}, which the matrix does not list"]
                                                             if extra else [])


def for_environment(requirements: Iterable[Requirement], environment: Mapping[str, str],
                    extras: Iterable[str] = ()) -> dict[tuple[object, ...], str]:
    """What pip installs where markers see ``environment``: with no extra asked for, and with each of ``extras``
    (a requirement that installs without one is listed once, under none). Keyed by requirement (marker left out)
    and extra; each value says it with its extra: ``cffi>=1.17``, ``idna>=3 [extra net]``."""
    reqs = tuple(requirements)
    out: dict[tuple[object, ...], str] = {}
    for extra in ("", *sorted({canonicalize_name(e) for e in extras})):
        env = {**environment, "extra": extra}
        for r in reqs:
            key = requirement_identity(r)
            if not evaluable(r, env):  # kept as written: never equal to a sound one, so always reported
                out[(requirement_key(r), "?")] = f"{r} (its marker cannot be evaluated)"
            elif holds(r, env) and (key, "") not in out:
                out.setdefault((key, extra), _bare(r) + (f" [extra {extra}]" if extra else ""))
    return out


def evaluable(r: Requirement, environment: Mapping[str, str]) -> bool:
    """Whether ``r``'s marker can be evaluated at all (``python_version ~= "x"`` cannot)."""
    if r.marker is not None:
        try:
            r.marker.evaluate(dict(environment))
        except ValueError:  # packaging's UndefinedComparison, InvalidVersion
            return False
    return True


def holds(r: Requirement, environment: Mapping[str, str]) -> bool:
    """Whether ``r``'s marker is true in ``environment`` (none: everywhere); one that cannot be evaluated
    (``python_version ~= "x"``) installs nothing."""
    try:
        return r.marker is None or bool(r.marker.evaluate(dict(environment)))
    except ValueError:  # packaging's UndefinedComparison, InvalidVersion
        return False


_EXTRA = re.compile(r"""extra\s*==\s*['"]([^'"]*)['"]|['"]([^'"]*)['"]\s*==\s*extra""")


def extras_named(requirements: Iterable[Requirement]) -> set[str]:
    """The extras the requirements' markers name (``extra == "net"``)."""
    return {a or b for r in requirements if r.marker for a, b in _EXTRA.findall(str(r.marker))}


def environment_name(environment: Mapping[str, str]) -> str:
    """``Python 3.13, Linux x86_64``: whose markers a comparison evaluated."""
    return (f"Python {environment.get('python_version', '?')}, {environment.get('platform_system', '?')} "
            f"{environment.get('platform_machine', '?')}")


def _bare(r: Requirement) -> str:
    """``r`` without its marker."""
    out = Requirement(str(r))
    out.marker = None
    return str(out)


def merged(own: Iterable[Requirement], added: Iterable[Requirement]) -> tuple[Requirement, ...]:
    """``own`` (a built wheel's Requires-Dist, extras and all) with each of ``added`` it does not already hold."""
    out = {requirement_key(r): r for r in own}
    for r in added:
        out.setdefault(requirement_key(r), r)
    return tuple(out.values())


def without(own: Iterable[Requirement], removed: Iterable[Requirement]) -> tuple[Requirement, ...]:
    """``own`` less ``removed`` (the project's own part of a labelled wheel's list: less its variant's)."""
    gone = {requirement_key(r) for r in removed}
    return tuple(r for r in own if requirement_key(r) not in gone)


def requirement_key(r: Requirement) -> tuple[object, ...]:
    """What makes two requirements the same: spelling of names, spacing and order do not."""
    return (*requirement_identity(r), str(r.marker or ""))


def requirement_identity(r: Requirement) -> tuple[object, ...]:
    """Marker left out: a PyPI wheel's copy of a variant's requirement has a narrower marker and is still that one."""
    return (canonicalize_name(r.name), frozenset(canonicalize_name(e) for e in r.extras), r.specifier, r.url or "")


def restricted(r: Requirement, marker: Marker) -> Requirement:
    """``r`` where its own marker and ``marker`` both hold (``r`` itself is left as it was)."""
    out = Requirement(str(r))
    out.marker = Marker(f"({r.marker}) and ({marker})") if r.marker else marker
    return out
