"""``verify-release``: every file of a version as the served index serves it, checked against its pages, the
release manifest and its PEP 740 provenance, by anyone, with nothing but the index's URL.

Gather reads (bounded, through :class:`builders.index.remote.Client`) each variant's project pages (JSON and
HTML), every file of the version they list, and each file's provenance object; :func:`problems` is a pure
function of what was read: the served bytes' sha256 is the JSON page's, the HTML page's and the manifest's;
both pages link the same provenance; the provenance names the file's sha256 in a statement signed by its
certificate's key, and the certificate's builder (repository, workflow file, ref) is the one expected
(:func:`builders.channels.provenance.check`). What cannot be checked offline is said, never implied
(:data:`builders.channels.provenance.NOT_CHECKED`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from html import unescape
from urllib.parse import unquote, urljoin

from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import Version

from builders.base.errors import AuditError
from builders.channels import provenance
from builders.channels.provenance import Identity
from builders.index import PAGE_LIMIT
from builders.index.remote import Client

MAX_FILE = 2 * 1024 ** 3  # a wheel read whole (GitHub's Release asset limit; the index grants 1 GB)


@dataclass(frozen=True, kw_only=True)
class Served:
    """One file of the version as the index serves it."""

    url: str
    filename: str
    sha256: str  # the served bytes'
    size: int  # the served bytes'
    json_size: int | None  # what the JSON page declares (None: no size)
    json_sha256: str  # what the JSON page declares
    html_sha256: str | None  # what the HTML page's link declares (None: no link)
    provenance_link: str | None  # the JSON page's ``provenance``
    html_provenance: str | None  # the HTML page's ``data-provenance``
    provenance: bytes | None  # the provenance object's bytes (None: none served)


def version_files(page: Mapping[str, object], version: str) -> list[Mapping[str, object]]:
    """The files of a PEP 691 page whose version's public part is ``version``'s."""
    want = Version(version).public
    out = []
    files = page.get("files")
    for item in files if isinstance(files, list) else []:
        name = item.get("filename", "") if isinstance(item, dict) else ""
        if name.endswith(".whl") and Version(str(parse_wheel_filename(name)[1])).public == want:
            out.append(item)
    return out


def html_links(page: str) -> dict[str, tuple[str, str | None]]:
    """file name -> (its ``#sha256=``, its ``data-provenance``) of a PEP 503 page."""
    out: dict[str, tuple[str, str | None]] = {}
    for tag in re.findall(r"<a\s[^>]*>", page):
        href = re.search(r'href="([^"]+)"', tag)
        if href is None:
            continue
        path, _, fragment = unescape(href.group(1)).partition("#")
        prov = re.search(r'data-provenance="([^"]*)"', tag)
        out[unquote(path.rsplit("/", 1)[-1])] = (fragment.removeprefix("sha256="),
                                                  unescape(prov.group(1)) if prov else None)
    return out


def gather(client: Client, page_urls: Iterable[str], project: str, version: str) -> list[Served]:
    """Every file of ``version`` the project pages at ``page_urls`` (each a project's folder URL) list."""
    out: list[Served] = []
    for base in page_urls:
        got = client.get(f"{base}index.json", accept="application/vnd.pypi.simple.v1+json", limit=PAGE_LIMIT,
                         kind="pages")
        if got is None:
            continue
        html = client.get(f"{base}index.html", limit=PAGE_LIMIT, kind="pages")
        links = html_links(html[1].decode("utf-8", "replace")) if html else {}
        try:
            page = json.loads(got[1])
        except ValueError as exc:
            raise AuditError(f"{base}index.json: not JSON ({exc})") from None
        if canonicalize_name(str(page.get("name", project))) != canonicalize_name(project):
            raise AuditError(f"{base}index.json: the page of {page.get('name')!r}, not {project!r}")
        out += [_served(client, base, item, links) for item in version_files(page, version)]
    return out


def _served(client: Client, base: str, item: Mapping[str, object], links: Mapping[str, tuple[str, str | None]]
            ) -> Served:
    name = str(item["filename"])
    url = urljoin(base, str(item.get("url") or name))
    got = client.get(url, limit=MAX_FILE, kind="files")
    size = item.get("size")
    link = item.get("provenance")
    prov = client.get(urljoin(base, link), limit=provenance.MAX_BYTES, kind="files") if isinstance(link, str) else None
    hashes = item.get("hashes")
    return Served(url=url, filename=name, sha256=hashlib.sha256(got[1]).hexdigest() if got else "",
                  size=len(got[1]) if got else 0, json_size=size if isinstance(size, int) else None,
                  json_sha256=str(hashes.get("sha256", "")) if isinstance(hashes, dict) else "",
                  html_sha256=links[name][0] if name in links else None,
                  provenance_link=link if isinstance(link, str) else None,
                  html_provenance=links[name][1] if name in links else None, provenance=prov[1] if prov else None)


def problems(served: Served, manifest: Mapping[str, str] | None, expected: Identity) -> list[str]:
    """What is wrong with one served file (pure); [] when it is what its pages, manifest and provenance say."""
    out = []
    if not served.sha256:
        out.append("not served (404)")
    elif served.sha256 != served.json_sha256:
        out.append(f"served bytes have sha256 {served.sha256[:12]}..., the JSON page declares "
                   f"{served.json_sha256[:12]}...")
    if served.sha256 and served.json_size is not None and served.json_size != served.size:
        out.append(f"{served.size:,} bytes served, the JSON page declares {served.json_size:,}")
    if served.html_sha256 is None:
        out.append("not linked from the HTML page")
    elif served.html_sha256 != served.json_sha256:
        out.append(f"the HTML page declares sha256 {served.html_sha256[:12]}..., the JSON page {served.json_sha256[:12]}...")
    if manifest is not None:
        want = manifest.get(served.filename)
        if want is None:
            out.append("not in the release manifest")
        elif served.sha256 and want != served.sha256:
            out.append(f"the release manifest says sha256 {want[:12]}..., the served bytes are {served.sha256[:12]}...")
    return out + provenance_problems(served, expected)


def provenance_problems(served: Served, expected: Identity) -> list[str]:
    if served.provenance_link is None:
        return ["no provenance on the JSON page (PEP 740)"]
    found = [] if served.html_provenance == served.provenance_link else [
        f"the HTML page's data-provenance is {served.html_provenance!r}, the JSON page's {served.provenance_link!r}"]
    if served.provenance is None:
        return [*found, f"its provenance {served.provenance_link} is not served"]
    return found + [f"provenance: {p}" for p in provenance.check(served.provenance, served.filename,
                                                                 served.sha256 or served.json_sha256, expected)]
