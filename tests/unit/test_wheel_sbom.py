"""The wheel's PEP 770 SBOM (issue 45): written deterministically, restated on a copy, held against the wheel.

Synthetic wheels of the shipped matrix's cu132 target; every expectation comes from the wheel's members, its
Requires-Dist and the matrix YAML, never from the SBOM code under test.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from packaging.version import Version

from builders.base.errors import MatrixError
from builders.families import loader as matrix
from builders.matrix.model import SbomComponent
from builders.matrix.targets import Selection, select
from builders.pipeline.sbom_facts import tool_version
from builders.wheel import sbom
from builders.wheel.archive import Wheel
from builders.wheel.verify import Contents, Expectation, check_record, check_sbom
from builders.wheel.writer import rewrite, write_wheel
from tests import expected

TID = "cu132-cp312-linux-x86_64"
GRAFT = "minifw.libs/libgomp-a34b3233.so.1.0.0"
DECLARED = "  sbom_components:\n    - {name: cutlass, version: 4.2.0, purl: pkg:github/nvidia/cutlass@v4.2.0}\n"
FACTS = sbom.BuildFacts(tools=(("c++", "14.2.0"), ("nvcc", "13.2.78")), commit="a" * 40)


@pytest.fixture(scope="module")
def declared_text(shipped_text: str) -> str:
    return shipped_text.replace("  wheel_size_budget_mb: 64\n", "  wheel_size_budget_mb: 64\n" + DECLARED, 1)


@pytest.fixture(scope="module")
def target(declared_text: str):
    m = matrix.loads(declared_text)
    (t,) = select(m, Selection(targets=(TID,)))
    return t, m


def raw_wheel(folder: Path, t, graft: bytes = b"\x7fELF graft") -> Wheel:
    """A labelled, repaired cu132 wheel: an extension, one library auditwheel grafted, the target's Requires-Dist."""
    dist_info = f"minifw-{t.version}.dist-info"
    meta = f"Metadata-Version: 2.4\nName: minifw\nVersion: {t.version}\n"
    meta += "".join(f"Requires-Dist: {r}\n" for r in t.requirements)
    members = {"minifw/__init__.py": b"", GRAFT: graft, f"{dist_info}/METADATA": meta.encode(),
               f"{dist_info}/WHEEL": b"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: cp312-cp312-manylinux_2_28_x86_64\n"}
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"minifw-{t.version}-cp312-cp312-manylinux_2_28_x86_64.whl"
    write_wheel(path, members, dist_info, {}, 315532800)
    return Wheel(path)


def with_sbom(wheel: Wheel, dest: Path, t, doc: dict | None = None) -> Wheel:
    """The wheel with an SBOM: builders' own of it, or ``doc`` as given (an edited one)."""
    if doc is None:
        with wheel.open() as reader:
            facts = sbom.WheelFacts(name=wheel.name, version=str(wheel.version), record=tuple(reader.record()),
                                    requires_dist=reader.requires_dist)
        doc = sbom.document(facts, t.project.sbom_components, FACTS, "0.1.0")
    dest.mkdir(parents=True, exist_ok=True)
    return Wheel(rewrite(wheel, dest, added={sbom.SBOM_NAME: sbom.render(doc)}))


def read_sbom(wheel: Wheel) -> dict:
    return json.loads(wheel.read(f"{wheel.dist_info}/{sbom.SBOM_NAME}"))


def findings(wheel: Wheel, t, m) -> list:
    with wheel.open() as reader:
        return list(check_sbom(Contents(reader), Expectation(target=t, dropped=m.dropped, sbom_required=True)))


