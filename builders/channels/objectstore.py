"""An S3-compatible bucket as the host of the channels' indexes, as download.pytorch.org is.

The ordinary client library (boto3) over the standard configuration: the endpoint from
``AWS_ENDPOINT_URL_S3`` or ``AWS_ENDPOINT_URL`` (absent: AWS itself), credentials from
``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/``AWS_SESSION_TOKEN`` or ``AWS_PROFILE``, and
otherwise boto3's own chain (``~/.aws/config``, a web-identity token from OIDC, an instance
role). Every value is read from the mapping the caller passes, not from this process's
environment behind its back.

This module only moves bytes: list, read, hash, upload, copy, delete. What may be written
where (a release file never changes, a candidate replaces, a nightly is pruned) is
:mod:`builders.channels.publication`'s. Conditional writes (``IfNoneMatch``, ``upload(if_absent=True)``)
are a guard against a concurrent writer, never the rule itself: S3-compatible servers differ in
honouring them (``rclone serve s3`` overwrites, moto and AWS refuse with 412), so a publication
reads what is there first. What each loopback server keeps (headers, checksums, conditional
writes) is measured by ``tests/integration/test_objectstore.py`` and listed in docs/channels.md.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import mimetypes
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from builders.base.errors import ObjectExists, ObjectStoreError

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_s3.type_defs import CopySourceTypeDef

CHUNK = 1 << 20
DELETE_BATCH = 1000  # S3's limit per DeleteObjects call
SHOWN_FAILURES = 5  # keys named in a refused delete's message
SINGLE_COPY_LIMIT = 5 << 30  # S3's limit on one CopyObject (and one PutObject): larger objects are copied in parts
CHECKSUM = "SHA256"  # asked of every upload and copy; the store keeps it and HeadObject returns it (ChecksumMode)
CONTENT_TYPES = {".whl": "application/zip", ".metadata": "text/plain", ".json": "application/json",
                 ".html": "text/html", "SHA256SUMS": "text/plain"}
NAMED_CONTENT_TYPES = {"index.json": "application/vnd.pypi.simple.v1+json"}  # PEP 691's; other .json stay JSON
MISSING = ("NoSuchKey", "404", "NotFound")


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
    renew themselves before each session ends (:mod:`builders.channels.credentials`)."""
    import boto3  # imported here: every command but publish/promote runs without it
    from botocore.config import Config

    from builders.channels import credentials

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
    s3 = session.client("s3", endpoint_url=endpoint, config=config)
    s3.meta.events.register("before-parse.s3", error_body_as_bytes)
    return s3


