"""Requirements per target (issue 42): markers are evaluated for each target's Python and platform, the source's
own metadata is the declaration where the matrix has none, and a matrix that differs from the source is reported
at its own line before any compile. The matrix is tests/projects/cflags' (two Pythons), edited per test.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from builders.base.errors import VerifyError
from builders.families import loader as matrix
from builders.matrix.targets import Target, expand
from builders.pipeline.plan import BuildPlan
from builders.wheel import metadata_rules as rules
from builders.wheel.source_metadata import SourceMetadata, check_declaration, declaration_problems, expected
from builders.wheel.verify import marker_environment
from tests import helpers
from tests.unit.test_buildplan import CONTAINER, HOST, LOCAL, context, plans

CFLAGS = Path(__file__).resolve().parents[1] / "projects" / "cflags" / "matrix.yaml"
ANCHOR = "  extension_modules: [flagged]\n"


def targets(extra: str = "") -> list[Target]:
    """The cflags matrix's targets, with ``extra`` lines written into its project (before extension_modules)."""
    text = helpers.edit(CFLAGS.read_text(), ANCHOR, extra + ANCHOR)
    return list(expand(matrix.loads(text, CFLAGS))[0])


def found(*requires: str, how: str = "prepare_metadata_for_build_wheel", extras: tuple[str, ...] = ()) -> SourceMetadata:
    return SourceMetadata(how=how, python="3.x", requires_dist=requires, provides_extra=extras)


def reqs(*texts: str) -> list[Requirement]:
    return [Requirement(t) for t in texts]


def older(target: Target) -> str:
    """A marker true for ``target``'s Python and false for the next one."""
    return f'python_version < "{target.python.major}.{target.python.minor + 1}"'


def newer(target: Target) -> str:
    """The negation of :func:`older` (PEP 508 has no ``not``)."""
    return f'python_version >= "{target.python.major}.{target.python.minor + 1}"'


def test_the_matrix_has_two_pythons_to_tell_apart() -> None:
    assert len({t.python for t in targets()}) >= 2


@pytest.mark.parametrize("index", [0, 1])
def test_a_marker_false_for_the_target_is_not_expected(index: int) -> None:
    ts = targets()
    first, target = ts[0], ts[index]
    env = marker_environment(target)
    found_here = rules.for_environment(reqs(f"cffi>=1.11; {older(first)}"), env)
    assert bool(found_here) is (target.python == first.python)


def test_the_same_requirement_with_and_without_a_true_marker_agree() -> None:
    for target in targets():
        env = marker_environment(target)
        assert rules.differences(reqs(f"cffi>=1.11; {older(target)}"), reqs("cffi>=1.11"), env) == []
        assert rules.differences(reqs(f"cffi>=1.11; {older(target)}"), reqs("cffi>=1.11")) != []  # as written


def test_platform_markers_are_the_targets_not_this_hosts() -> None:
    (target, *_) = targets()
    env = marker_environment(target)
    assert rules.for_environment(reqs('pywin32>=300; sys_platform == "win32"'), env) == {}
    assert rules.for_environment(reqs(f'uvloop; platform_machine == "{target.platform.arch}"'), env)


def test_an_extra_is_not_a_plain_dependency() -> None:
    env = marker_environment(targets()[0])
    parts = rules.differences(reqs("idna>=3"), reqs('idna>=3; extra == "net"'), env)
    assert parts and "[extra net]" in " ".join(parts)
    assert rules.differences(reqs('idna>=3; extra == "Net"'), reqs('idna>=3; extra == "net"'), env) == []


def test_a_marker_that_cannot_be_evaluated_is_always_a_difference() -> None:
    env = marker_environment(targets()[0])
    (problem,) = rules.requires_dist_problems(["cffi", 'evil; python_version ~= "x"'], reqs("cffi"), environment=env)
    assert "evil" in problem.message and "cannot be evaluated" in problem.message


def test_verify_compares_requires_dist_per_target() -> None:
    for target in targets():
        env = marker_environment(target)
        want = reqs(f"cffi>=1.11; {older(target)}", f"cffi>=1.99; {newer(target)}")
        assert rules.requires_dist_problems(["cffi>=1.11"], want, environment=env) == ()
        (problem,) = rules.requires_dist_problems(["cffi>=1.99"], want, environment=env)
        assert problem.code == "requires-dist" and "cffi>=1.11" in problem.message
        assert f"Python {target.python.major}.{target.python.minor}" in problem.message


