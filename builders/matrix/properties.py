"""Wheel-variant properties (PEP 825): ``variant_properties`` take ``{version}``, ``{major}`` and
``{arch}`` and expand to ``namespace :: feature :: value`` properties.

One expansion, used by the rules (to check what a variant's templates give) and by the model
(:attr:`builders.matrix.model.Variant.properties`); the variant index's layout is a relative
folder without ``..``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from builders.matrix.family import Accelerator
from builders.matrix.findings import Violation, placeholder_problem, short

# PEP 825 as variantlib 0.2.2 reads it: namespace :: feature :: value
VARIANT_PROPERTY = re.compile(r"([a-z0-9_]+)\s*::\s*([a-z0-9_]+)\s*::\s*([a-z0-9_.]+)")
PROPERTY_PLACEHOLDERS = ("version", "major", "arch")


def arch_values(accel: Accelerator, entries: Iterable[str]) -> list[str]:
    """As the family's variant provider reports them: CUDA ``12.0+PTX`` is ``120_real`` and ``120_virtual``."""
    return list(dict.fromkeys(value for entry in entries for value in accel.facts.arch_properties(entry)))


def arch_entries(arch_lists: Iterable[tuple[str, str]]) -> list[str]:
    """All platforms together: one label has one property set on a variant index, whatever its wheel's platform."""
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


def property_template_problem(text: str, *, version: str | None, arches: list[str]) -> Violation | None:
    """One ``variant_properties`` entry: known placeholders, each with a value for this variant."""
    found = placeholder_problem(text, PROPERTY_PLACEHOLDERS)
    if found:
        return found
    if ("{version}" in text or "{major}" in text) and version is None:
        return Violation(f"{text!r} uses the accelerator version, and this variant has none",
                         hint="declare it under versions:, or write the value")
    if "{arch}" in text and not arches:
        return Violation(f"{text!r} uses {{arch}}, and this variant has no arch_list", hint="add arch_list, or write the values")
    return None


def property_problem(text: str) -> Violation | None:
    if VARIANT_PROPERTY.fullmatch(text):
        return None
    return Violation(f"{short(text, 80)!r} is not a PEP 825 variant property",
                     hint="write 'namespace :: feature :: value' in lower-case letters, digits and '_' (the value also "
                          "'.'), e.g. 'nvidia :: sm_arch :: 90_real'")


def variant_layout_problem(text: str) -> Violation | None:
    """The variant index's folder: a relative path of safe segments, no ``..``, no placeholder."""
    if text.startswith("/") or not re.fullmatch(r"[A-Za-z0-9._/-]+", text) \
            or any(part in ("", ".", "..") for part in text.rstrip("/").split("/")):
        return Violation(f"layout {text!r} must be a relative folder of letters, digits, '.', '_', '-' and '/', "
                         "without '..'", hint="e.g. variants/")
    return None
