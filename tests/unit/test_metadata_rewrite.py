"""METADATA rewritten by label and promote, read back as pip and packaging read it (issue 20).

A setuptools sdist folds its ``License:`` over many lines, some of them whitespace-only
continuation lines; the headers end at the first *empty* line. Each case is a METADATA in
three parts (the headers before ``Version``, the headers after it, what follows the headers),
so the expected output is put together here from the parts, not computed by the code under test.
"""

from __future__ import annotations

import email.parser
import email.policy
from pathlib import Path

import pytest
from packaging.metadata import Metadata
from packaging.requirements import Requirement
from packaging.version import Version

from builders.families import loader as matrix
from builders.matrix.targets import Target, expand
from builders.wheel.archive import Wheel
from builders.wheel.pypi_form import public_version, pypi_requirements
from builders.wheel.verify import METADATA_CODES, Expectation, verify
from builders.wheel.writer import header_fields, label, rewrite, write_wheel

LICENSE = ["BSD 3-Clause License", "        ", "        Copyright (c) 2024, Someone", "        ",
           "        Redistribution and use in source and binary forms, with or without", "\t", "        modification:"]


def metadata(eol: str, body: str | None, *, final_eol: bool = True) -> tuple[bytes, bytes, bytes]:
    """(before Version, after Version, after the headers) of one METADATA, lines ended with ``eol``."""
    head = eol.join(["Metadata-Version: 2.1", "Name: minifw", ""])
    tail = eol.join(["Summary: a summary with trailing spaces   ", "Home-page: https://example.org:8080/x",
                     "Project-URL: Source, https://example.org/src", "License: " + LICENSE[0], *LICENSE[1:],
                     "Requires-Python: >=3.11", "Requires-Dist: old-dependency", "Classifier: Programming Language :: C",
                     ""])
    if not final_eol:
        tail = tail[:-len(eol)]
    rest = "" if body is None else eol + body
    return head.encode(), tail.encode(), rest.encode()


CASES = {
    "lf-body": metadata("\n", "A body\n\n  with blank and indented lines\n   \nKey: not a header\n"),
    "crlf-body": metadata("\r\n", "A body\r\n\r\nsecond paragraph\r\n"),
    "lf-no-body": metadata("\n", None),
    "crlf-no-body": metadata("\r\n", None),
    "no-final-newline": metadata("\n", None, final_eol=False),
}


def version_line(eol: bytes, version: Version) -> bytes:
    return b"Version: " + str(version).encode() + eol


def eol_of(parts: tuple[bytes, bytes, bytes]) -> bytes:
    return b"\r\n" if parts[0].endswith(b"\r\n") else b"\n"


def original(parts: tuple[bytes, bytes, bytes]) -> bytes:
    """The METADATA a backend wrote: the parts around ``Version: 2.15.0``."""
    head, tail, rest = parts
    return head + version_line(eol_of(parts), Version("2.15.0")) + tail + rest


def parse(raw: bytes) -> email.message.Message:
    return email.parser.BytesHeaderParser(policy=email.policy.compat32).parsebytes(raw)


