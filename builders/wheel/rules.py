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
  variant's runtime requirements must be there (:attr:`Wanted.required`).
"""

from __future__ import annotations

import email.message
from collections.abc import Iterable, Sequence
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


def problems(have: Headers, want: Wanted) -> tuple[Mismatch, ...]:
    """Every problem of ``have``, in the order of :data:`CODES`; empty when METADATA is right."""
    return (*name_problems(have.name, want.project), *version_problems(have.version, want.version),
            *requires_python_problems(have.requires_python, want.requires_python, want.dropped),
            *requires_dist_problems(have.requires_dist, want.requirements, want.required))


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
                           required: Iterable[Requirement] = ()) -> tuple[Mismatch, ...]:
    """Requires-Dist compared with the expected requirements as sets of normalised requirements (``want``
    None: the build's own list stands, and must hold ``required``). The message names both sides."""
    try:
        have = {requirement_key(r): str(r) for r in map(Requirement, values)}
    except InvalidRequirement as exc:
        return (Mismatch(code="requires-dist-invalid", message=f"unparsable Requires-Dist: {exc}"),)
    if want is None:
        lacks = sorted(str(r) for r in required if requirement_key(r) not in have)
        return (Mismatch(code="requires-dist", message=f"Requires-Dist {sorted(have.values())} lacks the variant's "
                        f"runtime requirements {lacks}"),) if lacks else ()
    wanted = {requirement_key(r): str(r) for r in want}
    if have.keys() == wanted.keys():
        return ()
    lacks, extra = sorted(wanted[k] for k in wanted.keys() - have.keys()), sorted(have[k] for k in have.keys() - wanted.keys())
    parts = ([f"the wheel lacks {lacks}"] if lacks else []) + ([f"it has {extra}, which the matrix does not list"]
                                                             if extra else [])
    return (Mismatch(code="requires-dist", message=f"Requires-Dist {sorted(have.values())} is not the matrix's "
                    f"{sorted(wanted.values())} (dependencies, extras and the variant's): {'; '.join(parts)}"),)


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