def test_the_sbom_lists_the_project_graft_requirements_declared_code_and_toolchain(tmp_path: Path, target,
                                                                                    declared_text: str) -> None:
    t, m = target
    out = with_sbom(raw_wheel(tmp_path / "raw", t), tmp_path / "out", t)
    doc = read_sbom(out)
    assert doc["bomFormat"] == "CycloneDX" and doc["specVersion"] == "1.6"
    assert doc["metadata"]["component"]["name"] == "minifw"
    assert doc["metadata"]["component"]["version"] == str(t.version)
    by_name = {c["name"]: c for c in doc["components"]}
    assert by_name[GRAFT.rsplit("/", 1)[1]]["hashes"][0]["content"] == __import__("hashlib").sha256(b"\x7fELF graft").hexdigest()
    runtime = expected.raw(declared_text)["accelerators"]["cuda"]["versions"]["13.2"]["runtime_requirements"]
    listed = {p["value"] for c in doc["components"] for p in c.get("properties", []) if p["name"] == sbom.REQUIREMENT}
    assert {str(r) for r in out.requires_dist} == listed and runtime
    assert by_name["cutlass"]["version"] == "4.2.0" and by_name["cutlass"]["purl"].startswith("pkg:github/")
    assert by_name["nvcc"]["version"] == "13.2.78" and by_name["nvcc"]["scope"] == "excluded"
    assert doc["metadata"]["properties"] == [{"name": "builders:source-commit", "value": "a" * 40}]
    assert "timestamp" not in json.dumps(doc)
    assert findings(out, t, m) == [] and run_record(out) == []


def run_record(wheel: Wheel) -> list:
    with wheel.open() as reader:
        return list(check_record(Contents(reader), None))  # type: ignore[arg-type]


def test_two_builds_of_the_same_inputs_give_the_same_bytes_and_others_another_serial(tmp_path: Path, target) -> None:
    t, _ = target
    one = with_sbom(raw_wheel(tmp_path / "a", t), tmp_path / "a-out", t)
    two = with_sbom(raw_wheel(tmp_path / "b", t), tmp_path / "b-out", t)
    assert one.path.read_bytes() == two.path.read_bytes()
    other = with_sbom(raw_wheel(tmp_path / "c", t, graft=b"\x7fELF other"), tmp_path / "c-out", t)
    assert read_sbom(other)["serialNumber"] != read_sbom(one)["serialNumber"]
    assert read_sbom(one)["serialNumber"].startswith("urn:uuid:")


def test_verify_names_a_dropped_component_and_a_library_the_wheel_lacks(tmp_path: Path, target) -> None:
    t, m = target
    raw = raw_wheel(tmp_path / "raw", t)
    doc = read_sbom(with_sbom(raw, tmp_path / "good", t))
    dropped = {**doc, "components": [c for c in doc["components"] if c["name"] not in ("cutlass", GRAFT.rsplit("/", 1)[1])]}
    codes = {(f.code, f.file) for f in findings(with_sbom(raw, tmp_path / "dropped", t, dropped), t, m)}
    assert ("sbom-library-unlisted", GRAFT) in codes
    assert "sbom-component-unlisted" in {c for c, _ in codes}
    extra = {**doc, "components": [*doc["components"], {"type": "library", "bom-ref": "file:minifw.libs/libz.so.1",
             "name": "libz.so.1", "properties": [{"name": sbom.ROLE, "value": "bundled"},
                                                   {"name": sbom.PATH, "value": "minifw.libs/libz.so.1"}]}]}
    (finding,) = findings(with_sbom(raw, tmp_path / "extra", t, extra), t, m)
    assert finding.code == "sbom-library-absent" and "minifw.libs/libz.so.1" in finding.message
    unlisted = {**doc, "components": [c for c in doc["components"] if sbom.role_of(c) != "requirement"]}
    codes = {f.code for f in findings(with_sbom(raw, tmp_path / "unlisted", t, unlisted), t, m)}
    assert codes == {"sbom-requirement-unlisted"}


def test_auditwheels_packages_are_merged_and_the_wheel_itself_left_out(tmp_path: Path, target) -> None:
    t, _ = target
    own = f"pkg:pypi/minifw@{t.version}"
    theirs = {"metadata": {"component": {"bom-ref": own}}, "components": [
        {"bom-ref": own, "name": "minifw"},
        {"bom-ref": "pkg:deb/debian/libgomp1@14.2.0-19#ab", "name": "libgomp1", "version": "14.2.0-19",
         "purl": "pkg:deb/debian/libgomp1@14.2.0-19"}]}
    facts = sbom.WheelFacts(name="minifw", version=str(t.version), record=(), requires_dist=(), auditwheel=theirs)
    doc = sbom.document(facts, (), sbom.BuildFacts(), "0.1.0")
    (merged,) = doc["components"]
    assert (merged["name"], merged["version"], merged["purl"]) == ("libgomp1", "14.2.0-19", theirs["components"][1]["purl"])
    assert sbom.role_of(merged) == "system-package"
    assert "properties" not in doc["metadata"]  # no commit known: none invented


