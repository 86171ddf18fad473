"""The source's own requirements, per target, before any compile.

A wheel's Requires-Dist is the project's dependencies and extras plus the variant's runtime requirements. The
project's part is declared either by the matrix (``project.dependencies`` / ``optional_dependencies``) or, where
the matrix declares none, by the source itself: the metadata its build backend prepares
(``prepare_metadata_for_build_wheel``) under the target's own interpreter, or the sdist's ``PKG-INFO``. That
metadata is read where the build runs (:mod:`builders.wheel.metadata_probe`, staged by :func:`stage_probe`) before
the build, and then:

- the matrix declares requirements: they must be what the source declares, as installed on the target (markers
  evaluated for its Python and platform): a difference is reported before the compile, at the matrix's line;
- the matrix declares none: the source's requirements, extras and all, with the variant's, are what verify
  expects of the wheel (:func:`expected`), so nothing is copied into the matrix by hand.

Everything here takes the target (its Python, its platform) as a parameter: a wheel shared by several Pythons
asks :func:`declaration_problems` once per Python it serves.
"""

from __future__ import annotations

import email.parser
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from builders.base.errors import VerifyError
from builders.matrix.targets import Target
from builders.wheel import metadata_rules as rules
from builders.wheel.verify import marker_environment

PROBE = "metadata_probe.py"
# Pure-Python packages the probe imports, copied from builders' own environment (none needs another).
PROBE_PACKAGES = ("build", "pyproject_hooks", "packaging")
OUTPUT = "metadata.json"


@dataclass(frozen=True, kw_only=True)
class SourceMetadata:
    """What the source's build says of its requirements under one interpreter; ``how`` is "none" where it could
    say nothing (no hook, no PKG-INFO): then the build's own list stands, as before."""

    how: str
    python: str
    requires_dist: tuple[str, ...] = ()
    provides_extra: tuple[str, ...] = ()

    @classmethod
    def from_probe(cls, record: Mapping[str, Any]) -> SourceMetadata:
        """The probe's record (:mod:`builders.wheel.metadata_probe`): METADATA or PKG-INFO text, parsed here."""
        meta = email.parser.Parser().parsestr(str(record.get("metadata", "")), headersonly=True)
        return cls(how=str(record["how"]), python=str(record.get("python", "")),
                   requires_dist=tuple(str(v) for v in meta.get_all("Requires-Dist") or ()),
                   provides_extra=tuple(str(v) for v in meta.get_all("Provides-Extra") or ()))

    @property
    def declares(self) -> bool:
        return self.how != "none"

    @property
    def requirements(self) -> tuple[Requirement, ...]:
        try:
            return tuple(Requirement(r) for r in self.requires_dist)
        except InvalidRequirement as exc:
            raise VerifyError(f"the source's metadata ({self.how}, Python {self.python}) has an invalid "
                              f"Requires-Dist: {exc}") from exc

    def to_json(self) -> dict[str, Any]:
        return {"how": self.how, "python": self.python, "requires_dist": list(self.requires_dist),
                "provides_extra": list(self.provides_extra)}


def stage_probe(folder: Path) -> Path:
    """The probe and the packages it imports, copied into ``folder`` (the target's work folder, which the build's
    runner sees); returns the probe's path here."""
    import build
    import packaging
    import pyproject_hooks

    shutil.rmtree(folder, ignore_errors=True)
    lib = folder / "lib"
    lib.mkdir(parents=True)
    for module in (build, pyproject_hooks, packaging):
        assert module.__file__ is not None and module.__name__ in PROBE_PACKAGES
        shutil.copytree(Path(module.__file__).parent, lib / module.__name__,
                        ignore=shutil.ignore_patterns("__pycache__"))
    return Path(shutil.copy2(Path(__file__).with_name(PROBE), folder / PROBE))


def probe_argv(interpreter: str, folder: str, source: str) -> tuple[str, ...]:
    """The probe run by the target's interpreter on ``source``; ``folder`` is where it is staged, as the runner
    sees it (it writes :data:`OUTPUT` there)."""
    return (interpreter, f"{folder}/{PROBE}", source, f"{folder}/{OUTPUT}")


def declaration_problems(target: Target, found: SourceMetadata) -> list[str]:
    """How the matrix's declared requirements differ from the source's on ``target`` (empty: they agree, or the
    matrix declares none). The variant's runtime requirements are builders' to add, so a source that writes
    them too is not at odds with the matrix."""
    if not target.project.declares_requirements or not found.declares:
        return []
    variant = {canonicalize_name(r.name) for r in target.variant.requirements}
    own = [r for r in found.requirements if canonicalize_name(r.name) not in variant]
    return rules.differences(own, target.project.requirements, marker_environment(target), subject="the source")


def check_declaration(target: Target, found: SourceMetadata) -> None:
    """Raise where the matrix and the source disagree on ``target``: at the matrix's file:line and key."""
    parts = declaration_problems(target, found)
    if not parts:
        return
    where = target.project.requirements_location
    at = f"{where}: {where.key}" if where else "the matrix's project.dependencies"
    raise VerifyError(f"{at} is not what the source declares for {target.id} ({found.how}, Python {found.python}, "
                      f"markers evaluated for {rules.environment_name(marker_environment(target))}): "
                      f"{'; '.join(parts)}. Write the source's requirements there, or remove the matrix's "
                      "dependencies and optional_dependencies to take the source's own")


def expected(target: Target, found: SourceMetadata) -> tuple[Requirement, ...] | None:
    """The whole Requires-Dist verify expects of ``target``'s wheel: the matrix's where it declares requirements,
    else the source's own (extras and all) with the variant's added; None where neither says (the build's own
    list stands, with the variant's in it)."""
    if target.project.declares_requirements:
        return target.requirements
    if not found.declares:
        return None
    return rules.merged(found.requirements, target.variant.requirements)
