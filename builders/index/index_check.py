"""Does a channel's served index prove what it promises? ``check-index``'s checks, run after every publish.

Per variant index of the channel, the project page is read twice through the bounded reader, as PEP 691 JSON and
as PEP 503 HTML, and held to four rules:

- both list the same files with the same sha256, core-metadata hash and provenance (:func:`compare_pages`);
- every file of the version has its sha256, its PEP 658/714 ``.metadata`` with a hash, and PEP 740 provenance
  (``provenance`` in JSON, ``data-provenance`` in HTML) whose object has the keys PEP 740 names
  (:func:`file_findings`, :func:`provenance_problems`);
- every link resolves to bytes with the listed sha256 (the whole file is hashed as it streams, never kept);
- the release's ``{name}-{version}-variants.json`` (PEP 825) is the one recorded when it was first checked.

Then the coverage contract: every declared (variant x Python x platform) cell of the version (:func:`cells`, from
the matrix's own target expansion; a shared wheel is a cell for every Python it installs on) has a file that pip
and uv each resolve from the served index for that cell's environment (:func:`resolve`). A resolver that cannot
express a cell (uv has no free-threaded ``--python-version``, nor a platform outside its list) says so: that cell
is ``cannot-express`` for it, neither passed nor missing.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit
from urllib.request import url2pathname

import requests
from packaging.utils import canonicalize_name

from builders.base.errors import AuditError
from builders.base.process import ProcessError, run
from builders.index.audit import read_metadata
from builders.index.remote import Anchors, Client, IndexFile, files_from_html, files_from_json
from builders.matrix.model import PythonVersion
from builders.matrix.targets import Target

JSON_ACCEPT = "application/vnd.pypi.simple.v1+json"
HTML_ACCEPT = "text/html"
MAX_PAGE = 64 * 1024 * 1024
MAX_PROVENANCE = 4 * 1024 * 1024
PASSED, MISSING, CANNOT_EXPRESS = "resolved", "missing", "cannot-express"
RESOLVERS = ("pip", "uv")
WORKERS = 4  # resolutions at once: each is one pip or uv process, mostly waiting on the index


@dataclass(frozen=True, kw_only=True)
class IndexFinding:
    """One way the served index breaks its contract; ``code`` is stable (json-only, html-only, no-hash, ...)."""

    code: str
    file: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"code": self.code, "file": self.file, "message": self.message}


# --- the pages ---------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Page:
    """One project page as read: its files, and each file's provenance URL ("" where it names none)."""

    url: str
    files: tuple[IndexFile, ...]
    provenance: Mapping[str, str]


def json_page(body: bytes, url: str) -> Page:
    """A PEP 691 page, with PEP 740's ``provenance`` of each file."""
    try:
        data = json.loads(body)
    except ValueError as exc:
        raise AuditError(f"{url}: not valid JSON: {exc}") from None
    files = files_from_json(data, url)
    raw = {str(f.get("filename")): f.get("provenance") for f in data["files"] if isinstance(f, dict)}
    return Page(url=url, files=tuple(files),
                provenance={name: urljoin(url, v) if isinstance(v, str) and v else "" for name, v in raw.items()})


def html_page(body: bytes, url: str) -> Page:
    """A PEP 503 page, with PEP 740's ``data-provenance`` of each link."""
    text = body.decode("utf-8", errors="replace")
    files = files_from_html(text, url)
    parser = Anchors()
    parser.feed(text)
    provenance = {}
    for attrs, _ in parser.found:
        if attrs.get("href"):
            name = unquote(urlsplit(urljoin(url, attrs["href"])).path.rsplit("/", 1)[-1])
            value = attrs.get("data-provenance", "")
            provenance[name] = urljoin(url, html.unescape(value)) if value else ""
    return Page(url=url, files=tuple(files), provenance=provenance)


def read_pages(client: Client, index_url: str, project: str) -> tuple[Page | None, Page | None]:
    """The project's JSON and HTML pages on ``index_url`` (None: that form is not served); where the server does
    not negotiate, the JSON page is the folder's ``index.json`` (the layout builders writes)."""
    url = urljoin(index_url if index_url.endswith("/") else index_url + "/", f"{canonicalize_name(project)}/")
    got_json = client.get(url, accept=JSON_ACCEPT, limit=MAX_PAGE, kind="pages")
    if got_json is not None and "json" not in got_json[0]:  # a static host (an S3 website) negotiates nothing
        got_json = client.get(url + "index.json", accept=JSON_ACCEPT, limit=MAX_PAGE, kind="pages")
    got_html = client.get(url, accept=HTML_ACCEPT, limit=MAX_PAGE, kind="pages")
    as_json = json_page(got_json[1], url) if got_json and "json" in got_json[0] else None
    as_html = html_page(got_html[1], url) if got_html and "json" not in got_html[0] else None
    return as_json, as_html


