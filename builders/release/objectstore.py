"""An S3-compatible bucket as the host of the channels' indexes, as download.pytorch.org is.

The ordinary client library (boto3) over the standard configuration: the endpoint from
``AWS_ENDPOINT_URL_S3`` or ``AWS_ENDPOINT_URL`` (absent: AWS itself), credentials from
``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/``AWS_SESSION_TOKEN`` or ``AWS_PROFILE``, and
otherwise boto3's own chain (``~/.aws/config``, a web-identity token from OIDC, an instance
role). Every value is read from the mapping the caller passes, not from this process's
environment behind its back.

This module only moves bytes: list, read, hash, upload, copy, delete. What may be written
where (a release file never changes, a candidate replaces, a nightly is pruned) is
:mod:`builders.release.publish`'s. Conditional writes (``IfNoneMatch``) are not relied on:
S3-compatible servers differ in honouring them (``rclone serve s3`` overwrites), so a
publication reads what is there first.
"""

from __future__ import annotations

import hashlib
import mimetypes
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from builders.base.errors import ObjectStoreError

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_s3.type_defs import CopySourceTypeDef

CHUNK = 1 << 20
DELETE_BATCH = 1000  # S3's limit per DeleteObjects call
CONTENT_TYPES = {".whl": "application/zip", ".metadata": "text/plain", ".json": "application/json",
                 ".html": "text/html", "SHA256SUMS": "text/plain"}


@dataclass(frozen=True, kw_only=True)
class BucketUrl:
    """``s3://bucket/prefix/``: where a site lives in a bucket (the prefix is ``""`` or ends in ``/``)."""

    bucket: str
    prefix: str = ""

    @classmethod
    def parse(cls, url: str) -> BucketUrl:
        parts = urlsplit(url)
        if parts.scheme != "s3" or not parts.netloc or parts.query or parts.fragment:
            raise ObjectStoreError(f"{url!r} is not a bucket URL: write s3://BUCKET/ or s3://BUCKET/PREFIX/")
        prefix = parts.path.lstrip("/")
        if prefix and not prefix.endswith("/"):
            prefix += "/"
        if any(seg in ("", ".", "..") for seg in prefix.rstrip("/").split("/")) and prefix:
            raise ObjectStoreError(f"{url!r}: its prefix has an empty, '.' or '..' segment")
        return cls(bucket=parts.netloc, prefix=prefix)

    def key(self, relative: str) -> str:
        return self.prefix + relative

    def __str__(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}"


def client(env: Mapping[str, str]) -> S3Client:
    """A boto3 S3 client configured from ``env`` the standard way (module docstring). In a GitHub job that may
    assume ``AWS_ROLE_ARN`` with an OIDC token it mints (``id-token: write``), its credentials are the role's and
    renew themselves before each session ends (:mod:`builders.release.credentials`)."""
    import boto3  # imported here: every command but publish/promote runs without it
    from botocore.config import Config

    from builders.release import credentials

    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1"
    if credentials.from_github_oidc(env):
        session = boto3.session.Session(botocore_session=credentials.botocore_session(env), region_name=region)
    else:
        session = boto3.session.Session(
            aws_access_key_id=env.get("AWS_ACCESS_KEY_ID") or None,
            aws_secret_access_key=env.get("AWS_SECRET_ACCESS_KEY") or None,
            aws_session_token=env.get("AWS_SESSION_TOKEN") or None,
            region_name=region,
            profile_name=env.get("AWS_PROFILE") or None,
        )
    endpoint = env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or None
    config = Config(retries={"max_attempts": 5, "mode": "standard"}, s3={"addressing_style": "path"})
    return session.client("s3", endpoint_url=endpoint, config=config)


@dataclass(frozen=True, kw_only=True)
class StoredObject:
    key: str
    size: int


