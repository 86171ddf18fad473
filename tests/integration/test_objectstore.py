"""``publish`` against a real S3 server on loopback (``rclone serve s3``): cumulative, refusing, replacing, pruning.

The wheels are synthetic (they verify as the matrix's targets); the store is real: boto3 talks
S3 over HTTP to rclone, which keeps each object as a plain file of the bucket's folder, and the
assertions read those files, never the code under test's own view of the bucket.

The second half measures what each loopback server (rclone and moto's emulator) does with what
builders relies on: Cache-Control and Content-Type read back over plain HTTP, SHA-256 checksums
after a put, a copy and a multipart upload, conditional writes, a refused delete. Each test prints
what it measured and asserts it per server, so a server that changes is noticed.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import json
import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
from packaging.utils import parse_wheel_filename
from packaging.version import Version

from builders.base.errors import ObjectExists, ObjectStoreError, SelectionError
from builders.channels import objectstore
from builders.channels import publication as publish_mod
from builders.channels.objectstore import Bucket, open_bucket
from builders.cli import main
from builders.families import loader as matrix
from builders.matrix.model import Matrix
from builders.wheel.writer import write_wheel
from tests import expected
from tests.helpers import edit
from tests.hostile.make_wheels import make_elf
from tests.objectstore import ObjectStore, S3Server, moto_store, object_store

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


# --- what each loopback S3 server keeps (measured, printed; docs/channels.md lists the answers) -------------------

EXPECTED_TYPES = {"index.json": "application/vnd.pypi.simple.v1+json", "index.html": "text/html",
                  "SHA256SUMS": "text/plain", "mirror.json": "application/json"}


def expected_type(key: str) -> str:
    """The Content-Type a key is served with, written out here rather than asked of builders."""
    name = key.rsplit("/", 1)[-1]
    if name.endswith(".whl"):
        return "application/zip"
    if name.endswith(".metadata"):
        return "text/plain"
    return EXPECTED_TYPES.get(name, "application/json" if key.startswith(("publish-records/", "ledger/")) else "?")


def served_headers(store: S3Server, bucket: str, key: str) -> tuple[str | None, str | None]:
    """(Cache-Control, Content-Type) of a plain HTTP GET of the object's path-style URL (presigned)."""
    answer = requests.get(store.presigned_get(bucket, key), timeout=30)
    assert answer.status_code == 200, (key, answer.status_code, answer.text[:200])
    return answer.headers.get("Cache-Control"), answer.headers.get("Content-Type")


def test_published_pages_and_files_carry_headers_no_cache_can_make_stale(tmp_path: Path, s3: ObjectStore,
                                                                      shipped_text: str) -> None:
    """After a real ``publish`` of the test channel and of a nightly, every object the bucket holds is served over
    HTTP with ``Cache-Control: no-cache`` (both channels change: a later candidate replaces, a nightly is pruned)
    and its own Content-Type (``index.json`` as PEP 691's JSON)."""
    m = matrix.loads(shipped_text)
    label, path = m.variants[0].label, matrix_file(tmp_path, shipped_text)
    labelled_wheel(tmp_path / "rc", m, version=str(m.project.version), label=label)
    assert publish(path, tmp_path / "rc", "test") == 0
    nightly = m.channels.channel("nightly").version(m.project.version, datetime.date(2026, 12, 1))
    labelled_wheel(tmp_path / "nightly", m, version=str(nightly), label=label)
    assert publish(path, tmp_path / "nightly", "nightly") == 0
    keys = sorted(s3.files("downloads"))
    assert {k.rsplit("/", 1)[-1] for k in keys} >= {"index.json", "index.html", "SHA256SUMS"}
    measured = {key: served_headers(s3, "downloads", key) for key in keys}
    print("\n".join(f"{key}: Cache-Control {cc!r}, Content-Type {ct!r}" for key, (cc, ct) in measured.items()))
    assert measured == {key: ("no-cache", expected_type(key)) for key in keys}


@dataclass(frozen=True, kw_only=True)
class Server:
    name: str
    store: S3Server
    bucket: Bucket

    def raw(self) -> Any:
        """A boto3 client of this server, for what the store does below builders' Bucket."""
        return objectstore.client(self.store.env)


STORES: dict[str, Any] = {"rclone": object_store, "moto": moto_store}  # name -> context manager over a folder


@pytest.fixture(params=sorted(STORES))
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Server]:
    with STORES[request.param](tmp_path / request.param) as store:
        store.make_bucket("probe")
        yield Server(name=request.param, store=store, bucket=open_bucket("s3://probe/", store.env))


