"""Wheel variants (PEP 825) of synthetic wheels: made by variantlib, checked against the matrix and the twin,
indexed with variantlib's variants.json. Runs variantlib's command (a few subprocesses, about a second)."""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from pathlib import Path

import pytest

from builders.base.errors import VariantError
from builders.cli import main
from builders.index.variants import make_variants
from builders.matrix.model import NULL_VARIANT, Matrix
from builders.wheel import variant as wheel_variant
from builders.wheel.archive import Wheel
from tests.unit.test_promote_index import LINUX, _reqs, make_wheel

LABELS = ("cpu", "cu132")


@pytest.fixture(scope="module")
def house(m: Matrix, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("house")
    for label in LABELS:
        make_wheel(root / "whl" / label, version=f"{m.project.version}+{label}", requires=_reqs(m, label), m=m)
    return root


@pytest.fixture(scope="module")
def made(m: Matrix, house: Path, tmp_path_factory: pytest.TempPathFactory):
    wheels = sorted(house.rglob("*.whl"))
    return make_variants(m, wheels, house, work=tmp_path_factory.mktemp("work"), env=dict(os.environ))


def test_each_labelled_wheel_becomes_its_variant_with_the_public_version(m: Matrix, made) -> None:
    assert m.wheel_variants is not None
    names = sorted(p.name for p in (made.root / m.project.canonical_name).glob("*.whl"))
    want = sorted(f"{m.project.name}-{m.project.version.public}-{LINUX}-{m.variant(label).variant_label}.whl"
                  for label in LABELS)
    assert names == want and made.root == made.made[0].path.parent.parent
    assert f"-{NULL_VARIANT}.whl" in " ".join(names)


def test_variants_json_is_variantlibs_and_the_matrixs(m: Matrix, made) -> None:
    (path,) = made.variants_json
    assert path.name == f"{m.project.name}-{m.project.version.public}-variants.json"
    data = json.loads(path.read_text())
    assert data["default-priorities"]["namespace"] == list(m.wheel_variants.priorities)
    for label in LABELS:
        v = m.variant(label)
        found = {f"{ns} :: {feat} :: {val}" for ns, feats in data["variants"][v.variant_label].items()
                 for feat, vals in feats.items() for val in vals}
        assert found == set(v.properties)


def test_the_project_page_links_every_file_with_its_hash(m: Matrix, made) -> None:
    folder = made.root / m.project.canonical_name
    page = (folder / "index.html").read_text()
    listing = json.loads((folder / "index.json").read_text())
    hashes = {f["filename"]: f["hashes"]["sha256"] for f in listing["files"]}
    for path in [*folder.glob("*.whl"), *folder.glob("*-variants.json")]:
        sha = hashlib.sha256(path.read_bytes()).hexdigest()
        assert f"{path.name}#sha256={sha}" in page and hashes[path.name] == sha
    for wheel in folder.glob("*.whl"):
        with zipfile.ZipFile(wheel) as zf:
            meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
            assert (folder / f"{wheel.name}.metadata").read_bytes() == zf.read(meta)
    assert m.project.canonical_name in (made.root / "index.html").read_text()


def test_a_variant_is_its_twin_plus_variant_json(m: Matrix, made) -> None:
    for one in made.made:
        assert wheel_variant.check(one.path, one.twin, one.target.variant, m.wheel_variants) == []
        assert Wheel(one.twin).version == m.project.version


def test_a_variant_with_other_properties_or_members_is_refused(m: Matrix, made, tmp_path: Path) -> None:
    one = next(x for x in made.made if x.target.variant.properties)
    other = m.variant("cu134")
    codes = {f.code for f in wheel_variant.check(one.path, one.twin, other, m.wheel_variants)}
    assert {"variant-name", "variant-json"} <= codes  # cu134's label is not in the file
    tampered = tmp_path / one.path.name
    with zipfile.ZipFile(one.path) as src, zipfile.ZipFile(tampered, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            dst.writestr(info, data + b"#" if info.filename.endswith("__init__.py") else data)
    codes = {f.code for f in wheel_variant.check(tampered, one.twin, one.target.variant, m.wheel_variants)}
    assert codes == {"variant-members"}


def test_the_command_writes_beside_the_labelled_indexes(house: Path, made, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert main(["variants", str(house), "--output", str(out), "--no-mirror"]) == 0
    assert sorted(p.name for p in out.rglob("*.whl")) == sorted(p.name for p in made.root.rglob("*.whl"))


def test_a_matrix_without_wheel_variants_is_refused(m: Matrix, house: Path, tmp_path: Path) -> None:
    from dataclasses import replace

    with pytest.raises(VariantError, match="no wheel_variants"):
        make_variants(replace(m, wheel_variants=None), sorted(house.rglob("*.whl")), tmp_path, work=tmp_path,
                      env=dict(os.environ))


def release_only(m: Matrix) -> Matrix:
    """``m`` without its pre-release channels: the release run's own site (``index``, ``variants``, the deploy)."""
    from dataclasses import replace

    release = m.channels.channel("release")
    return replace(m, channels=replace(m.channels, lifecycle=(release,)))


def test_the_report_shows_the_variant_install_next_to_the_per_index_ones(m: Matrix) -> None:
    import html

    from builders.report import compatibility as report

    m = release_only(m)
    command = report.variant_install_command(m)
    assert command is not None
    assert command.startswith("uv pip install --preview-features wheel-variants ")
    assert command.endswith(m.channels.index_base_url + m.wheel_variants.layout)
    page = report.to_html(m, {})
    assert html.escape(command) in page and "pip ignores variant wheels" in page
    markdown = report.to_markdown(m, {})
    assert f"`{command}`" in markdown and report.index_url(m, "cu132") in markdown
    assert report.to_json(m, {})["variant_install"]["command"] == command


def test_the_report_names_no_variant_index_that_the_channels_never_publish(m: Matrix) -> None:
    """With pre-release channels the release is promote-release's copy of what ``publish`` wrote to the test
    channel: per-variant indexes only. A variant index there would answer uv with "not found"."""
    from builders.report import compatibility as report

    assert any(c.name.value != "release" for c in m.channels.lifecycle), "the shipped matrix declares a lifecycle"
    url = m.channels.index_base_url + m.wheel_variants.layout
    assert report.variant_install_command(m) is None and report.to_json(m, {})["variant_install"] is None
    for page in (report.to_markdown(m, {}), report.to_html(m, {}), json.dumps(report.to_json(m, {}))):
        assert url not in page and "wheel-variants" not in page
        assert report.index_url(m, m.variants[0].label) in page


def test_audit_reads_a_variant_index(m: Matrix, made, tmp_path: Path) -> None:
    import shutil

    from builders.index.variant_audit import audit_variants

    folder = made.root / m.project.canonical_name
    result = audit_variants(m, made.root.as_uri() + "/")
    names = {p.name for p in folder.glob("*.whl")}
    assert {d.code for d in result.drift} == {"missing"}  # only two targets were built here
    assert not names & {d.file for d in result.drift} and result.listed == len(names) + 1

    copy = tmp_path / "copy"
    shutil.copytree(made.root, copy)
    (found,) = (copy / m.project.canonical_name).glob("*-variants.json")
    data = json.loads(found.read_text())
    data["variants"]["cu132"]["nvidia"]["sm_arch"] = ["90_real"]
    found.write_text(json.dumps(data))  # the page's sha256 no longer matches either
    result = audit_variants(m, copy.as_uri() + "/")
    assert {d.code for d in result.drift if d.code != "missing"} == {"variants-json", "label"}  # no labels read
    assert "sha256" in next(d.message for d in result.drift if d.code == "variants-json")


def test_a_variant_index_merged_into_a_published_one_keeps_its_pages(m: Matrix, made, tmp_path: Path) -> None:
    """What the deploy job does (merge_into): the project's pages are rewritten from the files, variants.json linked."""
    from builders.index.pages import merge_into

    published = tmp_path / "published"
    published.mkdir()
    merge_into(made.root.parent, published)
    layout = made.root.relative_to(made.root.parent)
    for page in ("index.html", "index.json"):
        mine = made.root / m.project.canonical_name / page
        assert (published / layout / m.project.canonical_name / page).read_bytes() == mine.read_bytes()
    assert (published / layout / "index.html").read_bytes() == (made.root / "index.html").read_bytes()


def test_index_and_promote_leave_a_variant_index_in_the_wheelhouse_alone(m: Matrix, house: Path, made,
                                                                          tmp_path: Path) -> None:
    """``variants`` writes beside whl/<label>/ in the wheelhouse; ``index`` and ``promote`` of it skip the variants."""
    assert any(house.rglob("*-null.whl"))
    assert main(["index", str(house), "--output", str(tmp_path / "site"), "--no-mirror"]) == 0
    assert not any((tmp_path / "site").rglob("*-null.whl"))
    assert main(["promote", str(house), "--output", str(tmp_path / "dist")]) == 0


def test_a_wheel_that_does_not_verify_as_its_target_is_refused_before_anything_is_written(
        m: Matrix, house: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    (labelled,) = (house / "whl" / "cu132").glob("*.whl")
    make_wheel(bad, version=labelled.name.split("-")[1], requires=(), m=m)  # no runtime requirement: refused
    with pytest.raises(VariantError, match="labelled wheel, it does not verify"):
        make_variants(m, sorted(bad.glob("*.whl")), tmp_path / "out", work=tmp_path / "work", env=dict(os.environ))
    assert not (tmp_path / "out").exists()
