"""One rule, one verdict: verify and audit judge the same METADATA alike (builders.wheel.metadata_rules).

Each case is one METADATA, put in a wheel: verify's ``check_metadata`` reads it out of the
wheel, audit's ``check_file`` reads it out of the same file with its range reader (file://). Each
side's findings are turned back into rule codes (verify's codes map one to one; a METADATA
``Drift`` carries its rule) and both must give the rule codes the case expects: accepted when
none. The wheels are the hostile suite's, and METADATA variants of targets of the shipped matrix
(the project's Requires-Python and dropped Pythons are read from it, never pinned).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import parse_wheel_filename
from packaging.version import Version

from builders.families import loader
from builders.index import audit
from builders.matrix.model import DroppedKind, Matrix
from builders.matrix.targets import Target, expand
from builders.wheel import metadata_rules, verify
from builders.wheel.pypi_form import public_version, pypi_requirements
from builders.wheel.writer import write_wheel
from tests.hostile import make_wheels as mw
from tests.verdict import same_verdict

CHANNELS = ("label", "pypi")  # a target's own index (its labelled wheel), and PyPI (as promote checks it)
def test_every_rule_has_a_code_on_both_sides() -> None:
    assert set(verify.METADATA_CODES) == set(audit.METADATA_CODES) == set(metadata_rules.CODES)
    assert len(set(verify.METADATA_CODES.values())) == len(metadata_rules.CODES)  # decodable one to one


# --- the hostile suite's wheels --------------------------------------------------------------------

HOSTILE = {"good": (), "non_ascii_metadata": (), "tampered": (), "bad_requires_python": ("requires-python-invalid",),
           "bad_marker": ("requires-dist",), "relabelled": ("requires-dist", "version")}


@pytest.mark.parametrize("maker", sorted(HOSTILE))
def test_hostile_wheels_get_one_verdict(tmp_path: Path, maker: str) -> None:
    getattr(mw, maker)(tmp_path)
    (path,) = (tmp_path / "house").glob("*.whl")
    m, t = mw.shipped(), mw.target()
    promise = audit.promises(m, t.variant.label)[t.wheel_name]
    assert same_verdict(path, m, verify.Expectation(target=t, dropped=m.dropped), promise) == set(HOSTILE[maker])


# --- METADATA variants -----------------------------------------------------------------------------


def published_target(m: Matrix) -> Target:
    """A target that PyPI publishes and whose wheel declares at least two requirements."""
    targets, _excluded = expand(m)
    return next(t for t in targets if t.on_pypi and len(t.requirements) >= 2 and len(pypi_requirements(m)) >= 1)


def sides(m: Matrix, channel: str) -> tuple[verify.Expectation, audit.Promise]:
    """What verify expects of the target's wheel on ``channel`` (as promote checks it), and audit's promise."""
    t = published_target(m)
    if channel == "label":
        return verify.Expectation(target=t, dropped=m.dropped), audit.promises(m, t.variant.label)[t.wheel_name]
    expect = verify.Expectation(target=t, dropped=m.dropped, version=public_version(m), requirements=pypi_requirements(m))
    (promise,) = (p for p in audit.promises(m, audit.PYPI).values() if p.target == t)
    return expect, promise


def floor(m: Matrix) -> Version:
    """The lowest Python the matrix's Requires-Python admits (its ``>=`` bound)."""
    (spec,) = (s for s in m.project.requires_python if s.operator == ">=")
    return Version(spec.version)


def newest_dropped(m: Matrix) -> Version:
    return max(Version(d.value) for d in m.dropped if d.kind is DroppedKind.PYTHON and not d.value.endswith("t"))


def minor(v: Version, step: int) -> str:
    return f"{v.major}.{v.minor + step}"


def spaced(spec: SpecifierSet) -> str:
    """The same specifier set, written backwards with spaces."""
    return " , ".join(f"{s.operator} {s.version}" for s in sorted(spec, key=str, reverse=True))