def error_body_as_bytes(response_dict: dict[str, Any], **_: Any) -> None:
    """Lets an error answer that carries an object's checksum header parse as the error it is, so that the
    standard retries retry a 5xx. ``rclone serve s3`` answers a read of an object replaced under it with a 500
    that still carries the object's ``x-amz-checksum-sha256`` (seen in the ledger's three-writer race);
    botocore then wraps the error's body in its checksum reader and fails on it with an AttributeError, not the
    500 (boto/botocore#3680, open in 1.44). The wrapped stream is already spent: the error parses from its status."""
    if response_dict["status_code"] >= 300 and not isinstance(response_dict["body"], bytes | bytearray):
        response_dict["body"] = b""


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
        """The object's bytes (boto3 checks them against the store's checksum where it returns one)."""
        return self._call("read", key, lambda: bytes(self.s3.get_object(Bucket=self.url.bucket,
                                                                        Key=self.url.key(key))["Body"].read()))

    def read_if_there(self, key: str) -> bytes | None:
        """The object's bytes, or None where there is no such object."""
        from botocore.exceptions import ClientError

        try:
            body = self.s3.get_object(Bucket=self.url.bucket, Key=self.url.key(key))
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in MISSING:
                return None
            raise ObjectStoreError(f"{self.url}{key}: cannot read it: {exc}") from None
        return self._call("read", key, lambda: bytes(body["Body"].read()))

    def head(self, key: str) -> StoredObject | None:
        """The object's size, or None where there is no such object (a refused request is an error, not None)."""
        found = self._head(key)
        return None if found is None else StoredObject(key=key, size=int(found["ContentLength"]))

    def stored_sha256(self, key: str) -> str | None:
        """None for a multipart upload's checksum of checksums. AWS checks the claim; rclone and moto keep it
        unchecked and rclone forgets it on restart (measured: tests/integration/test_objectstore.py)."""
        found = self._head(key, ChecksumMode="ENABLED")
        if found is None:
            raise ObjectStoreError(f"{self.url}{key}: no such object (its checksum was asked)")
        return full_object_sha256(found)

    def verified_sha256(self, key: str) -> str:
        """Never an ETag: a multipart upload's is no digest."""
        return self.stored_sha256(key) or self.sha256(key)

    def sha256(self, key: str) -> str:
        """The sha256 of the stored bytes, read in full (never an ETag: a multipart upload's is no digest)."""
        return self._call("read", key, lambda: self._digest(key))

    def _digest(self, key: str) -> str:
        body = self.s3.get_object(Bucket=self.url.bucket, Key=self.url.key(key))
        digest = hashlib.sha256()
        for chunk in body["Body"].iter_chunks(CHUNK):
            digest.update(chunk)
        return digest.hexdigest()

    def upload(self, key: str, source: Path | bytes, *, cache_control: str | None = None,
               if_absent: bool = False) -> None:
        """With a SHA-256 the store keeps (rclone and moto accept it too, so there is no fallback without one).

        ``if_absent`` (``If-None-Match: *``, else :class:`ObjectExists`) goes in one PutObject, as ``upload_file``
        takes no ``IfNoneMatch`` (S3's limit: 5 GB); ``rclone serve s3`` ignores it, so a caller that must never
        overwrite looks first (:meth:`head`)."""
        extra: dict[str, Any] = {"ContentType": content_type(key), "ChecksumAlgorithm": CHECKSUM,
                                 **({"CacheControl": cache_control} if cache_control else {})}
        if if_absent:
            self._put_if_absent(key, source, extra)
        elif isinstance(source, bytes):
            self._call("write", key, lambda: self.s3.put_object(Bucket=self.url.bucket, Key=self.url.key(key),
                                                                Body=source, **extra))
        else:
            self._call("write", key, lambda: self.s3.upload_file(str(source), self.url.bucket, self.url.key(key),
                                                                 ExtraArgs=extra))

    def _put_if_absent(self, key: str, source: Path | bytes, extra: dict[str, Any]) -> None:
        from botocore.exceptions import ClientError

        with contextlib.ExitStack() as stack:
            body = source if isinstance(source, bytes) else stack.enter_context(source.open("rb"))
            try:
                self.s3.put_object(Bucket=self.url.bucket, Key=self.url.key(key), Body=body, IfNoneMatch="*", **extra)
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") == "PreconditionFailed":
                    raise ObjectExists(f"{self.url}{key} exists already: it was not overwritten (a conditional "
                                       "write; another publication wrote it since this one looked)") from None
                raise ObjectStoreError(f"{self.url}{key}: write failed: {exc}") from None

    def copy(self, source: str, dest: str, *, cache_control: str | None = None) -> None:
        """A server-side copy: the bytes never leave the store. One CopyObject up to S3's 5 GB (the copy gets its
        own whole-object checksum; ``rclone serve s3`` cannot copy in parts at all), in parts above it (whose
        checksum is of the parts': :meth:`verified_sha256` reads such a copy back)."""
        found = self.head(source)
        if found is None:
            raise ObjectStoreError(f"{self.url}{source}: no such object to copy to {dest}")
        where: CopySourceTypeDef = {"Bucket": self.url.bucket, "Key": self.url.key(source)}
        extra: dict[str, Any] = {"ContentType": content_type(dest), "MetadataDirective": "REPLACE",
                                 "ChecksumAlgorithm": CHECKSUM, **({"CacheControl": cache_control} if cache_control else {})}
        target = self.url.key(dest)
        if found.size <= SINGLE_COPY_LIMIT:
            self._call("copy", f"{source} -> {dest}", lambda: self.s3.copy_object(
                CopySource=where, Bucket=self.url.bucket, Key=target, **extra))
        else:
            self._call("copy", f"{source} -> {dest}", lambda: self.s3.copy(where, self.url.bucket, target,
                                                                           ExtraArgs=extra))

    def delete(self, keys: Iterable[str]) -> None:
        """Every object of ``keys``, in batches; a key the store refuses to delete stops here (DeleteObjects answers
        200 and lists the refused keys in ``Errors``: they are read, not ignored)."""
        ordered = sorted(keys)
        for start in range(0, len(ordered), DELETE_BATCH):
            batch = [{"Key": self.url.key(k)} for k in ordered[start:start + DELETE_BATCH]]
            answer = self._call("delete", f"{len(batch)} object(s)",
                                lambda b=batch: self.s3.delete_objects(Bucket=self.url.bucket,  # type: ignore[misc]
                                                                       Delete={"Objects": b, "Quiet": True}))
            errors = answer.get("Errors", [])
            if errors:
                raise ObjectStoreError(f"{self.url}: the store refused to delete {len(errors)} of {len(ordered)} "
                                       f"object(s): {refused_deletes(errors, self.url.prefix)}")

    def _head(self, key: str, **extra: str) -> dict[str, Any] | None:
        """HeadObject's answer, or None where there is no such object (a refused request is an error, not None)."""
        from botocore.exceptions import ClientError

        try:
            return dict(self.s3.head_object(Bucket=self.url.bucket, Key=self.url.key(key), **extra))  # type: ignore[arg-type]
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in MISSING:
                return None
            raise ObjectStoreError(f"{self.url}{key}: cannot look it up: {exc}") from None

    def _call(self, what: str, key: str, action: Any) -> Any:
        """``action()``, its client errors (refused credentials, no such bucket, an endpoint down) as ObjectStoreError."""
        from botocore.exceptions import BotoCoreError, ClientError, FlexibleChecksumError

        try:
            return action()
        except FlexibleChecksumError as exc:
            raise ObjectStoreError(f"{self.url}{key}: the bytes read are not those of the store's own checksum "
                                   f"({exc}): changed or damaged in the store, or stored under a wrong one") from None
        except (ClientError, BotoCoreError) as exc:
            raise ObjectStoreError(f"{self.url}{key}: {what} failed: {exc}") from None


