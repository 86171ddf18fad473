"""Promotion without a rebuild: the validated candidate's bytes, copied from test to release, then PyPI.

Plan, preflight, apply. The plan reads the bucket (the test channel's pages for the release's
version, the release channel's pages) and the validation records; the preflight refuses,
before anything irreversible, when

- a planned target was neither validated (passed on some host) nor accepted as not runnable (the
  matrix's ``channels.promotion.accept_not_runnable``, each with its reason, or ``--accept-not-runnable``),
  or the file the test channel serves for it is not the one that passed;
- a release file would be new bytes under a published name (a release file never changes);
- a PyPI file is over the project's file limit (``channels.promotion.pypi_file_limit_mb``, by default
  PyPI's 100 MB), the PyPI files over the release's total budget (``pypi_total_limit_gb``, 10 GB), or a
  PyPI file is not the one validated from the staging index;
- the version is already on the package server.

Apply then copies each file server-side from test to release, reads every copy back and checks
its sha256, writes the release index's pages (files first, pages last, as ``publish`` does), and
only then uploads the PyPI wheels (twine, through :mod:`builders.base.process`), then polls the
package server until it serves each of them with its sha256. A refusal writes nothing anywhere.
"""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name, parse_wheel_filename

from builders.base.errors import AuditError, PreflightRefused
from builders.base.process import run
from builders.matrix.model import Matrix
from builders.matrix.promotion_policy import FILE_LIMIT_MB, TOTAL_LIMIT_GB, AcceptedNotRunnable
from builders.matrix.release_channels import ChannelName
from builders.matrix.targets import Target
from builders.release.mirror import RECORD
from builders.release.objectstore import Bucket
from builders.release.publish import SiteEntry, Upload, index_pages, published_entries
from builders.wheel.archive import file_sha256

MB = 1_000_000


@dataclass(frozen=True, kw_only=True)
class Copy:
    source: str
    dest: str
    sha256: str


@dataclass(frozen=True, kw_only=True)
class PypiFile:
    path: Path
    sha256: str
    size: int


@dataclass(frozen=True, kw_only=True)
class PypiLimits:
    file_mb: float = FILE_LIMIT_MB
    total_gb: float = TOTAL_LIMIT_GB


@dataclass(frozen=True, kw_only=True)
class Accepted:
    """A planned target released although no host could run its validation: why it could not, and the entry
    that accepts it (its glob and reason, from the matrix or the command line)."""

    target: str
    not_runnable: str
    by: AcceptedNotRunnable

    def to_json(self) -> dict[str, str]:
        return {"not_runnable": self.not_runnable, "accepted_by": self.by.targets, "reason": self.by.reason}

    def __str__(self) -> str:
        return f"{self.target} not runnable ({self.not_runnable}), accepted by {self.by.targets!r}: {self.by.reason}"


@dataclass(frozen=True, kw_only=True)
class Promotion:
    version: str
    copies: tuple[Copy, ...]
    unchanged: tuple[str, ...]
    pages: tuple[Upload, ...]
    pypi: tuple[PypiFile, ...]
    refusals: tuple[str, ...]
    accepted: tuple[Accepted, ...] = ()
    limits: PypiLimits = field(default_factory=PypiLimits)

    def to_json(self) -> dict[str, Any]:
        return {"version": self.version, "copied": [c.dest for c in self.copies], "unchanged": list(self.unchanged),
                "release_files": {c.dest: c.sha256 for c in self.copies},
                "pypi": {f.path.name: f.sha256 for f in self.pypi}, "refusals": list(self.refusals),
                "accepted_not_runnable": {a.target: a.to_json() for a in self.accepted},
                "pypi_limits": {"file_mb": self.limits.file_mb, "total_gb": self.limits.total_gb}}


# --- validation records ---------------------------------------------------------------------------


