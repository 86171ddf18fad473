"""The wheel's own PEP 770 SBOM (``.dist-info/sboms/builders.cdx.json``, CycloneDX 1.6), and its check.

auditwheel's SBOM lists only the system packages it grafted from; a GPU wheel's users also need the
accelerator runtime wheels it requires, the code a project links statically or vendors, and what
compiled it. This one lists, from the wheel itself and the build's facts: the project and version,
every bundled library (``<pkg>.libs/``, ``.dylibs/``) with its sha256, auditwheel's components
merged, every Requires-Dist with its version range, the matrix's ``project.sbom_components``, the
toolchain (host compiler, nvcc/hipcc/icpx with the versions they reported), the image and the
source commit (each only where known: nothing is invented).

The bytes are a function of those inputs alone: sorted keys and components, no timestamp, and a
serialNumber derived from the content, so two builds of one target give the same SBOM (a rebuild
compares wheels byte for byte). :func:`findings` holds an SBOM against the wheel it is in.
"""

from __future__ import annotations

import base64
import hashlib
import json
import posixpath
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from builders.matrix.model import SbomComponent
from builders.wheel.archive import RecordEntry
from builders.wheel.zipcheck import Finding

SBOM_NAME = "sboms/builders.cdx.json"  # under the wheel's .dist-info folder
AUDITWHEEL_SBOM = "sboms/auditwheel.cdx.json"
ROLE, PATH, REQUIREMENT, RANGE = "builders:role", "builders:path", "builders:requirement", "builders:version-range"
# What a component is to the wheel: in it (bundled), installed with it (requirement), built into it (declared,
# system-package: what auditwheel found a graft came from), or what made it (toolchain, image).
ROLES = ("bundled", "declared", "image", "requirement", "system-package", "toolchain")


@dataclass(frozen=True, kw_only=True)
class BuildFacts:
    """What only the build knows: the tools it asked (name, the version they reported), the image it ran in
    and its digest (container builds), the source's commit (a git checkout). Empty: not known, so omitted."""

    tools: tuple[tuple[str, str], ...] = ()
    image: str = ""
    image_digest: str = ""
    commit: str = ""


@dataclass(frozen=True, kw_only=True)
class WheelFacts:
    """What the wheel itself holds: its name and version, RECORD, Requires-Dist, auditwheel's SBOM."""

    name: str
    version: str
    record: tuple[RecordEntry, ...]
    requires_dist: tuple[Requirement, ...]
    auditwheel: Mapping[str, Any] | None = None


def is_bundled(path: str) -> bool:
    """A library a repair grafted: under a top-level ``<pkg>.libs/`` (auditwheel) or a ``.dylibs/`` (delocate)."""
    top = path.split("/", 1)[0]
    return (top.endswith(".libs") and "/" in path) or "/.dylibs/" in f"/{path}"


def hex_sha256(record_hash: str) -> str:
    """RECORD's ``sha256=<urlsafe base64>`` as the hex CycloneDX wants; empty for any other algorithm."""
    algorithm, _, value = record_hash.partition("=")
    if algorithm != "sha256" or not value:
        return ""
    return base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)).hex()


def _props(**pairs: str) -> list[dict[str, str]]:
    return [{"name": f"builders:{k.replace('_', '-')}", "value": v} for k, v in sorted(pairs.items()) if v]


def bundled(record: Iterable[RecordEntry]) -> list[dict[str, Any]]:
    """One component per grafted library, named by its file, with its sha256 from RECORD."""
    out = []
    for entry in record:
        if is_bundled(entry.path):
            sha = hex_sha256(entry.hash)
            out.append({"type": "library", "bom-ref": f"file:{entry.path}", "name": posixpath.basename(entry.path),
                        "properties": _props(role="bundled", path=entry.path),
                        **({"hashes": [{"alg": "SHA-256", "content": sha}]} if sha else {})})
    return out


def requirement_ref(requirement: Requirement) -> str:
    return f"requirement:{requirement}"


def required(requires_dist: Iterable[Requirement]) -> list[dict[str, Any]]:
    """One component per Requires-Dist (the accelerator's runtime wheels among them), its range a property."""
    return [{"type": "library", "bom-ref": requirement_ref(r), "name": canonicalize_name(r.name),
             "purl": f"pkg:pypi/{canonicalize_name(r.name)}", "scope": "optional" if r.marker else "required",
             "properties": _props(role="requirement", requirement=str(r), version_range=str(r.specifier),
                                  marker=str(r.marker or ""), extras=",".join(sorted(r.extras)))}
            for r in {str(r): r for r in requires_dist}.values()]  # a bom-ref is unique: a repeated line once


