"""The mirror without pip: tags per target, pins from pip's report, hash checks, and the index
laying requirement wheels out next to a label's own. A fake resolver and downloader stand in
for pip; the real thing runs in tests/integration/test_index_install.py."""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import pytest

from builders.base.errors import EngineError
from builders.index import mirror
from builders.index.pages import IndexBuildError, build_index
from builders.matrix import findings
from builders.matrix.targets import Selection, expand, select
from tests import expected


def test_manylinux_platforms_are_expanded_to_older_glibcs() -> None:
    tags = mirror.compatible_platforms("manylinux_2_28_x86_64")
    assert tags[0] == "manylinux_2_28_x86_64" and "manylinux_2_17_x86_64" in tags and "manylinux2014_x86_64" in tags
    assert tags[-2:] == ("manylinux_2_5_x86_64", "manylinux1_x86_64")
    aarch = mirror.compatible_platforms("manylinux_2_28_aarch64")
    assert "manylinux2014_aarch64" in aarch and "manylinux2010_aarch64" not in aarch
    assert mirror.compatible_platforms("win_amd64") == ("win_amd64",)


def test_free_threaded_targets_ask_for_their_abi(m, shipped_text: str) -> None:
    data = expected.raw(shipped_text)
    ft = next(p for p in data["pythons"] if str(p).endswith("t"))
    tid = next(t for t in sorted(expected.live_ids(data)) if f"-{expected.abi(ft)}-linux-x86_64" in t)
    (target,) = select(m, Selection(targets=(tid,)))
    argv = mirror.tags_of(target).argv()
    assert argv[argv.index("--abi") + 1] == expected.abi(ft)
    assert argv[argv.index("--python-version") + 1] == str(ft).removesuffix("t")
    assert "--only-binary=:all:" in argv


def report_item(name: str, version: str, filename: str, sha256: str | None) -> dict:
    archive = {"hashes": {"sha256": sha256}} if sha256 else {}
    return {"metadata": {"name": name, "version": version},
            "download_info": {"url": f"https://files.invalid/x/{filename}", "archive_info": archive}}


def test_pins_come_from_pips_report_and_need_a_declared_hash() -> None:
    pins = mirror.pins_from_report({"install": [report_item("Cuda_Toolkit", "13.2.2", "cuda_toolkit-13.2.2-py3-none-any.whl", "ab")]})
    assert pins == [mirror.Pin(name="cuda-toolkit", version="13.2.2", filename="cuda_toolkit-13.2.2-py3-none-any.whl",
                               sha256="ab")]
    with pytest.raises(mirror.MirrorError, match="declared no sha256"):
        mirror.pins_from_report({"install": [report_item("a", "1", "a-1-py3-none-any.whl", None)]})
    with pytest.raises(mirror.MirrorError, match="declared no sha256"):
        mirror.pins_from_report({"install": [report_item("a", "1", "a-1.tar.gz", "ab")]})


def dependency_wheel(folder: Path, name: str, version: str) -> Path:
    info = f"{name}-{version}.dist-info"
    path = folder / f"{name}-{version}-py3-none-any.whl"
    body = {f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
            f"{info}/WHEEL": b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    with zipfile.ZipFile(path, "w") as zf:
        for n, b in body.items():
            zf.writestr(n, b)
        zf.writestr(f"{info}/RECORD", "")
    return path


class FakePip:
    """Resolves every requirement set to the same two wheels; counts calls; can tamper."""

    def __init__(self, source: Path, tamper: bool = False) -> None:
        self.files = [dependency_wheel(source, "rt_core", "1.0"), dependency_wheel(source, "rt_extra", "2.0")]
        self.resolved: list[tuple[tuple[str, ...], mirror.Tags]] = []
        self.downloaded: list[str] = []
        self.indexes: list[tuple[str, ...]] = []  # per call, resolve and download alike
        self.tamper = tamper

    def resolve(self, requirements, tags, indexes):
        self.resolved.append((tuple(requirements), tags))
        self.indexes.append(tuple(indexes))
        return [mirror.Pin(name=f.name.split("-")[0].replace("_", "-"), version=f.name.split("-")[1], filename=f.name,
                           sha256=hashlib.sha256(f.read_bytes()).hexdigest()) for f in self.files]

    def download(self, pins, tags, dest: Path, indexes) -> None:
        self.indexes.append(tuple(indexes))
        for pin in pins:
            data = next(f for f in self.files if f.name == pin.filename).read_bytes()
            (dest / pin.filename).write_bytes(data + (b"x" if self.tamper else b""))
            self.downloaded.append(pin.filename)


def labelled_wheel(folder: Path, target) -> Path:
    """A labelled wheel named for ``target`` (index's integrity check only; no ELF here)."""
    name = target.wheel_name
    info = f"{name.split('-')[0]}-{target.version}.dist-info"
    with zipfile.ZipFile(folder / name, "w") as zf:
        zf.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {target.project.name}\nVersion: "
                                        f"{target.version}\nRequires-Python: >=3.11\n")
        zf.writestr(f"{info}/RECORD", "")
    return folder / name


def cuda_targets(m, shipped_text: str):
    data = expected.raw(shipped_text)
    label = expected.label_of(data, "cuda", next(iter(data["accelerators"]["cuda"]["versions"])))
    ids = sorted(t for t in expected.live_ids(data) if t.startswith(f"{label}-") and t.endswith("linux-x86_64"))[:2]
    return label, select(m, Selection(targets=tuple(ids)))


