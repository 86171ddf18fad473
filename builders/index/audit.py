"""Audit a published index against the matrix: does it hold exactly the promised files?

For one channel (``pypi``, or a variant label's own index) the matrix promises one wheel per
target published there, with a file name, a version, Requires-Dist and Requires-Python. The
audit reads the index's project page (PEP 691 JSON, or PEP 503 HTML with its PEP 658/714
attributes) and each promised file's metadata: the ``.metadata`` file the index declares, or,
where it declares none, ``METADATA`` read out of the wheel with HTTP range requests
(:mod:`builders.index.remote`: the zip's end record, its central directory, then the one
member, all through the zip reader a wheel on disk is read with). Whole wheels are never
downloaded.

What it reports (:class:`Drift`, each with a stable code): ``missing`` files, ``unexpected``
files (a dropped Python, an excluded combination, another channel's wheel), ``wrong-tag``
(a file in place of a promised one, with other tags), ``requires-dist``, ``requires-python``,
``yanked``, and metadata that cannot be read or does not match its declared hash.

The index URL comes from the command line or pip's configuration, never from this code.
"""

from __future__ import annotations

import email.message
import email.parser
import email.policy
import hashlib
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

import requests
from packaging.requirements import Requirement
from packaging.tags import Tag
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import Version

from builders.base.errors import AuditError, SelectionError
from builders.index.remote import (
    MAX_METADATA,
    Client,
    IndexFile,
    RangeUnsupported,
    is_metadata,
    read_project,
    remote_member,
)
from builders.matrix.model import Matrix, PythonVersion
from builders.matrix.policy import dropped_pythons, exclusion_for
from builders.matrix.targets import Target, expand, target_id, wheel_filename
from builders.wheel import metadata_rules
from builders.wheel.pypi_form import public_version, pypi_requirements
from builders.wheel.verify import platform_kind
from builders.wheel.zipcheck import printable

PYPI = "pypi"


# --- what the matrix promises ------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Promise:
    """One file a channel must hold."""

    filename: str
    target: Target
    version: Version
    requirements: tuple[Requirement, ...] | None  # None: the project lists none; the variant's must be there

    @property
    def tag(self) -> Tag:
        return self.target.tag


def channels(matrix: Matrix) -> tuple[str, ...]:
    return (PYPI, *(v.label for v in matrix.variants))


def promises(matrix: Matrix, channel: str) -> dict[str, Promise]:
    """File name -> promise, for every target ``channel`` publishes."""
    if channel not in channels(matrix):
        raise SelectionError(f"--channel {channel!r}: not a channel of the matrix; one of {', '.join(channels(matrix))}")
    targets, _excluded = expand(matrix)
    out = {}
    for t in targets:
        if channel == PYPI and t.on_pypi:
            name = wheel_filename(t.project.name, public_version(matrix), t.tag)
            out[name] = Promise(filename=name, target=t, version=public_version(matrix),
                                requirements=pypi_requirements(matrix) if matrix.project.declares_requirements else None)
        elif channel == t.variant.label:
            out[t.wheel_name] = Promise(filename=t.wheel_name, target=t, version=t.version,
                                        requirements=t.declared_requirements)
    return out


# --- the audit ---------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Drift:
    """One way the index differs from what the matrix promises."""

    code: str
    file: str
    message: str
    rule: str = ""  # the builders.wheel.metadata_rules code a METADATA drift comes from

    def to_json(self) -> dict[str, str]:
        return {"code": self.code, "file": self.file, "message": self.message}


@dataclass(frozen=True, kw_only=True)
class Audit:
    index_url: str
    channel: str
    project: str
    version: str
    promised: int
    listed: int
    drift: tuple[Drift, ...]
    bytes_read: Mapping[str, int]
    requests: int

    def to_json(self) -> dict[str, object]:
        return {"index_url": self.index_url, "channel": self.channel, "project": self.project,
                "version": self.version, "promised": self.promised, "listed": self.listed,
                "drift": [d.to_json() for d in self.drift], "bytes_read": dict(self.bytes_read),
                "requests": self.requests}


def audit(matrix: Matrix, channel: str, index_url: str, client: Client | None = None,
          targets: Collection[str] | None = None) -> Audit:
    """Compare the index's files of this release with what ``channel`` promises: for ``targets`` (ids) alone when
    given, so that a selection's index is held to that selection, and another target's file is neither missing nor
    unexpected there."""
    client = client or Client()
    every = promises(matrix, channel)
    promised = {n: p for n, p in every.items() if targets is None or p.target.id in targets}
    listed = read_project(client, index_url, matrix.project.name)
    files = [f for f in listed or () if _this_release(f.filename, matrix) and (f.filename in promised
                                                                                or f.filename not in every)]
    drift = [Drift(code="missing", file=matrix.project.name, message=f"the index has no project "
                   f"{matrix.project.canonical_name!r} at {index_url}")] if listed is None else []
    drift += compare(matrix, channel, promised, files, lambda f: read_metadata(client, f))
    return Audit(index_url=index_url, channel=channel, project=matrix.project.name,
                 version=str(matrix.project.version), promised=len(promised), listed=len(files), drift=tuple(drift),
                 bytes_read=dict(client.read), requests=client.requests)


