"""``audit --channel variants``: a published variant index (PEP 825) against the matrix.

Reads the project page of the variant index (``channels.index.base_url`` + ``wheel_variants.layout``
by default) as ``audit`` reads any index, then ``{name}-{version}-variants.json`` (its sha256
checked against the page, read by variantlib) and compares:

- ``variants-json``: the file is missing, unreadable, or its priorities, a label's properties or a
  label the matrix does not have differ from the matrix;
- ``missing``: a variant wheel the release promises (every target's public-version wheel name
  with its variant's label) is not on the page;
- ``unexpected``: a file of this release that is no promised variant wheel (a labelled or plain
  wheel, another label); ``label``: a variant wheel whose label is not in variants.json.
"""

from __future__ import annotations

import hashlib
import json

from builders.index.audit import Audit, Client, Drift, IndexFile, read_project
from builders.matrix.model import Matrix
from builders.matrix.targets import expand, wheel_filename
from builders.wheel import variant as wheel_variant
from builders.wheel.pypi_form import public_version

CHANNEL = "variants"
MAX_JSON = 16 * 1024 * 1024


def promised(matrix: Matrix) -> dict[str, str]:
    """Variant wheel file name -> target id, for every target of the release."""
    targets, _excluded = expand(matrix)
    version = public_version(matrix)
    return {wheel_variant.variant_filename(wheel_filename(t.project.name, version, t.tag), t.variant.variant_label): t.id
            for t in targets}


def json_name(matrix: Matrix) -> str:
    return f"{matrix.project.name}-{public_version(matrix)}-variants.json"


def audit_variants(matrix: Matrix, index_url: str, client: Client | None = None) -> Audit:
    client = client or Client()
    listed = read_project(client, index_url, matrix.project.name) or []
    mine = [f for f in listed if f.filename.startswith(f"{matrix.project.name}-{public_version(matrix)}-")
            or f.filename.startswith(f"{matrix.project.canonical_name.replace('-', '_')}-{public_version(matrix)}-")]
    labels, drift = read_json(matrix, client, mine)
    drift += compare(matrix, mine, labels)
    return Audit(index_url=index_url, channel=CHANNEL, project=matrix.project.name, version=str(matrix.project.version),
                 promised=len(promised(matrix)), listed=len(mine), drift=tuple(drift), bytes_read=dict(client.read),
                 requests=client.requests)


def read_json(matrix: Matrix, client: Client, files: list[IndexFile]) -> tuple[set[str], list[Drift]]:
    """The labels variants.json declares, and its drift from the matrix."""
    name = json_name(matrix)
    found = next((f for f in files if f.filename == name), None)
    if found is None:
        return set(), [Drift(code="variants-json", file=name, message="the project page does not list it")]
    got = client.get(found.url, limit=MAX_JSON, kind="pages")
    if got is None:
        return set(), [Drift(code="variants-json", file=name, message=f"{found.url} does not exist")]
    body = got[1]
    if found.sha256 and hashlib.sha256(body).hexdigest() != found.sha256:
        return set(), [Drift(code="variants-json", file=name, message="its sha256 is not the one the page declares")]
    return json_drift(matrix, name, body)


def json_drift(matrix: Matrix, name: str, body: bytes) -> tuple[set[str], list[Drift]]:
    from variantlib.errors import ValidationError
    from variantlib.variants_json import VariantsJson

    try:
        index = VariantsJson(json.loads(body))
    except (ValueError, ValidationError) as exc:
        return set(), [Drift(code="variants-json", file=name, message=f"variantlib does not read it: {exc}")]
    wanted = {v.variant_label: set(v.properties) for v in matrix.variants}
    drift = []
    assert matrix.wheel_variants is not None
    if index.namespace_priorities != list(matrix.wheel_variants.priorities):
        drift.append(Drift(code="variants-json", file=name, message=f"priorities {index.namespace_priorities} are not "
                                                                    f"the matrix's {list(matrix.wheel_variants.priorities)}"))
    for label, desc in sorted(index.variants.items()):
        props = {p.to_str() for p in desc.properties}
        if label not in wanted:
            drift.append(Drift(code="variants-json", file=name, message=f"label {label!r} is no variant of the matrix"))
        elif props != wanted[label]:
            drift.append(Drift(code="variants-json", file=name,
                               message=f"{label}: properties {sorted(props)} are not the matrix's {sorted(wanted[label])}"))
    return set(index.variants), drift


def compare(matrix: Matrix, files: list[IndexFile], labels: set[str]) -> list[Drift]:
    promises = promised(matrix)
    drift = []
    for f in files:
        if f.filename == json_name(matrix):
            continue
        if f.filename not in promises:
            drift.append(Drift(code="unexpected", file=f.filename, message="not a variant wheel this release promises"))
            continue
        label = wheel_variant.split_label(f.filename)[1]
        if label not in labels:
            drift.append(Drift(code="label", file=f.filename, message=f"label {label!r} is not in {json_name(matrix)}"))
    present = {f.filename for f in files}
    drift += [Drift(code="missing", file=name, message=f"{tid} is promised as a variant wheel")
              for name, tid in sorted(promises.items()) if name not in present]
    return drift