class Bucket:
    """The objects of one site (``BucketUrl``) through a client; keys given and returned are relative to its prefix."""

    def __init__(self, url: BucketUrl, s3: S3Client) -> None:
        self.url, self.s3 = url, s3

    def listing(self, folder: str = "") -> dict[str, StoredObject]:
        """Every object under ``folder`` (relative, ``""`` or ending in ``/``): relative key -> object."""
        out: dict[str, StoredObject] = {}
        pages = self.s3.get_paginator("list_objects_v2").paginate(Bucket=self.url.bucket, Prefix=self.url.key(folder))
        for page in self._call("list", folder, lambda: list(pages)):
            for item in page.get("Contents", []):
                relative = item["Key"][len(self.url.prefix):]
                out[relative] = StoredObject(key=relative, size=int(item["Size"]))
        return out

    def read(self, key: str) -> bytes:
        body = self._call("read", key, lambda: self.s3.get_object(Bucket=self.url.bucket, Key=self.url.key(key)))
        return bytes(body["Body"].read())

    def read_if_there(self, key: str) -> bytes | None:
        """The object's bytes, or None where there is no such object."""
        from botocore.exceptions import ClientError

        try:
            body = self.s3.get_object(Bucket=self.url.bucket, Key=self.url.key(key))
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404", "NotFound"):
                return None
            raise ObjectStoreError(f"{self.url}{key}: cannot read it: {exc}") from None
        return bytes(body["Body"].read())

    def head(self, key: str) -> StoredObject | None:
        """The object's size, or None where there is no such object (a refused request is an error, not None)."""
        from botocore.exceptions import ClientError

        try:
            found = self.s3.head_object(Bucket=self.url.bucket, Key=self.url.key(key))
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404", "NotFound"):
                return None
            raise ObjectStoreError(f"{self.url}{key}: cannot look it up: {exc}") from None
        return StoredObject(key=key, size=int(found["ContentLength"]))

    def verified_sha256(self, key: str) -> str:
        """The sha256 of the object's bytes: the bytes read back and hashed (no store's word is taken for it)."""
        return self.sha256(key)

    def sha256(self, key: str) -> str:
        """The sha256 of the stored bytes, read in full (never an ETag: a multipart upload's is no digest)."""
        body = self._call("read", key, lambda: self.s3.get_object(Bucket=self.url.bucket, Key=self.url.key(key)))
        digest = hashlib.sha256()
        for chunk in body["Body"].iter_chunks(CHUNK):
            digest.update(chunk)
        return digest.hexdigest()

    def upload(self, key: str, source: Path | bytes, *, cache_control: str | None = None) -> None:
        """``source`` (a file, streamed with multipart above boto3's threshold, or bytes) as object ``key``, with
        ``cache_control`` for the caches in front of the bucket."""
        extra = {"ContentType": content_type(key), **({"CacheControl": cache_control} if cache_control else {})}
        if isinstance(source, bytes):
            self._call("write", key, lambda: self.s3.put_object(Bucket=self.url.bucket, Key=self.url.key(key),
                                                                Body=source, **extra))  # type: ignore[arg-type]
        else:
            self._call("write", key, lambda: self.s3.upload_file(str(source), self.url.bucket, self.url.key(key),
                                                                 ExtraArgs=extra))

    def copy(self, source: str, dest: str, *, cache_control: str | None = None) -> None:
        """A server-side copy (multipart for large objects): the bytes never leave the store."""
        where: CopySourceTypeDef = {"Bucket": self.url.bucket, "Key": self.url.key(source)}
        extra = {"ContentType": content_type(dest), "MetadataDirective": "REPLACE",
                 **({"CacheControl": cache_control} if cache_control else {})}
        self._call("copy", f"{source} -> {dest}", lambda: self.s3.copy(where, self.url.bucket, self.url.key(dest),
                                                                       ExtraArgs=extra))

    def delete(self, keys: Iterable[str]) -> None:
        ordered = sorted(keys)
        for start in range(0, len(ordered), DELETE_BATCH):
            batch = [{"Key": self.url.key(k)} for k in ordered[start:start + DELETE_BATCH]]
            self._call("delete", f"{len(batch)} object(s)",
                       lambda b=batch: self.s3.delete_objects(Bucket=self.url.bucket,  # type: ignore[misc]
                                                              Delete={"Objects": b, "Quiet": True}))

    def _call(self, what: str, key: str, action: Any) -> Any:
        """``action()``, its client errors (refused credentials, no such bucket, an endpoint down) as ObjectStoreError."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return action()
        except (ClientError, BotoCoreError) as exc:
            raise ObjectStoreError(f"{self.url}{key}: {what} failed: {exc}") from None


def cache_control(channel: str, key: str) -> str:
    """What caches in front of the bucket may keep: a release's files never change (immutable), its pages change
    with each release (revalidated every 10 minutes, as PyTorch's index writer sets them); a nightly's and a
    candidate's pages and files change any day (no-cache), and so do the publication records."""
    name = key.rsplit("/", 1)[-1]
    if channel == "release" and name.endswith((".whl", ".whl.metadata")) and not key.startswith("publish-records/"):
        return "public, max-age=31536000, immutable"
    if channel == "release" and not key.startswith("publish-records/"):
        return "max-age=600, must-revalidate"
    return "no-cache"


def content_type(key: str) -> str:
    name = key.rsplit("/", 1)[-1]
    suffix = "." + name.rsplit(".", 1)[-1] if "." in name else name
    return CONTENT_TYPES.get(suffix) or mimetypes.guess_type(name)[0] or "application/octet-stream"


def open_bucket(url: str, env: Mapping[str, str]) -> Bucket:
    return Bucket(BucketUrl.parse(url), client(env))
