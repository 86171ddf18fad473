"""What the bucket's objects carry, decided without a store: Cache-Control per channel and key, Content-Type,
which checksum a HeadObject answer holds for the whole object, and how a refused delete is named.

The expectations are written out (PyTorch's index writer's headers, PEP 691's type, AWS's and moto's answers as
tests/integration/test_objectstore.py measured them), not derived from the code under test.
"""

from __future__ import annotations

import base64
import hashlib
import json

import pytest

from builders.base.errors import ObjectExists, ObjectStoreError
from builders.channels import publication as publish
from builders.channels.objectstore import cache_control, content_type, full_object_sha256, refused_deletes
from builders.matrix.release_channels import ChannelName, ReleaseChannel

WHEEL = "whl/cpu/minifw/minifw-2.15.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl"
PAGES = ("whl/cpu/minifw/index.html", "whl/cpu/minifw/index.json", "whl/cpu/index.html", "whl/cpu/index.json",
         "whl/cpu/SHA256SUMS", "whl/cpu/mirror.json", "whl/cpu/numpy/notes.txt")
REVALIDATE, IMMUTABLE = "max-age=600, must-revalidate", "public, max-age=31536000, immutable"
DATA = b"hello world\n"
B64 = base64.b64encode(hashlib.sha256(DATA).digest()).decode()


@pytest.mark.parametrize("key", PAGES)
@pytest.mark.parametrize(("channel", "expected"), [("nightly", "no-cache"), ("test", "no-cache"),
                                                   ("release", REVALIDATE)])
def test_pages_are_revalidated_on_release_and_never_cached_elsewhere(channel: str, expected: str, key: str) -> None:
    assert cache_control(channel, key) == expected


@pytest.mark.parametrize("key", [WHEEL, f"{WHEEL}.metadata"])
@pytest.mark.parametrize(("channel", "expected"), [("nightly", "no-cache"), ("test", "no-cache"),
                                                   ("release", IMMUTABLE)])
def test_release_files_are_immutable_and_replaced_ones_never_cached(channel: str, expected: str, key: str) -> None:
    assert cache_control(channel, key) == expected


@pytest.mark.parametrize("channel", ["nightly", "test", "release"])
def test_publication_records_are_never_cached(channel: str) -> None:
    assert cache_control(channel, f"publish-records/{channel}/20261201T000000000000Z.json") == "no-cache"


@pytest.mark.parametrize(("key", "kind"), [
    ("whl/cpu/minifw/index.json", "application/vnd.pypi.simple.v1+json"),
    ("whl/cpu/index.json", "application/vnd.pypi.simple.v1+json"),
    ("whl/cpu/mirror.json", "application/json"),
    ("publish-records/test/20261201T000000000000Z.json", "application/json"),
    ("whl/cpu/minifw/index.html", "text/html"), (WHEEL, "application/zip"), (f"{WHEEL}.metadata", "text/plain"),
    ("whl/cpu/SHA256SUMS", "text/plain")])
def test_index_json_is_served_as_pep_691_and_other_json_as_json(key: str, kind: str) -> None:
    assert content_type(key) == kind


@pytest.mark.parametrize(("head", "expected"), [
    ({"ChecksumSHA256": B64, "ETag": '"6f5902ac237024bdd0c176cb93063dc4"'}, hashlib.sha256(DATA).hexdigest()),
    ({"ChecksumSHA256": B64, "ChecksumType": "FULL_OBJECT", "ETag": '"abc-3"'}, hashlib.sha256(DATA).hexdigest()),
    ({"ChecksumSHA256": f"{B64}-3", "ETag": '"abc-3"'}, None),  # AWS: a checksum of checksums, marked -N
    ({"ChecksumSHA256": B64, "ChecksumType": "COMPOSITE"}, None),
    ({"ChecksumSHA256": B64, "ETag": '"9c636d44df5218a383505f2ed13c474c-2"'}, None),  # moto: unmarked, multipart ETag
    ({"ETag": '"6f5902ac237024bdd0c176cb93063dc4"'}, None),  # rclone after a multipart upload or a restart
    ({"ChecksumSHA256": "not base64!", "ETag": '"e"'}, None),
    ({"ChecksumSHA256": base64.b64encode(b"short").decode(), "ETag": '"e"'}, None),
])
def test_only_a_whole_object_checksum_is_taken_for_the_files_sha256(head: dict[str, str], expected: str | None) -> None:
    assert full_object_sha256(head) == expected


def test_a_refused_delete_names_the_first_keys_relative_to_the_site_with_the_stores_codes() -> None:
    errors = [{"Key": f"site/whl/cpu/k{i}.whl", "Code": "AccessDenied", "Message": "Access Denied"} for i in range(7)]
    text = refused_deletes([{"Key": "site/a.whl", "Code": "InternalError"}, *errors], "site/")
    assert text.startswith("a.whl (InternalError); whl/cpu/k0.whl (AccessDenied: Access Denied); ")
    assert "k3.whl" in text and "k4.whl" not in text and text.endswith(" and 3 more")


def test_object_exists_is_an_object_store_error_with_its_exit_code() -> None:
    assert issubclass(ObjectExists, ObjectStoreError) and ObjectExists.exit_code == ObjectStoreError.exit_code == 40
    assert "exit_code" not in vars(ObjectExists)


def test_the_project_pages_checked_for_dead_links_are_each_label_folders_own() -> None:
    def page(key: str) -> publish.Upload:
        data = json.dumps({"files": []}).encode()
        return publish.Upload(key=key, source=data, sha256=hashlib.sha256(data).hexdigest())

    keys = ("whl/test/cpu/minifw/index.json", "whl/test/cpu/minifw/index.html", "whl/test/cpu/index.json",
            "whl/test/cpu/SHA256SUMS", "whl/test/cu132/numpy/index.json", "whl/test/cu132/SHA256SUMS")
    publication = publish.Publication(channel=ReleaseChannel(name=ChannelName.TEST, layout="whl/test/{label}/"),
                                      files=(), pages=tuple(map(page, keys)), pruned=())
    found = {folder: [p.key for p in pages] for folder, pages in publish._project_pages(publication).items()}
    assert found == {"whl/test/cpu/": ["whl/test/cpu/minifw/index.json"],
                     "whl/test/cu132/": ["whl/test/cu132/numpy/index.json"]}