def test_a_wheel_without_the_sbom_is_a_finding_only_where_builders_built_it(tmp_path: Path, target) -> None:
    t, m = target
    raw = raw_wheel(tmp_path / "raw", t)
    assert [f.code for f in findings(raw, t, m)] == ["sbom-missing"]
    with raw.open() as reader:
        assert list(check_sbom(Contents(reader), Expectation(target=t, dropped=m.dropped))) == []


def test_a_promoted_copy_restates_the_version_and_requirements(tmp_path: Path, target) -> None:
    t, m = target
    out = with_sbom(raw_wheel(tmp_path / "raw", t), tmp_path / "out", t)
    public = Version(t.version.public)
    requirements = t.requirements[:1]
    (tmp_path / "copy").mkdir()
    copy = Wheel(rewrite(out, tmp_path / "copy", version=public, requirements=requirements))
    doc = read_sbom(copy)
    assert doc["metadata"]["component"]["version"] == str(public)
    listed = {p["value"] for c in doc["components"] for p in c.get("properties", []) if p["name"] == sbom.REQUIREMENT}
    assert listed == {str(r) for r in requirements}
    expect = Expectation(target=t, dropped=m.dropped, version=public, requirements=requirements, sbom_required=True)
    with copy.open() as reader:
        assert list(check_sbom(Contents(reader), expect)) == []
    assert run_record(copy) == []
    with zipfile.ZipFile(copy.path) as zf:
        assert f"{copy.dist_info}/{sbom.SBOM_NAME}" in zf.namelist()


def test_sbom_components_are_read_from_the_matrix_and_a_bad_entry_is_named(declared_text: str) -> None:
    m = matrix.loads(declared_text)
    assert m.project.sbom_components == (SbomComponent(name="cutlass", version="4.2.0",
                                                       purl="pkg:github/nvidia/cutlass@v4.2.0"),)
    bad = declared_text.replace("{name: cutlass, version: 4.2.0,", "{name: cutlass,")
    with pytest.raises(MatrixError, match=r"matrix\.yaml:\d+.*sbom_components"):
        matrix.loads(bad)


@pytest.mark.parametrize(("name", "out", "version"), [
    ("nvcc", "nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 13.2, V13.2.78\n", "13.2.78"),
    ("c++", "c++ (Debian 14.2.0-19) 14.2.0\nCopyright (C) 2024 Free Software Foundation, Inc.\n", "14.2.0"),
    ("hipcc", "HIP version: 7.2.26015-fc0010cf6a\nAMD clang version 20.0.0\n", "7.2.26015"),
    ("icpx", "Intel(R) oneAPI DPC++/C++ Compiler 2025.3.1 (2025.3.1.20251023)\n", "2025.3.1.20251023"),
    ("c++", "", ""),
])
def test_a_tools_version_is_what_it_printed_or_nothing(name: str, out: str, version: str) -> None:
    assert tool_version(name, out) == version


def test_a_container_builds_image_is_listed_with_its_digest_and_a_host_build_lists_none() -> None:
    digest = "sha256:" + "ab" * 32
    (image,) = sbom.toolchain(sbom.BuildFacts(image="localhost/builders-cuda:1f2e", image_digest=digest))
    assert (image["type"], image["name"], image["hashes"]) == ("container", "localhost/builders-cuda:1f2e",
                                                               [{"alg": "SHA-256", "content": "ab" * 32}])
    assert {"name": "builders:image-digest", "value": digest} in image["properties"]
    assert sbom.toolchain(sbom.BuildFacts()) == []
