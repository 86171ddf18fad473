"""The PyPI wheels' one Requires-Dist: each default variant's runtime only where that variant is the default.

PyPI holds one Requires-Dist for every wheel of a version, so the PyPI requirements are the union over the
platforms' default variants. With a mixed layout (PyTorch's before CUDA became its x86 default: cpu on Linux
x86_64, CUDA on Linux aarch64) a CUDA requirement marked only ``platform_system == "Linux"`` would install CUDA
with the x86_64 CPU wheel. Every check here evaluates markers in each platform's marker environment (the
matrix's own values: ``AMD64`` on Windows, ``arm64`` on macOS); none compares marker strings. The layouts are
derived from the shipped matrix, so a grown matrix (another platform, another CUDA) is checked the same way.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from builders.base.arch import canonical_arch
from builders.base.errors import VerifyError
from builders.cli import main
from builders.families import loader
from builders.matrix.model import OS, Matrix, Platform, Variant
from builders.matrix.targets import Target, expand
from builders.wheel.archive import Wheel
from builders.wheel.metadata_rules import requirement_identity, requirement_key
from builders.wheel.pypi_form import check_promoted, pypi_file_problems, pypi_requirements
from builders.wheel.verify import installed_requirements, installs, platform_environment, pypi_requirement_problems
from tests import expected
from tests.unit.test_matrix import after
from tests.unit.test_verify_reader import build_wheel, good_members

# --- the layouts, from the shipped matrix -----------------------------------------------------------


def cpu_label(m: Matrix) -> str:
    """The variant without a runtime (the CPU build)."""
    return next(v.label for v in m.variants if not v.requirements)


def linux_x86_64(m: Matrix) -> Platform:
    return next(p for p in m.platforms if p.os is OS.LINUX and canonical_arch(p.arch) == "x86_64")


def accelerator_label(m: Matrix) -> str:
    """The shipped PyPI default of Linux x86_64: an accelerator variant (a runtime of its own)."""
    label = m.channels.pypi_label(linux_x86_64(m).name)
    assert label and m.variant(label).requirements, "the shipped Linux x86_64 default has a runtime to misplace"
    return label


def mixed_text(m: Matrix, shipped_text: str) -> str:
    """The shipped matrix's YAML with the CPU variant the PyPI default of Linux x86_64, the accelerator variant
    that of every other Linux platform, and the rest as shipped."""
    text, gpu = shipped_text, accelerator_label(m)
    for platform, old in expected.raw(shipped_text)["channels"]["pypi"].items():
        if m.platform(platform).os is OS.LINUX:
            new = cpu_label(m) if platform == linux_x86_64(m).name else gpu
            text = after(text, "\n  pypi:\n", f"    {platform}: {old}\n", f"    {platform}: {new}\n")
    return text


@pytest.fixture(scope="module")
def mixed(m: Matrix, shipped_text: str) -> Matrix:
    loaded = loader.loads(mixed_text(m, shipped_text))
    others = [p for p in loaded.platforms if p.os is OS.LINUX and p != linux_x86_64(loaded)]
    if not others:
        pytest.skip("the matrix has one Linux platform: no mixed Linux layout")
    return loaded


def with_defaults(m: Matrix, defaults: dict[str, str]) -> Matrix:
    return dataclasses.replace(m, channels=dataclasses.replace(m.channels, pypi=tuple(sorted(defaults.items()))))


def pypi_targets(m: Matrix) -> list[Target]:
    targets, _excluded = expand(m)
    return [t for t in targets if t.on_pypi]


def identities(requirements: list[Requirement]) -> set[tuple[object, ...]]:
    return {requirement_identity(r) for r in requirements}


def assert_right_everywhere(m: Matrix) -> None:
    """On every PyPI target (each platform, each Python), the PyPI Requires-Dist installs exactly what the
    target's own labelled wheel would (the project's and its own variant's, markers evaluated), nothing else."""
    union = pypi_requirements(m)
    for t in pypi_targets(m):
        wanted = installed_requirements((*m.project.requirements, *t.variant.requirements), t)
        assert identities(installed_requirements(union, t)) == identities(wanted), t.id
        assert pypi_requirement_problems(m, t, union) == [], t.id


