"""An index's files read over HTTP (or ``file://``): bounded, counted GETs and range reads, and one
member of a remote wheel read with range requests, through the same zip reader as a wheel on disk.

:class:`RangedFile` is a read-only, seekable file over a URL: each read asks the server for the
bytes it lacks (at least :data:`MIN_FETCH` at a time) and keeps what it was sent, so ``zipfile``
parses the end record and the central directory from the first range read (the last :data:`TAIL`
bytes) for most wheels, and the one member from one more. The zip is opened with
:func:`builders.wheel.zipcheck.open_zip` (the central directory and member count capped as for any
wheel), the member is refused from its central directory entry before it is read (encrypted,
another compression, over :data:`MAX_METADATA`, a zip bomb's ratio), inflated by ``zipfile`` (which
checks its local header and CRC), and at most :data:`MAX_FETCHED` bytes are fetched for one wheel.
Whole wheels are never downloaded.

A project's simple page (PEP 691 JSON, or PEP 503 HTML with PEP 592/658/714 attributes) is read here
too, once for every reader: ``audit``, ``promote-release``'s package-server check and ``validate``'s
listing all get :func:`read_project`'s :class:`IndexFile` list, each page capped at the caller's limit.
"""

from __future__ import annotations

import json
import re
import zipfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit
from urllib.request import url2pathname

import requests
from packaging.utils import canonicalize_name

from builders.base.errors import AuditError, WheelError
from builders.wheel.zipcheck import MAX_CENTRAL_DIRECTORY, MIB, ZIP_ERRORS, open_zip, printable, refusal

MAX_METADATA = 4 * MIB  # one METADATA (torch's is 12 KiB)
TAIL = 8 * 1024  # the first range read: the zip's end record and, for most wheels, its central directory
MIN_FETCH = 4 * 1024  # the least one range read asks for: a member's local header, name and a small METADATA
# What one wheel's member may cost: the tail, a long zip comment zipfile looks through, the
# largest central directory any wheel may have, and the member itself.
MAX_FETCHED = TAIL + (64 * 1024 + 22) + MAX_CENTRAL_DIRECTORY + MAX_METADATA + 2 * MIN_FETCH
TIMEOUT = 60.0
ACCEPT = ("application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, "
          "text/html;q=0.01")
MAX_PAGE = 64 * MIB  # a project page; PyPI's largest JSON pages are a few MiB


class RangeUnsupported(Exception):
    """The server answered a range request with the whole file."""


@dataclass
class Client:
    """GETs and range reads with size caps; counts every byte it reads, by kind."""

    session: requests.Session = field(default_factory=requests.Session)
    timeout: float = TIMEOUT
    read: dict[str, int] = field(default_factory=lambda: {"pages": 0, "metadata": 0, "ranges": 0, "files": 0})
    requests: int = 0

    def get(self, url: str, *, accept: str = "", limit: int, kind: str) -> tuple[str, bytes] | None:
        """(content type, body) of ``url``; None when it does not exist (404 / no such file)."""
        self.requests += 1
        if url.startswith("file:"):
            return self._get_file(url, accept, limit, kind)
        headers = {"Accept": accept} if accept else {}
        with self.session.get(url, headers=headers, stream=True, timeout=self.timeout) as r:
            if r.status_code in (404, 410):
                return None
            _raise_for(r, url)
            return r.headers.get("Content-Type", ""), self._body(r.iter_content(64 * 1024), url, limit, kind)

    def range(self, url: str, start: int | None, length: int) -> tuple[bytes, int]:
        """``length`` bytes from ``start`` (from the end when ``start`` is None), and the file's size."""
        self.requests += 1
        if url.startswith("file:"):
            return self._range_file(url, start, length)
        spec = f"bytes=-{length}" if start is None else f"bytes={start}-{start + length - 1}"
        headers = {"Range": spec, "Accept-Encoding": "identity"}
        with self.session.get(url, headers=headers, stream=True, timeout=self.timeout) as r:
            if r.status_code == 200:
                raise RangeUnsupported(f"{url}: the server ignores HTTP Range requests")
            _raise_for(r, url)
            total = _content_range_total(r.headers.get("Content-Range", ""), url)
            return self._body(r.iter_content(64 * 1024), url, length, "ranges"), total

    def _body(self, chunks: Iterable[bytes], url: str, limit: int, kind: str) -> bytes:
        data = bytearray()
        for chunk in chunks:
            data += chunk
            self.read[kind] += len(chunk)
            if len(data) > limit:
                raise AuditError(f"{printable(url)}: larger than {limit} bytes; refused")
        return bytes(data)

    def _get_file(self, url: str, accept: str, limit: int, kind: str) -> tuple[str, bytes] | None:
        path = Path(url2pathname(urlsplit(url).path))
        if path.is_dir():  # a static index on disk: the page pip would be served
            names = ("index.json", "index.html") if "json" in accept else ("index.html",)
            path = next((path / n for n in names if (path / n).is_file()), path / "index.html")
        if not path.is_file():
            return None
        with path.open("rb") as fh:
            data = self._body(iter(lambda: fh.read(64 * 1024), b""), url, limit, kind)
        return ("application/vnd.pypi.simple.v1+json" if path.suffix == ".json" else "text/html"), data

    def _range_file(self, url: str, start: int | None, length: int) -> tuple[bytes, int]:
        path = Path(url2pathname(urlsplit(url).path))
        with path.open("rb") as fh:
            size = fh.seek(0, 2)
            fh.seek(max(size - length, 0) if start is None else start)
            data = fh.read(length)
        self.read["ranges"] += len(data)
        return data, size