def b64_sha256(data: bytes) -> str:
    return base64.b64encode(hashlib.sha256(data).digest()).decode()


def test_which_server_keeps_cache_control_and_content_type(tmp_path: Path, server: Server) -> None:
    """Both keep the Cache-Control and Content-Type an upload (bytes or a file) and a copy set, on HEAD, GET and a
    plain HTTP GET."""
    wheel = tmp_path / "x.whl"
    wheel.write_bytes(b"PK\x05\x06" + bytes(18))
    server.bucket.upload("whl/cpu/minifw/index.json", b"{}", cache_control="no-cache")
    server.bucket.upload("whl/cpu/minifw/x.whl", wheel, cache_control="public, max-age=31536000, immutable")
    server.bucket.copy("whl/cpu/minifw/index.json", "whl/cpu/index.json", cache_control="max-age=600, must-revalidate")
    want = {"whl/cpu/minifw/index.json": ("no-cache", "application/vnd.pypi.simple.v1+json"),
            "whl/cpu/minifw/x.whl": ("public, max-age=31536000, immutable", "application/zip"),
            "whl/cpu/index.json": ("max-age=600, must-revalidate", "application/vnd.pypi.simple.v1+json")}
    s3 = server.raw()
    for key in want:
        head, get = s3.head_object(Bucket="probe", Key=key), s3.get_object(Bucket="probe", Key=key)
        measured = {"HEAD": (head.get("CacheControl"), head.get("ContentType")),
                    "GET": (get.get("CacheControl"), get.get("ContentType")),
                    "HTTP": served_headers(server.store, "probe", key)}
        print(f"{server.name} {key}: {measured}")
        assert measured == dict.fromkeys(("HEAD", "GET", "HTTP"), want[key])


# (whole-object sha256 the store returns: True = the file's, None = none; measured) per server and case
CHECKSUMS = {"rclone": {"put": True, "upload_file": True, "copy": True, "multipart": None, "multipart's copy": None},
             "moto": {"put": True, "upload_file": True, "copy": True, "multipart": None, "multipart's copy": True}}
MULTIPART = 9 << 20  # over boto3's 8 MiB multipart threshold


def test_which_server_keeps_sha256_checksums(tmp_path: Path, server: Server) -> None:
    """Each upload asks for a SHA-256 checksum; what HeadObject (ChecksumMode ENABLED) returns after a PutObject,
    a small upload_file, a server-side copy, a multipart upload and a copy of that. ``stored_sha256`` is the file's
    sha256 or None, never another digest: moto returns a multipart object's checksum of checksums unmarked (no
    ``-N``, no ChecksumType), recognised by its multipart ETag. ``verified_sha256`` is the file's in every case."""
    small, big = b"hello world\n", os.urandom(MULTIPART)
    (tmp_path / "small").write_bytes(small)
    (tmp_path / "big").write_bytes(big)
    bucket = server.bucket
    bucket.upload("put", small)
    bucket.upload("upload_file", tmp_path / "small")
    bucket.copy("put", "copy")
    bucket.upload("multipart", tmp_path / "big")
    bucket.copy("multipart", "multipart's copy")
    data = {"put": small, "upload_file": small, "copy": small, "multipart": big, "multipart's copy": big}
    heads = {k: server.raw().head_object(Bucket="probe", Key=k, ChecksumMode="ENABLED") for k in data}
    print("\n".join(f"{server.name} {k}: ChecksumSHA256 {h.get('ChecksumSHA256')!r}, ChecksumType "
                    f"{h.get('ChecksumType')!r}, ETag {h['ETag']}" for k, h in heads.items()))
    measured = {k: None if bucket.stored_sha256(k) is None else bucket.stored_sha256(k) == hashlib.sha256(v).hexdigest()
                for k, v in data.items()}
    assert measured == CHECKSUMS[server.name]
    assert {k: bucket.verified_sha256(k) for k in data} == {k: hashlib.sha256(v).hexdigest() for k, v in data.items()}
    if server.name == "moto":  # the unmarked composite: a checksum that is not the file's
        assert heads["multipart"]["ChecksumSHA256"] not in (None, b64_sha256(big))
        assert heads["multipart"]["ETag"].strip('"').endswith("-2")


