"""PEP 740 provenance for a channel's files, made from the Sigstore bundles the release workflow's attest step
wrote, and checked offline against a file's bytes and the builder expected.

A bundle (``actions/attest-build-provenance``'s, v0.1 to v0.3, one JSON object per file or per line) holds a
DSSE envelope around an in-toto statement whose subjects are the attested files (name, sha256), and the
Fulcio certificate that signed it, whose extensions name the builder: the source repository, the workflow
file that ran (the build signer URI) and the ref. Each bundle becomes a PEP 740 attestation
(``version 1``, ``verification_material{certificate, transparency_entries}``, ``envelope{statement,
signature}``) and each file's provenance is ``{version 1, attestation_bundles: [{publisher, attestations}]}``
with a GitHub publisher read from the certificate, served as ``<file>.provenance``.

What is checked offline (:func:`check`): the statement names the file's sha256, the certificate's builder is
the one expected, and the DSSE signature verifies with the certificate's public key. What is not, and is said
so (:data:`NOT_CHECKED`): the certificate's chain to Sigstore's root and the transparency log's inclusion proof,
which need Sigstore's trust root and Rekor. Everything read here is untrusted: a malformed object is a problem
named in words, never a traceback.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa

from builders.index.pages import PROVENANCE

STATEMENT_TYPE = "application/vnd.in-toto+json"
SUFFIX = PROVENANCE
MAX_BYTES = 4 * 1024 * 1024  # one provenance object read from an index
# Fulcio's certificate extensions (https://github.com/sigstore/fulcio/blob/main/docs/oid-info.md), DER UTF8String.
BUILD_SIGNER_URI = x509.ObjectIdentifier("1.3.6.1.4.1.57264.1.9")
SOURCE_REPOSITORY_URI = x509.ObjectIdentifier("1.3.6.1.4.1.57264.1.12")
SOURCE_REPOSITORY_REF = x509.ObjectIdentifier("1.3.6.1.4.1.57264.1.14")
GITHUB = "https://github.com/"
NOT_CHECKED = ("the certificate's chain to Sigstore's root and the transparency log's inclusion proof are not "
               "checked (they need Sigstore's trust root and Rekor, not reachable offline)")


class ProvenanceProblem(ValueError):
    """An attestation or provenance object that cannot be read (the message says where and why)."""


@dataclass(frozen=True, kw_only=True)
class Identity:
    """Who built a file: ``owner/name``, the workflow's file name (``release.yml``) and the git ref."""

    repository: str
    workflow: str
    ref: str = ""  # "" : not checked

    def problems(self, got: Identity) -> list[str]:
        pairs = (("repository", self.repository, got.repository), ("workflow", self.workflow, got.workflow),
                 ("ref", self.ref, got.ref))
        return [f"{what} is {have!r}, expected {want!r}" for what, want, have in pairs if want and want != have]


# --- bundles to attestations (the publish side) --------------------------------------------------


def read_bundles(folder: Path) -> list[dict[str, Any]]:
    """Every Sigstore bundle under ``folder`` (``*.json``, ``*.jsonl``, ``*.sigstore``; a JSON Lines file holds
    one per line), as PEP 740 attestations."""
    out = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl", ".sigstore")):
        docs = _documents(path.read_text(encoding="utf-8"))
        for n, doc in enumerate(docs, 1):
            try:
                out.append(attestation_of(json.loads(doc)))
            except (ValueError, ProvenanceProblem) as exc:
                raise ProvenanceProblem(f"{path}{f' line {n}' if len(docs) > 1 else ''}: not a Sigstore bundle "
                                        f"with a DSSE envelope ({exc})") from None
    return out


def _documents(text: str) -> list[str]:
    """One JSON document, or JSON Lines (what the attest step appends), whatever the file's suffix."""
    try:
        json.loads(text)
    except ValueError:
        return [line for line in text.splitlines() if line.strip()]
    return [text]