def compare(matrix: Matrix, channel: str, promised: Mapping[str, Promise], files: Sequence[IndexFile],
            metadata: Callable[[IndexFile], bytes]) -> list[Drift]:
    """Every drift between the promises and the index's files of this release."""
    present = {f.filename: f for f in files}
    missing = {name: p for name, p in promised.items() if name not in present}
    drift: list[Drift] = []
    for f in files:
        fulfils = promised.get(f.filename) or _fulfils(f.filename, missing)
        if fulfils is not None:
            missing.pop(fulfils.filename, None)
            drift += check_file(matrix, fulfils, f, metadata)
            continue
        replaced = _replaces(f.filename, missing)
        if replaced is not None:
            del missing[replaced.filename]
            drift.append(Drift(code="wrong-tag", file=f.filename, message=f"in place of {replaced.filename} "
                               f"({replaced.target.id}): tags {_tags_of(f.filename)} instead of {replaced.tag}"))
        else:
            drift.append(Drift(code="unexpected", file=f.filename, message=why_unexpected(matrix, channel, f.filename)))
    drift += [Drift(code="missing", file=name, message=f"{p.target.id} is promised on this channel")
              for name, p in sorted(missing.items())]
    return drift


def _this_release(filename: str, matrix: Matrix) -> bool:
    """Whether ``filename`` is a file of this project's release (other releases are not audited)."""
    try:
        if filename.endswith(".whl"):
            name, version, _build, _tags = parse_wheel_filename(filename)
        else:
            name, version = parse_sdist_filename(filename)
    except (InvalidWheelFilename, InvalidSdistFilename):
        return False
    return name == matrix.project.canonical_name and version.public == matrix.project.version.public


def _tags_of(filename: str) -> str:
    if not filename.endswith(".whl"):
        return "(not a wheel)"
    return ".".join(sorted(str(t) for t in parse_wheel_filename(filename)[3]))


def _fulfils(filename: str, missing: Mapping[str, Promise]) -> Promise | None:
    """The missing promise ``filename`` keeps under a compressed tag set (PEP 425): its tags
    include the promised one and add only siblings of it (same Python, ABI, OS, architecture),
    as in ``...-manylinux2014_x86_64.manylinux_2_17_x86_64.manylinux_2_28_x86_64.whl``."""
    if not filename.endswith(".whl"):
        return None
    _name, version, _build, tags = parse_wheel_filename(filename)
    for p in missing.values():
        kind = (p.tag.interpreter, p.tag.abi, os_arch(p.tag.platform))
        if version == p.version and p.tag in tags and all((t.interpreter, t.abi, os_arch(t.platform)) == kind
                                                          for t in tags):
            return p
    return None


def _replaces(filename: str, missing: Mapping[str, Promise]) -> Promise | None:
    """The missing promise that ``filename`` stands in for: same version, Python and ABI, the
    same operating system and architecture, other tags (an unrepaired ``linux_x86_64`` wheel)."""
    if not filename.endswith(".whl"):
        return None
    _name, version, _build, tags = parse_wheel_filename(filename)
    for p in missing.values():
        want = p.tag
        if version == p.version and any((t.interpreter, t.abi) == (want.interpreter, want.abi)
                                        and os_arch(t.platform) == os_arch(want.platform) for t in tags):
            return p
    return None


def os_arch(platform: str) -> tuple[str, str]:
    """``manylinux_2_28_x86_64`` and ``musllinux_1_2_x86_64`` are both ("linux", "x86_64")."""
    family, arch = platform_kind(platform)
    return {"manylinux": "linux", "musllinux": "linux", "macosx": "macos"}.get(family, family), arch


def why_unexpected(matrix: Matrix, channel: str, filename: str) -> str:
    """Why a file of this release does not belong on ``channel``: dropped, excluded, elsewhere."""
    if not filename.endswith(".whl"):
        return "not a wheel; the matrix promises only wheels"
    _name, version, _build, tags = parse_wheel_filename(filename)
    label = version.local or ""
    if channel == PYPI and label:
        return f"labelled version {version}: labelled wheels belong on their variant's index, not PyPI"
    if channel != PYPI and label != channel:
        return f"version {version} carries label {label or '(none)'!r}, not this index's {channel!r}"
    for tag in sorted(tags, key=str):
        reason = _why_tag(matrix, channel, tag)
        if reason:
            return reason
    return f"tags {_tags_of(filename)}: no target of the matrix has them"


def _why_tag(matrix: Matrix, channel: str, tag: Tag) -> str:
    python = _python_of(tag.abi)
    if python is None:
        return ""
    for dropped_python, d in dropped_pythons(matrix):
        if dropped_python == python:
            return d.describe()
    platform = next((p for p in matrix.platforms if platform_kind(p.wheel_platform) == platform_kind(tag.platform)), None)
    if platform is None:
        return ""
    labels = [channel] if channel != PYPI else [label for name, label in matrix.channels.pypi if name == platform.name]
    for label in labels:
        rule = exclusion_for(target_id(label, python, platform.name), matrix.exclusions)
        if rule is not None:
            return f"excluded ({target_id(label, python, platform.name)}): {rule.reason}"
    if channel == PYPI and not labels:
        return f"nothing is published to PyPI for {platform.name}"
    return ""


