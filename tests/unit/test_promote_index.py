"""Promotion to the PyPI wheel and the static index, on synthetic wheels in tmp."""

from __future__ import annotations

import hashlib
import json
import struct
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from builders import matrix
from tests import expected
from builders.cli import main
from builders.errors import VerifyError
from builders.index import IndexBuildError, build_index, find_wheels
from builders.promote import PromoteError, promote, pypi_requirements, target_of
from builders.wheels import Wheel, record_hash, write_wheel

LINUX = "cp312-cp312-manylinux_2_28_x86_64"
CU132_REQ = 'cuda-toolkit[cudart]==13.2.2; platform_system == "Linux"'
# The smallest ELF64 x86-64 shared object pyelftools reads: a header, no sections, no deps.
TINY_ELF = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8) + struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, 0, 0, 64, 56, 0, 64, 0, 0)


def make_wheel(tmp: Path, *, version: str, tag: str = LINUX, requires_python: str = ">=3.11",
               requires: tuple[str, ...] = (), name: str = "minifw") -> Wheel:
    """A wheel with a (fake) extension, so the static checks have something to look at."""
    tmp.mkdir(parents=True, exist_ok=True)
    dist_info = f"{name}-{version}.dist-info"
    meta = f"Metadata-Version: 2.4\nName: {name}\nVersion: {version}\nRequires-Python: {requires_python}\n"
    meta += "".join(f"Requires-Dist: {r}\n" for r in requires)
    meta += "\nThe long description.\n"
    members = {
        f"{name}/__init__.py": b"__version__ = '2.15.0'\n",
        f"{name}/data.bin": bytes(range(256)) * 4,
        f"{name}/_C.cpython-312-x86_64-linux-gnu.so": TINY_ELF,
        f"{dist_info}/METADATA": meta.encode(),
        f"{dist_info}/WHEEL": f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: {tag}\n".encode(),
    }
    path = tmp / f"{name}-{version}-{tag}.whl"
    write_wheel(path, members, dist_info, {f"{name}/data.bin": 0o755 << 16}, 1700000000)
    return Wheel(path)


@pytest.fixture(scope="module")
def m(shipped_text: str):
    return matrix.loads(shipped_text)


def _cu132_reqs(m) -> tuple[str, ...]:
    """What a labelled cu132 wheel declares: the project's requirements, then the runtime's."""
    return (*map(str, m.project.requirements), CU132_REQ)


def _project_reqs(data: dict) -> list[str]:
    project = data["project"]
    extras = [f'{r}; extra == "{x}"' for x, rs in project.get("optional_dependencies", {}).items() for r in rs]
    return [str(Requirement(r)) for r in [*project.get("dependencies", []), *extras]]


def test_pypi_requirements_of_the_shipped_matrix(m, shipped_text: str) -> None:
    data = expected.raw(shipped_text)
    runtime: list[str] = []
    for label in dict.fromkeys(data["channels"]["pypi"].values()):
        variant = next(v for v in m.variants if v.label == label)
        runtime += [str(Requirement(r)) for r in variant.runtime_requirements if str(Requirement(r)) not in runtime]
    assert [str(r) for r in pypi_requirements(m)] == _project_reqs(data) + runtime


def test_pypi_requirements_is_a_stable_deduplicated_union(m) -> None:
    import dataclasses

    channels = dataclasses.replace(m.channels, pypi=(("linux-x86_64", "cu132"), ("linux-aarch64", "xpu"),
                                                     ("windows-x86_64", "cu132"), ("macos-arm64", "cpu")))
    reqs = pypi_requirements(dataclasses.replace(m, channels=channels))
    project = [str(r) for r in m.project.requirements]
    assert [str(r) for r in reqs] == [*project, str(Requirement(CU132_REQ)), *[str(r) for r in m.variant("xpu").requirements]]


def test_target_of_a_labelled_wheel(tmp_path: Path, m) -> None:
    wheel = make_wheel(tmp_path, version="2.15.0+cu132")
    assert target_of(m, wheel).id == "cu132-cp312-linux-x86_64"


def _members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as zf:
        return {i.filename: zf.read(i) for i in zf.infolist()}