def compare_pages(as_json: Page, as_html: Page) -> list[IndexFinding]:
    """Both forms list the same files, each with the same sha256, core-metadata hash and provenance."""
    j, h = {f.filename: f for f in as_json.files}, {f.filename: f for f in as_html.files}
    out = [IndexFinding(code="json-only", file=n, message="listed in the JSON page, not in the HTML page")
           for n in sorted(j.keys() - h.keys())]
    out += [IndexFinding(code="html-only", file=n, message="listed in the HTML page, not in the JSON page")
            for n in sorted(h.keys() - j.keys())]
    for name in sorted(j.keys() & h.keys()):
        out += _same(name, "sha256", j[name].sha256, h[name].sha256)
        out += _same(name, "core-metadata sha256", j[name].metadata_sha256, h[name].metadata_sha256)
        out += _same(name, "provenance", as_json.provenance.get(name, ""), as_html.provenance.get(name, ""))
    return out


def _same(name: str, what: str, in_json: object, in_html: object) -> list[IndexFinding]:
    if in_json == in_html:
        return []
    return [IndexFinding(code="pages-differ", file=name, message=f"{what}: JSON says {in_json!r}, HTML {in_html!r}")]


def file_findings(f: IndexFile, provenance_url: str, *, provenance: bool = True) -> list[IndexFinding]:
    """What one listed file lacks: its sha256, its ``.metadata`` with a hash, its provenance."""
    out = []
    if not f.sha256 or not re.fullmatch(r"[0-9a-f]{64}", f.sha256):
        out.append(IndexFinding(code="no-hash", file=f.filename, message=f"no sha256 on the page ({f.sha256!r})"))
    if f.filename.endswith(".whl") and not f.metadata:
        out.append(IndexFinding(code="no-core-metadata", file=f.filename, message="no PEP 658/714 core-metadata"))
    elif f.filename.endswith(".whl") and not f.metadata_sha256:
        out.append(IndexFinding(code="no-core-metadata", file=f.filename, message="core-metadata without its sha256"))
    if provenance and f.filename.endswith(".whl") and not provenance_url:
        out.append(IndexFinding(code="no-provenance", file=f.filename, message="no PEP 740 provenance on the page"))
    return out


def provenance_problems(data: object) -> list[str]:
    """PEP 740's provenance object: ``version`` 1 and ``attestation_bundles``, each with a ``publisher`` (its
    ``kind``) and ``attestations`` (each with ``version``, ``verification_material`` and ``envelope``)."""
    if not isinstance(data, dict) or data.get("version") != 1:
        return ["not a PEP 740 provenance object (version 1)"]
    bundles = data.get("attestation_bundles")
    if not isinstance(bundles, list) or not bundles:
        return ["no attestation_bundles"]
    out = []
    for i, bundle in enumerate(bundles):
        if not isinstance(bundle, dict) or not isinstance(bundle.get("publisher"), dict) \
                or not bundle["publisher"].get("kind"):
            out.append(f"attestation_bundles[{i}]: no publisher with a kind")
        atts = bundle.get("attestations") if isinstance(bundle, dict) else None
        if not isinstance(atts, list) or not atts:
            out.append(f"attestation_bundles[{i}]: no attestations")
            continue
        out += [f"attestation_bundles[{i}].attestations[{k}]: lacks {key}" for k, a in enumerate(atts)
                for key in ("version", "verification_material", "envelope") if not isinstance(a, dict) or key not in a]
    return out


# --- the bytes ---------------------------------------------------------------------------------


def served_sha256(client: Client, url: str) -> str | None:
    """The sha256 of the bytes ``url`` serves, hashed as they stream (None: not there)."""
    client.requests += 1
    digest = hashlib.sha256()
    client.read.setdefault("files", 0)
    if url.startswith("file:"):
        path = Path(url2pathname(urlsplit(url).path))
        if not path.is_file():
            return None
        with path.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
        return digest.hexdigest()
    with client.session.get(url, stream=True, timeout=client.timeout) as r:
        if r.status_code in (404, 410):
            return None
        if r.status_code >= 400:
            raise AuditError(f"{url}: HTTP {r.status_code}")
        for chunk in r.iter_content(1 << 20):
            digest.update(chunk)
            client.read["files"] += len(chunk)
    return digest.hexdigest()