def _python_of(abi: str) -> PythonVersion | None:
    match = re.fullmatch(r"cp(\d)(\d+)(t?)", abi)
    if not match:
        return None
    return PythonVersion(major=int(match.group(1)), minor=int(match.group(2)), free_threaded=bool(match.group(3)))


def check_file(matrix: Matrix, promise: Promise, f: IndexFile, metadata: Callable[[IndexFile], bytes]) -> list[Drift]:
    """A promised file that is there: not yanked, and its metadata what the matrix says."""
    drift = []
    if f.yanked is not None:
        drift.append(Drift(code="yanked", file=f.filename, message=f"yanked{': ' + f.yanked if f.yanked else ''}"))
    try:
        raw = metadata(f)
    except (AuditError, RangeUnsupported, requests.RequestException) as exc:
        return [*drift, Drift(code="metadata-unreadable", file=f.filename, message=printable(str(exc)))]
    meta = email.parser.BytesParser(policy=email.policy.compat32).parsebytes(raw)
    drift += metadata_drift(matrix, promise, meta, f)
    return drift


# What each METADATA rule's problem is called here (builders.wheel.metadata_rules holds the rules).
METADATA_CODES = {"name": "metadata", "version": "metadata", "requires-python": "requires-python",
                  "requires-python-missing": "requires-python", "requires-python-invalid": "requires-python",
                  "requires-python-admits-dropped": "requires-python",
                  "requires-dist": "requires-dist", "requires-dist-invalid": "requires-dist"}


def metadata_drift(matrix: Matrix, promise: Promise, meta: email.message.Message, f: IndexFile) -> list[Drift]:
    """The METADATA rules (builders.wheel.metadata_rules), then whether the index says the same Requires-Python."""
    want = metadata_rules.Wanted(project=matrix.project.name, version=promise.version,
                                 requires_python=matrix.project.requires_python, requirements=promise.requirements,
                                 dropped=matrix.dropped, required=promise.target.variant.requirements)
    have = metadata_rules.Headers.of(meta)
    found = metadata_rules.problems(have, want)
    drift = [Drift(code=METADATA_CODES[p.code], file=f.filename, message=p.message, rule=p.code) for p in found]
    if not any(p.code == "requires-python-invalid" for p in found):
        drift += _index_requires_python_drift(have.requires_python, f)
    return drift


def _index_requires_python_drift(text: str | None, f: IndexFile) -> list[Drift]:
    """The index's data-requires-python is the wheel's METADATA Requires-Python, as text."""
    if f.requires_python is None or not text or f.requires_python == text.strip():
        return []
    return [Drift(code="requires-python", file=f.filename, message=f"the index says Requires-Python "
                  f"{f.requires_python}, the wheel's METADATA {text.strip()}")]


def read_metadata(client: Client, f: IndexFile) -> bytes:
    """The file's METADATA: its PEP 658 ``.metadata`` file (hash-checked), else out of the wheel."""
    if f.metadata:
        got = client.get(f.url + ".metadata", limit=MAX_METADATA, kind="metadata")
        if got is None:
            raise AuditError(f"{f.url}.metadata: declared by the index but not there")
        data = got[1]
        if f.metadata_sha256 and hashlib.sha256(data).hexdigest() != f.metadata_sha256:
            raise AuditError(f"{f.url}.metadata: sha256 differs from the index's {f.metadata_sha256}")
        return data
    return remote_member(client, f.url, is_metadata)


# --- output ------------------------------------------------------------------------------------


def to_markdown(result: Audit) -> str:
    """A job-summary-sized report: the verdict, the counts, one row per drift."""
    verdict = "no drift" if not result.drift else f"{len(result.drift)} drift finding(s)"
    read = ", ".join(f"{k} {v:,} bytes" for k, v in result.bytes_read.items())
    out = [f"# Audit of {_md(result.project)} {_md(result.version)} on {_md(result.channel)}: {verdict}", "",
           f"Index: `{_md(result.index_url)}`; {result.promised} file(s) promised, {result.listed} listed for this "
           f"release; read {read} in {result.requests} request(s).", ""]
    if result.drift:
        out += ["| drift | file | what |", "|---|---|---|"]
        out += [f"| {d.code} | `{_md(d.file)}` | {_md(d.message)} |" for d in result.drift]
        out.append("")
    return "\n".join(out)


def _md(text: str) -> str:
    return " ".join(str(text).replace("<", "&lt;").replace("|", "\\|").replace("`", "'").split())


def configured_index_url(listing: str) -> str | None:
    """The index URL in ``pip config list`` output (environment first, then the config files)."""
    values = {}
    for line in listing.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values[key.strip()] = value.strip().strip("'\"")
    for key in (":env:.index-url", "download.index-url", "install.index-url", "global.index-url"):
        if values.get(key):
            return values[key]
    return None
