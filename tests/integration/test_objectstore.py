"""``publish`` against a real S3 server on loopback (``rclone serve s3``): cumulative, refusing, replacing, pruning.

The wheels are synthetic (they verify as the matrix's targets); the store is real: boto3 talks
S3 over HTTP to rclone, which keeps each object as a plain file of the bucket's folder, and the
assertions read those files, never the code under test's own view of the bucket.
"""

from __future__ import annotations

import datetime
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from packaging.utils import parse_wheel_filename
from packaging.version import Version

from builders.base.errors import SelectionError
from builders.cli import main
from builders.matrix import loader as matrix
from builders.matrix.model import Matrix
from builders.wheel.writer import write_wheel
from tests import expected
from tests.helpers import edit
from tests.hostile.make_wheels import make_elf
from tests.objectstore import ObjectStore, object_store

pytestmark = pytest.mark.slow
TAG = "cp312-cp312-manylinux_2_28_x86_64"


@pytest.fixture
def s3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ObjectStore]:
    with object_store(tmp_path / "store") as store:
        for name, value in store.env.items():
            monkeypatch.setenv(name, value)
        store.make_bucket("downloads")
        yield store


def labelled_wheel(folder: Path, m: Matrix, *, version: str, label: str, payload: bytes = b"") -> Path:
    """A wheel of ``m``'s project that verifies as its ``label`` target for cp312 on linux-x86_64."""
    folder.mkdir(parents=True, exist_ok=True)
    name, full = m.project.name, f"{version}+{label}"
    variant = m.variant(label)
    libs = tuple(lib for lib, _provider in variant.lib_providers[:1])
    dist_info = f"{name}-{full}.dist-info"
    requires = [*map(str, m.project.requirements), *map(str, variant.requirements)]
    meta = (f"Metadata-Version: 2.4\nName: {name}\nVersion: {full}\nRequires-Python: {m.project.requires_python}\n"
            + "".join(f"Requires-Dist: {r}\n" for r in requires) + "\n")
    members = {
        f"{name}/__init__.py": f"__version__ = '{version}'\n".encode() + payload,
        **{f"{mod.replace('.', '/')}.cpython-312-x86_64-linux-gnu.so":
           make_elf(("libc.so.6", *libs), ":".join(variant.rpath) if libs else None) for mod in m.project.extension_modules},
        f"{dist_info}/METADATA": meta.encode(),
        f"{dist_info}/WHEEL": f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: {TAG}\n".encode(),
    }
    path = folder / f"{name}-{full}-{TAG}.whl"
    write_wheel(path, members, dist_info, {}, 1700000000)
    return path


def matrix_file(tmp_path: Path, text: str) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "matrix.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def publish(matrix_path: Path, house: Path, channel: str, *extra: str) -> int:
    return main(["publish", str(house), "--matrix", str(matrix_path), "--channel", channel,
                 "--bucket", "s3://downloads/", "--no-mirror", *extra])


def consistent(s3: ObjectStore, folder: str) -> dict[str, str]:
    """Every page of the index ``folder`` agrees with the files the server holds: each listed file exists with the
    listed sha256 and metadata, each stored wheel is listed, SHA256SUMS says the same; returns name -> sha256."""
    files = s3.files("downloads")
    listed: dict[str, str] = {}
    root = json.loads(files[folder + "index.json"])
    for project in (p["name"] for p in root["projects"]):
        page = json.loads(files[f"{folder}{project}/index.json"])
        html = files[f"{folder}{project}/index.html"].decode()
        for item in page["files"]:
            key = f"{folder}{project}/{item['filename']}"
            assert hashlib.sha256(files[key]).hexdigest() == item["hashes"]["sha256"], key
            assert hashlib.sha256(files[key + ".metadata"]).hexdigest() == item["core-metadata"]["sha256"], key
            assert f"#sha256={item['hashes']['sha256']}" in html
            listed[f"{project}/{item['filename']}"] = item["hashes"]["sha256"]
    stored = {k[len(folder):] for k in files if k.startswith(folder) and k.endswith(".whl")}
    assert stored == set(listed), "a stored wheel no page lists, or the reverse"
    sums = dict(reversed(line.split("  ", 1)) for line in files[folder + "SHA256SUMS"].decode().splitlines())
    assert sums == listed
    return listed


