"""One wheel variant (PEP 825, draft) of a built wheel: made by variantlib, checked against the matrix.

A variant wheel is its *twin* (the wheel with the release's public version and the variant's own
Requires-Dist) with the variant's label after the platform tag
(``minifw-2.15.0-cp312-cp312-manylinux_2_28_x86_64-cu132.whl``) and ``variant.json`` in its
``.dist-info``: the properties, the providers and their priorities. variantlib 0.2.2's
``make-variant`` writes it (never this module), from a ``[variant]`` table made of the matrix's
``wheel_variants``; plugin validation is skipped because the NVIDIA provider on the package index
is a placeholder. What :func:`check` holds a variant wheel to:

- its name is the twin's with the variant's label (``null`` for the variant without properties);
- variantlib reads its ``variant.json`` as one variant with that label;
- the properties are the matrix's for the variant, the providers and priorities the matrix's;
- every member but ``variant.json`` and ``RECORD`` has the twin's bytes, and ``RECORD`` is the
  twin's plus the ``variant.json`` line: what the twin's checks (verify, smoke) established holds
  for the variant wheel too; every package file (outside ``.dist-info``) has the labelled
  wheel's bytes (:func:`package_findings`), so its smoke tests and GPU runs hold as well.
"""

from __future__ import annotations

import hashlib
import json
import sysconfig
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from builders.base.errors import VariantError, WheelError
from builders.base.process import LogLike, run
from builders.matrix.model import Variant, WheelVariants
from builders.wheel.archive import Wheel, WheelReader
from builders.wheel.zipcheck import Finding

VARIANT_JSON = "variant.json"


def variant_filename(twin_name: str, label: str) -> str:
    """``name-ver-py-abi-plat.whl`` + label -> ``name-ver-py-abi-plat-label.whl``."""
    return f"{twin_name.removesuffix('.whl')}-{label}.whl"


def split_label(filename: str) -> tuple[str, str | None]:
    """The twin's file name and the variant label of a wheel variant's file name, as variantlib reads it; any other
    name is returned as it is, without a label (whatever reads it as a wheel says what is wrong with it)."""
    from variantlib.constants import VALIDATION_WHEEL_NAME_REGEX

    match = VALIDATION_WHEEL_NAME_REGEX.fullmatch(filename)
    if match is None or match.group("variant_label") is None:
        return filename, None
    return f"{match.group('base_wheel_name')}.whl", match.group("variant_label")


def variant_table(variants: WheelVariants) -> dict[str, Any]:
    """The ``[variant]`` table of a pyproject.toml: priorities and providers, as variantlib reads them."""
    providers = {p.namespace: {"requires": list(p.requires), "plugin-api": p.plugin_api,
                               **({"optional": True} if p.optional else {})} for p in variants.providers}
    return {"default-priorities": {"namespace": list(variants.priorities)}, "providers": providers}


def pyproject_text(variants: WheelVariants) -> str:
    """:func:`variant_table` as TOML (JSON strings and lists are TOML's too) for ``make-variant --pyproject-toml``."""
    table = variant_table(variants)
    lines = ["[variant.default-priorities]", f"namespace = {json.dumps(table['default-priorities']['namespace'])}"]
    for namespace, provider in table["providers"].items():
        lines += ["", f"[variant.providers.{namespace}]"]
        lines += [f"{key} = {json.dumps(value)}" for key, value in provider.items()]
    return "\n".join(lines) + "\n"


def variantlib_command() -> str:
    """variantlib's command-line entry point installed with builders (beside this interpreter's scripts)."""
    found = Path(sysconfig.get_path("scripts")) / "variantlib"
    if not found.is_file():
        raise VariantError(f"variantlib is not installed with builders (looked for {found}): install builders with "
                           "its dependencies (variantlib==0.2.2)")
    return str(found)


def make_argv(command: str, twin: Path, out_dir: Path, variant: Variant, pyproject: Path) -> list[str]:
    """``variantlib make-variant`` for ``variant``: ``--null-variant`` without properties, else the label and each one."""
    argv = [command, "make-variant", "--file", str(twin), "--output-directory", str(out_dir),
            "--pyproject-toml", str(pyproject)]
    if not variant.properties:
        return [*argv, "--null-variant"]
    props = [arg for prop in variant.properties for arg in ("--property", prop)]
    return [*argv, "--skip-plugin-validation", "--variant-label", variant.variant_label, *props]