# case -> (Requires-Python from the matrix, the rule codes it must get; None: the header is absent)
PYTHON: dict[str, tuple[Callable[[Matrix], str | None], tuple[str, ...]]] = {
    "as-the-matrix": (lambda m: str(m.project.requires_python), ()),
    "spaced-and-reordered": (lambda m: spaced(m.project.requires_python), ()),
    "trailing-zero": (lambda m: str(m.project.requires_python).replace(str(floor(m)), f"{floor(m)}.0"), ()),
    "floor-raised": (lambda m: str(m.project.requires_python).replace(str(floor(m)), minor(floor(m), 1)),
                     ("requires-python",)),
    "capped": (lambda m: f"{m.project.requires_python},<{minor(floor(m), 2)}", ("requires-python",)),
    "admits-dropped": (lambda m: f">={newest_dropped(m)}", ("requires-python-admits-dropped",)),
    "missing": (lambda m: None, ("requires-python-missing", "requires-python-admits-dropped")),
    "empty": (lambda m: "", ("requires-python-missing", "requires-python-admits-dropped")),
    "invalid": (lambda m: "at least three", ("requires-python-invalid",)),
}


def respelled(requirement: str) -> str:
    """The same requirement, its name in capitals and its marker in single quotes."""
    name = Requirement(requirement).name
    return requirement.replace(name, name.upper().replace("-", "_"), 1).replace('"', "'")


def another_version(requirements: tuple[str, ...]) -> tuple[str, ...]:
    """The first requirement pinned to a version nobody asked for."""
    first = Requirement(requirements[0])
    first.specifier = SpecifierSet("==0.0.0.1")
    return (str(first), *requirements[1:])


# case -> (Requires-Dist from the expected ones, the rule codes it must get)
DIST: dict[str, tuple[Callable[[tuple[str, ...]], tuple[str, ...]], tuple[str, ...]]] = {
    "as-expected": (lambda reqs: reqs, ()),
    "reordered": (lambda reqs: tuple(reversed(reqs)), ()),
    "respelled": (lambda reqs: tuple(map(respelled, reqs)), ()),
    "one-extra": (lambda reqs: (*reqs, "evil>=1"), ("requires-dist",)),
    "one-missing": (lambda reqs: reqs[1:], ("requires-dist",)),
    "another-version": (another_version, ("requires-dist",)),
    "none": (lambda reqs: (), ("requires-dist",)),
    "invalid": (lambda reqs: (*reqs, "evil >= ; ;"), ("requires-dist-invalid",)),
}


def write_metadata_wheel(tmp: Path, filename: str, headers: dict[str, str | None], requires: tuple[str, ...]) -> Path:
    name, version, _build, _tags = parse_wheel_filename(filename)
    dist_info = f"{name.replace('-', '_')}-{version}.dist-info"
    meta = "Metadata-Version: 2.4\n" + "".join(f"{k}: {v}\n" for k, v in headers.items() if v is not None)
    meta += "".join(f"Requires-Dist: {r}\n" for r in requires)
    path = tmp / filename
    tmp.mkdir(parents=True, exist_ok=True)
    write_wheel(path, {f"{dist_info}/METADATA": meta.encode(), f"{dist_info}/WHEEL": b"Wheel-Version: 1.0\n"}, dist_info,
                {}, 315532800)
    return path


def variant(tmp: Path, m: Matrix, channel: str, headers: dict[str, str | None] | None = None,
            requires: tuple[str, ...] | None = None) -> frozenset[str]:
    """The rule codes both sides give the promised METADATA with ``headers`` and ``requires`` changed."""
    expect, promise = sides(m, channel)
    promised: dict[str, str | None] = {"Name": m.project.name, "Version": str(promise.version),
                                       "Requires-Python": str(m.project.requires_python)}
    wheel = write_metadata_wheel(tmp, promise.filename, promised | (headers or {}),
                                 tuple(map(str, promise.requirements)) if requires is None else requires)
    return same_verdict(wheel, m, expect, promise)


@pytest.mark.parametrize("channel", CHANNELS)
@pytest.mark.parametrize("case", sorted(PYTHON))
def test_requires_python_gets_one_verdict(tmp_path: Path, shipped: Matrix, channel: str, case: str) -> None:
    text, want = PYTHON[case]
    assert variant(tmp_path, shipped, channel, {"Requires-Python": text(shipped)}) == set(want)