def test_promote_renames_and_keeps_the_payload(tmp_path: Path, m) -> None:
    src = make_wheel(tmp_path / "in", version="2.15.0+cu132", requires=_cu132_reqs(m))
    result = promote(m, src, tmp_path / "out")
    out = Wheel(result.path)
    assert result.target.id == "cu132-cp312-linux-x86_64"
    assert out.path.name == f"minifw-2.15.0-{LINUX}.whl"
    assert out.dist_info == "minifw-2.15.0.dist-info"
    assert out.version == Version("2.15.0")
    assert out.metadata["Version"] == "2.15.0"
    assert [str(r) for r in out.requires_dist] == [str(Requirement(r)) for r in _cu132_reqs(m)]
    assert out.metadata.get_payload() == "The long description.\n"

    before, after = _members(src.path), _members(out.path)
    old, new = "minifw-2.15.0+cu132.dist-info/", "minifw-2.15.0.dist-info/"
    assert sorted(n.replace(old, new) for n in before) == sorted(after)
    changed = {n for n in before if before[n] != after[n.replace(old, new)]}
    assert changed == {old + "METADATA", old + "RECORD"}
    assert after["minifw/data.bin"] == before["minifw/data.bin"]
    with zipfile.ZipFile(out.path) as zf:
        assert zf.getinfo("minifw/data.bin").external_attr == 0o755 << 16
    record = {e.path: e for e in out.record()}
    assert set(record) == set(after)
    for name, data in after.items():
        if name != new + "RECORD":
            assert record[name].hash == record_hash(data)


def test_promote_is_reproducible(tmp_path: Path, m) -> None:
    src = make_wheel(tmp_path / "in", version="2.15.0+cu132", requires=_cu132_reqs(m))
    a = promote(m, src, tmp_path / "a").path.read_bytes()
    b = promote(m, src, tmp_path / "b").path.read_bytes()
    assert a == b


