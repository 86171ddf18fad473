"""verify's and audit's verdicts on one wheel's METADATA, side by side (builders.wheel.metadata_rules).

verify's ``check_metadata`` reads the METADATA out of the wheel; audit's ``check_file`` reads it
out of the same file with its range reader (file://). Each side's findings are turned back into
rule codes (verify's codes map one to one; a METADATA ``Drift`` carries its rule). Shared by the
unit test over hostile and made-up METADATA and the slow test over real backends' wheels.
"""

from __future__ import annotations

from pathlib import Path

from builders.index import audit
from builders.matrix.model import Matrix
from builders.wheel import verify
from builders.wheel.archive import Wheel

VERIFY_RULE = {finding: rule for rule, finding in verify.METADATA_CODES.items()}


# --- the two sides ---------------------------------------------------------------------------------


def verify_rules(path: Path, expect: verify.Expectation) -> tuple[str, ...]:
    with Wheel(path).open() as reader:
        found = list(verify.check_metadata(verify.Contents(reader), expect))
    assert all(f.file == f"{reader.dist_info}/METADATA" for f in found)
    return tuple(sorted(VERIFY_RULE[f.code] for f in found))


def audit_rules(path: Path, m: Matrix, promise: audit.Promise) -> tuple[str, ...]:
    listed = audit.IndexFile(filename=path.name, url=path.as_uri())
    drift = audit.check_file(m, promise, listed, lambda f: audit.read_metadata(audit.Client(), f))
    assert all(d.rule and d.code == audit.METADATA_CODES[d.rule] for d in drift), drift
    return tuple(sorted(d.rule for d in drift))


def same_verdict(path: Path, m: Matrix, expect: verify.Expectation, promise: audit.Promise) -> frozenset[str]:
    """The rule codes both sides give ``path``'s METADATA (asserted equal, each as often)."""
    by_verify, by_audit = verify_rules(path, expect), audit_rules(path, m, promise)
    assert by_verify == by_audit, f"verify says {by_verify}, audit says {by_audit}"
    return frozenset(by_verify)