def link_findings(client: Client, f: IndexFile, provenance_url: str) -> list[IndexFinding]:
    """The file, its ``.metadata`` and its provenance, each fetched: the listed hashes and PEP 740's keys hold."""
    out = []
    try:
        got = served_sha256(client, f.url)
    except (AuditError, requests.RequestException) as exc:
        return [IndexFinding(code="link", file=f.filename, message=str(exc))]
    if got is None:
        out.append(IndexFinding(code="link", file=f.filename, message=f"{f.url} is not there"))
    elif f.sha256 and got != f.sha256:
        out.append(IndexFinding(code="link-sha256", file=f.filename, message=f"{f.url} serves sha256 {got}, the page "
                           f"lists {f.sha256}"))
    if f.metadata and f.filename.endswith(".whl"):
        try:
            read_metadata(client, f)
        except (AuditError, requests.RequestException) as exc:
            out.append(IndexFinding(code="core-metadata", file=f.filename, message=str(exc)))
    if provenance_url:
        out += _provenance_findings(client, f.filename, provenance_url)
    return out


def _provenance_findings(client: Client, name: str, url: str) -> list[IndexFinding]:
    client.read.setdefault("provenance", 0)
    try:
        got = client.get(url, limit=MAX_PROVENANCE, kind="provenance")
        problems = ["not there"] if got is None else provenance_problems(json.loads(got[1]))
    except (AuditError, requests.RequestException, ValueError) as exc:
        problems = [str(exc)]
    return [IndexFinding(code="provenance", file=name, message=f"{url}: {p}") for p in problems]


def variants_json_findings(name: str, served: str | None, listed: str | None, recorded: str | None) -> list[IndexFinding]:
    """variants.json (PEP 825) never changes once published: what is served is what the page lists and what was
    recorded at its first check (``recorded`` None: none yet, this one is recorded)."""
    if served is None:
        return [IndexFinding(code="variants-json", file=name, message="listed but not there")]
    out = []
    if listed != served:
        out.append(IndexFinding(code="variants-json", file=name, message=f"served sha256 {served}, the page lists {listed}"))
    if recorded is not None and recorded != served:
        out.append(IndexFinding(code="variants-json-changed", file=name, message=f"sha256 {served}; recorded when it was "
                           f"published: {recorded} (PEP 825: variants.json never changes)"))
    return out


# --- the coverage contract -----------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class CoverageCell:
    """One declared environment of the release: a variant's wheel on one Python and platform."""

    target: str  # the target id of the wheel that covers it
    label: str
    python: PythonVersion
    platform: str  # the platform's name in the matrix
    wheel_platform: str  # its wheel tag's platform
    filename: str
    version: str  # the labelled version

    @property
    def key(self) -> str:
        return f"{self.label}-{self.python}-{self.platform}"


def cells(targets: Iterable[Target]) -> tuple[CoverageCell, ...]:
    """Every (variant x Python x platform) cell: one per target, a shared wheel's for each Python it installs on."""
    out = {}
    for t in targets:
        for python in t.tested_pythons if t.shape.shared else (t.python,):
            cell = CoverageCell(target=t.id, label=t.variant.label, python=python, platform=t.platform.name,
                        wheel_platform=t.platform.wheel_platform, filename=t.wheel_name, version=str(t.version))
            out[cell.key] = cell
    return tuple(out[k] for k in sorted(out))


def pip_argv(python: str, cell: CoverageCell, project: str, index_url: str, report: str, pre: bool) -> list[str]:
    """pip's resolution of the cell: a dry run for the cell's tags, the index alone, binary only, a report."""
    p = cell.python
    return [python, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--no-deps", "--no-cache-dir",
            "--only-binary=:all:", "--target", str(Path(report).parent / "target"), "--report", report,
            "--platform", cell.wheel_platform, "--python-version", f"{p.major}.{p.minor}", "--implementation", "cp",
            "--abi", p.abi, "--index-url", index_url, *(["--pre"] if pre else []), f"{project}=={cell.version}"]


UV_MANYLINUX = re.compile(r"manylinux_(\d+)_(\d+)_(x86_64|aarch64)")
UV_FIXED = {"win_amd64": "x86_64-pc-windows-msvc", "win_arm64": "aarch64-pc-windows-msvc"}
UV_MANYLINUX_KNOWN = ("2_17", "2_28", "2_31", "2_32", "2_33", "2_34", "2_35", "2_36", "2_37", "2_38", "2_39", "2_40")


