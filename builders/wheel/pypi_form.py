"""Promote a labelled default-variant wheel to the PyPI wheel.

``minifw-2.15.0+cu132-cp312-cp312-manylinux_2_28_x86_64.whl`` becomes
``minifw-2.15.0-cp312-cp312-manylinux_2_28_x86_64.whl``: the version and dist-info folder
lose the label, METADATA's Version is rewritten and Requires-Dist set to the PyPI channel's
requirements, RECORD is regenerated, and every other member keeps its bytes.

PyPI needs every wheel of one version to carry the same Requires-Dist (resolvers read one
wheel's metadata and assume it holds for all), so the PyPI requirements are the union of the
runtime requirements of every variant that is the PyPI default on some platform. A variant's own
markers say where its runtime exists (``platform_system == "Linux"``), not where it is the
default: with cpu the default on linux-x86_64 and cu132 on linux-aarch64, cu132's CUDA runtime
would install with the x86_64 CPU wheel. So each one's marker is narrowed, with ``and``, to the
platforms where a variant declaring it is the PyPI default (only as far as the matrix's
platforms need telling apart), and verify refuses a PyPI wheel whose Requires-Dist installs
another variant's runtime on its own platform.

Nothing is written before the input is verified as its labelled target (RECORD, METADATA,
WHEEL tags, archive safety, and that the contents back the label): a wheel altered after its
RECORD was written, or a CPU build renamed ``+cu132``, is refused rather than laundered into a
fresh, valid PyPI wheel.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.tags import Tag
from packaging.version import Version

from builders.base.errors import PromoteError, VerifyError
from builders.matrix.model import Matrix, Platform
from builders.matrix.targets import Target, expand
from builders.wheel.archive import ZIP_EPOCH, Wheel
from builders.wheel.metadata_rules import requirement_key, restricted, without
from builders.wheel.verify import (
    Expectation,
    Finding,
    installs,
    other_variants,
    platform_environment,
    pypi_requirement_problems,
    verify,
)
from builders.wheel.writer import rewrite


def pypi_requirements(matrix: Matrix, wheel: Wheel | None = None) -> tuple[Requirement, ...]:
    """The Requires-Dist every PyPI wheel of the release carries (order-stable, deduplicated): the project's
    (the matrix's, or where it lists none, ``wheel``'s own less its variant's), then the PyPI variants', each
    confined to the platforms where it is the default's (:func:`confined`)."""
    seen = {requirement_key(r): r for r in project_requirements(matrix, wheel)}
    for req, platforms in default_requirements(matrix):
        narrowed = confined(matrix, req, platforms)
        if narrowed is not None:
            seen.setdefault(requirement_key(narrowed), narrowed)
    return tuple(seen.values())


def default_requirements(matrix: Matrix) -> tuple[tuple[Requirement, frozenset[str]], ...]:
    """Each runtime requirement of a PyPI default variant, once, with the platforms where a variant that declares
    it is the default (two defaults sharing one requirement share it on both's platforms)."""
    found: dict[tuple[object, ...], tuple[Requirement, frozenset[str]]] = {}
    for platform, label in matrix.channels.pypi:
        for req in matrix.variant(label).requirements:
            first, platforms = found.get(requirement_key(req), (req, frozenset()))
            found[requirement_key(req)] = (first, platforms | {platform})
    return tuple(found.values())


def confined(matrix: Matrix, requirement: Requirement, defaults: frozenset[str]) -> Requirement | None:
    """``requirement`` installing on no platform of the matrix outside ``defaults`` (platform names): as it is
    where its own marker already reaches no further, else with a platform marker added; None where it installs
    on none of ``defaults`` (nothing to publish it for)."""
    reach = reach_of(matrix, requirement)
    if reach <= defaults:
        return requirement
    wanted = [p for p in matrix.platforms if p.name in reach & defaults]
    if not wanted:
        return None
    foreign = [p for p in matrix.platforms if p.name in reach - defaults]
    clauses = dict.fromkeys(platform_clause(matrix, p, foreign) for p in wanted)
    return restricted(requirement, Marker(" or ".join(clauses)))


def reach_of(matrix: Matrix, requirement: Requirement) -> frozenset[str]:
    """The matrix's platforms where ``requirement`` installs under some Python of the matrix."""
    return frozenset(p.name for p in matrix.platforms
                     if any(installs(requirement, platform_environment(p, py)) for py in matrix.pythons))


def platform_clause(matrix: Matrix, platform: Platform, foreign: list[Platform]) -> str:
    """The shortest marker true on ``platform`` and false on each of ``foreign``: its system, its machine, or both,
    as its marker environment spells them (``AMD64`` on Windows, ``arm64`` on macOS; no Python changes them)."""
    def values(p: Platform) -> dict[str, str]:
        return platform_environment(p, matrix.pythons[0])

    env = values(platform)
    system, machine = f'platform_system == "{env["platform_system"]}"', f'platform_machine == "{env["platform_machine"]}"'
    for clause in (system, machine):
        if not any(Marker(clause).evaluate(values(p)) for p in foreign):
            return clause
    return f"{system} and {machine}"


def project_requirements(matrix: Matrix, wheel: Wheel | None) -> tuple[Requirement, ...]:
    """The project's part of a wheel's Requires-Dist: the matrix's, or the labelled ``wheel``'s own less its
    variant's runtime requirements where the matrix declares none."""
    if matrix.project.declares_requirements or wheel is None:
        return matrix.project.requirements
    label = wheel.version.local or ""
    added = matrix.variant(label).requirements if label in {v.label for v in matrix.variants} else ()
    return without(wheel.requires_dist, added)


MANYLINUX = re.compile(r"manylinux_(\d+)_(\d+)_(.+)")


def manylinux(platform_tag: str) -> tuple[int, int, str] | None:
    """``manylinux_2_28_x86_64`` -> (2, 28, "x86_64"); None for any other platform tag."""
    match = MANYLINUX.fullmatch(platform_tag)
    return (int(match.group(1)), int(match.group(2)), match.group(3)) if match else None


def manylinux_arch(platform_tag: str) -> str | None:
    """The architecture of a manylinux platform tag (``x86_64``), or None for any other tag."""
    level = manylinux(platform_tag)
    return level[2] if level else None


def local_only_problem(matrix: Matrix, tags: frozenset[Tag]) -> str | None:
    """Why a wheel with ``tags`` is a ``--local-only`` wheel (a manylinux level the matrix does not give its
    platform), or None. Such a wheel was made for testing on its build host and is never published."""
    for tag in tags:
        arch = manylinux_arch(tag.platform)
        promised = [p.wheel_platform for p in matrix.platforms if arch and manylinux_arch(p.wheel_platform) == arch]
        if promised and tag.platform not in promised:
            return (f"tagged {tag.platform}, not the matrix's {', '.join(promised)}: a `build --local-only` wheel, "
                    "tagged at its build host's own level for testing, is never published")
    return None


def public_version(matrix: Matrix) -> Version:
    return Version(matrix.project.version.public)


def target_of(matrix: Matrix, wheel: Wheel) -> Target:
    """The target a labelled wheel was built for, from its tags and local version label (never a wheel tagged at
    its build host's own level by ``build --local-only``)."""
    local = local_only_problem(matrix, wheel.tags)
    if local:
        raise PromoteError(f"{wheel.path.name}: {local}; build it with --engine container (the policy's image)")
    label = wheel.version.local
    if not label:
        raise PromoteError(f"{wheel.path.name}: unlabelled wheel (version {wheel.version}); "
                           "promote takes a labelled wheel such as 2.15.0+cu132")
    targets, _excluded = expand(matrix)
    hits = [t for t in targets if t.variant.label == label and t.tag in wheel.tags]
    if not hits:
        raise PromoteError(f"{wheel.path.name}: no target of the matrix has label {label!r} "
                           f"and tags {','.join(sorted(map(str, wheel.tags)))}")
    if len(hits) > 1:
        raise PromoteError(f"{wheel.path.name}: matches several targets: {', '.join(t.id for t in hits)}")
    return hits[0]


@dataclass(frozen=True, kw_only=True)
class Promoted:
    source: Path
    path: Path
    target: Target


def wheel_epoch(wheel: Wheel) -> int:
    """The newest member timestamp of ``wheel``, so a promotion is a function of its input alone
    (a timestamp no calendar has, month 0 say, is left out)."""
    import calendar

    stamps = [ZIP_EPOCH]
    with wheel.open() as reader:
        for info in reader.infos:
            try:
                stamps.append(calendar.timegm((*info.date_time, 0, 0, 0)))
            except (ValueError, OverflowError):
                continue
    return max(stamps)


def promotable(matrix: Matrix, wheel: Wheel) -> Target:
    """The target ``wheel`` is promoted as, once it is a verified default-variant wheel; else raise."""
    target = target_of(matrix, wheel)
    if not target.on_pypi:
        default = matrix.channels.pypi_label(target.platform.name)
        wanted = f"the PyPI default there is {default!r}" if default else "nothing is published to PyPI for it"
        raise PromoteError(f"{wheel.path.name}: label {target.variant.label!r} is not the PyPI default for "
                           f"{target.platform.name} ({wanted}); only default-variant wheels are promoted")
    if wheel.version != target.version:
        raise PromoteError(f"{wheel.path.name}: version {wheel.version} != the release's {target.version}")
    refuse_unverified(matrix, wheel, target)
    return target


def promote(matrix: Matrix, wheel: Wheel, dest_dir: Path, *, epoch: int | None = None,
            checked: Target | None = None) -> Promoted:
    """Raise on any finding. ``epoch`` defaults to the input's own, so promoting one wheel twice gives the same
    bytes; ``checked``: :func:`promotable` already verified it (a folder is checked whole first)."""
    target = checked or promotable(matrix, wheel)
    dest_dir.mkdir(parents=True, exist_ok=True)
    if epoch is None:
        epoch = wheel_epoch(wheel)
    requirements = pypi_requirements(matrix, wheel)
    out = rewrite(wheel, dest_dir, version=public_version(matrix), requirements=requirements, epoch=epoch)
    findings = check_promoted(matrix, Wheel(out), target, requirements)
    if findings:
        out.unlink(missing_ok=True)
        raise VerifyError(f"{out.name}: promoted wheel has {len(findings)} finding(s):\n  "
                          + "\n  ".join(map(str, findings)))
    return Promoted(source=wheel.path, path=out, target=target)


def refuse_unverified(matrix: Matrix, wheel: Wheel, target: Target) -> None:
    """Raise :class:`PromoteError` with every finding when ``wheel`` is not ``target``'s labelled wheel."""
    findings = verify(wheel, Expectation(target=target, dropped=matrix.dropped))
    if findings:
        raise PromoteError(f"{wheel.path.name}: not promoted, it does not verify as {target.id}'s wheel "
                           f"({len(findings)} finding(s)); nothing was written:\n  " + "\n  ".join(map(str, findings)))


def check_promoted(matrix: Matrix, wheel: Wheel, target: Target,
                   requirements: tuple[Requirement, ...] | None = None) -> list[Finding]:
    """Findings for ``wheel`` as ``target``'s PyPI wheel: the public version, the PyPI requirements, and none of
    another variant's runtime installing on ``target``'s platform (whether or not the project lists its own)."""
    declared = pypi_requirements(matrix) if matrix.project.declares_requirements else None  # None: the variant's
    wanted = declared if requirements is None else requirements
    return verify(wheel, Expectation(target=target, dropped=matrix.dropped, version=public_version(matrix),
                                     requirements=wanted, others=other_variants(matrix, target)))


def pypi_target(matrix: Matrix, wheel: Wheel) -> Target | None:
    """The PyPI default's target whose tag ``wheel`` (an unlabelled PyPI wheel) carries; None if no target's."""
    targets, _excluded = expand(matrix)
    return next((t for t in targets if t.on_pypi and t.tag in wheel.tags), None)


def pypi_file_problems(matrix: Matrix, wheel: Wheel) -> list[str]:
    """A file no PyPI target carries, or each Requires-Dist that installs another variant's runtime on its own
    platform. Raises WheelError for a file it cannot read."""
    target = pypi_target(matrix, wheel)
    if target is None:
        return [f"{wheel.path.name}: no PyPI default target of the matrix has tags "
                f"{','.join(sorted(map(str, wheel.tags)))}"]
    return [f"{wheel.path.name}: {problem}" for problem in pypi_requirement_problems(matrix, target, wheel.requires_dist)]


def requirement_problems(m: Matrix, pypi_files: list[Path]) -> list[str]:
    """Each PyPI file's Requires-Dist that would install another variant's runtime on its own platform."""
    return [problem for path in pypi_files for problem in pypi_file_problems(m, Wheel(path))]
