"""Provenance on the pages and in the ledger (PEP 740's ``provenance`` and ``data-provenance``) and verify-release's
pure verdict on one served file (a promotion's copy of it: tests/unit/test_channel_ledger.py)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

from builders.channels import provenance, publishing, verifying
from builders.channels.evidence import FileRecord, LedgerEntry
from builders.channels.ledger import ChannelState, chained
from builders.channels.provenance import Identity
from builders.matrix.release_channels import ChannelName, pre_release_channel
from tests import attestations

FOLDER, NAME = "whl/cpu/", "demo-1.0.0+cpu-cp312-cp312-linux_x86_64.whl"
KEY = f"{FOLDER}demo/{NAME}"
SHA, CORE = hashlib.sha256(b"wheel").hexdigest(), hashlib.sha256(b"core").hexdigest()
EXPECTED = Identity(repository=attestations.REPOSITORY, workflow=attestations.WORKFLOW, ref=attestations.REF)


def held(*records: FileRecord) -> ChannelState:
    entry = LedgerEntry(seq=0, parent=None, parent_sha256=None, kind="publish", at="2026-12-01T00:00:00.000000Z",
                        writer="t", added=records)
    return ChannelState().after(chained(ChannelState(), entry))


def files(with_provenance: bool) -> list[FileRecord]:
    out = [FileRecord(key=KEY, sha256=SHA, size=5), FileRecord(key=f"{KEY}.metadata", sha256=CORE, size=4,
                                                               form="metadata")]
    return out + ([FileRecord(key=f"{KEY}.provenance", sha256=CORE, size=9, form="provenance")] if with_provenance
                  else [])


def test_both_pages_link_the_provenance_the_ledger_holds_and_no_other() -> None:
    for attested in (True, False):
        pages = publishing.render(held(*files(attested)), [("cpu", FOLDER)], {})
        (item,) = json.loads(pages[f"{FOLDER}demo/index.json"])["files"]
        html = pages[f"{FOLDER}demo/index.html"].decode()
        link = "demo-1.0.0%2Bcpu-cp312-cp312-linux_x86_64.whl.provenance"
        assert item.get("provenance") == (link if attested else None)
        assert (f'data-provenance="{link}"' in html) is attested
        assert b".provenance" not in pages[f"{FOLDER}SHA256SUMS"], "a provenance is not a file of the index"


def test_a_provenance_is_published_beside_its_wheel_and_pruned_with_it() -> None:
    (local,) = publishing.provenance_files({KEY: b"{}"}).values()
    assert local.record.key == f"{KEY}.provenance" and local.record.form == "provenance"
    nightly = pre_release_channel(ChannelName.NIGHTLY, layout="whl/nightly/{label}/", keep=0, base_version=None)
    assert publishing.prune(held(*files(True)), nightly, "demo") == (KEY, f"{KEY}.metadata", f"{KEY}.provenance")


def served(tmp_path: Path, **change: object) -> verifying.Served:
    folder = attestations.write(tmp_path, {NAME: SHA})
    (raw,) = provenance.provenances(provenance.read_bundles(folder), {NAME: SHA}).values()
    base = verifying.Served(url=NAME, filename=NAME, sha256=SHA, size=5, json_size=5, json_sha256=SHA, html_sha256=SHA,
                            provenance_link=f"{NAME}.provenance", html_provenance=f"{NAME}.provenance", provenance=raw)
    return dataclasses.replace(base, **change)  # type: ignore[arg-type]


def test_a_served_file_passes_when_bytes_pages_manifest_and_provenance_agree(tmp_path: Path) -> None:
    assert verifying.problems(served(tmp_path), {NAME: SHA}, EXPECTED) == []
    assert verifying.problems(served(tmp_path), None, EXPECTED) == []


def test_each_disagreement_is_named(tmp_path: Path) -> None:
    other = hashlib.sha256(b"other").hexdigest()
    cases = {"served bytes have sha256": served(tmp_path / "1", sha256=other),
             "the HTML page declares": served(tmp_path / "2", html_sha256=other),
             "not linked from the HTML page": served(tmp_path / "3", html_sha256=None),
             "no provenance on the JSON page": served(tmp_path / "4", provenance_link=None),
             "is not served": served(tmp_path / "5", provenance=None),
             "the HTML page's data-provenance": served(tmp_path / "6", html_provenance=None),
             "5 bytes served, the JSON page declares 6": served(tmp_path / "9", json_size=6)}
    for reason, item in cases.items():
        assert any(reason in p for p in verifying.problems(item, {NAME: SHA}, EXPECTED)), reason
    assert verifying.problems(served(tmp_path / "7"), {NAME: other}, EXPECTED) == [
        f"the release manifest says sha256 {other[:12]}..., the served bytes are {SHA[:12]}..."]
    assert verifying.problems(served(tmp_path / "8"), {}, EXPECTED) == ["not in the release manifest"]


def test_the_version_files_and_html_links_are_read_from_the_pages() -> None:
    page = {"files": [{"filename": NAME}, {"filename": "demo-1.0.1+cpu-cp312-cp312-linux_x86_64.whl"},
                      {"filename": "demo-1.0.0rc1+cpu-cp312-cp312-linux_x86_64.whl"}, {"filename": "x-variants.json"}]}
    assert [f["filename"] for f in verifying.version_files(page, "1.0.0")] == [NAME]
    html = (f'<a href="demo-1.0.0%2Bcpu-cp312-cp312-linux_x86_64.whl#sha256={SHA}" data-provenance="p&amp;q">x</a>'
            '<a href="b.whl#sha256=00">b</a>')
    assert verifying.html_links(html) == {NAME: (SHA, "p&q"), "b.whl": ("00", None)}


def test_a_replaced_wheel_published_without_provenance_loses_the_old_one() -> None:
    state = held(*files(True))
    assert publishing.stale_provenance(state, [KEY], {}) == {f"{KEY}.provenance"}
    assert publishing.stale_provenance(state, [KEY], publishing.provenance_files({KEY: b"{}"})) == set()
    assert publishing.stale_provenance(held(*files(False)), [KEY], {}) == set()