def test_the_loopback_servers_keep_a_wrong_checksum_claim_unchecked(server: Server) -> None:
    """A PutObject whose declared SHA-256 is not its body's: AWS refuses it (BadDigest); both loopback servers
    accept it and return the claim as the object's checksum, so there ``stored_sha256`` is the uploader's word
    (boto3's digest of what it sent), not the store's check of what it holds. Reading the bytes back is what
    catches it: boto3 checks a GET's body against the returned checksum, and the read stops naming the key."""
    claim = b64_sha256(b"other bytes")
    server.raw().put_object(Bucket="probe", Key="claimed", Body=b"these bytes", ChecksumAlgorithm="SHA256",
                            ChecksumSHA256=claim)
    stored = server.raw().head_object(Bucket="probe", Key="claimed", ChecksumMode="ENABLED").get("ChecksumSHA256")
    print(f"{server.name}: a wrong claim is {'kept' if stored == claim else 'not kept'} ({stored!r})")
    assert stored == claim
    assert server.bucket.verified_sha256("claimed") == hashlib.sha256(b"other bytes").hexdigest()
    for read in (server.bucket.sha256, server.bucket.read):
        with pytest.raises(ObjectStoreError, match=r"s3://probe/claimed: the bytes read are not those of the store's"):
            read("claimed")


ENFORCES_IF_NONE_MATCH = {"rclone": False, "moto": True}


def test_which_server_honours_a_conditional_write(tmp_path: Path, server: Server) -> None:
    """``upload(if_absent=True)`` (``If-None-Match: *``) writes a new key on both; over an existing key moto
    answers 412 (ObjectExists, the bytes kept) and rclone overwrites: immutability cannot rest on it."""
    source = tmp_path / "second"
    source.write_bytes(b"second")
    server.bucket.upload("new", source, if_absent=True)
    server.bucket.upload("taken", b"first")
    try:
        server.bucket.upload("taken", source, if_absent=True)
        refused = False
    except ObjectExists as exc:
        assert "s3://probe/taken exists already" in str(exc)
        refused = True
    kept = server.bucket.read("taken")
    print(f"{server.name}: If-None-Match * over an existing key {'refused (412)' if refused else 'overwrote'}")
    assert (refused, kept) == ((True, b"first") if ENFORCES_IF_NONE_MATCH[server.name] else (False, b"second"))
    assert server.bucket.read("new") == b"second"
    assert ObjectExists.exit_code == ObjectStoreError.exit_code


def test_rclone_forgets_headers_and_checksums_when_it_restarts(tmp_path: Path) -> None:
    """rclone keeps an object's Cache-Control, Content-Type and checksum in its memory, not beside the file: served
    again by a new process, the same file has no Cache-Control, a type guessed from its name and no checksum."""
    with object_store(tmp_path) as store:
        store.make_bucket("probe")
        open_bucket("s3://probe/", store.env).upload("a/index.json", b"{}", cache_control="no-cache")
    with object_store(tmp_path) as store:
        head: Any = objectstore.client(store.env).head_object(Bucket="probe", Key="a/index.json", ChecksumMode="ENABLED")
        after = (head.get("CacheControl"), head.get("ContentType"), head.get("ChecksumSHA256"))
        assert open_bucket("s3://probe/", store.env).stored_sha256("a/index.json") is None
    print(f"rclone after a restart: Cache-Control, Content-Type, ChecksumSHA256 = {after}")
    assert after == (None, "application/json", None)


def test_a_delete_the_store_refuses_stops_with_the_keys_named(tmp_path: Path) -> None:
    """DeleteObjects answers 200 and lists what it could not delete: rclone over a file made immutable (``chattr
    +i``, which stops root too) answers ``InternalError`` for that key; ``Bucket.delete`` raises naming it."""
    with object_store(tmp_path) as store:
        store.make_bucket("probe")
        bucket = open_bucket("s3://probe/", store.env)
        for key in ("a/kept.whl", "a/gone.whl", "b/gone.whl"):
            bucket.upload(key, b"1")
        locked = store.root / "probe/a/kept.whl"
        if subprocess.run(["chattr", "+i", str(locked)], capture_output=True).returncode != 0:
            pytest.skip("chattr +i is not possible here (not root, or a filesystem without the immutable flag)")
        try:
            with pytest.raises(ObjectStoreError, match=r"refused to delete 1 of 3 object\(s\): a/kept.whl \(InternalError"):
                bucket.delete(["a/kept.whl", "a/gone.whl", "b/gone.whl"])
            assert sorted(store.files("probe")) == ["a/kept.whl"]
        finally:
            subprocess.run(["chattr", "-i", str(locked)], check=True)