def make_wheel(tmp: Path, raw: bytes, tag: str) -> Wheel:
    dist_info = "minifw-2.15.0.dist-info"
    members = {"minifw/__init__.py": b"", f"{dist_info}/METADATA": raw,
               f"{dist_info}/WHEEL": f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: {tag}\n".encode()}
    path = tmp / f"minifw-2.15.0-{tag}.whl"
    write_wheel(path, members, dist_info, {}, 315532800)
    return Wheel(path)


@pytest.fixture(scope="module")
def shipped(shipped_text: str) -> tuple[matrix.Matrix, Target]:
    """The matrix and its first Linux target whose variant adds runtime requirements."""
    m = matrix.loads(shipped_text)
    targets, _ = expand(m)
    return m, next(t for t in targets if t.variant.requirements and t.platform.name.startswith("linux"))


def expected(parts: tuple[bytes, bytes, bytes], version: Version, reqs: tuple[Requirement, ...]) -> bytes:
    head, tail, rest = parts
    eol = eol_of(parts)
    kept = b"".join(line for line in tail.splitlines(keepends=True) if not line.startswith(b"Requires-Dist:"))
    if not kept.endswith(eol):
        kept += eol
    return head + version_line(eol, version) + kept + b"".join(b"Requires-Dist: " + str(r).encode() + eol
                                                               for r in reqs) + rest


def check(before: bytes, after: bytes, version: Version, reqs: tuple[Requirement, ...]) -> None:
    """``after`` reads as ``before`` with Version and Requires-Dist replaced, by both readers."""
    old, new = parse(before), parse(after)
    assert new["Version"] == str(version)
    assert new.get_all("Requires-Dist") == [str(r) for r in reqs]
    assert [(k, v) for k, v in new.items() if k not in ("Version", "Requires-Dist")] == \
        [(k, v) for k, v in old.items() if k not in ("Version", "Requires-Dist")]
    assert not new.defects
    meta = Metadata.from_email(after, validate=True)
    assert meta.version == version and meta.requires_dist == list(reqs)
    assert meta.license == old["License"] and "Redistribution and use" in (meta.license or "")
    assert new.get_payload() == old.get_payload()


@pytest.mark.parametrize("case", CASES)
def test_label_adds_requirements_after_the_folded_license(tmp_path: Path, shipped, case: str) -> None:
    _m, t = shipped
    parts = CASES[case]
    wheel = make_wheel(tmp_path, original(parts), str(t.tag))
    out = Wheel(label(wheel, t.version, t.requirements, tmp_path / "out", 315532800))
    after = out.read(f"{out.dist_info}/METADATA")
    assert after == expected(parts, t.version, t.requirements)
    check(original(parts), after, t.version, t.requirements)
    assert out.requires_dist == t.requirements


@pytest.mark.parametrize("case", CASES)
def test_promote_rewrite_keeps_the_folded_license(tmp_path: Path, shipped, case: str) -> None:
    """The labelled wheel promoted: Version loses its label, Requires-Dist becomes PyPI's."""
    m, t = shipped
    parts = CASES[case]
    labelled = Wheel(label(make_wheel(tmp_path, original(parts), str(t.tag)), t.version, t.requirements,
                           tmp_path / "labelled", 315532800))
    (tmp_path / "out").mkdir()
    version, reqs = public_version(m), pypi_requirements(m)
    out = Wheel(rewrite(labelled, tmp_path / "out", version=version, requirements=reqs))
    after = out.read(f"{out.dist_info}/METADATA")
    assert after == expected(parts, version, reqs)
    check(original(parts), after, version, reqs)


def test_verify_reads_a_labelled_folded_license_without_metadata_findings(tmp_path: Path, shipped) -> None:
    m, t = shipped
    wheel = make_wheel(tmp_path, original(CASES["lf-body"]), str(t.tag))
    out = Wheel(label(wheel, t.version, t.requirements, tmp_path / "out", 315532800))
    codes = {f.code for f in verify(out, Expectation(target=t, dropped=m.dropped))}
    assert not codes & {"wheel-unreadable", *METADATA_CODES.values()}, codes


def test_a_version_change_alone_keeps_every_other_byte() -> None:
    from builders.wheel.writer import _new_metadata

    head, tail, rest = CASES["crlf-body"]
    assert _new_metadata(head + b"Version: 1\r\n" + tail + rest, Version("2"), None) == \
        head + b"Version: 2\r\n" + tail + rest
    head, tail, rest = CASES["no-final-newline"]
    assert _new_metadata(head + tail + b"\nVersion: 1", Version("2"), None) == head + tail + b"\nVersion: 2"


@pytest.mark.parametrize("case", CASES)
def test_header_fields_agree_with_the_email_parser(case: str) -> None:
    raw = original(CASES[case])
    fields, after = header_fields(raw)
    assert [f[0].split(b":", 1)[0].decode() for f in fields] == parse(raw).keys()
    assert b"".join(line for f in fields for line in f) + after == raw
    assert after == CASES[case][2]


def test_a_line_that_is_no_field_starts_the_body_as_email_reads_it() -> None:
    raw = b"Name: x\nVersion: 1\nnot a field\nmore\n"
    fields, rest = header_fields(raw)
    assert len(fields) == 2 and rest == b"not a field\nmore\n"
    assert email.parser.BytesParser(policy=email.policy.compat32).parsebytes(raw).get_payload() == rest.decode()