def test_pins_per_python_pass_where_the_matrix_declares_none() -> None:
    for target in targets():
        assert not target.project.declares_requirements
        own = found(f"cffi>=1.{target.python.minor}", 'idna>=3; extra == "net"', extras=("net",))
        assert declaration_problems(target, own) == []
        check_declaration(target, own)
        want = expected(target, own)
        assert want is not None and {str(r) for r in own.requirements} <= {str(r) for r in want}


def test_a_source_that_says_nothing_leaves_the_builds_own_list() -> None:
    for target in targets():
        assert expected(target, found(how="none")) is None
    for target in targets('  dependencies: ["numpy"]\n'):
        assert declaration_problems(target, found(how="none")) == []


def test_a_dependency_the_source_does_not_declare_is_reported_at_the_matrix_line() -> None:
    for target in targets('  dependencies: ["cffi>=1.11", "numpy>=2"]\n'):
        with pytest.raises(VerifyError) as err:
            check_declaration(target, found("cffi>=1.11"))
        message = str(err.value)
        location = target.project.requirements_location
        assert location is not None and location.key == "project.dependencies"
        assert f"{location.file}:{location.line}:" in message and "project.dependencies" in message
        assert "numpy>=2" in message and target.id in message


def test_a_matrix_with_markers_agrees_with_a_source_that_pins_per_python() -> None:
    ts = targets()
    first = ts[0]
    declared = f'  dependencies: [\'cffi>=1.11; {older(first)}\', \'cffi>=1.17; {newer(first)}\']\n'
    for target in targets(declared):
        pin = "cffi>=1.11" if target.python == first.python else "cffi>=1.17"
        assert declaration_problems(target, found(pin)) == []
        assert declaration_problems(target, found("cffi>=1.11" if pin != "cffi>=1.11" else "cffi>=1.17"))


def test_extras_are_compared_too() -> None:
    for target in targets('  optional_dependencies: {net: ["idna>=3"]}\n'):
        assert declaration_problems(target, found('idna>=3; extra == "net"')) == []
        assert declaration_problems(target, found('idna>=3; extra == "web"'))


def test_the_variants_own_requirements_in_the_source_are_not_a_mismatch() -> None:
    text = CFLAGS.read_text().replace("    label: cpu\n", '    label: cpu\n    runtime_requirements: ["six>=1.16"]\n')
    text = helpers.edit(text, ANCHOR, '  dependencies: ["cffi"]\n' + ANCHOR)
    for target in expand(matrix.loads(text, CFLAGS))[0]:
        assert declaration_problems(target, found("cffi", "six>=1.16")) == []


def test_a_pkg_info_is_read_as_metadata() -> None:
    record = {"how": "PKG-INFO", "python": "3.12",
              "metadata": "Metadata-Version: 2.2\nName: x\nVersion: 1\nRequires-Dist: cffi>=1.11\n"
                          "Provides-Extra: net\nRequires-Dist: idna; extra == \"net\"\n\nlong description\n"}
    meta = SourceMetadata.from_probe(record)
    assert meta.requires_dist == ("cffi>=1.11", 'idna; extra == "net"') and meta.provides_extra == ("net",)
    assert meta.to_json()["how"] == "PKG-INFO"


def test_the_plan_reads_the_sources_metadata_with_the_targets_interpreter_before_the_build() -> None:
    for plan in plans(matrix.loads(CFLAGS.read_text(), CFLAGS), LOCAL, context()).values():
        assert isinstance(plan, BuildPlan) and plan.requirements is not None
        stages = [name for name, _ in plan.commands()]
        assert stages.index("prepare") < stages.index("requirements") < stages.index("build")
        assert plan.requirements.argv[0] == plan.interpreter and plan.source != plan.requirements.argv[2]
        assert plan.to_json()["requirements"]["argv"] == list(plan.requirements.argv)


def test_a_container_plan_reads_the_metadata_inside_its_image() -> None:
    ctx = context(host=replace(HOST, container_engines=("podman",)))
    built = [p for p in plans(matrix.loads(CFLAGS.read_text(), CFLAGS), CONTAINER, ctx).values()
             if isinstance(p, BuildPlan)]  # the image has the Pythons CONTAINER lists
    assert built
    for plan in built:
        assert plan.requirements is not None
        assert plan.requirements.argv[0] == plan.interpreter
        assert dict(plan.requirements.env) == dict(plan.build.env)  # its offline pip settings, the build's variables