def verdicts(records: Iterable[Mapping[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """target id -> its entries across every record (several hosts validate parts of one release)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for data in records:
        for entry in data.get("targets", []):
            out.setdefault(entry["target"], []).append(entry)
    return out


def target_refusals(targets: Sequence[Target], found: Mapping[str, list[dict[str, Any]]],
                    accept: Sequence[AcceptedNotRunnable]) -> list[str]:
    """Why a planned target stops the release: not validated anywhere, failed, or not runnable and not accepted."""
    out = []
    for target in targets:
        entries = found.get(target.id, [])
        if any(e["status"] == "passed" for e in entries):
            continue
        failed = [e for e in entries if e["status"] == "failed"]
        if failed:
            out.append(f"{target.id} failed validation: {failed[0].get('reason', '')}")
        elif not entries:
            out.append(f"{target.id} was never validated (no validation record names it)")
        elif _acceptance(target.id, accept) is None:
            out.append(f"{target.id} was not runnable where it was validated ({entries[0].get('reason', '')}) and "
                       "nothing accepts it (the matrix's channels.promotion.accept_not_runnable, or "
                       "--accept-not-runnable)")
    return out


def accepted_targets(targets: Sequence[Target], found: Mapping[str, list[dict[str, Any]]],
                     accept: Sequence[AcceptedNotRunnable]) -> list[Accepted]:
    """The planned targets released unvalidated: validated nowhere, not runnable where tried, and accepted."""
    out = []
    for target in targets:
        entries = found.get(target.id, [])
        by = _acceptance(target.id, accept)
        if by is not None and entries and all(e["status"] == "not-runnable" for e in entries):
            out.append(Accepted(target=target.id, not_runnable=entries[0].get("reason", ""), by=by))
    return out


def _acceptance(target_id: str, accept: Sequence[AcceptedNotRunnable]) -> AcceptedNotRunnable | None:
    return next((a for a in accept if a.accepts(target_id)), None)


def passed_sha(found: Mapping[str, list[dict[str, Any]]]) -> dict[str, str]:
    """file name -> the sha256 validate installed, for every file that passed."""
    return {e["filename"]: e["sha256"] for entries in found.values() for e in entries
            if e["status"] == "passed" and e.get("filename") and e.get("sha256")}


# --- the plan -------------------------------------------------------------------------------------


def plan(bucket: Bucket, m: Matrix, targets: Sequence[Target], records: Sequence[Mapping[str, Any]],
         pypi_records: Sequence[Mapping[str, Any]], pypi_files: Sequence[Path], *,
         accept: Sequence[AcceptedNotRunnable], limits: PypiLimits, on_server: Sequence[str] = ()) -> Promotion:
    """What promoting ``m``'s version does; ``refusals`` say why it must not (module docstring). ``accept`` and
    ``limits``: the matrix's ``channels.promotion`` unless the command line overrides them (``promote-release``)."""
    found = verdicts(records)
    refusals = target_refusals(targets, found, accept)
    validated = passed_sha(found)
    test, release = m.channels.channel(ChannelName.TEST), m.channels.channel(ChannelName.RELEASE)
    copies: list[Copy] = []
    unchanged: list[str] = []
    pages: list[Upload] = []
    for label in sorted({t.variant.label for t in targets}):
        src, dest = test.index_path(label), release.index_path(label)
        chosen = _release_entries(published_entries(bucket, src, label), m, refusals, validated)
        stored = published_entries(bucket, dest, label)
        kept = dict(stored)
        for key, entry in chosen.items():
            target_key = dest + key[len(src):]
            old = stored.get(target_key)
            if old is not None and old.info.sha256 != entry.info.sha256:
                refusals.append(f"{target_key} is released with sha256 {old.info.sha256}, the candidate's is "
                                f"{entry.info.sha256}: a released file never changes")
            elif old is not None:
                unchanged.append(target_key)
            else:
                copies += [Copy(source=key, dest=target_key, sha256=entry.info.sha256),
                           Copy(source=f"{key}.metadata", dest=f"{target_key}.metadata",
                                sha256=entry.info.metadata_sha256)]
                kept[target_key] = entry
        pages += index_pages(bucket, dest, kept, bucket.read_if_there(f"{src}{RECORD}"))
    pypi = [PypiFile(path=p, sha256=file_sha256(p), size=p.stat().st_size) for p in sorted(pypi_files)]
    refusals += pypi_refusals(pypi, verdicts(pypi_records), limits, on_server, str(m.project.version.public))
    return Promotion(version=str(m.project.version), copies=tuple(copies), unchanged=tuple(unchanged),
                     pages=tuple(pages), pypi=tuple(pypi), refusals=tuple(refusals),
                     accepted=tuple(accepted_targets(targets, found, accept)), limits=limits)


def _release_entries(test: dict[str, SiteEntry], m: Matrix, refusals: list[str], validated: Mapping[str, str]) -> dict[str, SiteEntry]:
    """The test index's files this release takes: the project's wheels of this version (each one validated is
    the very file validated) and every mirrored requirement next to them."""
    own = canonicalize_name(m.project.name)
    out = {}
    for key, entry in test.items():
        info = entry.info
        if info.project == own:
            if parse_wheel_filename(info.filename)[1].public != m.project.version.public:
                continue
            want = validated.get(info.filename)
            if want is not None and want != info.sha256:
                refusals.append(f"{key}: the test channel serves sha256 {info.sha256}, validate installed {want} "
                                "(a later candidate replaced it: validate again)")
        out[key] = entry
    return out


def pypi_refusals(files: Sequence[PypiFile], found: Mapping[str, list[dict[str, Any]]], limits: PypiLimits,
                  on_server: Sequence[str], version: str) -> list[str]:
    out = [f"{f.path.name}: {f.size / MB:.1f} MB, over the project's PyPI file limit of {limits.file_mb:g} MB"
           for f in files if f.size > limits.file_mb * MB]
    total = sum(f.size for f in files)
    if total > limits.total_gb * 1000 * MB:
        out.append(f"the PyPI files are {total / MB:.1f} MB in all, over the release budget of {limits.total_gb:g} GB")
    validated = passed_sha(found)
    out += [f"{f.path.name} was not validated from the staging index (or other bytes were)" for f in files
            if validated.get(f.path.name) != f.sha256]
    if on_server:
        out.append(f"version {version} is already on the package server: {', '.join(on_server[:5])} "
                   "(a version is uploaded once: release a new one)")
    return out


def files_on_server(simple_url: str, project: str, version: str) -> list[str]:
    """The file names of ``version`` the package server's simple page lists (PEP 691 JSON, else PEP 503 HTML)."""
    return sorted(served_files(simple_url, project, version))


def served_files(simple_url: str, project: str, version: str) -> dict[str, str]:
    """file name -> the sha256 the package server's simple page declares (``""`` if none), for ``version``."""
    url = simple_url.rstrip("/") + f"/{canonicalize_name(project)}/"
    request = urllib.request.Request(url, headers={"Accept": "application/vnd.pypi.simple.v1+json, text/html;q=0.1"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            body, kind = response.read(), response.headers.get("Content-Type", "")
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return {}
        raise
    found = ({f["filename"]: f.get("hashes", {}).get("sha256", "") for f in json.loads(body)["files"]}
             if "json" in kind else _html_links(body.decode("utf-8", "replace")))
    return {name: sha for name, sha in found.items() if _version_of(name) == version}


def _html_links(page: str) -> dict[str, str]:
    import re
    from urllib.parse import unquote

    out = {}
    for href in re.findall(r'href="([^"]+)"', page):
        path, _, fragment = href.partition("#")
        out[unquote(path.rsplit("/", 1)[-1])] = fragment.removeprefix("sha256=") if fragment.startswith("sha256=") else ""
    return out


def _version_of(filename: str) -> str | None:
    from packaging.utils import InvalidWheelFilename, parse_sdist_filename

    try:
        if filename.endswith(".whl"):
            return str(parse_wheel_filename(filename)[1])
        return str(parse_sdist_filename(filename)[1])
    except (InvalidWheelFilename, ValueError):
        return None


# --- apply ---------------------------------------------------------------------------------------


def preflight(promotion: Promotion) -> None:
    if promotion.refusals:
        raise PreflightRefused(f"{len(promotion.refusals)} reason(s) not to release {promotion.version}; nothing was "
                               "copied or uploaded:\n  " + "\n  ".join(promotion.refusals))


def copy_release(bucket: Bucket, promotion: Promotion) -> None:
    """Every file copied test -> release and read back (sha256 unchanged), then the release pages."""
    for copy in promotion.copies:
        bucket.copy(copy.source, copy.dest)
    for copy in promotion.copies:
        actual = bucket.sha256(copy.dest)
        if actual != copy.sha256:
            raise PreflightRefused(f"{copy.dest}: the copy's sha256 is {actual}, not {copy.sha256}; the release "
                                   "pages were not written (remove the copies and promote again)")
    for page in promotion.pages:
        bucket.upload(page.key, page.source)


def audit_pypi(promotion: Promotion, simple_url: str, project: str, *, timeout: float = 300.0,
               interval: float = 5.0) -> None:
    """Poll the package server until it lists every uploaded file with the planned sha256 (a CDN may lag);
    :class:`AuditError` naming what it still lacks when ``timeout`` runs out."""
    import time

    want = {f.path.name: f.sha256 for f in promotion.pypi}
    deadline = time.monotonic() + timeout
    while True:
        served = served_files(simple_url, project, promotion.version.split("+")[0])
        wrong = sorted(n for n, sha in want.items() if served.get(n) != sha)
        if not wrong:
            return
        if time.monotonic() >= deadline:
            raise AuditError(f"{simple_url}: after {timeout:g} s the package server still does not serve "
                             f"{', '.join(wrong)} with the uploaded sha256")
        time.sleep(interval)


def upload_pypi(promotion: Promotion, repository_url: str, env: Mapping[str, str]) -> None:
    """twine, last: every PyPI file in one command (twine skips none; ``--skip-existing`` is never used)."""
    if promotion.pypi:
        run([sys.executable, "-m", "twine", "upload", "--non-interactive", "--disable-progress-bar",
             "--repository-url", repository_url, *(str(f.path) for f in promotion.pypi)], env=env, timeout=3600)