@pytest.mark.parametrize("version", ["2.15.0+cu134", "2.15.0+cpu"])
def test_promote_refuses_a_non_default_variant(tmp_path: Path, m, version: str) -> None:
    src = make_wheel(tmp_path, version=version)
    with pytest.raises(PromoteError, match="not the PyPI default for linux-x86_64"):
        promote(m, src, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_promote_refuses_an_unlabelled_wheel(tmp_path: Path, m) -> None:
    src = make_wheel(tmp_path, version="2.15.0")
    with pytest.raises(PromoteError, match="unlabelled"):
        promote(m, src, tmp_path / "out")


def test_promote_refuses_an_unknown_label_or_tag(tmp_path: Path, m) -> None:
    with pytest.raises(PromoteError, match="no target"):
        promote(m, make_wheel(tmp_path / "a", version="2.15.0+cu999"), tmp_path / "out")
    with pytest.raises(PromoteError, match="no target"):
        promote(m, make_wheel(tmp_path / "b", version="2.15.0+cu132", tag="cp39-cp39-manylinux_2_28_x86_64"),
                tmp_path / "out")


def test_promote_fails_when_the_result_does_not_verify(tmp_path: Path, m) -> None:
    src = make_wheel(tmp_path, version="2.15.0+cu132", requires_python=">=3.10")
    with pytest.raises(VerifyError, match="requires-python-admits-dropped"):
        promote(m, src, tmp_path / "out")
    assert list((tmp_path / "out").glob("*.whl")) == []


def test_promote_command_exit_code(tmp_path: Path, root: Path) -> None:
    src = make_wheel(tmp_path, version="2.15.0+cu134")
    assert main(["promote", str(src.path), "--matrix", str(root / "matrix.yaml"), "--output", str(tmp_path / "o")]) == 15


# --- index -----------------------------------------------------------------------------


@pytest.fixture
def wheelhouse(tmp_path: Path, m) -> Path:
    house = tmp_path / "house"
    make_wheel(house / "whl" / "cpu", version="2.15.0+cpu", requires_python=">=3.11,<3.16")
    make_wheel(house / "whl" / "cpu", version="2.15.0+cpu", tag="cp313-cp313-manylinux_2_28_x86_64")
    make_wheel(house / "whl" / "cu132", version="2.15.0+cu132", requires=_cu132_reqs(m))
    make_wheel(house / "pypi", version="2.15.0")
    return house


def test_index_layout_and_hashes(tmp_path: Path, wheelhouse: Path) -> None:
    out = tmp_path / "index"
    result = build_index(find_wheels(wheelhouse), out)
    assert result.labels == ("cpu", "cu132")
    assert [p.name for p in result.skipped] == [f"minifw-2.15.0-{LINUX}.whl"]
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    cpu = ["minifw-2.15.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl", "minifw-2.15.0+cpu-cp313-cp313-manylinux_2_28_x86_64.whl"]
    cu = f"minifw-2.15.0+cu132-{LINUX}.whl"
    assert files == sorted([
        "whl/cpu/index.html", "whl/cpu/index.json", "whl/cpu/minifw/index.html", "whl/cpu/minifw/index.json",
        *(f"whl/cpu/minifw/{n}" for n in cpu), *(f"whl/cpu/minifw/{n}.metadata" for n in cpu),
        "whl/cu132/index.html", "whl/cu132/index.json", "whl/cu132/minifw/index.html", "whl/cu132/minifw/index.json",
        f"whl/cu132/minifw/{cu}", f"whl/cu132/minifw/{cu}.metadata",
    ])
    folder = out / "whl" / "cpu" / "minifw"
    src = wheelhouse / "whl" / "cpu" / cpu[0]
    assert (folder / cpu[0]).read_bytes() == src.read_bytes()
    metadata = Wheel(src).read("minifw-2.15.0+cpu.dist-info/METADATA")
    assert (folder / f"{cpu[0]}.metadata").read_bytes() == metadata

    page = (folder / "index.html").read_text()
    wheel_sha = hashlib.sha256(src.read_bytes()).hexdigest()
    meta_sha = hashlib.sha256(metadata).hexdigest()
    assert f'href="minifw-2.15.0%2Bcpu-cp312-cp312-manylinux_2_28_x86_64.whl#sha256={wheel_sha}"' in page
    assert 'data-requires-python="&gt;=3.11,&lt;3.16"' in page
    assert f'data-dist-info-metadata="sha256={meta_sha}"' in page
    assert f'data-core-metadata="sha256={meta_sha}"' in page
    assert page.index(cpu[0]) < page.index(cpu[1])
    assert '<a href="minifw/">minifw</a>' in (out / "whl" / "cpu" / "index.html").read_text()


def test_index_json_is_pep_691(tmp_path: Path, wheelhouse: Path) -> None:
    out = tmp_path / "index"
    build_index(find_wheels(wheelhouse), out)
    root = json.loads((out / "whl" / "cpu" / "index.json").read_text())
    assert root == {"meta": {"api-version": "1.1"}, "projects": [{"name": "minifw"}]}
    detail = json.loads((out / "whl" / "cpu" / "minifw" / "index.json").read_text())
    assert detail["meta"]["api-version"] == "1.1"
    assert detail["name"] == "minifw"
    assert detail["versions"] == ["2.15.0+cpu"]
    first = detail["files"][0]
    path = out / "whl" / "cpu" / "minifw" / first["filename"]
    assert first["hashes"] == {"sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
    assert first["requires-python"] == ">=3.11,<3.16"
    meta_sha = hashlib.sha256((path.parent / f"{path.name}.metadata").read_bytes()).hexdigest()
    assert first["core-metadata"] == {"sha256": meta_sha}
    assert first["size"] == path.stat().st_size
    assert detail["files"][1]["requires-python"] == ">=3.11"


def test_index_is_deterministic_and_idempotent(tmp_path: Path, wheelhouse: Path) -> None:
    def snapshot(out: Path) -> dict[str, bytes]:
        return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}

    build_index(reversed(find_wheels(wheelhouse)), tmp_path / "a")
    build_index(find_wheels(wheelhouse), tmp_path / "b")
    build_index(find_wheels(wheelhouse), tmp_path / "b")
    assert snapshot(tmp_path / "a") == snapshot(tmp_path / "b")


def test_index_refuses_clashing_files_and_unknown_labels(tmp_path: Path) -> None:
    a = make_wheel(tmp_path / "a", version="2.15.0+cpu").path
    b = make_wheel(tmp_path / "b", version="2.15.0+cpu", requires=("numpy",)).path
    with pytest.raises(IndexBuildError, match="two different files"):
        build_index([a, b], tmp_path / "out")
    with pytest.raises(IndexBuildError, match="not a variant"):
        build_index([a], tmp_path / "out", labels=["cu132"])


def test_index_command(tmp_path: Path, wheelhouse: Path, root: Path) -> None:
    out = tmp_path / "index"
    assert main(["index", str(wheelhouse), "--output", str(out), "--matrix", str(root / "matrix.yaml")]) == 0
    assert (out / "whl" / "cu132" / "minifw" / "index.html").is_file()