def declared(components: Iterable[SbomComponent]) -> list[dict[str, Any]]:
    """The matrix's ``project.sbom_components``: code linked statically or vendored, which no file shows."""
    return [{"type": "library", "bom-ref": f"declared:{c.name}@{c.version}", "name": c.name, "version": c.version,
             **({"purl": c.purl} if c.purl else {}),
             **({"licenses": [{"expression": c.license}]} if c.license else {}),
             "properties": _props(role="declared")} for c in components]


def toolchain(facts: BuildFacts) -> list[dict[str, Any]]:
    """What compiled the wheel (never shipped: scope excluded), and the image it was compiled in."""
    tools = [{"type": "application", "bom-ref": f"tool:{name}", "name": name, "scope": "excluded",
              **({"version": version} if version else {}), "properties": _props(role="toolchain")}
             for name, version in facts.tools]
    if facts.image:
        digest = facts.image_digest.partition(":")
        hashes = [{"alg": "SHA-256", "content": digest[2]}] if digest[0] == "sha256" and digest[2] else []
        tools.append({"type": "container", "bom-ref": f"image:{facts.image}", "name": facts.image,
                      "scope": "excluded", "properties": _props(role="image", image_digest=facts.image_digest),
                      **({"hashes": hashes} if hashes else {})})
    return tools