def test_a_page_link_the_bucket_does_not_hold_is_reported(tmp_path: Path, s3: ObjectStore, shipped_text: str) -> None:
    """``unresolved`` after a publication: a wheel its page lists that is not in the bucket, one of another size,
    and a missing ``.metadata`` are each named; a wheel stored as listed is not."""
    m = matrix.loads(shipped_text)
    label, channel = m.variants[0].label, m.channels.channel("test")
    folder = channel.index_path(label)
    project = tmp_path / "site" / folder / m.project.name
    wheels = {name: labelled_wheel(project, m, version=version, label=label)
              for name, version in (("stored", "2.0.0"), ("missing", "2.0.1"), ("short", "2.0.2"), ("no-meta", "2.0.3"))}
    entries = publish_mod.local_entries(tmp_path / "site", folder, label)
    bucket = open_bucket("s3://downloads/", s3.env)
    keys = {name: f"{folder}{m.project.name}/{w.name}" for name, w in wheels.items()}
    for name in ("stored", "short", "no-meta"):
        bucket.upload(keys[name], wheels[name].read_bytes()[:-1] if name == "short" else wheels[name])
    for name in ("stored", "short"):
        bucket.upload(f"{keys[name]}.metadata", entries[keys[name]].info.metadata)
    pages = publish_mod.index_pages(bucket, folder, entries, None)
    publication = publish_mod.Publication(channel=channel, files=(), pages=tuple(pages), pruned=())
    for upload in pages:
        bucket.upload(upload.key, upload.source)
    page = f"{folder}{m.project.name}/index.json"
    assert sorted(publish_mod.unresolved(bucket, publication)) == sorted([
        f"{keys['missing']}: linked by {page}, not in the bucket",
        f"{keys['missing']}.metadata: linked by {page} (PEP 658), not in the bucket",
        f"{keys['short']}: {wheels['short'].stat().st_size - 1} bytes in the bucket, {page} declares "
        f"{wheels['short'].stat().st_size}",
        f"{keys['no-meta']}.metadata: linked by {page} (PEP 658), not in the bucket"])


def test_a_wheel_written_between_plan_and_apply_is_kept_where_conditional_writes_are_enforced(
        tmp_path: Path, server: Server, shipped_text: str) -> None:
    """Another writer stores the planned wheel's key after the plan looked: ``apply``'s conditional write stops
    with ObjectExists and keeps the other's bytes on moto; rclone overwrites them (the measured difference)."""
    m = matrix.loads(shipped_text)
    label, channel = m.variants[0].label, m.channels.channel("test")
    wheel = labelled_wheel(tmp_path / "site" / channel.index_path(label) / m.project.name, m,
                           version=str(m.project.version), label=label)
    plan = publish_mod.plan(server.bucket, channel, tmp_path / "site", [label], project=m.project.name)
    key = f"{channel.index_path(label)}{m.project.name}/{wheel.name}"
    assert plan.added == (key, f"{key}.metadata")
    server.bucket.upload(key, b"another writer's bytes")
    if ENFORCES_IF_NONE_MATCH[server.name]:
        with pytest.raises(ObjectExists, match=re.escape(f"{key} exists already")):
            publish_mod.apply(server.bucket, plan)
        assert server.bucket.read(key) == b"another writer's bytes"
    else:
        publish_mod.apply(server.bucket, plan)
        assert server.bucket.read(key) == wheel.read_bytes()


def test_a_later_candidate_replaces_the_earlier_where_conditional_writes_are_enforced(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shipped_text: str) -> None:
    """On moto (which enforces If-None-Match) rc2 replaces rc1 on test: a replaced wheel and its ``.metadata``
    are written unconditionally, only a wheel the plan found absent is conditional."""
    m = matrix.loads(shipped_text)
    label = m.variants[0].label
    folder = m.channels.channel("test").index_path(label)
    path = matrix_file(tmp_path, shipped_text)
    with moto_store(tmp_path / "moto") as store:
        for name, value in store.env.items():
            monkeypatch.setenv(name, value)
        store.make_bucket("downloads")
        for rc in ("rc1", "rc2"):
            labelled_wheel(tmp_path / rc, m, version=str(m.project.version), label=label, payload=rc.encode())
            assert publish(path, tmp_path / rc, "test", "--record", str(tmp_path / f"{rc}.json")) == 0
        page = json.loads(open_bucket("s3://downloads/", store.env).read(f"{folder}{m.project.name}/index.json"))
    (wheel,) = (tmp_path / "rc2").glob("*.whl")
    assert [f["hashes"]["sha256"] for f in page["files"]] == [hashlib.sha256(wheel.read_bytes()).hexdigest()]
    assert [c["key"] for c in json.loads((tmp_path / "rc2.json").read_text())["replaced"]] == [
        f"{folder}{m.project.name}/{wheel.name}"]
