"""Sigstore-like bundles made here, without a network: a self-signed certificate carrying Fulcio's builder
extensions, and a DSSE envelope around an in-toto statement signed with its key (what the attest action writes,
but signed by no Fulcio and logged in no Rekor)."""

from __future__ import annotations

import base64
import datetime
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from builders.channels.provenance import BUILD_SIGNER_URI, SOURCE_REPOSITORY_REF, SOURCE_REPOSITORY_URI, STATEMENT_TYPE

REPOSITORY, WORKFLOW, REF = "example/demo", "release.yml", "refs/tags/v1.0.0"


def utf8(text: str) -> bytes:
    data = text.encode()
    assert len(data) < 128
    return bytes([0x0C, len(data)]) + data


def certificate(key: ec.EllipticCurvePrivateKey, repository: str, workflow: str, ref: str) -> bytes:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "sigstore-intermediate")])
    signer = f"https://github.com/{repository}/.github/workflows/{workflow}@{ref}"
    now = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    builder = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
               .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(minutes=10))
               .add_extension(x509.SubjectAlternativeName([x509.UniformResourceIdentifier(signer)]), critical=True))
    for oid, value in ((BUILD_SIGNER_URI, signer), (SOURCE_REPOSITORY_URI, f"https://github.com/{repository}"),
                       (SOURCE_REPOSITORY_REF, ref)):
        builder = builder.add_extension(x509.UnrecognizedExtension(oid, utf8(value)), critical=False)
    return builder.sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.DER)


def bundle(files: Mapping[str, str], *, repository: str = REPOSITORY, workflow: str = WORKFLOW,
           ref: str = REF) -> dict[str, Any]:
    """A v0.3 bundle attesting ``files`` (name -> sha256)."""
    key = ec.generate_private_key(ec.SECP256R1())
    statement = json.dumps({"_type": "https://in-toto.io/Statement/v1", "predicateType": "https://slsa.dev/provenance/v1",
                            "subject": [{"name": n, "digest": {"sha256": s}} for n, s in sorted(files.items())],
                            "predicate": {}}).encode()
    pae = b"DSSEv1 %d %s %d %s" % (len(STATEMENT_TYPE), STATEMENT_TYPE.encode(), len(statement), statement)
    sig = key.sign(pae, ec.ECDSA(hashes.SHA256()))
    b64 = base64.b64encode
    return {"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
            "verificationMaterial": {"certificate": {"rawBytes": b64(certificate(key, repository, workflow, ref)).decode()},
                                     "tlogEntries": [{"logIndex": "1", "kindVersion": {"kind": "dsse", "version": "0.0.1"}}]},
            "dsseEnvelope": {"payload": b64(statement).decode(), "payloadType": STATEMENT_TYPE,
                             "signatures": [{"sig": b64(sig).decode(), "keyid": ""}]}}


def write(folder: Path, files: Mapping[str, str], **identity: str) -> Path:
    """One bundle per file in ``folder`` as JSON Lines (the attest action's ``bundle-path`` form)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "attestation.jsonl"
    path.write_text("".join(json.dumps(bundle({n: s}, **identity)) + "\n" for n, s in sorted(files.items())))
    return folder
