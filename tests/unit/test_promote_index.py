"""Promotion to the PyPI wheel and the static index, on synthetic wheels in tmp."""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from builders.base.errors import VerifyError
from builders.cli import main
from builders.index.pages import IndexBuildError, build_index, find_wheels, matrix_checker
from builders.matrix.model import Matrix
from builders.wheel.archive import Wheel, record_hash
from builders.wheel.metadata_rules import requirement_identity
from builders.wheel.pypi_form import PromoteError, promote, pypi_requirements, target_of
from builders.wheel.verify import Finding
from builders.wheel.writer import write_wheel
from tests import expected
from tests.hostile import make_wheels as mw
from tests.hostile.make_wheels import make_elf

LINUX = "cp312-cp312-manylinux_2_28_x86_64"
CU132_REQ = 'cuda-toolkit[cudart]==13.2.2; platform_system == "Linux"'


def make_wheel(tmp: Path, *, version: str, tag: str = LINUX, requires_python: str = ">=3.11",
               requires: tuple[str, ...] = (), name: str = "minifw", m: Matrix | None = None) -> Wheel:
    """A wheel with an extension for its tag's Python. Given the matrix, the extension needs the
    label's runtime library through its RPATH, as the variant's real build does."""
    tmp.mkdir(parents=True, exist_ok=True)
    dist_info = f"{name}-{version}.dist-info"
    meta = f"Metadata-Version: 2.4\nName: {name}\nVersion: {version}\nRequires-Python: {requires_python}\n"
    meta += "".join(f"Requires-Dist: {r}\n" for r in requires)
    meta += "\nThe long description.\n"
    python = tag.split("-", 1)[0].removeprefix("cp")
    members = {
        f"{name}/__init__.py": b"__version__ = '2.15.0'\n",
        f"{name}/data.bin": bytes(range(256)) * 4,
        f"{name}/_C.cpython-{python}-x86_64-linux-gnu.so": _extension(m, Version(version).local),
        f"{dist_info}/METADATA": meta.encode(),
        f"{dist_info}/WHEEL": f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: {tag}\n".encode(),
    }
    path = tmp / f"{name}-{version}-{tag}.whl"
    write_wheel(path, members, dist_info, {f"{name}/data.bin": 0o755 << 16}, 1700000000)
    return Wheel(path)


def _extension(m: Matrix | None, label: str | None) -> bytes:
    variant = next((v for v in m.variants if v.label == label), None) if m is not None else None
    libs = tuple(lib for lib, _provider in variant.lib_providers[:1]) if variant else ()
    return make_elf(("libc.so.6", *libs), ":".join(variant.rpath) if libs and variant else None)


def _reqs(m: Matrix, label: str) -> tuple[str, ...]:
    """What a labelled wheel declares: the project's requirements, then its variant's runtime ones."""
    return (*map(str, m.project.requirements), *map(str, m.variant(label).requirements))


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
    # Compared less their markers: each runtime's is narrowed to its variant's platforms (test_pypi_requirements.py)
    project = [requirement_identity(r) for r in m.project.requirements]
    runtimes = [requirement_identity(Requirement(CU132_REQ)), *map(requirement_identity, m.variant("xpu").requirements)]
    assert [requirement_identity(r) for r in reqs] == [*project, *runtimes]


def test_target_of_a_labelled_wheel(tmp_path: Path, m) -> None:
    wheel = make_wheel(tmp_path, version="2.15.0+cu132")
    assert target_of(m, wheel).id == "cu132-cp312-linux-x86_64"


def _members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as zf:
        return {i.filename: zf.read(i) for i in zf.infolist()}


def test_promote_renames_and_keeps_the_payload(tmp_path: Path, m) -> None:
    src = make_wheel(tmp_path / "in", version="2.15.0+cu132", requires=_cu132_reqs(m), m=m)
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
    src = make_wheel(tmp_path / "in", version="2.15.0+cu132", requires=_cu132_reqs(m), m=m)
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