def attestation_of(bundle: Any) -> dict[str, Any]:
    """A Sigstore bundle as a PEP 740 attestation object."""
    material, envelope = _field(bundle, "verificationMaterial", dict), _field(bundle, "dsseEnvelope", dict)
    cert = material.get("certificate") or next(iter(
        (material.get("x509CertificateChain") or {}).get("certificates") or []), None)
    if not isinstance(cert, dict) or not isinstance(cert.get("rawBytes"), str):
        raise ProvenanceProblem("no certificate in verificationMaterial")
    if envelope.get("payloadType") != STATEMENT_TYPE:
        raise ProvenanceProblem(f"payloadType {envelope.get('payloadType')!r} is not {STATEMENT_TYPE}")
    (signature,) = _field(envelope, "signatures", list)[:1] or [{}]
    return {"version": 1,
            "verification_material": {"certificate": cert["rawBytes"],
                                      "transparency_entries": list(material.get("tlogEntries") or [])},
            "envelope": {"statement": _field(envelope, "payload", str), "signature": _field(signature, "sig", str)}}


def provenances(attestations: Iterable[Mapping[str, Any]], files: Mapping[str, str]) -> dict[str, bytes]:
    """file name -> its PEP 740 provenance (canonical JSON), for each of ``files`` (name -> sha256) that an
    attestation's statement names by sha256; its publisher read from the certificate."""
    out: dict[str, list[tuple[Identity, Mapping[str, Any]]]] = {}
    by_digest = {sha: name for name, sha in files.items()}
    for item in attestations:
        who = identity_of(item)
        for _name, sha in subjects(item):
            if sha in by_digest:
                out.setdefault(by_digest[sha], []).append((who, item))
    return {name: dumps(provenance_object(found)) for name, found in sorted(out.items())}


def provenance_object(found: Iterable[tuple[Identity, Mapping[str, Any]]]) -> dict[str, Any]:
    """PEP 740's provenance: one attestation bundle per publisher."""
    bundles: dict[Identity, list[Mapping[str, Any]]] = {}
    for who, item in found:
        bundles.setdefault(who, []).append(item)
    return {"version": 1, "attestation_bundles": [
        {"publisher": {"kind": "GitHub", "repository": who.repository, "workflow": who.workflow},
         "attestations": list(items)} for who, items in bundles.items()]}


def dumps(data: object) -> bytes:
    return (json.dumps(data, indent=1, sort_keys=True) + "\n").encode()


# --- reading an attestation ----------------------------------------------------------------------


