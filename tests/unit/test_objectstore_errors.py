"""A server error that carries an object's headers is retried, not mistaken for a client bug.

``rclone serve s3`` answered a read of a ledger object that another writer was replacing with a 500 whose headers
were the object's own, ``x-amz-checksum-sha256`` included, and a cut body (seen in
tests/integration/test_ledger_loopback.py's three-writer race, about one run in three). botocore 1.44 then wraps
the error's body in its checksum reader and raises an AttributeError from its error parser (boto/botocore#3680),
which no retry catches. Here a loopback server made by this test answers exactly that way, then with the object.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import http.server
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest

from builders.base.errors import ObjectStoreError
from builders.channels.objectstore import Bucket, open_bucket

DATA = b'{"seq": 3, "parent": "ledger/release/00000002.json"}\n'
CHECKSUM = base64.b64encode(hashlib.sha256(DATA).digest()).decode()
KEY = "ledger/release/head.json"


@dataclass
class Script:
    """How many of the next reads fail as rclone's did, and every path the server was asked for."""

    failures: int
    asked: list[str] = field(default_factory=list)


def handler(script: Script) -> type[http.server.BaseHTTPRequestHandler]:
    class RcloneLike(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            script.asked.append(self.path)
            failing = len(script.asked) <= script.failures
            self.send_response(500 if failing else 200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(DATA)))
            self.send_header("X-Amz-Checksum-Sha256", CHECKSUM)
            self.send_header("Etag", '""')
            self.end_headers()
            self.wfile.write(b'<?xml version="1.0" encoding="UTF-8"?>\n'.ljust(len(DATA)) if failing else DATA)

        def log_message(self, *args: object) -> None:
            pass

    return RcloneLike


@contextlib.contextmanager
def rclone_like(script: Script) -> Iterator[Bucket]:
    """A bucket whose store is a loopback server answering by ``script``, for the block."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler(script))
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    env = {"AWS_ENDPOINT_URL_S3": f"http://127.0.0.1:{httpd.server_address[1]}", "AWS_ACCESS_KEY_ID": "k",
           "AWS_SECRET_ACCESS_KEY": "s", "AWS_REGION": "us-east-1"}
    try:
        yield open_bucket("s3://downloads/", env)
    finally:
        httpd.shutdown()
        httpd.server_close()


READS: dict[str, Callable[[Bucket], object]] = {
    "read": lambda b: b.read(KEY),
    "read_if_there": lambda b: b.read_if_there(KEY),
    "sha256": lambda b: b.sha256(KEY),
}
EXPECTED = {"read": DATA, "read_if_there": DATA, "sha256": hashlib.sha256(DATA).hexdigest()}


@pytest.mark.parametrize("how", READS)
def test_a_500_with_the_objects_checksum_header_is_retried_to_the_object(how: str) -> None:
    script = Script(failures=1)
    with rclone_like(script) as bucket:
        assert READS[how](bucket) == EXPECTED[how]
    assert script.asked == [f"/downloads/{KEY}"] * 2


def test_a_500_on_every_attempt_is_the_stores_error_naming_the_key() -> None:
    script = Script(failures=99)
    with rclone_like(script) as bucket, pytest.raises(ObjectStoreError,
                                                      match=rf"s3://downloads/{KEY}: read failed: .*\(500\)"):
        bucket.read(KEY)
    assert len(script.asked) == bucket.s3.meta.config.retries["total_max_attempts"]  # every attempt was a 500
