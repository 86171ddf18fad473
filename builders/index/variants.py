"""The variant-enabled index (PEP 825, draft) beside the per-label ones: ``<output>/<wheel_variants.layout>``.

Every labelled wheel of the release, verified as its target first, becomes

1. its *twin*: the public version (``2.15.0``, no ``+cu132``: with local labels variantlib writes one
   variants.json per local version and uv steps down versions instead of ranking variants), its
   own variant's Requires-Dist kept, every other member's bytes kept (promote's rewrite, the
   wheel's own zip epoch, so the twin is a function of the wheel), verified as the target at the
   public version;
2. its variant wheel, made by variantlib from the twin (:mod:`builders.wheel.variant`), checked
   against the matrix and the twin, and verified by the same checks as the twin (under the
   twin's file name: the checks read the name as packaging does, which knows no variant label).

Then one folder per project holds every variant wheel of the release, its ``.metadata`` (PEP 658),
the requirement wheels the labels' wheels need (mirrored as ``index`` does, so that
``--index-url`` alone installs), and ``{name}-{version}-variants.json`` written by variantlib's
``generate-index-json``, read back by variantlib and compared with the matrix; both pages link
every file with its sha256. Installers that know variants (uv with ``--preview-features
wheel-variants``) read the variants.json and pick a variant; pip ignores variant wheels.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from builders.base.errors import VariantError
from builders.base.process import LogLike, run
from builders.index.pages import IndexedFile, Requirements, describe, find_wheels, write_project, write_root
from builders.matrix.model import Matrix, WheelVariants
from builders.matrix.targets import Target
from builders.wheel import variant as wheel_variant
from builders.wheel.archive import Wheel, file_sha256
from builders.wheel.pypi_form import PromoteError, public_version, target_of, wheel_epoch
from builders.wheel.verify import Expectation, verify
from builders.wheel.writer import rewrite
from builders.wheel.zipcheck import Finding


@dataclass(frozen=True, kw_only=True)
class Made:
    """One variant wheel: its target, the labelled wheel it came from, its twin, where the index holds it."""

    target: Target
    labelled: Path
    twin: Path
    path: Path


@dataclass(frozen=True, kw_only=True)
class VariantIndex:
    root: Path
    made: tuple[Made, ...]
    variants_json: tuple[Path, ...]
    mirrored: tuple[Path, ...] = ()


def settings(matrix: Matrix) -> WheelVariants:
    if matrix.wheel_variants is None:
        raise VariantError(f"{matrix.path}: the matrix declares no wheel_variants: add its providers and priorities "
                           "(see docs/variants.md)")
    return matrix.wheel_variants


def labelled_wheels(folder: Path, skip: Path) -> list[Path]:
    """The labelled wheels under ``folder``, outside ``skip`` (a variant index written there before), each file
    name once (``build``'s store holds a copy of each: the same bytes are one wheel, other bytes an error)."""
    found: dict[str, Path] = {}
    for path in find_wheels(folder):
        if path.resolve().is_relative_to(skip.resolve()) or wheel_variant.split_label(path.name)[1] is not None:
            continue
        if not Wheel(path).version.local:
            continue
        seen = found.setdefault(path.name, path)
        if seen != path and file_sha256(seen) != file_sha256(path):
            raise VariantError(f"{path.name}: two different files with this name: {seen} and {path}")
    return sorted(found.values(), key=lambda p: p.name)


def make_twin(matrix: Matrix, wheel: Wheel, target: Target, dest: Path) -> Path:
    """The public-version copy of a verified labelled wheel, verified as ``target`` at that version."""
    dest.mkdir(parents=True, exist_ok=True)
    twin = rewrite(wheel, dest, version=public_version(matrix), epoch=wheel_epoch(wheel))
    refuse(twin, verify(Wheel(twin), expectation(matrix, target)), "its public-version twin")
    return twin


def expectation(matrix: Matrix, target: Target) -> Expectation:
    return Expectation(target=target, dropped=matrix.dropped, version=public_version(matrix))


def refuse(path: Path, findings: Sequence[Finding], what: str) -> None:
    if findings:
        raise VariantError(f"{path.name}: {what} does not verify ({len(findings)} finding(s)), the variant index "
                           "was not written:\n  " + "\n  ".join(map(str, findings)))


def check_made(matrix: Matrix, made: Path, twin: Path, labelled: Path, target: Target, scratch: Path) -> None:
    """The variant wheel against the matrix, its twin and the labelled wheel's package files, then the twin's own
    checks under the twin's name."""
    findings = [*wheel_variant.check(made, twin, target.variant, settings(matrix)),
                *wheel_variant.package_findings(made, labelled)]
    refuse(made, findings, "the variant wheel")
    scratch.mkdir(parents=True, exist_ok=True)
    alias = Path(shutil.copyfile(made, scratch / twin.name))
    try:
        refuse(made, verify(Wheel(alias), expectation(matrix, target)), "the variant wheel")
    finally:
        alias.unlink(missing_ok=True)


def make_one(matrix: Matrix, path: Path, work: Path, pyproject: Path, *, env: Mapping[str, str],
             log: LogLike = None) -> Made:
    wheel = Wheel(path)
    try:
        target = target_of(matrix, wheel)
    except PromoteError as exc:
        raise VariantError(str(exc)) from None
    refuse(path, verify(wheel, Expectation(target=target, dropped=matrix.dropped)), f"as {target.id}'s labelled wheel, it")
    label = target.variant.label
    twin = make_twin(matrix, wheel, target, work / "twins" / label)
    made = wheel_variant.make(twin, work / "made", target.variant, pyproject, env=env, log=log)
    check_made(matrix, made, twin, path, target, work / "scratch")
    return Made(target=target, labelled=path, twin=twin, path=made)


def make_variants(matrix: Matrix, wheels: Sequence[Path], output: Path, *, work: Path, env: Mapping[str, str],
                  log: LogLike = None, requirements: Requirements | None = None) -> VariantIndex:
    """Every labelled wheel's variant wheel, and the variant index under ``output`` (nothing written there before
    every wheel is made and checked)."""
    variants = settings(matrix)
    if not wheels:
        raise VariantError("no labelled wheel (such as 2.15.0+cu132) to make variant wheels of")
    pyproject = work / "pyproject.toml"
    pyproject.parent.mkdir(parents=True, exist_ok=True)
    pyproject.write_text(wheel_variant.pyproject_text(variants), encoding="utf-8")
    made = [make_one(matrix, path, work, pyproject, env=env, log=log) for path in sorted(wheels)]
    _refuse_clashes(made)
    root = output / variants.layout
    jsons = write_index(matrix, made, root, output, env=env, log=log)
    mirrored = _mirror(made, requirements, root, output) if requirements is not None else ()
    write_root(output, root, sorted({p.parent.name for p in find_wheels(root)}))
    return VariantIndex(root=root, made=tuple(replace(m, path=root / m.target.project.canonical_name / m.path.name)
                                              for m in made), variants_json=jsons, mirrored=mirrored)


def _refuse_clashes(made: Sequence[Made]) -> None:
    names: dict[str, Made] = {}
    for one in made:
        if one.path.name in names:
            raise VariantError(f"{one.path.name}: made twice, from {names[one.path.name].labelled} and {one.labelled}")
        names[one.path.name] = one


def write_index(matrix: Matrix, made: Sequence[Made], root: Path, output: Path, *, env: Mapping[str, str],
                log: LogLike = None) -> tuple[Path, ...]:
    """Each project's folder: its variant wheels, their metadata, variantlib's variants.json, both pages."""
    folder = root / matrix.project.canonical_name
    with tempfile.TemporaryDirectory(prefix="builders-variants-") as tmp:
        staged = Path(tmp)
        for one in made:
            shutil.copyfile(one.path, staged / one.path.name)
        run([wheel_variant.variantlib_command(), "generate-index-json", "--directory", str(staged)], env=env, log=log,
            timeout=600)
        jsons = sorted(staged.glob("*-variants.json"))
        for path in jsons:
            check_variants_json(matrix, path, made)
        entries = [(one.path, twin_described(one)) for one in made]
        extra = [(path.name, file_sha256(path)) for path in jsons]
        folder.mkdir(parents=True, exist_ok=True)
        for path in jsons:
            shutil.copyfile(path, folder / path.name)
        write_project(output, folder, entries, extra)
    return tuple(folder / path.name for path in jsons)


def twin_described(one: Made) -> IndexedFile:
    """Its twin's METADATA (the same bytes), its own name, size and hash."""
    info = describe(one.twin, one.target.variant.variant_label)
    return replace(info, filename=one.path.name, sha256=file_sha256(one.path), size=one.path.stat().st_size)


def check_variants_json(matrix: Matrix, path: Path, made: Sequence[Made]) -> None:
    """variantlib reads ``path`` back; it names exactly the labels made, each with the matrix's properties.
    (generate-index-json logs an inconsistent wheel and leaves it out: this is where that is caught.)"""
    from variantlib.errors import ValidationError
    from variantlib.variants_json import VariantsJson

    try:
        index = VariantsJson(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, ValidationError) as exc:
        raise VariantError(f"{path.name}: variantlib does not read it back: {exc}") from None
    found = {label: {p.to_str() for p in desc.properties} for label, desc in index.variants.items()}
    wanted = {one.target.variant.variant_label: set(one.target.variant.properties) for one in made}
    if found != wanted:
        raise VariantError(f"{path.name}: variants {found} are not the matrix's {wanted} for the wheels made")
    if index.namespace_priorities != list(settings(matrix).priorities):
        raise VariantError(f"{path.name}: priorities {index.namespace_priorities} are not the matrix's")


def _mirror(made: Sequence[Made], requirements: Requirements, root: Path, output: Path) -> tuple[Path, ...]:
    """The requirement wheels of every label's wheels, each in its project's folder of the variant index."""
    by_label: dict[str, list[Path]] = {}
    for one in made:
        by_label.setdefault(one.target.variant.label, []).append(one.labelled)
    found: dict[str, Path] = {}
    for label, wheels in sorted(by_label.items()):
        for path in requirements(label, wheels):
            found.setdefault(path.name, path)
    projects: dict[str, list[tuple[Path, IndexedFile]]] = {}
    for path in sorted(found.values()):
        info = describe(path, "")
        projects.setdefault(info.project, []).append((path, info))
    for project, entries in projects.items():
        write_project(output, root / project, entries)
    return tuple(found.values())