def test_requirement_wheels_are_laid_out_next_to_the_labels_own(m, shipped_text: str, tmp_path: Path) -> None:
    label, targets = cuda_targets(m, shipped_text)
    wheels = [labelled_wheel(tmp_path, t) for t in targets]
    (tmp_path / "src").mkdir()
    pip = FakePip(tmp_path / "src")
    mirrored = mirror.Mirror(matrix=m, resolve=pip.resolve, download=pip.download, folder=tmp_path / "dl")
    out = tmp_path / "site"
    result = build_index(wheels, out, layout=m.channels.index_path, requirements=mirrored,
                         check=lambda wheel: [])
    mirrored.write_records(out, m.channels.index_path)
    base = out / m.channels.index_path(label)
    assert sorted(p.name for p in base.iterdir() if p.is_dir()) == ["minifw", "rt-core", "rt-extra"]
    root_page = json.loads((base / "index.json").read_text())
    assert [p["name"] for p in root_page["projects"]] == ["minifw", "rt-core", "rt-extra"]
    assert len(pip.resolved) == len(targets) and len(pip.downloaded) == 2  # each file fetched once
    record = json.loads((base / mirror.RECORD).read_text())
    assert {f["filename"] for f in record["files"]} == {f.name for f in pip.files}
    assert all(f["targets"] == sorted(t.id for t in targets) for f in record["files"])
    assert {f.filename for f in result.mirrored} == {f.name for f in pip.files}
    requirements = pip.resolved[0][0]
    assert any(r.startswith("cuda-toolkit") for r in requirements) and not any("extra" in r for r in requirements)


def test_a_file_that_does_not_match_its_declared_hash_is_refused(m, shipped_text: str, tmp_path: Path) -> None:
    _label, targets = cuda_targets(m, shipped_text)
    wheels = [labelled_wheel(tmp_path, targets[0])]
    (tmp_path / "src").mkdir()
    pip = FakePip(tmp_path / "src", tamper=True)
    mirrored = mirror.Mirror(matrix=m, resolve=pip.resolve, download=pip.download, folder=tmp_path / "dl")
    with pytest.raises(IndexBuildError, match="the one the package index declared"):
        build_index(wheels, tmp_path / "site", layout=m.channels.index_path, requirements=mirrored,
                         check=lambda wheel: [])
    assert not (tmp_path / "site").exists()  # nothing was written


def test_a_variant_without_requirements_asks_pip_nothing(m, shipped_text: str, tmp_path: Path) -> None:
    data = expected.raw(shipped_text)
    cpu = expected.label_of(data, "cpu")
    tid = next(t for t in sorted(expected.live_ids(data)) if t.startswith(f"{cpu}-") and t.endswith("linux-x86_64"))
    (target,) = select(m, Selection(targets=(tid,)))
    if any(r.marker is None for r in target.requirements):
        pytest.skip("this matrix gives the CPU variant requirements")
    (tmp_path / "src").mkdir()
    pip = FakePip(tmp_path / "src")
    mirrored = mirror.Mirror(matrix=m, resolve=pip.resolve, download=pip.download, folder=tmp_path / "dl")
    assert mirrored(cpu, [labelled_wheel(tmp_path, target)]) == [] and pip.resolved == []


# --- a variant's own runtime index (TheRock's for rocm): added to pip's, from the environment ---------


def index_variants(m) -> tuple:
    """A live target whose variant names a runtime index (``toolkit.index_url``), one whose variant does not,
    and the variable the first's address comes from."""
    targets = sorted(expand(m)[0], key=lambda t: t.id)
    indexed = next(t for t in targets if t.variant.toolkit.index_url and t.variant.requirements)
    plain = next(t for t in targets if not t.variant.toolkit.index_url and t.variant.requirements)
    (var,) = findings.ENV_REF.findall(indexed.variant.toolkit.index_url)
    return indexed, plain, var


def test_pip_asks_the_variants_own_index_too(m, tmp_path: Path) -> None:
    indexed, plain, var = index_variants(m)
    env = {var: "https://rocm.example.invalid/simple/"}
    (tmp_path / "src").mkdir()
    pip = FakePip(tmp_path / "src")
    mirrored = mirror.Mirror(matrix=m, resolve=pip.resolve, download=pip.download, folder=tmp_path / "dl", env=env)
    mirrored.for_target(indexed)
    assert pip.indexes == [(env[var],), (env[var],)]  # resolve, then download
    pip.indexes.clear()
    mirrored.for_target(plain)
    assert pip.indexes == [()]  # resolved; the same two files are already downloaded
    tags = mirror.tags_of(indexed)
    argv = mirror.resolve_args(["rocm[libraries]"], tags, (env[var],), report="r.json", target="t")
    assert argv[argv.index("--extra-index-url") + 1] == env[var]
    argv = mirror.download_args("req.txt", tags, (env[var],), dest="d")
    assert argv[argv.index("--extra-index-url") + 1] == env[var]
    assert "--extra-index-url" not in mirror.resolve_args(["x"], mirror.tags_of(plain), (), report="r", target="t")


def test_an_unset_index_variable_is_named_with_its_place(m, tmp_path: Path) -> None:
    indexed, _, var = index_variants(m)
    pip = FakePip(tmp_path)
    mirrored = mirror.Mirror(matrix=m, resolve=pip.resolve, download=pip.download, folder=tmp_path / "dl")
    with pytest.raises(EngineError, match=rf"{indexed.variant.location.file}:\d+:\d+: .*needs \$\{{{var}\}}"):
        mirrored.for_target(indexed)
    assert pip.resolved == []