def _raise_for(r: requests.Response, url: str) -> None:
    if r.status_code >= 400:
        raise AuditError(f"{printable(url)}: HTTP {r.status_code} {printable(r.reason or '')}")


def _content_range_total(value: str, url: str) -> int:
    match = re.fullmatch(r"bytes \d+-\d+/(\d+)", value.strip())
    if not match:
        raise AuditError(f"{printable(url)}: a range answer without a usable Content-Range ({printable(value)!r})")
    return int(match.group(1))


class RangedFile:
    """The file at ``url`` as a read-only seekable file, fetched by range reads and kept as fetched."""

    def __init__(self, client: Client, url: str, limit: int = MAX_FETCHED) -> None:
        self.client, self.url, self.limit = client, url, limit
        tail, self.size = client.range(url, None, TAIL)
        self._spans: list[tuple[int, bytes]] = [(self.size - len(tail), tail)]
        self._fetched, self._pos = len(tail), 0

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self._pos, 2: self.size}[whence]
        if base + offset < 0:
            raise OSError(f"seek to {base + offset}: before the start of the file")
        self._pos = base + offset
        return self._pos

    def read(self, n: int = -1) -> bytes:
        end = self.size if n is None or n < 0 else min(self.size, self._pos + n)
        data = self.span(self._pos, end)
        self._pos += len(data)
        return data

    def span(self, start: int, end: int) -> bytes:
        """Bytes ``start`` to ``end``: from what was fetched, asking the server only for the gaps."""
        out = bytearray()
        while start < end:
            have = next(((at, data) for at, data in self._spans if at <= start < at + len(data)), None)
            if have is None:
                have = self._fetch(start, end)
            at, data = have
            piece = data[start - at: end - at]
            out += piece
            start += len(piece)
        return bytes(out)

    def _fetch(self, start: int, end: int) -> tuple[int, bytes]:
        after = min((at for at, _ in self._spans if at > start), default=self.size)
        stop = min(max(end, start + MIN_FETCH), after, self.size)
        if self._fetched + stop - start > self.limit:
            raise AuditError(f"{printable(self.url)}: more than {self.limit:,} bytes of range reads for one member; refused")
        data = self.client.range(self.url, start, stop - start)[0]
        if not data:
            raise AuditError(f"{printable(self.url)}: the server sent nothing for bytes {start}-{stop - 1}")
        self._fetched += len(data)
        self._spans.append((start, data))
        return start, data


def remote_member(client: Client, url: str, wanted: Callable[[str], bool]) -> bytes:
    """The one member of the remote zip at ``url`` that ``wanted`` picks, inflated, CRC-checked."""
    source = RangedFile(client, url)
    try:
        with open_zip(source, source.size, printable(url)) as zf:
            hits = [info for info in zf.infolist() if wanted(info.filename)]
            if len(hits) != 1:
                raise AuditError(f"{printable(url)}: {len(hits)} members match, one expected")
            return _member_bytes(zf, source, hits[0], url)
    except WheelError as exc:
        raise AuditError(str(exc)) from None


