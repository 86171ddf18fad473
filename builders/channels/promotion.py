"""Promotion without a rebuild: exactly the manifest's validated files, copied from test to release, then PyPI.

The plan reads the candidate's release manifest (:mod:`builders.channels.manifest`), the bucket (the test
channel's pages and objects, the release channel's objects) and the package server; the preflight refuses,
before anything irreversible, when

- the manifest is not a candidate of the matrix's version, or not the run the dispatch names (version,
  tag, commit, run id), or a record validated another manifest (or none);
- a planned target has no file in the manifest, or its file was neither validated with the manifest's
  bytes by every installer (passed on some host) nor accepted as not runnable (the matrix's
  ``channels.promotion.accept_not_runnable``, each with its reason, or ``--accept-not-runnable``);
- the test channel does not serve the manifest's bytes (its page, and its object's checksum);
- a release key already holds other bytes (the object's checksum, whatever the pages say: a released
  object never changes);
- the PyPI files are not exactly the manifest's, one was not validated from staging with its bytes,
  one is over the project's file limit (or the limit declared is over what PyPI grants), the project's
  files already on the package server plus these are over its total limit, one's requirements would
  install another variant's runtime on its own platform, the version is on the package server, the
  server cannot be asked, or the upload could not run (twine, credentials).

Only the manifest's files are released: a file the test channel still holds from an earlier candidate
is listed as left out. The validation records are weighed, and the promotion applied through the
release ledger, in :mod:`builders.channels.promoting`; here are the reads of the bucket and the package
server the preflight needs, and the PyPI upload and poll. A refusal writes nothing anywhere.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import Version

from builders.base.errors import AuditError, PreflightRefused
from builders.base.process import run
from builders.channels.manifest import LABELLED, PYPI, Manifest, ManifestFile, identity_problems
from builders.channels.objectstore import Bucket
from builders.channels.publication import SiteEntry, published_entries
from builders.index import PAGE_LIMIT, PAGE_TIMEOUT, remote
from builders.matrix.model import Matrix
from builders.matrix.promotion_policy import FILE_LIMIT_MB, TOTAL_LIMIT_GB, AcceptedNotRunnable
from builders.matrix.release_channels import ChannelName
from builders.matrix.targets import Target
from builders.wheel.archive import file_sha256

MB = 1_000_000
PYPI_MAX_FILE_MB = 2**30 / MB  # the most PyPI has granted a project per file (1 GiB)


@dataclass(frozen=True, kw_only=True)
class Copy:
    source: str
    dest: str
    sha256: str


@dataclass(frozen=True, kw_only=True)
class Released:
    """One file the release holds afterwards, as the test channel serves it: where its copy comes from and what the
    release ledger records of it (the wheel, and its PEP 658 ``.metadata``)."""

    source: str
    dest: str
    sha256: str
    size: int
    requires_python: str | None
    metadata_sha256: str
    metadata_size: int
    target: str = ""  # the target id of the project's own wheel; "" for a requirement mirrored beside it
    provenance: bool = False  # the test channel's page links its PEP 740 provenance (``<source>.provenance``)


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
class Server:
    """What the package server says before anything is uploaded: this version's files, and the size of every file
    of the project it holds (PyPI's total limit counts them all); ``problem`` when it could not be asked."""

    on_server: tuple[str, ...] = ()
    served: tuple[tuple[str, str], ...] = ()  # (name, sha256 its page declares) of this version's files
    project_bytes: int = 0
    problem: str = ""


@dataclass(frozen=True, kw_only=True)
class Accepted:
    """A planned target released although no host could run its validation: why it could not, and the entry
    that accepts it (its glob and reason, from the matrix or the command line)."""

    target: str
    not_runnable: str
    by: AcceptedNotRunnable

    def __str__(self) -> str:
        return f"{self.target} not runnable ({self.not_runnable}), accepted by {self.by.targets!r}: {self.by.reason}"


@dataclass(frozen=True, kw_only=True)
class Evidence:
    """What the preflight weighs besides the bucket: the manifest, the records, the PyPI files and the world."""

    manifest: Manifest
    pypi_files: Sequence[Path] = ()
    accept: Sequence[AcceptedNotRunnable] = ()
    limits: PypiLimits = field(default_factory=PypiLimits)
    expected: Mapping[str, str] = field(default_factory=dict)  # version, tag, commit, run_id of the run to release
    server: Server = field(default_factory=Server)
    upload_problem: str = ""  # why the PyPI upload could not run (no twine, no credentials), checked up front
    requirement_problems: Sequence[str] = ()  # a PyPI file's Requires-Dist wrong for its platform


@dataclass(frozen=True, kw_only=True)
class Promotion:
    version: str
    copies: tuple[Copy, ...]
    unchanged: tuple[str, ...]
    pypi: tuple[PypiFile, ...]
    refusals: tuple[str, ...]
    accepted: tuple[Accepted, ...] = ()
    limits: PypiLimits = field(default_factory=PypiLimits)
    manifest: str = ""  # the manifest's digest
    left_out: tuple[str, ...] = ()  # the project's files of this version on test that the manifest does not name
    before: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (release folder, the wheels its pages listed before)
    held: tuple[tuple[str, str], ...] = ()  # every release file of this release afterwards (copied or already there)
    pypi_done: tuple[str, ...] = ()  # PyPI files the package server holds already with the manifest's sha256
    release: tuple[Released, ...] = ()  # every file of this release on the release channel, copied or not yet
    folders: tuple[tuple[str, str], ...] = ()  # (test folder, release folder) of each label this release writes

    @property
    def released(self) -> dict[str, str]:
        """Every release wheel of this promotion, copied now or by an earlier try: key -> sha256."""
        return {k: sha for k, sha in self.held if k.endswith(".whl")}



# --- the plan -------------------------------------------------------------------------------------


def plan(bucket: Bucket, m: Matrix, targets: Sequence[Target], evidence: Evidence) -> Promotion:
    """What promoting ``evidence.manifest`` does; ``refusals`` say why it must not (module docstring)."""
    manifest = evidence.manifest
    planned = {t.id for t in targets}
    files = tuple(f for f in manifest.of_form(LABELLED) if f.target in planned)
    refusals = identity_problems(manifest, m, evidence.expected)
    refusals += [f"{t.id} has no file in the manifest: the candidate did not build it"
                 for t in targets if manifest.for_target(t.id, LABELLED) is None]
    labels = {t.id: t.variant.label for t in targets}
    copies: list[Copy] = []
    unchanged: list[str] = []
    left_out: list[str] = []
    before: list[tuple[str, tuple[str, ...]]] = []
    held: list[tuple[str, str]] = []
    release: list[Released] = []
    folders: list[tuple[str, str]] = []
    for label in sorted({labels[f.target] for f in files}):
        mine = [f for f in files if labels[f.target] == label]
        step = _label_step(bucket, m, label, mine)
        copies += step.copies
        unchanged += step.unchanged
        left_out += step.left_out
        refusals += step.refusals
        before.append((step.dest, step.before))
        held += step.held
        release += step.release
        folders.append((step.src, step.dest))
    pypi = [PypiFile(path=p, sha256=file_sha256(p), size=p.stat().st_size) for p in sorted(evidence.pypi_files)]
    refusals += pypi_refusals(pypi, evidence, str(m.project.version.public))
    return Promotion(version=str(m.project.version), copies=tuple(copies), unchanged=tuple(unchanged),
                     pypi=tuple(pypi), refusals=tuple(refusals),
                     limits=evidence.limits,
                     manifest=manifest.digest, left_out=tuple(left_out), before=tuple(before), held=tuple(sorted(held)),
                     pypi_done=uploaded_already(pypi, evidence.server), release=tuple(release), folders=tuple(folders))


@dataclass(frozen=True, kw_only=True)
class _Step:
    src: str
    dest: str
    copies: tuple[Copy, ...]
    unchanged: tuple[str, ...]
    left_out: tuple[str, ...]
    refusals: tuple[str, ...]
    before: tuple[str, ...]
    held: tuple[tuple[str, str], ...]
    release: tuple[Released, ...]


def _label_step(bucket: Bucket, m: Matrix, label: str, files: Sequence[ManifestFile]) -> _Step:
    """One label's part: the manifest's files (and the requirements mirrored beside them) from test to release."""
    test, release = m.channels.channel(ChannelName.TEST), m.channels.channel(ChannelName.RELEASE)
    src, dest = test.index_path(label), release.index_path(label)
    served = published_entries(bucket, src, label)
    stored = published_entries(bucket, dest, label)
    own = canonicalize_name(m.project.name)
    wanted = {f"{src}{own}/{f.name}": f for f in files}
    refusals = [f"{key}: the test channel does not serve the manifest's file" for key in wanted if key not in served]
    chosen: dict[str, SiteEntry] = {}
    left_out = []
    for key, entry in served.items():
        if entry.info.project != own:
            chosen[key] = entry  # a requirement mirrored beside the candidate's wheels: the release installs with it
        elif key in wanted:
            refusals += _served_refusals(bucket, key, entry, wanted[key])
            chosen[key] = entry
        elif Version(entry.info.version).public == m.project.version.public:
            left_out.append(key)
    copies: list[Copy] = []
    unchanged: list[str] = []
    for key, entry in chosen.items():
        target_key = dest + key[len(src):]
        verdict = _released_state(bucket, target_key, entry)
        if verdict == "same":
            unchanged.append(target_key)
        elif verdict:
            refusals.append(verdict)
        else:
            copies += [Copy(source=key, dest=target_key, sha256=entry.info.sha256),
                       Copy(source=f"{key}.metadata", dest=f"{target_key}.metadata", sha256=entry.info.metadata_sha256)]
    held = tuple((dest + key[len(src):], entry.info.sha256) for key, entry in chosen.items())
    files_after = tuple(Released(source=key, dest=dest + key[len(src):], sha256=e.info.sha256, size=e.info.size,
                             requires_python=e.info.requires_python, metadata_sha256=e.info.metadata_sha256,
                             metadata_size=len(e.info.metadata), target=wanted[key].target if key in wanted else "",
                             provenance=e.info.provenance is not None)
                    for key, e in sorted(chosen.items()))
    return _Step(src=src, dest=dest, copies=tuple(copies), unchanged=tuple(unchanged),
                 left_out=tuple(left_out), refusals=tuple(refusals), before=tuple(sorted(stored)), held=held,
                 release=files_after)


def _served_refusals(bucket: Bucket, key: str, entry: SiteEntry, file: ManifestFile) -> list[str]:
    """The test channel's page and object for a manifest file both hold the manifest's bytes."""
    if entry.info.sha256 != file.sha256:
        return [f"{key}: the test channel lists sha256 {entry.info.sha256}, the manifest's is {file.sha256} (another "
                "candidate replaced it: promote that candidate's run, or publish and validate this one again)"]
    actual = bucket.verified_sha256(key)
    if actual != file.sha256:
        return [f"{key}: the object's bytes have sha256 {actual}, the manifest's {file.sha256} (changed after "
                "validation)"]
    return []


def _released_state(bucket: Bucket, key: str, entry: SiteEntry) -> str:
    """``"same"`` when the release key already holds these bytes, ``""`` when it is free, else why it is refused:
    the object itself decides (its checksum), not the pages, and so does its ``.metadata``."""
    if bucket.head(key) is None:
        if bucket.head(f"{key}.metadata") is not None:
            return f"{key}.metadata is released without its wheel: repair the release channel (repair-index)"
        return ""
    actual = bucket.verified_sha256(key)
    if actual != entry.info.sha256:
        return (f"{key} is released with sha256 {actual}, the candidate's is {entry.info.sha256}: a released "
                "file never changes")
    return "same"


def pypi_refusals(files: Sequence[PypiFile], evidence: Evidence, version: str) -> list[str]:
    """Everything about the PyPI files that must hold before the first irreversible write (none given: this
    promotion uploads nothing, as promote.yml's index step, whose next job uploads the preflight's files)."""
    if not files:
        return []
    limits, server = evidence.limits, evidence.server
    out = _same_files(files, evidence.manifest)
    if limits.file_mb > PYPI_MAX_FILE_MB:
        out.append(f"the declared PyPI file limit {limits.file_mb:g} MB is over the most PyPI grants "
                   f"({PYPI_MAX_FILE_MB:.0f} MB, 1 GiB): declare the limit PyPI granted the project")
    out += [f"{f.path.name}: {f.size / MB:.1f} MB, over the project's PyPI file limit of {limits.file_mb:g} MB"
            for f in files if f.size > limits.file_mb * MB]
    done = set(uploaded_already(files, server))
    total = sum(f.size for f in files if f.path.name not in done) + server.project_bytes
    if total > limits.total_gb * 1000 * MB:
        out.append(f"the project would hold {total / MB:.1f} MB on the package server ({server.project_bytes / MB:.1f} "
                   f"MB already, every release counted), over its limit of {limits.total_gb:g} GB")
    out += list(evidence.requirement_problems)
    if server.problem:
        out.append(f"the package server could not be asked whether {version} is there: {server.problem}")
    other = [n for n in server.on_server if n not in done]
    if other:  # the manifest's own files with its sha256 are a cut-short upload to finish, anything else is not
        out.append(f"version {version} is already on the package server with other files or bytes: "
                   f"{', '.join(other[:5])} (a version's file is uploaded once: release a new one)")
    if evidence.upload_problem:
        out.append(evidence.upload_problem)
    return out


def uploaded_already(files: Sequence[PypiFile], server: Server) -> tuple[str, ...]:
    """The PyPI files the package server holds already with the planned sha256: an upload cut short, done in part."""
    served = dict(server.served)
    return tuple(sorted(f.path.name for f in files if served.get(f.path.name) == f.sha256))


def _same_files(files: Sequence[PypiFile], manifest: Manifest) -> list[str]:
    want = {f.name: f.sha256 for f in manifest.of_form(PYPI)}
    have = {f.path.name: f.sha256 for f in files}
    out = [f"{name}: the manifest's PyPI file is not among the PyPI wheels given" for name in sorted(set(want) - set(have))]
    out += [f"{name}: a PyPI wheel the manifest does not name" for name in sorted(set(have) - set(want))]
    out += [f"{name}: sha256 {have[name]}, the manifest's is {want[name]}" for name in sorted(set(want) & set(have))
            if want[name] != have[name]]
    return out


def upload_problem(env: Mapping[str, str], *, trusted_publishing: bool) -> str:
    """Why this command's PyPI upload could not run, found before anything is written (``""``: it can)."""
    if trusted_publishing:
        return ""
    if importlib.util.find_spec("twine") is None:
        return "twine is not importable here: the PyPI upload would fail after the release channel was written"
    if not (env.get("TWINE_USERNAME") and env.get("TWINE_PASSWORD")):
        return ("no upload credentials: set TWINE_USERNAME and TWINE_PASSWORD (__token__ and an API token), or "
                "--trusted-publishing where a job with trusted publishing uploads")
    return ""


# --- the package server -------------------------------------------------------------------------


def server_facts(simple_url: str, project: str, version: str) -> Server:
    """The version's files and the project's total size on the package server (its PEP 691 page lists each
    file's size, PEP 700), or the problem asking it."""
    try:
        files = project_files(simple_url, project)
    except (OSError, ValueError, KeyError, AuditError) as exc:
        return Server(problem=f"{simple_url}: {exc}")
    ours = {n: sha for n, (sha, _size) in files.items() if _version_of(n) == version}
    return Server(on_server=tuple(sorted(ours)), served=tuple(sorted(ours.items())),
                  project_bytes=sum(size for _sha, size in files.values()))


def served_files(simple_url: str, project: str, version: str) -> dict[str, str]:
    """file name -> the sha256 the package server's simple page declares (``""`` if none), for ``version``."""
    return {name: sha for name, (sha, _size) in project_files(simple_url, project).items()
            if _version_of(name) == version}


def project_files(simple_url: str, project: str, *, limit: int = PAGE_LIMIT,
                  timeout: float = PAGE_TIMEOUT) -> dict[str, tuple[str, int]]:
    """file name -> (sha256 or ``""``, size or 0) of every file of ``project`` the package server lists; read
    through the bounded reader (an index builders does not control may serve a page of any size, or trickle)."""
    files = remote.read_project(remote.Client(timeout=timeout), simple_url, project, limit=limit)
    return {f.filename: (f.sha256 or "", f.size or 0) for f in files or ()}


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
                               "copied or uploaded (each reason above)")


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


def upload_pypi(files: Sequence[PypiFile], repository_url: str, env: Mapping[str, str],
                attestations: Sequence[Path] = ()) -> None:
    """twine, last, one file per command, so that a run cut short leaves whole files a rerun counts as done
    (twine skips none; ``--skip-existing`` is never used: other bytes under a name must stop the release); with
    ``attestations`` (``<wheel>.publish.attestation``, PEP 740), ``--attestations`` and the file's own."""
    for f in files:
        own = [str(a) for a in attestations if a.name.startswith(f"{f.path.name}.")]
        attest = ["--attestations", *own] if attestations else []
        run([sys.executable, "-m", "twine", "upload", "--non-interactive", "--disable-progress-bar",
             "--repository-url", repository_url, *attest, str(f.path)], env=env, timeout=3600)
