"""PEP 740 provenance from Sigstore-like bundles made here (tests/attestations.py): conversion, and every check
:func:`builders.channels.provenance.check` makes offline, each failing on the one thing changed."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import pytest

from builders.channels import provenance
from builders.channels.provenance import Identity, ProvenanceProblem
from tests import attestations

WHEEL, OTHER = "demo-1.0.0+cpu-cp312-cp312-linux_x86_64.whl", "demo-1.0.0+cpu-cp313-cp313-linux_x86_64.whl"
SHA, OTHER_SHA = hashlib.sha256(b"a").hexdigest(), hashlib.sha256(b"b").hexdigest()
EXPECTED = Identity(repository=attestations.REPOSITORY, workflow=attestations.WORKFLOW, ref=attestations.REF)


def served(tmp_path: Path, **identity: str) -> dict[str, bytes]:
    folder = attestations.write(tmp_path / "att", {WHEEL: SHA, OTHER: OTHER_SHA}, **identity)
    return provenance.provenances(provenance.read_bundles(folder), {WHEEL: SHA, OTHER: OTHER_SHA})


def test_a_bundle_becomes_a_pep_740_provenance_with_its_github_publisher(tmp_path: Path) -> None:
    made = served(tmp_path)
    data = json.loads(made[WHEEL])
    (bundle,) = data["attestation_bundles"]
    assert data["version"] == 1
    assert bundle["publisher"] == {"kind": "GitHub", "repository": attestations.REPOSITORY,
                                   "workflow": attestations.WORKFLOW}
    (att,) = bundle["attestations"]
    assert att["version"] == 1 and set(att["verification_material"]) == {"certificate", "transparency_entries"}
    assert set(att["envelope"]) == {"statement", "signature"}
    assert provenance.subjects(att) == [(WHEEL, SHA)]
    assert provenance.identity_of(att) == EXPECTED


def test_a_provenance_passes_for_its_own_file_only(tmp_path: Path) -> None:
    made = served(tmp_path)
    assert provenance.check(made[WHEEL], WHEEL, SHA, EXPECTED) == []
    (problem,) = provenance.check(made[OTHER], WHEEL, SHA, EXPECTED)
    assert "not this file's sha256" in problem


def test_another_workflow_or_repository_or_ref_is_named(tmp_path: Path) -> None:
    made = served(tmp_path, workflow="nightly.yml")
    problems = provenance.check(made[WHEEL], WHEEL, SHA, EXPECTED)
    assert any("certificate's workflow is 'nightly.yml'" in p for p in problems)
    assert any("publisher's workflow" in p for p in problems)
    other = Identity(repository="someone/else", workflow=attestations.WORKFLOW, ref="refs/tags/v2")
    problems = provenance.check(served(tmp_path / "2")[WHEEL], WHEEL, SHA, other)
    assert any("repository is 'example/demo'" in p for p in problems) and any("ref is" in p for p in problems)


def test_a_statement_changed_after_signing_fails_the_signature(tmp_path: Path) -> None:
    data = json.loads(served(tmp_path)[WHEEL])
    att = data["attestation_bundles"][0]["attestations"][0]
    body = json.loads(base64.b64decode(att["envelope"]["statement"]))
    body["predicate"] = {"changed": True}
    att["envelope"]["statement"] = base64.b64encode(json.dumps(body).encode()).decode()
    assert provenance.check(json.dumps(data).encode(), WHEEL, SHA, EXPECTED) == [
        "the DSSE signature does not verify with the certificate's key"]


@pytest.mark.parametrize("raw", [b"", b"[]", b'{"version": 2, "attestation_bundles": []}',
                                 b'{"version": 1, "attestation_bundles": [{"attestations": [{"envelope": 3}]}]}'])
def test_a_malformed_provenance_is_a_problem_in_words(raw: bytes) -> None:
    problems = provenance.check(raw, WHEEL, SHA, EXPECTED)
    assert problems and all(isinstance(p, str) for p in problems)


def test_a_file_that_is_no_bundle_is_refused_with_its_path(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text('{"dsseEnvelope": {}}')
    with pytest.raises(ProvenanceProblem, match="x\\.json: not a Sigstore bundle"):
        provenance.read_bundles(tmp_path)


def test_a_file_no_statement_names_gets_no_provenance(tmp_path: Path) -> None:
    folder = attestations.write(tmp_path, {WHEEL: SHA})
    assert list(provenance.provenances(provenance.read_bundles(folder), {WHEEL: SHA, OTHER: OTHER_SHA})) == [WHEEL]


def test_a_json_file_holding_json_lines_is_read_line_by_line(tmp_path: Path) -> None:
    lines = attestations.write(tmp_path / "a", {WHEEL: SHA, OTHER: OTHER_SHA}) / "attestation.jsonl"
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "provenance-1.sigstore.json").write_bytes(lines.read_bytes())
    assert len(provenance.read_bundles(tmp_path / "b")) == 2