@pytest.mark.parametrize("channel", CHANNELS)
@pytest.mark.parametrize("case", sorted(DIST))
def test_requires_dist_gets_one_verdict(tmp_path: Path, shipped: Matrix, channel: str, case: str) -> None:
    make, want = DIST[case]
    expected = tuple(map(str, sides(shipped, channel)[1].requirements))
    assert variant(tmp_path, shipped, channel, requires=make(expected)) == set(want)


@pytest.mark.parametrize("channel", CHANNELS)
@pytest.mark.parametrize("header, value, want", [
    ("Name", "RESPELLED", ()), ("Name", "someone-else", ("name",)), ("Name", None, ("name",)),
    ("Version", "0.0.1", ("version",)), ("Version", None, ("version",)),
])
def test_name_and_version_get_one_verdict(tmp_path: Path, shipped: Matrix, channel: str, header: str, value: str | None,
                                          want: tuple[str, ...]) -> None:
    if value == "RESPELLED":
        value = shipped.project.name.upper().replace("-", "_")
    assert variant(tmp_path, shipped, channel, {header: value}) == set(want)


# --- a project that lists no dependencies (issue 29): its build's own Requires-Dist stands ---------

OWN = ("packaging>=24", 'rich>=13; extra == "cli"', 'numpy>=2; python_version >= "3.12" and extra == "fast"')


def undeclared(text: str) -> Matrix:
    """The shipped matrix without ``dependencies`` and ``optional_dependencies``."""
    start = text.index("  # Requires-Dist of every wheel")
    end = text.index("  # Compiled modules that must be in every wheel")
    return loader.loads(text[:start] + text[end:])


@pytest.mark.parametrize("channel", CHANNELS)
@pytest.mark.parametrize("case, want", [("own-and-the-variant's", ()), ("variant's-lost", ("requires-dist",))])
def test_the_builds_own_requirements_stand_where_the_matrix_lists_none(tmp_path: Path, shipped_text: str, channel: str,
                                                                       case: str, want: tuple[str, ...]) -> None:
    m = undeclared(shipped_text)
    assert not m.project.declares_requirements and not m.project.requirements
    t = next(t for t in expand(m)[0] if t.on_pypi and t.variant.requirements)
    promise = (audit.promises(m, t.variant.label)[t.wheel_name] if channel == "label" else
               next(p for p in audit.promises(m, audit.PYPI).values() if p.target == t))
    assert promise.requirements is None
    expect = verify.Expectation(target=t, dropped=m.dropped, version=promise.version)
    added = tuple(map(str, t.variant.requirements)) if case == "own-and-the-variant's" else ()
    wheel = write_metadata_wheel(tmp_path, promise.filename, {"Name": m.project.name, "Version": str(promise.version),
                                 "Requires-Python": str(m.project.requires_python)}, OWN + added)
    assert same_verdict(wheel, m, expect, promise) == set(want)


def test_a_mismatch_names_both_sides() -> None:
    have, want = ("numpy>=2", "evil>=1"), (Requirement("numpy>=2"), Requirement('rich; extra == "cli"'))
    (problem,) = metadata_rules.requires_dist_problems(have, want)
    assert "['evil>=1', 'numpy>=2'] is not the matrix's ['numpy>=2', 'rich; extra == \"cli\"']" in problem.message
    assert "lacks ['rich; extra == \"cli\"']" in problem.message and "has ['evil>=1']" in problem.message
    (only_extra,) = metadata_rules.requires_dist_problems((*have, 'rich; extra == "cli"'), want)
    assert "lacks" not in only_extra.message and "[]" not in only_extra.message


def test_merged_keeps_every_requirement_once() -> None:
    own = tuple(map(Requirement, OWN))
    added = (Requirement("PACKAGING>=24"), Requirement('cuda-toolkit[cudart]==13.2.2; platform_system == "Linux"'))
    assert list(map(str, metadata_rules.merged(own, added))) == [*OWN, str(added[1])]
    assert metadata_rules.without(metadata_rules.merged(own, added), added[1:]) == own