def make(twin: Path, out_dir: Path, variant: Variant, pyproject: Path, *, env: Mapping[str, str],
         log: LogLike = None) -> Path:
    """The variant wheel of ``twin`` for ``variant``, written by variantlib into ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    run(make_argv(variantlib_command(), twin, out_dir, variant, pyproject), env=env, log=log, timeout=600)
    made = out_dir / variant_filename(twin.name, variant.variant_label)
    if not made.is_file():
        raise VariantError(f"variantlib make-variant wrote no {made.name} into {out_dir}")
    return made


def check(path: Path, twin: Path, variant: Variant, variants: WheelVariants) -> list[Finding]:
    """Every way the variant wheel ``path`` differs from what the matrix and its ``twin`` say (empty: none)."""
    base, label = split_label(path.name)
    findings = []
    if (base, label) != (twin.name, variant.variant_label):
        findings.append(Finding(code="variant-name", message=f"{path.name} is not {twin.name} with label "
                                                             f"{variant.variant_label!r}"))
    try:
        with Wheel(path).open() as new, Wheel(twin).open() as old:
            findings += _json_findings(new, variant, variants)
            findings += _member_findings(new, old)
    except WheelError as exc:
        findings.append(Finding(code="variant-archive", message=str(exc)))
    return findings


def package_findings(path: Path, labelled: Path) -> list[Finding]:
    """The variant wheel's package files (every member outside ``.dist-info``) against the labelled wheel's it was
    made from: the same names and bytes, so the labelled wheel's smoke test and GPU runs hold for it."""
    try:
        with Wheel(path).open() as new, Wheel(labelled).open() as old:
            mine, theirs = _package_members(new), _package_members(old)
            out = [Finding(code="variant-members", message=f"{name} is {'missing' if name in theirs else 'added'} "
                           f"against {labelled.name}", file=name) for name in sorted(set(mine) ^ set(theirs))]
            out += [Finding(code="variant-members", message=f"differs from {labelled.name}'s", file=name)
                    for name in sorted(set(mine) & set(theirs)) if mine[name] != theirs[name]]
            return out
    except WheelError as exc:
        return [Finding(code="variant-archive", message=str(exc))]


def _package_members(reader: WheelReader) -> dict[str, str]:
    return {name: digest for name, digest in _digests(reader).items() if not name.split("/", 1)[0].endswith(".dist-info")}


def _json_findings(reader: WheelReader, variant: Variant, variants: WheelVariants) -> list[Finding]:
    from variantlib.errors import ValidationError
    from variantlib.variant_dist_info import VariantDistInfo

    member = f"{reader.dist_info}/{VARIANT_JSON}"
    try:
        info = VariantDistInfo(reader.read(member), variant.variant_label)
    except (WheelError, ValueError, ValidationError) as exc:
        return [Finding(code="variant-json", message=f"variantlib does not read it: {exc}", file=member)]
    found = {prop.to_str() for prop in info.variant_desc.properties}
    out = []
    if found != set(variant.properties):
        out.append(Finding(code="variant-properties", file=member,
                           message=f"properties {sorted(found)} are not the matrix's {sorted(variant.properties)}"))
    declared = {ns: {"requires": p.requires, "plugin-api": p.plugin_api, **({"optional": True} if p.optional else {})}
                for ns, p in info.providers.items()}
    wanted = variant_table(variants)
    if declared != wanted["providers"] or info.namespace_priorities != wanted["default-priorities"]["namespace"]:
        out.append(Finding(code="variant-providers", file=member,
                           message=f"providers {declared} in order {info.namespace_priorities} are not the matrix's"))
    return out


def _member_findings(new: WheelReader, old: WheelReader) -> list[Finding]:
    """Members: the twin's bytes but ``variant.json`` (added) and RECORD (the twin's plus its line)."""
    dist = old.dist_info
    record, added = f"{dist}/RECORD", f"{dist}/{VARIANT_JSON}"
    new_digests, old_digests = _digests(new), _digests(old)
    out = [Finding(code="variant-members", message=f"{name} is {'missing' if name in old_digests else 'added'}",
                   file=name) for name in sorted(new_digests.keys() ^ old_digests.keys()) if name != added]
    for name in sorted((old_digests.keys() & new_digests.keys()) - {record}):
        if new_digests[name] != old_digests[name]:
            out.append(Finding(code="variant-members", message="differs from the twin's", file=name))
    extra = [line for line in _lines(new, record) if line not in set(_lines(old, record))]
    if [line.split(",", 1)[0] for line in extra] != [added]:
        out.append(Finding(code="variant-record", message=f"RECORD adds {extra}, not only {added}", file=record))
    return out


def _digests(reader: WheelReader) -> dict[str, str]:
    """Every file member's sha256, streamed through the capped reader."""
    out = {}
    for info in reader.infos:
        digest = hashlib.sha256()
        for chunk in reader.stream(info):
            digest.update(chunk)
        out[info.filename] = digest.hexdigest()
    return out


def _lines(reader: WheelReader, name: str) -> list[str]:
    try:
        return reader.read(name).decode("utf-8").splitlines()
    except WheelError:
        return []