def uv_platform(wheel_platform: str) -> tuple[str, dict[str, str]] | None:
    """uv 0.13's ``--python-platform`` for a wheel platform (and the environment it reads the macOS version
    from), or None where uv cannot express it."""
    if wheel_platform in UV_FIXED:
        return UV_FIXED[wheel_platform], {}
    linux = UV_MANYLINUX.fullmatch(wheel_platform)
    if linux and f"{linux[1]}_{linux[2]}" in UV_MANYLINUX_KNOWN:
        return f"{linux[3]}-manylinux_{linux[1]}_{linux[2]}", {}
    mac = re.fullmatch(r"macosx_(\d+)_(\d+)_(arm64|x86_64)", wheel_platform)
    if mac:
        arch = "aarch64" if mac[3] == "arm64" else "x86_64"
        return f"{arch}-apple-darwin", {"MACOSX_DEPLOYMENT_TARGET": f"{mac[1]}.{mac[2]}"}
    return None


def uv_argv(uv: str, cell: CoverageCell, index_url: str, requirements: str, out: str, pre: bool) -> tuple[list[str], dict[str, str]] | str:
    """uv's resolution of the cell (a pylock.toml naming the file), or why uv cannot express the cell."""
    if cell.python.free_threaded:
        return f"uv has no free-threaded --python-version ({cell.python})"
    platform = uv_platform(cell.wheel_platform)
    if platform is None:
        return f"uv has no --python-platform for {cell.wheel_platform}"
    p = cell.python
    return ([uv, "pip", "compile", "--no-config", "--no-cache", "--no-header", "--quiet", "--no-deps",
             "--only-binary", ":all:", "--python-platform", platform[0], "--python-version", f"{p.major}.{p.minor}",
             "--index-url", index_url, *(["--prerelease", "allow"] if pre else []), "--format", "pylock.toml",
             "-o", out, requirements], platform[1])


@dataclass(frozen=True, kw_only=True)
class Resolution:
    """One resolver's answer for one cell: resolved (with the file), missing (and why), or cannot-express."""

    cell: str
    resolver: str
    status: str
    file: str = ""
    reason: str = ""

    def to_json(self) -> dict[str, str]:
        return {"cell": self.cell, "resolver": self.resolver, "status": self.status, "file": self.file,
                "reason": self.reason}


def pip_file(report: Mapping[str, object], project: str) -> str:
    """The file pip's report says it would install for ``project`` ("" when none)."""
    items = report.get("install")
    for item in items if isinstance(items, list) else []:
        meta = item.get("metadata", {}) if isinstance(item, dict) else {}
        if canonicalize_name(str(meta.get("name", ""))) == canonicalize_name(project):
            return unquote(str(item.get("download_info", {}).get("url", "")).rsplit("/", 1)[-1])
    return ""


def uv_file(pylock: str, project: str, version: str) -> str:
    """The wheel of ``project`` ``version`` a uv pylock.toml names ("" when none)."""
    import tomllib

    data = tomllib.loads(pylock)
    for pkg in data.get("packages", []):
        if canonicalize_name(pkg.get("name", "")) == canonicalize_name(project) and pkg.get("version") == version:
            wheels = [unquote(str(w.get("url") or w.get("name", "")).rsplit("/", 1)[-1]) for w in pkg.get("wheels", [])]
            return wheels[0] if len(wheels) == 1 else ",".join(sorted(wheels))
    return ""


@dataclass(frozen=True, kw_only=True)
class Resolvers:
    """What resolves: pip's interpreter, uv's binary (None: uv is not installed), the environment they get."""

    python: str
    uv: str | None
    env: Mapping[str, str]
    pre: bool = False
    timeout: float = 300.0


def resolve_one(r: Resolvers, resolver: str, cell: CoverageCell, project: str, index_url: str) -> Resolution:
    """One cell by one resolver, in a scratch folder of its own."""
    with tempfile.TemporaryDirectory(prefix="builders-check-index-") as tmp:
        if resolver == "pip":
            return _by_pip(r, cell, project, index_url, Path(tmp))
        return _by_uv(r, cell, project, index_url, Path(tmp))