# --- what pip installs with each PyPI wheel ---------------------------------------------------------


def test_the_x86_64_cpu_wheel_installs_no_accelerator_runtime_and_aarch64_installs_its_own(m: Matrix, mixed: Matrix) -> None:
    gpu = mixed.variant(accelerator_label(m))
    union = pypi_requirements(mixed)
    runtime = identities(list(gpu.requirements))
    for t in pypi_targets(mixed):
        installed = identities(installed_requirements(union, t))
        if t.platform == linux_x86_64(mixed):
            assert t.variant.label == cpu_label(m) and not installed & runtime, t.id
        elif t.platform.os is OS.LINUX:
            assert t.variant == gpu and runtime <= installed, t.id


def test_the_mixed_layout_is_right_on_every_platform(mixed: Matrix) -> None:
    assert_right_everywhere(mixed)


def one_accelerator_default_layouts(m: Matrix) -> list[dict[str, str]]:
    """cpu everywhere but one platform, where an accelerator variant is: for every such pair the matrix builds."""
    cpu = cpu_label(m)
    built = {(t.variant.label, t.platform.name) for t in expand(m)[0]}
    return [{**dict.fromkeys((p for _l, p in m.channels.pypi), cpu), platform: label}
            for label, platform in sorted(built) if m.variant(label).requirements and platform in dict(m.channels.pypi)]


def test_every_one_accelerator_layout_is_right_on_every_platform(m: Matrix) -> None:
    layouts = one_accelerator_default_layouts(m)
    assert layouts
    for defaults in layouts:
        assert_right_everywhere(with_defaults(m, defaults))


def test_the_shipped_layout_is_right_on_every_platform(m: Matrix) -> None:
    assert_right_everywhere(m)


def reach(m: Matrix, requirement: Requirement) -> set[str]:
    return {p.name for p in m.platforms if any(installs(requirement, platform_environment(p, py)) for py in m.pythons)}


def test_a_variant_default_wherever_its_runtime_reaches_keeps_its_own_marker(m: Matrix) -> None:
    """Minimal markers: no platform marker is added where the variant's own already says enough."""
    union = {requirement_key(r) for r in pypi_requirements(m)}
    defaults = dict(m.channels.pypi)
    checked = 0
    for variant in {m.variant(label) for label in defaults.values()}:
        mine = {p for p, label in defaults.items() if label == variant.label}
        for req in variant.requirements:
            if reach(m, req) <= mine:
                assert requirement_key(req) in union, str(req)
                checked += 1
    assert checked, "the shipped layout has a default variant whose runtime reaches only its own platforms"


def sharing(m: Matrix) -> tuple[Matrix, Variant, Variant, list[str]]:
    """Two accelerator variants of Linux given one runtime requirement (the first's), each the default of one Linux
    platform, cpu elsewhere."""
    linux = [p.name for p in m.platforms if p.os is OS.LINUX]
    built = {(t.variant.label, t.platform.name) for t in expand(m)[0]}
    gpus = [v for v in m.variants if v.requirements and all((v.label, p) in built for p in linux[:2])]
    if len(linux) < 2 or len(gpus) < 2:
        pytest.skip("no two accelerator variants built on two Linux platforms")
    first, second = gpus[0], dataclasses.replace(gpus[1], runtime_requirements=gpus[0].runtime_requirements)
    variants = tuple(second if v.label == second.label else v for v in m.variants)
    defaults = {**dict.fromkeys((p for _l, p in m.channels.pypi), cpu_label(m)), linux[0]: first.label,
                linux[1]: second.label}
    return with_defaults(dataclasses.replace(m, variants=variants), defaults), first, second, linux[:2]


def test_a_requirement_two_defaults_share_applies_on_both_platforms(m: Matrix) -> None:
    shared_matrix, first, _second, platforms = sharing(m)
    union = pypi_requirements(shared_matrix)
    for t in pypi_targets(shared_matrix):
        installed = identities(installed_requirements(union, t))
        runtime = identities(installed_requirements(first.requirements, t))
        assert (runtime <= installed) if t.platform.name in platforms else not installed & identities(list(first.requirements))
    assert_right_everywhere(shared_matrix)