def test_publication_is_cumulative_and_the_release_channel_is_promotions_alone(
        tmp_path: Path, s3: ObjectStore, shipped_text: str) -> None:
    """Two versions published one after the other are both listed; ``publish --channel release`` is refused before
    anything is read or written (the release channel holds a validated candidate's bytes: promote-release)."""
    m = matrix.loads(shipped_text)
    label = m.variants[0].label
    first = matrix_file(tmp_path / "a", shipped_text)
    house = tmp_path / "house1"
    labelled_wheel(house, m, version=str(m.project.version), label=label)
    assert publish(first, house, "test") == 0
    folder = m.channels.channel("test").index_path(label)
    assert len(consistent(s3, folder)) == 1

    nxt = Version(f"{m.project.version.major}.{m.project.version.minor}.{m.project.version.micro + 1}")
    second_text = edit(shipped_text, f"version: {m.project.version}", f"version: {nxt}")
    house2 = tmp_path / "house2"
    labelled_wheel(house2, matrix.loads(second_text), version=str(nxt), label=label)
    assert publish(matrix_file(tmp_path / "b", second_text), house2, "test") == 0
    served = consistent(s3, folder)
    assert {str(parse_wheel_filename(Path(k).name)[1].public) for k in served} == {str(m.project.version), str(nxt)}

    before = s3.files("downloads")
    assert publish(first, house, "release") == SelectionError.exit_code
    assert s3.files("downloads") == before, "a refused publication wrote something"


def test_a_later_candidate_replaces_the_earlier_on_test_and_is_recorded(tmp_path: Path, s3: ObjectStore,
                                                                        shipped_text: str) -> None:
    m = matrix.loads(shipped_text)
    labels = [v.label for v in m.variants[:2]]
    path = matrix_file(tmp_path, shipped_text)
    for rc in ("rc1", "rc2"):
        house = tmp_path / rc
        for label in labels:
            labelled_wheel(house, m, version=str(m.project.version), label=label, payload=f"# {rc}\n".encode())
        assert publish(path, house, "test", "--record", str(tmp_path / f"{rc}.json")) == 0
    record = json.loads((tmp_path / "rc2.json").read_text())
    test = m.channels.channel("test")
    rc2 = {label: next((tmp_path / "rc2").glob(f"*+{label}-*.whl")) for label in labels}
    assert {c["key"] for c in record["replaced"]} == {f"{test.index_path(lb)}{m.project.name}/{w.name}"
                                                      for lb, w in rc2.items()}
    for label, wheel in rc2.items():
        served = consistent(s3, test.index_path(label))
        assert served == {f"{m.project.name}/{wheel.name}": hashlib.sha256(wheel.read_bytes()).hexdigest()}
    stored = [k for k in s3.files("downloads") if k.startswith("publish-records/test/")]
    assert len(stored) == 2
    assert not any(k.startswith(m.channels.index_path(labels[0])) for k in s3.files("downloads")), \
        "the test channel wrote into the release channel's index"


def test_nightly_keeps_the_newest_versions_only(tmp_path: Path, s3: ObjectStore, shipped_text: str) -> None:
    keep = expected.raw(shipped_text)["channels"]["nightly"]["keep"]
    text = edit(shipped_text, f"keep: {keep}", "keep: 1")
    m = matrix.loads(text)
    path, label = matrix_file(tmp_path, text), m.variants[0].label
    nightly = m.channels.channel("nightly")
    days = ("20261201", "20261202")
    for day in days:
        date = datetime.datetime.strptime(day, "%Y%m%d").date()
        labelled_wheel(tmp_path / day, m, version=str(nightly.version(m.project.version, date)), label=label)
        assert publish(path, tmp_path / day, "nightly") == 0
    served = consistent(s3, nightly.index_path(label))
    assert [Version(parse_wheel_filename(Path(k).name)[1].public).dev for k in served] == [int(days[-1])]
    assert not any(days[0] in k for k in s3.files("downloads") if not k.startswith("publish-records/"))


def test_a_nightly_of_another_version_is_refused(tmp_path: Path, s3: ObjectStore, shipped_text: str) -> None:
    m = matrix.loads(shipped_text)
    house = tmp_path / "house"
    labelled_wheel(house, m, version=f"{m.project.version}", label=m.variants[0].label)
    assert publish(matrix_file(tmp_path, shipped_text), house, "nightly") == 5
    assert s3.files("downloads") == {}