def _by_pip(r: Resolvers, cell: CoverageCell, project: str, index_url: str, tmp: Path) -> Resolution:
    report = tmp / "report.json"
    argv = pip_argv(r.python, cell, project, index_url, str(report), r.pre)
    try:
        run(argv, env=r.env, separate_stderr=True, timeout=r.timeout)
    except ProcessError as exc:
        return Resolution(cell=cell.key, resolver="pip", status=MISSING, reason=_last_line(str(exc)))
    found = pip_file(json.loads(report.read_text(encoding="utf-8")), project)
    return _judged(cell, "pip", found)


def _by_uv(r: Resolvers, cell: CoverageCell, project: str, index_url: str, tmp: Path) -> Resolution:
    if r.uv is None:
        return Resolution(cell=cell.key, resolver="uv", status=CANNOT_EXPRESS, reason="uv is not installed")
    (tmp / "requirements.in").write_text(f"{project}=={cell.version}\n", encoding="utf-8")
    made = uv_argv(r.uv, cell, index_url, str(tmp / "requirements.in"), str(tmp / "pylock.toml"), r.pre)
    if isinstance(made, str):
        return Resolution(cell=cell.key, resolver="uv", status=CANNOT_EXPRESS, reason=made)
    argv, extra = made
    try:
        run(argv, env={**r.env, **extra}, separate_stderr=True, timeout=r.timeout, cwd=tmp)
    except ProcessError as exc:
        return Resolution(cell=cell.key, resolver="uv", status=MISSING, reason=_last_line(str(exc)))
    return _judged(cell, "uv", uv_file((tmp / "pylock.toml").read_text(encoding="utf-8"), project, cell.version))


def _judged(cell: CoverageCell, resolver: str, found: str) -> Resolution:
    """Resolved only to the cell's own file (a pylock may name several wheels of the version: one is the cell's)."""
    if cell.filename in found.split(","):
        return Resolution(cell=cell.key, resolver=resolver, status=PASSED, file=cell.filename)
    return Resolution(cell=cell.key, resolver=resolver, status=MISSING, file=found,
                      reason=f"resolved {found or 'nothing'}, not {cell.filename}")


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return " ".join(lines[-3:])[-400:]


def resolve(r: Resolvers, jobs: Sequence[tuple[str, CoverageCell, str]], project: str, *, workers: int,
            show: Callable[[str], None] = lambda line: None) -> list[Resolution]:
    """Every (resolver, cell, index URL), ``workers`` at a time; the answers in the order asked."""
    def one(job: tuple[str, CoverageCell, str]) -> Resolution:
        got = resolve_one(r, job[0], job[1], project, job[2])
        show(f"{got.cell} {got.resolver}: {got.status}{': ' + got.reason if got.reason else ''}")
        return got

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return list(pool.map(one, jobs))


# --- the coverage table -------------------------------------------------------------------------


def coverage_table(all_cells: Sequence[CoverageCell], results: Sequence[Resolution]) -> list[dict[str, object]]:
    """One row per cell: its file and each resolver's status."""
    by = {(r.cell, r.resolver): r for r in results}
    rows = []
    for c in all_cells:
        row: dict[str, object] = {"cell": c.key, "variant": c.label, "python": str(c.python), "platform": c.platform,
                                  "target": c.target, "file": c.filename}
        for resolver in RESOLVERS:
            got = by.get((c.key, resolver))
            row[resolver] = got.status if got else "not-asked"
            if got and got.reason:
                row[f"{resolver}_reason"] = got.reason
        rows.append(row)
    return rows


def missing_cells(rows: Sequence[Mapping[str, object]]) -> list[str]:
    """The cells a resolver could express but not resolve: the release does not cover them."""
    return [str(row["cell"]) for row in rows if any(row.get(r) == MISSING for r in RESOLVERS)]


def coverage_html(record: Mapping[str, object]) -> str:
    """The coverage table as a small static page beside the index."""
    cells = record.get("cells")
    rows = cells if isinstance(cells, list) else []
    head = "<tr><th>variant</th><th>Python</th><th>platform</th><th>file</th><th>pip</th><th>uv</th></tr>"
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(row.get(k, '')))}</td>"
                         for k in ("variant", "python", "platform", "file", "pip", "uv")) + "</tr>\n"
        for row in rows if isinstance(row, dict))
    title = html.escape(f"{record.get('project')} {record.get('version')} on {record.get('channel')}: coverage")
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{title}</title></head><body>\n"
            f"<h1>{title}</h1>\n<table>\n{head}\n{body}</table>\n</body></html>\n")


