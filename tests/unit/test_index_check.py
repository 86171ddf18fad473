"""``check-index``'s pure parts: the cells a matrix declares, the two pages compared, what a file lacks, PEP 740's
keys, variants.json held to its record, and how each resolver is asked (or says it cannot be)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path
from urllib.parse import quote

import pytest

from builders.families import loader
from builders.index import index_check as ic
from builders.index.audit import IndexFile
from builders.index.pages import IndexedFile, project_html, project_json
from builders.index.remote import Client
from builders.matrix.model import Matrix
from builders.matrix.targets import expand

SHA = "a" * 64


def shaped(text: str, shape: str) -> Matrix:
    anchor = "  requires_python:"
    return loader.loads(text.replace(anchor, f"  wheel_shape: {shape}\n{anchor}", 1))


def test_one_cell_per_target_of_a_per_python_matrix(m: Matrix) -> None:
    targets, _ = expand(m)
    cells = ic.cells(targets)
    assert len(cells) == len(targets)
    assert {(c.label, str(c.python), c.platform) for c in cells} == {
        (t.variant.label, str(t.python), t.platform.name) for t in targets}
    assert all(c.filename == t.wheel_name for c in cells for t in targets if t.id == c.target)


def test_a_shared_wheel_is_a_cell_for_every_python_it_installs_on(shipped_text: str) -> None:
    targets, _ = expand(shaped(shipped_text, "abi3"))
    cells = ic.cells(targets)
    assert len(cells) == sum(len(t.tested_pythons) for t in targets) > len(targets)
    for t in targets:  # each Python's cell is covered by the one shared file
        mine = [c for c in cells if c.target == t.id]
        assert {c.python for c in mine} == set(t.tested_pythons) and {c.filename for c in mine} == {t.wheel_name}


def page(*files: IndexFile, provenance: dict[str, str] | None = None) -> ic.Page:
    return ic.Page(url="http://x/p/", files=files, provenance=provenance or {})


def wheel(name: str = "p-1.0+cpu-cp312-cp312-linux_x86_64.whl", **kw: object) -> IndexFile:
    return IndexFile(filename=name, url=f"http://x/p/{name}", **{"sha256": SHA, "metadata": True,
                                                                 "metadata_sha256": SHA, **kw})  # type: ignore[arg-type]


def test_the_pages_agree_or_each_difference_is_named() -> None:
    one, two = wheel(), wheel("p-1.0+cpu-cp313-cp313-linux_x86_64.whl")
    assert ic.compare_pages(page(one, two), page(one, two)) == []
    codes = {(f.code, f.file) for f in ic.compare_pages(page(one, two), page(one))}
    assert codes == {("json-only", two.filename)}
    assert {f.code for f in ic.compare_pages(page(one), page(one, two))} == {"html-only"}
    other = wheel(sha256="b" * 64)
    assert [f.code for f in ic.compare_pages(page(one), page(other))] == ["pages-differ"]
    assert [f.code for f in ic.compare_pages(page(one, provenance={one.filename: "http://x/a"}), page(one))] == [
        "pages-differ"]


def test_what_a_file_lacks() -> None:
    assert ic.file_findings(wheel(), "http://x/prov") == []
    assert [f.code for f in ic.file_findings(wheel(sha256=None), "http://x/prov")] == ["no-hash"]
    assert [f.code for f in ic.file_findings(wheel(metadata=False), "http://x/prov")] == ["no-core-metadata"]
    assert [f.code for f in ic.file_findings(wheel(metadata_sha256=None), "http://x/prov")] == ["no-core-metadata"]
    assert [f.code for f in ic.file_findings(wheel(), "")] == ["no-provenance"]
    assert ic.file_findings(wheel(), "", provenance=False) == []  # skipped only when asked


def test_provenance_keys_per_pep_740() -> None:
    good = {"version": 1, "attestation_bundles": [{"publisher": {"kind": "GitHub", "repository": "o/r"},
                                                   "attestations": [{"version": 1, "verification_material": {},
                                                                     "envelope": {}}]}]}
    assert ic.provenance_problems(good) == []
    assert ic.provenance_problems({**good, "version": 2})
    assert ic.provenance_problems({"version": 1, "attestation_bundles": []})
    lacking = json.loads(json.dumps(good))
    del lacking["attestation_bundles"][0]["attestations"][0]["envelope"]
    assert ic.provenance_problems(lacking) == ["attestation_bundles[0].attestations[0]: lacks envelope"]


def test_json_and_html_pages_carry_provenance() -> None:
    body = json.dumps({"files": [{"filename": "a.whl", "url": "a.whl", "hashes": {"sha256": SHA},
                                  "provenance": "a.whl.provenance"}]}).encode()
    assert ic.json_page(body, "http://x/p/").provenance == {"a.whl": "http://x/p/a.whl.provenance"}
    html = f'<a href="a.whl#sha256={SHA}" data-provenance="a.whl.provenance">a.whl</a><a href="b.whl">b</a>'.encode()
    assert ic.html_page(html, "http://x/p/").provenance == {"a.whl": "http://x/p/a.whl.provenance", "b.whl": ""}


def test_variants_json_never_changes() -> None:
    assert ic.variants_json_findings("v.json", SHA, SHA, None) == []
    assert ic.variants_json_findings("v.json", SHA, SHA, SHA) == []
    assert [f.code for f in ic.variants_json_findings("v.json", SHA, SHA, "b" * 64)] == ["variants-json-changed"]
    assert [f.code for f in ic.variants_json_findings("v.json", SHA, "b" * 64, None)] == ["variants-json"]
    assert ic.recorded_variants(json.dumps({"version": "2", "variants_json": {"v.json": SHA}}).encode()) == {
        "v.json": SHA}
    assert ic.recorded_variants(None) is None and ic.recorded_variants(b"not json") is None


@pytest.mark.parametrize(("platform", "expected"), [
    ("manylinux_2_28_x86_64", "x86_64-manylinux_2_28"), ("manylinux_2_28_aarch64", "aarch64-manylinux_2_28"),
    ("win_amd64", "x86_64-pc-windows-msvc"), ("win_arm64", "aarch64-pc-windows-msvc"),
    ("macosx_11_0_arm64", "aarch64-apple-darwin"), ("manylinux_2_5_x86_64", None), ("linux_riscv64", None)])
def test_uv_platforms(platform: str, expected: str | None) -> None:
    got = ic.uv_platform(platform)
    assert (got[0] if got else None) == expected
    if platform.startswith("macosx"):
        assert got and got[1] == {"MACOSX_DEPLOYMENT_TARGET": "11.0"}


def test_every_cell_of_the_matrix_is_asked_of_pip_and_uv_or_uv_says_it_cannot(m: Matrix) -> None:
    targets, _ = expand(m)
    for cell in ic.cells(targets):
        argv = ic.pip_argv("python", cell, "p", "http://x/", "/tmp/r.json", False)
        assert argv[argv.index("--abi") + 1] == cell.python.abi and argv[argv.index("--platform") + 1] == cell.wheel_platform
        made = ic.uv_argv("uv", cell, "http://x/", "req.in", "pylock.toml", False)
        if cell.python.free_threaded:
            assert isinstance(made, str) and "free-threaded" in made
        elif isinstance(made, tuple):
            assert made[0][made[0].index("--python-version") + 1] == f"{cell.python.major}.{cell.python.minor}"
        else:
            assert cell.wheel_platform in made


def test_a_cell_is_resolved_only_to_its_own_file_and_a_missing_cell_fails_the_table(m: Matrix) -> None:
    targets, _ = expand(m)
    cells = ic.cells(targets)[:2]
    ok = [ic._judged(c, r, c.filename) for c in cells for r in ic.RESOLVERS]
    assert ic.missing_cells(ic.coverage_table(cells, ok)) == []
    wrong = [*ok[:-1], ic._judged(cells[1], "uv", cells[0].filename)]
    assert ic.missing_cells(ic.coverage_table(cells, wrong)) == [cells[1].key]
    unexpressed = [*ok[:-1], ic.Resolution(cell=cells[1].key, resolver="uv", status=ic.CANNOT_EXPRESS, reason="x")]
    assert ic.missing_cells(ic.coverage_table(cells, unexpressed)) == []
    assert "<table>" in ic.coverage_html({"cells": ic.coverage_table(cells, ok), "project": "p", "version": "1",
                                          "channel": "test"})


def test_pip_report_and_uv_lock_name_the_file() -> None:
    report = {"install": [{"metadata": {"name": "P"}, "download_info": {"url": "http://x/p/p-1.0%2Bcpu-x.whl"}}]}
    assert ic.pip_file(report, "p") == "p-1.0+cpu-x.whl"
    lock = '[[packages]]\nname = "p"\nversion = "1.0+cpu"\nwheels = [{ url = "http://x/p/a.whl" }]\n'
    assert ic.uv_file(lock, "p", "1.0+cpu") == "a.whl" and ic.uv_file(lock, "p", "2.0") == ""


def served(tmp_path: Path, provenance: bool = False) -> tuple[Path, ic.CheckPlan]:
    """A project folder written by builders' own page writers (file:// is what pip reads too), one wheel-named file
    with its ``.metadata``, and, where asked, a PEP 740 provenance object linked from both pages."""
    folder = tmp_path / "idx" / "p"
    folder.mkdir(parents=True)
    name, meta = "p-1.0+cpu-cp312-cp312-linux_x86_64.whl", b"Metadata-Version: 2.1\nName: p\nVersion: 1.0+cpu\n"
    (folder / name).write_bytes(b"wheel bytes")
    (folder / f"{name}.metadata").write_bytes(meta)
    info = IndexedFile(filename=name, project="p", label="cpu", sha256=hashlib.sha256(b"wheel bytes").hexdigest(),
                       size=11, version="1.0+cpu", requires_python=None, metadata=meta)
    page, data = project_html("p", [info]), project_json("p", [info])
    if provenance:
        (folder / f"{name}.provenance").write_text(json.dumps({"version": 1, "attestation_bundles": [
            {"publisher": {"kind": "GitHub"}, "attestations": [{"version": 1, "verification_material": {},
                                                                "envelope": {}}]}]}))
        page = page.replace(f'href="{quote(name)}#', f'data-provenance="{quote(name)}.provenance" href="{quote(name)}#')
        data["files"][0]["provenance"] = f"{quote(name)}.provenance"  # type: ignore[index]
    (folder / "index.html").write_text(page)
    (folder / "index.json").write_text(json.dumps(data))
    return folder, ic.CheckPlan(project="p", version="1.0", indexes={"cpu": (tmp_path / "idx").as_uri()}, cells=())


def test_an_index_builders_writes_passes_and_each_break_is_found(tmp_path: Path) -> None:
    folder, plan = served(tmp_path, provenance=True)
    url = plan.indexes["cpu"]
    assert ic.check_label(Client(), plan, "cpu", url) == []
    (folder / "p-1.0+cpu-cp312-cp312-linux_x86_64.whl").write_bytes(b"other bytes")
    assert [f.code for f in ic.check_label(Client(), plan, "cpu", url)] == ["link-sha256"]
    folder, plan = served(tmp_path / "bare")
    assert [f.code for f in ic.check_label(Client(), plan, "cpu", plan.indexes["cpu"])] == ["no-provenance"]
    assert ic.check_label(Client(), replace(plan, provenance=False), "cpu", plan.indexes["cpu"]) == []