def statement(attestation: Mapping[str, Any]) -> dict[str, Any]:
    envelope = _field(attestation, "envelope", dict)
    try:
        data = json.loads(_b64(_field(envelope, "statement", str)))
    except ValueError as exc:
        raise ProvenanceProblem(f"the statement is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ProvenanceProblem("the statement is not a JSON object")
    return data


def subjects(attestation: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(name, sha256) of every subject of the attestation's in-toto statement."""
    out = []
    for item in _field(statement(attestation), "subject", list):
        digest = item.get("digest") if isinstance(item, dict) else None
        if isinstance(digest, dict) and isinstance(digest.get("sha256"), str):
            out.append((str(item.get("name", "")), digest["sha256"]))
    return out


def certificate(attestation: Mapping[str, Any]) -> x509.Certificate:
    material = _field(attestation, "verification_material", dict)
    try:
        return x509.load_der_x509_certificate(_b64(_field(material, "certificate", str)))
    except ValueError as exc:
        raise ProvenanceProblem(f"the certificate cannot be read ({exc})") from None


def identity_of(attestation: Mapping[str, Any]) -> Identity:
    """The builder the certificate names: repository, workflow file, ref (Fulcio's extensions)."""
    cert = certificate(attestation)
    repo = _extension(cert, SOURCE_REPOSITORY_URI)
    signer = _extension(cert, BUILD_SIGNER_URI)  # https://github.com/o/r/.github/workflows/release.yml@refs/...
    path = signer.split("@", 1)[0]
    return Identity(repository=repo.removeprefix(GITHUB), workflow=path.rsplit("/", 1)[-1] if "/" in path else "",
                    ref=_extension(cert, SOURCE_REPOSITORY_REF) or (signer.split("@", 1)[1] if "@" in signer else ""))


def signature_verifies(attestation: Mapping[str, Any]) -> bool:
    """Whether the DSSE signature over the statement (PAE) verifies with the certificate's public key."""
    envelope = _field(attestation, "envelope", dict)
    payload, sig = _b64(_field(envelope, "statement", str)), _b64(_field(envelope, "signature", str))
    key = certificate(attestation).public_key()
    pae = b"DSSEv1 %d %s %d %s" % (len(STATEMENT_TYPE), STATEMENT_TYPE.encode(), len(payload), payload)
    try:
        if isinstance(key, ec.EllipticCurvePublicKey):
            key.verify(sig, pae, ec.ECDSA(hashes.SHA256() if key.curve.key_size < 384 else hashes.SHA384()))
        elif isinstance(key, rsa.RSAPublicKey):
            key.verify(sig, pae, padding.PKCS1v15(), hashes.SHA256())
        elif isinstance(key, ed25519.Ed25519PublicKey):
            key.verify(sig, pae)
        else:
            return False
    except InvalidSignature:
        return False
    return True


# --- checking a served file ----------------------------------------------------------------------


def check(raw: bytes, filename: str, sha256: str, expected: Identity) -> list[str]:
    """What is wrong with ``raw`` as the provenance of ``filename`` with ``sha256``: [] when some attestation names
    the file's digest, is signed by its certificate's key, and its certificate and publisher are ``expected``'s."""
    try:
        data = json.loads(raw)
        bundles = _field(data, "attestation_bundles", list) if _field(data, "version", int) == 1 else None
    except (ValueError, ProvenanceProblem) as exc:
        return [f"not a PEP 740 provenance object ({exc})"]
    if not bundles:
        return ["not a version 1 provenance object with attestation bundles"]
    problems: list[str] = []
    for bundle in bundles:
        for item in bundle.get("attestations", []) if isinstance(bundle, dict) else []:
            found = _attestation_problems(item, bundle.get("publisher"), sha256, expected)
            if not found:
                return []
            problems += found
    return problems or ["no attestation"]


def _attestation_problems(item: Any, publisher: Any, sha256: str, expected: Identity) -> list[str]:
    try:
        digests = [sha for _name, sha in subjects(item)]
        who = identity_of(item)
        signed = signature_verifies(item)
    except (ProvenanceProblem, ValueError) as exc:
        return [str(exc)]
    problems = [] if sha256 in digests else [f"its statement's subjects are {', '.join(d[:12] + '...' for d in digests)}"
                                             f", not this file's sha256 {sha256[:12]}..."]
    problems += [f"the certificate's {p}" for p in expected.problems(who)]
    if isinstance(publisher, dict):
        named = Identity(repository=str(publisher.get("repository", "")), workflow=str(publisher.get("workflow", "")))
        problems += [f"the publisher's {p}" for p in expected.problems(named) if not p.startswith("ref")]
    return problems + ([] if signed else ["the DSSE signature does not verify with the certificate's key"])


def _extension(cert: x509.Certificate, oid: x509.ObjectIdentifier) -> str:
    """A Fulcio v2 extension's text (a DER UTF8String); "" when the certificate lacks it."""
    try:
        raw = cert.extensions.get_extension_for_oid(oid).value
    except x509.ExtensionNotFound:
        return ""
    data = raw.value if isinstance(raw, x509.UnrecognizedExtension) else b""
    if len(data) < 2 or data[0] != 0x0C:
        return ""
    length, start = data[1], 2
    if length & 0x80:
        count = length & 0x7F
        length, start = int.from_bytes(data[2:2 + count], "big"), 2 + count
    return data[start:start + length].decode("utf-8", "replace")


def _b64(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        try:
            return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        except (binascii.Error, ValueError) as exc:
            raise ProvenanceProblem(f"not base64 ({exc})") from None


def _field(item: Any, name: str, kind: type) -> Any:
    value = item.get(name) if isinstance(item, Mapping) else None
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ProvenanceProblem(f"{name} is missing or not a {kind.__name__}")
    return value