# --- one channel ----------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class CheckPlan:
    """What to check: the project's version, each variant's index URL, the cells, the variant index (if any)."""

    project: str
    version: str  # the public version
    indexes: Mapping[str, str]  # label -> index URL
    cells: tuple[CoverageCell, ...]
    provenance: bool = True
    variants_index: str | None = None  # the PEP 825 variant index's URL, checked where it is served
    recorded_variants: Mapping[str, str] | None = None  # file name -> sha256 recorded at its first check


@dataclass(frozen=True, kw_only=True)
class Checked:
    findings: tuple[IndexFinding, ...]
    rows: tuple[dict[str, object], ...]
    variants_json: Mapping[str, str]  # file name -> sha256 served

    @property
    def missing(self) -> list[str]:
        return missing_cells(self.rows)


def of_version(f: IndexFile, project: str, version: str) -> bool:
    """A file of this release: the project's, with the public version (any local label)."""
    prefix = f"{canonicalize_name(project).replace('-', '_')}-{version}"
    return f.filename.lower().startswith(prefix.lower()) and f.filename[len(prefix):len(prefix) + 1] in ("+", "-")


def check_label(client: Client, plan: CheckPlan, label: str, index_url: str) -> list[IndexFinding]:
    """One variant index: both pages, each file of the version, each link."""
    as_json, as_html = read_pages(client, index_url, plan.project)
    if as_json is None or as_html is None:
        form = "JSON (PEP 691)" if as_json is None else "HTML (PEP 503)"
        return [IndexFinding(code="no-page", file=label, message=f"{index_url}: no {form} project page")]
    out = compare_pages(as_json, as_html)
    for f in as_json.files:
        if of_version(f, plan.project, plan.version):
            prov = as_json.provenance.get(f.filename, "")
            out += file_findings(f, prov, provenance=plan.provenance)
            out += link_findings(client, f, prov if plan.provenance else "")
    return out


def check_variants(client: Client, plan: CheckPlan) -> tuple[list[IndexFinding], dict[str, str]]:
    """The variant index's ``*-variants.json`` of the version: served as listed, as recorded."""
    if plan.variants_index is None:
        return [], {}
    as_json, _ = read_pages(client, plan.variants_index, plan.project)
    if as_json is None:  # no variant index served here (the lifecycle publishes it with the release alone)
        return [], {}
    name = f"{canonicalize_name(plan.project).replace('-', '_')}-{plan.version}-variants.json"
    listed = next((f for f in as_json.files if f.filename == name), None)
    if listed is None:  # none of this version published yet: nothing to hold
        return [], {}
    served = served_sha256(client, listed.url)
    recorded = (plan.recorded_variants or {}).get(name)
    return variants_json_findings(name, served, listed.sha256, recorded), ({name: served} if served else {})


def check(client: Client, plan: CheckPlan, resolvers: Resolvers, *, workers: int,
          show: Callable[[str], None] = lambda line: None) -> Checked:
    """Every check of the channel: its pages and bytes, variants.json, then each cell by pip and uv."""
    findings: list[IndexFinding] = []
    for label, url in sorted(plan.indexes.items()):
        try:
            findings += check_label(client, plan, label, url)
        except (AuditError, requests.RequestException) as exc:
            findings.append(IndexFinding(code="unreadable", file=label, message=str(exc)))
    variant_findings, variants = check_variants(client, plan)
    jobs = [(resolver, c, plan.indexes[c.label]) for c in plan.cells for resolver in RESOLVERS]
    results = resolve(resolvers, jobs, plan.project, workers=workers, show=show)
    return Checked(findings=(*findings, *variant_findings), rows=tuple(coverage_table(plan.cells, results)),
                   variants_json=variants)


def record(plan: CheckPlan, checked: Checked, channel: str) -> dict[str, object]:
    """The coverage record published beside the index (``coverage.json``): the cells, the findings, and the
    variants.json digests (the first check's are kept: what later checks hold it to)."""
    return {"project": plan.project, "version": plan.version, "channel": channel,
            "cells": list(checked.rows), "missing": checked.missing,
            "findings": [f.to_json() for f in checked.findings],
            "variants_json": {**checked.variants_json, **(plan.recorded_variants or {})}}


def recorded_variants(previous: bytes | None) -> dict[str, str] | None:
    """The variants.json digests an earlier coverage record holds, every version's (each name carries its
    version; None: no record yet)."""
    if previous is None:
        return None
    try:
        data = json.loads(previous)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("variants_json"), dict):
        return None
    return {str(k): str(v) for k, v in data["variants_json"].items()}