def cache_control(channel: str, key: str) -> str:
    """What caches in front of the bucket may keep: a release's files never change (immutable), its pages change
    with each release (revalidated every 10 minutes, as PyTorch's index writer sets them); a nightly's and a
    candidate's pages and files change any day (no-cache), and so do the publication records."""
    name = key.rsplit("/", 1)[-1]
    immutable = name.endswith((".whl", ".whl.metadata", ".whl.provenance"))
    if channel == "release" and immutable and not key.startswith("publish-records/"):
        return "public, max-age=31536000, immutable"
    if channel == "release" and not key.startswith("publish-records/"):
        return "max-age=600, must-revalidate"
    return "no-cache"


def content_type(key: str) -> str:
    """What the store serves ``key`` as: a project's or root's ``index.json`` as PEP 691's JSON (pip and uv read
    the type to tell the JSON API from HTML), other files by their suffix."""
    name = key.rsplit("/", 1)[-1]
    suffix = "." + name.rsplit(".", 1)[-1] if "." in name else name
    return (NAMED_CONTENT_TYPES.get(name) or CONTENT_TYPES.get(suffix) or mimetypes.guess_type(name)[0]
            or "application/octet-stream")


def full_object_sha256(head: Mapping[str, Any]) -> str | None:
    """HeadObject's ``ChecksumSHA256`` as hex where it is the whole object's. A multipart upload's is a checksum of
    the parts' checksums: AWS marks it ``ChecksumType: COMPOSITE`` or ``-N``; moto marks it with neither (measured),
    only by the multipart ``ETag`` (``"...-N"``), which is why that counts too."""
    value = head.get("ChecksumSHA256")
    kind = head.get("ChecksumType")
    etag, dash, parts = str(head.get("ETag", "")).strip('"').rpartition("-")
    multipart = bool(etag and dash and parts.isdigit())
    if not value or "-" in value or kind == "COMPOSITE" or (kind != "FULL_OBJECT" and multipart):
        return None
    try:
        digest = base64.b64decode(value, validate=True)
    except binascii.Error:
        return None
    return digest.hex() if len(digest) == hashlib.sha256().digest_size else None


def refused_deletes(errors: Iterable[Mapping[str, Any]], prefix: str = "") -> str:
    """The first refused keys of a DeleteObjects answer (relative to ``prefix``), each with the store's code."""
    listed = list(errors)
    shown = "; ".join(_refused(e, prefix) for e in listed[:SHOWN_FAILURES])
    return shown + (f" and {len(listed) - SHOWN_FAILURES} more" if len(listed) > SHOWN_FAILURES else "")


def _refused(error: Mapping[str, Any], prefix: str) -> str:
    key = str(error.get("Key", "?"))
    message = f": {error['Message']}" if error.get("Message") else ""
    return f"{key.removeprefix(prefix)} ({error.get('Code', 'no code')}{message})"


def open_bucket(url: str, env: Mapping[str, str]) -> Bucket:
    return Bucket(BucketUrl.parse(url), client(env))