def _member_bytes(zf: zipfile.ZipFile, source: RangedFile, info: zipfile.ZipInfo, url: str) -> bytes:
    name = printable(info.filename)
    refused = refusal(info)
    if refused is not None or info.file_size > MAX_METADATA or info.compress_size > MAX_METADATA:
        why = refused.message if refused else f"{info.file_size:,} bytes ({info.compress_size:,} compressed)"
        raise AuditError(f"{printable(url)}: {name} {why}; refused")
    # its local header, name, extra field and data in one range read, as zipfile then asks for them
    source.span(info.header_offset, min(source.size, info.header_offset + 30 + 2 * len(info.orig_filename.encode())
                                        + 256 + info.compress_size))
    try:
        with zf.open(info) as fh:
            data = fh.read(MAX_METADATA + 1)
    except ZIP_ERRORS as exc:
        raise AuditError(f"{printable(url)}: {name} cannot be read: {printable(str(exc) or type(exc).__name__)}") from None
    if len(data) != info.file_size:
        raise AuditError(f"{printable(url)}: {name} inflates to {len(data):,} bytes, the central directory says "
                         f"{info.file_size:,}")
    return data


def is_metadata(name: str) -> bool:
    """The wheel's ``<name>-<version>.dist-info/METADATA`` (top level)."""
    return re.fullmatch(r"[^/]+\.dist-info/METADATA", name) is not None


# --- what the index lists ----------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class IndexFile:
    """One file of a project page, as PEP 691 (or PEP 503 with PEP 658/714) describes it."""

    filename: str
    url: str
    sha256: str | None = None
    requires_python: str | None = None
    yanked: str | None = None  # None: not yanked; otherwise the reason ("" when none given)
    metadata: bool = False
    metadata_sha256: str | None = None
    size: int | None = None  # bytes, where the page says (PEP 700's ``size``)


def files_from_json(data: object, base: str) -> list[IndexFile]:
    """A PEP 691 project page's files; URLs resolved against ``base``."""
    if not isinstance(data, dict) or not isinstance(data.get("files"), list):
        raise AuditError(f"{base}: not a PEP 691 project page (no 'files' list)")
    return [_json_file(f, base) for f in data["files"] if isinstance(f, dict) and isinstance(f.get("filename"), str)]


def _json_file(f: Mapping[str, object], base: str) -> IndexFile:
    hashes = f.get("hashes") if isinstance(f.get("hashes"), dict) else {}
    meta = f.get("core-metadata", f.get("dist-info-metadata", False))
    yanked = f.get("yanked", False)
    return IndexFile(
        filename=str(f["filename"]), url=urljoin(base, str(f.get("url", f["filename"]))),
        sha256=_text(hashes.get("sha256")) if isinstance(hashes, dict) else None,
        requires_python=_text(f.get("requires-python")),
        yanked=(yanked if isinstance(yanked, str) else "") if yanked else None,
        metadata=bool(meta), metadata_sha256=_text(meta.get("sha256")) if isinstance(meta, dict) else None,
        size=_size(f.get("size")))


def _size(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


class Anchors(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[dict[str, str], list[str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.found.append(({k: v if v is not None else "" for k, v in attrs}, []))

    def handle_data(self, data: str) -> None:
        if self.found:
            self.found[-1][1].append(data)


def files_from_html(text: str, base: str) -> list[IndexFile]:
    """A PEP 503 project page's files, with the PEP 592/658/714 ``data-`` attributes."""
    parser = Anchors()
    parser.feed(text)
    return [_html_file(attrs, base) for attrs, _ in parser.found if attrs.get("href")]


def _html_file(attrs: Mapping[str, str], base: str) -> IndexFile:
    url = urljoin(base, attrs["href"])
    fragment = urlsplit(url).fragment
    meta = attrs.get("data-core-metadata", attrs.get("data-dist-info-metadata"))
    return IndexFile(
        filename=unquote(urlsplit(url).path.rsplit("/", 1)[-1]), url=url.split("#", 1)[0],
        sha256=fragment.removeprefix("sha256=") if fragment.startswith("sha256=") else None,
        requires_python=attrs.get("data-requires-python") or None,
        yanked=attrs.get("data-yanked"),
        metadata=meta is not None and meta != "false",
        metadata_sha256=meta.removeprefix("sha256=") if meta and meta.startswith("sha256=") else None)


def read_project(client: Client, index_url: str, project: str, *, limit: int = MAX_PAGE) -> list[IndexFile] | None:
    """The files of ``project`` on the index at ``index_url`` (its page read up to ``limit`` bytes); None when the
    index has no such project."""
    url = urljoin(index_url if index_url.endswith("/") else index_url + "/", f"{canonicalize_name(project)}/")
    got = client.get(url, accept=ACCEPT, limit=limit, kind="pages")
    if got is None:
        return None
    content_type, body = got
    if "json" in content_type:
        try:
            return files_from_json(json.loads(body), url)
        except ValueError as exc:
            raise AuditError(f"{printable(url)}: not valid JSON: {exc}") from None
    return files_from_html(body.decode("utf-8", errors="replace"), url)