# --- verify refuses the old union -------------------------------------------------------------------


def pypi_wheel(tmp: Path, t: Target, requires: tuple[Requirement, ...]) -> Wheel:
    """``t``'s PyPI wheel (the public version) declaring ``requires``, its contents right for ``t``."""
    tmp.mkdir(parents=True, exist_ok=True)
    return build_wheel(tmp, t, good_members(t), version=str(t.project.version.public), requires=tuple(map(str, requires)))


def old_union(m: Matrix) -> tuple[Requirement, ...]:
    """The union as it was: every default variant's runtime requirement with its own marker only."""
    labels = dict.fromkeys(label for _p, label in m.channels.pypi)
    return (*m.project.requirements, *(r for label in labels for r in m.variant(label).requirements))


def x86_cpu(mixed: Matrix) -> Target:
    return next(t for t in pypi_targets(mixed) if t.platform == linux_x86_64(mixed) and not t.python.free_threaded)


def test_the_old_union_is_refused_for_the_x86_64_cpu_wheel(m: Matrix, mixed: Matrix) -> None:
    t, gpu = x86_cpu(mixed), accelerator_label(m)
    problems = pypi_requirement_problems(mixed, t, old_union(mixed))
    assert len(problems) == len(mixed.variant(gpu).requirements)
    for problem, req in zip(problems, mixed.variant(gpu).requirements, strict=True):
        assert str(req) in problem and t.platform.name in problem and repr(gpu) in problem


def test_a_requirement_of_the_targets_own_variant_is_never_foreign(mixed: Matrix) -> None:
    for t in pypi_targets(mixed):
        assert pypi_requirement_problems(mixed, t, t.variant.requirements) == [], t.id


def test_verify_refuses_the_old_union_in_a_pypi_wheel_and_passes_the_new(tmp_path: Path, mixed: Matrix) -> None:
    t = x86_cpu(mixed)
    old = pypi_wheel(tmp_path / "old", t, old_union(mixed))
    codes = {f.code for f in check_promoted(mixed, old, t)}
    assert "pypi-foreign-requirement" in codes
    assert pypi_file_problems(mixed, old) != []
    new = pypi_wheel(tmp_path / "new", t, pypi_requirements(mixed))
    assert check_promoted(mixed, new, t) == []
    assert pypi_file_problems(mixed, new) == []


def test_verify_refuses_the_old_union_even_where_the_project_lists_no_requirements(tmp_path: Path, mixed: Matrix) -> None:
    """Without ``dependencies`` the build's own Requires-Dist stands, so only the foreign-requirement rule sees it."""
    loose = dataclasses.replace(mixed, project=dataclasses.replace(mixed.project, declares_requirements=False))
    t = x86_cpu(loose)
    old = pypi_wheel(tmp_path, t, old_union(loose))
    assert {f.code for f in check_promoted(loose, old, t)} == {"pypi-foreign-requirement"}


def test_every_linux_pypi_wheel_of_the_mixed_layout_verifies(tmp_path: Path, mixed: Matrix) -> None:
    union = pypi_requirements(mixed)
    for t in pypi_targets(mixed):
        if t.platform.os is OS.LINUX and not t.python.free_threaded:
            wheel = pypi_wheel(tmp_path / t.id, t, union)
            assert check_promoted(mixed, wheel, t) == [], t.id


def test_the_verify_command_refuses_the_old_union(tmp_path: Path, capsys: pytest.CaptureFixture[str], m: Matrix,
                                                  mixed: Matrix, shipped_text: str) -> None:
    t = x86_cpu(mixed)
    old = pypi_wheel(tmp_path, t, old_union(mixed))
    path = tmp_path / "matrix.yaml"
    path.write_text(mixed_text(m, shipped_text), encoding="utf-8")
    assert main(["verify", str(old.path), "--target", t.id, "--matrix", str(path)]) == VerifyError.exit_code
    assert "pypi-foreign-requirement" in capsys.readouterr().err