def system_packages(auditwheel: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """auditwheel's components (the packages its grafts came from), merged; the wheel itself left out."""
    if not auditwheel:
        return []
    own = (auditwheel.get("metadata") or {}).get("component", {}).get("bom-ref")
    return [{"type": "library", "bom-ref": f"auditwheel:{c.get('bom-ref', c.get('name', ''))}",
             "name": str(c.get("name", "")), **({"version": str(c["version"])} if c.get("version") else {}),
             **({"purl": str(c["purl"])} if c.get("purl") else {}),
             "properties": _props(role="system-package", source=AUDITWHEEL_SBOM)}
            for c in auditwheel.get("components", []) if isinstance(c, dict) and c.get("bom-ref") != own]


def restate(raw: bytes, version: str, requires_dist: Iterable[Requirement] | None) -> bytes:
    """The SBOM of a copy of its wheel at another version (a promotion's public version) and, where given, other
    Requires-Dist (PyPI's): everything else as it was, the serialNumber derived again."""
    doc = parse(raw)
    own = dict(doc["metadata"]["component"])
    old_ref, ref = own.get("bom-ref"), f"pkg:pypi/{own.get('name')}@{version}"
    doc["metadata"] = {**doc["metadata"], "component": {**own, "version": version, "bom-ref": ref, "purl": ref}}
    if requires_dist is not None:
        kept = [c for c in doc["components"] if not isinstance(c, dict) or role_of(c) != "requirement"]
        doc["components"] = sorted([*kept, *required(requires_dist)], key=lambda c: (role_of(c), c["bom-ref"]))
    shipped = [c["bom-ref"] for c in doc["components"] if role_of(c) not in ("toolchain", "image")]
    doc["dependencies"] = [{"ref": ref, "dependsOn": sorted(shipped)}] + \
        [d for d in doc.get("dependencies", []) if isinstance(d, dict) and d.get("ref") not in (old_ref, ref)]
    doc.pop("serialNumber", None)
    return render({**doc, "serialNumber": serial_number(doc)})


def document(wheel: WheelFacts, components: Iterable[SbomComponent], facts: BuildFacts,
             builders_version: str) -> dict[str, Any]:
    """The SBOM as a value: components sorted, the serialNumber derived from everything else."""
    name = canonicalize_name(wheel.name)
    project_ref = f"pkg:pypi/{name}@{wheel.version}"
    parts = [*bundled(wheel.record), *system_packages(wheel.auditwheel), *required(wheel.requires_dist),
             *declared(components), *toolchain(facts)]
    parts.sort(key=lambda c: (role_of(c), c["bom-ref"]))
    shipped = [c["bom-ref"] for c in parts if role_of(c) not in ("toolchain", "image")]
    commit = _props(source_commit=facts.commit)
    doc = {"bomFormat": "CycloneDX", "specVersion": "1.6", "version": 1,
           "metadata": {"component": {"type": "library", "bom-ref": project_ref, "name": name,
                                      "version": wheel.version, "purl": project_ref},
                        "tools": {"components": [{"type": "application", "name": "builders",
                                                  "version": builders_version}]},
                        **({"properties": commit} if commit else {})},
           "components": parts, "dependencies": [{"ref": project_ref, "dependsOn": sorted(shipped)}]}
    return {**doc, "serialNumber": serial_number(doc)}


def serial_number(doc: Mapping[str, Any]) -> str:
    """A UUID from the content's sha256: the same inputs give the same number, other inputs another."""
    digest = hashlib.sha256(render({k: v for k, v in doc.items() if k != "serialNumber"})).digest()
    return f"urn:uuid:{uuid.UUID(bytes=digest[:16], version=5)}"


def render(doc: Mapping[str, Any]) -> bytes:
    return (json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode()


def role_of(component: Mapping[str, Any]) -> str:
    return prop(component, ROLE)


def prop(component: Mapping[str, Any], name: str) -> str:
    return next((str(p.get("value", "")) for p in component.get("properties", []) or []
                 if isinstance(p, dict) and p.get("name") == name), "")


# --- the SBOM held against the wheel -------------------------------------------------------------


def parse(raw: bytes) -> dict[str, Any]:
    """The SBOM as JSON; ValueError where it is not a CycloneDX document."""
    doc = json.loads(raw)
    if not isinstance(doc, dict) or doc.get("bomFormat") != "CycloneDX" or not isinstance(doc.get("components"), list):
        raise ValueError("not a CycloneDX JSON document with components")
    return doc


def findings(doc: Mapping[str, Any], wheel: WheelFacts, components: Iterable[SbomComponent],
             where: str) -> Iterator[Finding]:
    """Every bundled library, Requires-Dist and declared component listed, nothing listed the wheel lacks."""
    listed = [c for c in doc.get("components", []) if isinstance(c, dict)]
    yield from _project_findings(doc, wheel, where)
    yield from _file_findings(listed, wheel.record, where)
    yield from _requirement_findings(listed, wheel.requires_dist, where)
    yield from _declared_findings(listed, components, where)


def _project_findings(doc: Mapping[str, Any], wheel: WheelFacts, where: str) -> Iterator[Finding]:
    own = (doc.get("metadata") or {}).get("component") or {}
    if canonicalize_name(str(own.get("name", ""))) != canonicalize_name(wheel.name) or \
            str(own.get("version", "")) != wheel.version:
        yield Finding(code="sbom-project-mismatch", file=where, message=f"the SBOM describes {own.get('name')} "
                      f"{own.get('version')}, the wheel is {wheel.name} {wheel.version}")


def _file_findings(listed: list[dict[str, Any]], record: Iterable[RecordEntry], where: str) -> Iterator[Finding]:
    """A bundled library the SBOM leaves out, one it lists that the wheel lacks, one whose sha256 differs."""
    have = {e.path: hex_sha256(e.hash) for e in record if is_bundled(e.path)}
    said = {prop(c, PATH): c for c in listed if role_of(c) == "bundled"}
    for path in sorted(have.keys() - said.keys()):
        yield Finding(code="sbom-library-unlisted", file=path, message=f"bundled library missing from {where}")
    for path in sorted(said.keys() - have.keys()):
        yield Finding(code="sbom-library-absent", file=where, message=f"lists the bundled library {path}, "
                      "which the wheel does not hold")
    for path in sorted(have.keys() & said.keys()):
        sha = next((h.get("content") for h in said[path].get("hashes", []) if h.get("alg") == "SHA-256"), None)
        if sha is not None and have[path] and sha != have[path]:
            yield Finding(code="sbom-hash-mismatch", file=path, message=f"its sha256 differs from {where}'s")


def _requirement_findings(listed: list[dict[str, Any]], requires: Iterable[Requirement],
                          where: str) -> Iterator[Finding]:
    have = {str(r) for r in requires}
    said = {prop(c, REQUIREMENT) for c in listed if role_of(c) == "requirement"}
    for req in sorted(have - said):
        yield Finding(code="sbom-requirement-unlisted", file=where, message=f"Requires-Dist {req!r} is not listed")
    for req in sorted(said - have):
        yield Finding(code="sbom-requirement-absent", file=where,
                      message=f"lists the requirement {req!r}, which the wheel's Requires-Dist lacks")


def _declared_findings(listed: list[dict[str, Any]], components: Iterable[SbomComponent],
                       where: str) -> Iterator[Finding]:
    said = {(str(c.get("name")), str(c.get("version"))) for c in listed if role_of(c) == "declared"}
    have = {(c.name, c.version) for c in components}
    for name, version in sorted(have - said):
        yield Finding(code="sbom-component-unlisted", file=where,
                      message=f"project.sbom_components' {name} {version} is not listed")
    for name, version in sorted(said - have):
        yield Finding(code="sbom-component-absent", file=where,
                      message=f"lists {name} {version} as built in, which project.sbom_components does not declare")