def test_promote_refuses_an_input_that_does_not_verify(tmp_path: Path, m) -> None:
    src = make_wheel(tmp_path, version="2.15.0+cu132", requires_python=">=3.10", requires=_cu132_reqs(m), m=m)
    with pytest.raises(PromoteError, match="requires-python-admits-dropped"):
        promote(m, src, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_promote_fails_when_the_result_does_not_verify(tmp_path: Path, m, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rewrite that went wrong (here: Requires-Dist emptied) is caught by the check after it."""
    import builders.wheel.pypi_form as promote_mod

    real = promote_mod.rewrite
    monkeypatch.setattr(promote_mod, "rewrite", lambda wheel, dest, **kw: real(wheel, dest, **{**kw, "requirements": ()}))
    src = make_wheel(tmp_path, version="2.15.0+cu132", requires=_cu132_reqs(m), m=m)
    with pytest.raises(VerifyError, match="requirements-mismatch"):
        promote(m, src, tmp_path / "out")
    assert list((tmp_path / "out").glob("*.whl")) == []


def test_promote_command_exit_code(tmp_path: Path, root: Path) -> None:
    src = make_wheel(tmp_path, version="2.15.0+cu134")
    assert main(["promote", str(src.path), "--matrix", str(root / "matrix.yaml"), "--output", str(tmp_path / "o")]) == 15


def test_a_folder_without_a_pypi_default_promotes_nothing_only_with_allow_empty(tmp_path: Path, root: Path, m,
                                                                               capsys: pytest.CaptureFixture[str]) -> None:
    defaults = dict(m.channels.pypi)
    label = next(v.label for v in m.variants if v.label != defaults.get("linux-x86_64"))
    make_wheel(tmp_path / "house", version=f"{m.project.version}+{label}", m=m)
    out = tmp_path / "out"
    args = ["promote", str(tmp_path / "house"), "--matrix", str(root / "matrix.yaml"), "--output", str(out)]
    assert main(args) == 15
    assert "--allow-empty" in capsys.readouterr().err
    assert main([*args, "--allow-empty"]) == 0
    said = capsys.readouterr()
    assert "nothing promoted" in said.out + said.err and "--allow-empty" in said.out + said.err
    assert not out.exists() or list(out.rglob("*.whl")) == []
    (tmp_path / "empty").mkdir()
    assert main(["promote", str(tmp_path / "empty"), "--matrix", str(root / "matrix.yaml"), "--output", str(out),
                 "--allow-empty"]) == 15


# --- index -----------------------------------------------------------------------------


@pytest.fixture
def wheelhouse(tmp_path: Path, m) -> Path:
    house = tmp_path / "house"
    make_wheel(house / "whl" / "cpu", version="2.15.0+cpu", requires_python=">=3.11.0", requires=_reqs(m, "cpu"), m=m)
    make_wheel(house / "whl" / "cpu", version="2.15.0+cpu", tag="cp313-cp313-manylinux_2_28_x86_64",
               requires=_reqs(m, "cpu"), m=m)
    make_wheel(house / "whl" / "cu132", version="2.15.0+cu132", requires=_cu132_reqs(m), m=m)
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
    assert 'data-requires-python="&gt;=3.11.0"' in page
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
    assert first["requires-python"] == ">=3.11.0"
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
    # --no-mirror: a unit test runs no pip (mirroring is tests/unit/test_mirror.py and the slow index tests)
    assert main(["index", str(wheelhouse), "--output", str(out), "--matrix", str(root / "matrix.yaml"),
                 "--no-mirror"]) == 0
    assert (out / "whl" / "cu132" / "minifw" / "index.html").is_file()


# --- nothing unverified is laundered into a release (issue 9) ----------------------------------

# One hostile wheel per way a release could be poisoned, and the finding that refuses it.
REFUSED = {"tampered": "record-mismatch", "relabelled": "label-contradicted", "zip_slip": "member-traversal"}


def hostile(tmp: Path, name: str) -> Path:
    getattr(mw, name)(tmp)
    (path,) = (tmp / "house").glob("*.whl")
    return path


@pytest.mark.parametrize("name, code", sorted(REFUSED.items()))
def test_promote_verifies_its_input_before_writing(tmp_path: Path, name: str, code: str) -> None:
    src = hostile(tmp_path / "in", name)
    with pytest.raises(PromoteError, match=code) as err:
        promote(mw.shipped(), Wheel(src), tmp_path / "out")
    assert "nothing was written" in str(err.value) and mw.target().id in str(err.value)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name, code", sorted(REFUSED.items()))
def test_index_verifies_every_wheel_before_writing(tmp_path: Path, name: str, code: str) -> None:
    mw.good(tmp_path / "ok")
    house = [*find_wheels(tmp_path / "ok"), hostile(tmp_path / "bad", name)]
    with pytest.raises(IndexBuildError, match=code) as err:
        build_index(house, tmp_path / "out", check=matrix_checker(mw.shipped()))
    assert "1 wheel(s) refused" in str(err.value)
    assert not (tmp_path / "out").exists()


def test_index_checks_archive_and_record_even_without_a_matrix(tmp_path: Path) -> None:
    for name in ("tampered", "zip_slip"):
        with pytest.raises(IndexBuildError, match=REFUSED[name]):
            build_index([hostile(tmp_path / name, name)], tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_index_of_a_good_wheel_under_the_matrix_check(tmp_path: Path) -> None:
    mw.good(tmp_path)
    result = build_index(find_wheels(tmp_path / "house"), tmp_path / "out", check=matrix_checker(mw.shipped()))
    assert [f.filename for f in result.files] == [mw.facts().filename]


def test_a_wheel_of_no_target_is_refused_by_the_matrix_check(tmp_path: Path, m) -> None:
    src = make_wheel(tmp_path, version="2.15.0+cu132", tag="cp39-cp39-manylinux_2_28_x86_64")
    assert [f.code for f in matrix_checker(m)(src)] == ["no-target"]


@pytest.mark.parametrize("layout", ["../{label}/", "whl/../../{label}/", "/tmp/{label}/"])
def test_index_never_writes_outside_output(tmp_path: Path, wheelhouse: Path, layout: str) -> None:
    out = tmp_path / "deep" / "out"
    with pytest.raises(IndexBuildError, match="outside --output"):
        build_index(find_wheels(wheelhouse), out, layout=lambda label: layout.format(label=label))
    assert not (tmp_path / "deep").exists() or not any((tmp_path / "deep").iterdir())
    assert not (tmp_path / "cpu").exists() and not (tmp_path / "deep" / "cpu").exists()


def test_index_refuses_a_link_inside_output_that_leads_out(tmp_path: Path, wheelhouse: Path) -> None:
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    (out / "whl").mkdir(parents=True)
    elsewhere.mkdir()
    (out / "whl" / "cpu").symlink_to(elsewhere)
    with pytest.raises(IndexBuildError, match="outside --output"):
        build_index(find_wheels(wheelhouse), out)
    assert list(elsewhere.iterdir()) == []


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_promote_and_index_commands_refuse_with_their_exit_codes(tmp_path: Path, name: str,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    src = hostile(tmp_path / "case", name)
    matrix_arg = ["--matrix", str(mw.MATRIX)]
    assert main(["promote", str(src), "--output", str(tmp_path / "p"), *matrix_arg]) == 15
    assert main(["index", str(src.parent), "--output", str(tmp_path / "i"), *matrix_arg]) == 16
    err = capsys.readouterr().err
    assert err.count(REFUSED[name]) >= 2 and "Traceback" not in err
    assert not list((tmp_path / "p").glob("*.whl")) and not list((tmp_path / "i").rglob("*.whl"))


def test_index_publishes_the_bytes_it_verified_even_if_the_input_is_swapped(tmp_path: Path, m) -> None:
    """The checker sees a copy inside the output; swapping the input file right after the check (the moment a
    verify-then-copy index would copy it) changes nothing that is published."""
    src = make_wheel(tmp_path / "house", version="2.15.0+cpu", requires=_reqs(m, "cpu"), m=m).path
    good = src.read_bytes()
    evil = make_wheel(tmp_path / "evil", version="2.15.0+cpu", requires=("evil-package",), m=m).path.read_bytes()
    checked: list[tuple[Path, bytes]] = []

    def check_then_swap(wheel: Wheel):
        checked.append((wheel.path, wheel.path.read_bytes()))
        src.write_bytes(evil)  # the input is replaced after its check
        return matrix_checker(m)(wheel)

    out = tmp_path / "out"
    result = build_index([src], out, check=check_then_swap)
    ((seen, verified),) = checked
    assert seen != src and seen.is_relative_to(out)  # the check read the copy it publishes, not the input
    assert verified == good
    published = out / "whl" / "cpu" / "minifw" / src.name
    assert published.read_bytes() == verified
    (info,) = result.files
    assert info.sha256 == hashlib.sha256(verified).hexdigest()
    assert f"#sha256={info.sha256}" in (published.parent / "index.html").read_text()
    assert b"evil-package" not in (published.parent / f"{src.name}.metadata").read_bytes()
    assert not list(out.glob(".index-staging-*"))  # the private copies' folder is gone


REFUSAL = Finding(code="test", message="refused by the test")


def test_index_refused_after_copying_leaves_no_copy(tmp_path: Path, m) -> None:
    src = make_wheel(tmp_path / "house", version="2.15.0+cpu", requires=_reqs(m, "cpu"), m=m).path
    out = tmp_path / "out"
    with pytest.raises(IndexBuildError, match="refused"):
        build_index([src], out, check=lambda wheel: [REFUSAL])
    assert not out.exists()
    out.mkdir()
    with pytest.raises(IndexBuildError, match="refused"):
        build_index([src], out, check=lambda wheel: [REFUSAL])
    assert list(out.iterdir()) == []


def test_find_wheels_does_not_look_into_hidden_folders(tmp_path: Path) -> None:
    made = make_wheel(tmp_path / "whl" / "cpu", version="2.15.0+cpu").path
    make_wheel(tmp_path / ".store" / "0123abcd", version="2.15.0+cpu", requires=("numpy",))
    make_wheel(tmp_path / "out" / ".index-staging-x" / "1-cpu", version="2.15.0+cpu")
    assert find_wheels(tmp_path) == [made]
