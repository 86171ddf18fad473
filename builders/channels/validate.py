"""Validate a channel's published bytes: install from its index over HTTP as a user does, then smoke-test.

The build's smoke test installs the wheel *file* it just made. This installs what the index
*serves*: for each target this host can run, a fresh venv, then

- ``pip install --index-url <the variant's index> <project>==<version>`` with pip reading no
  configuration of this machine (``PIP_CONFIG_FILE`` is the null device, no ``PIP_*`` variable),
  so the index alone must hold the wheel and every requirement, as for a user who copies the
  compatibility page's command; ``--pre`` for a nightly;
- the same with uv (``uv venv``, ``uv pip install --index-url``), reading no uv configuration;

then builders' smoke probe (:mod:`builders.wheel.smoke`: the same facts, probe and project
script as the build's smoke test) in each venv. pip's ``--report`` says which file it installed,
with its sha256: the record keeps it, so that promotion can prove it releases exactly the bytes
that passed. The PyPI form (``promote``'s wheels, public version) is validated the same way
from a staging package server before the upload.

Each target ends as ``passed``, ``failed`` (with why), ``not-runnable`` here (with why: another
platform, no such interpreter, no device where one is required) or, when the run validates whatever
the channel holds (no selection, no manifest), ``not-published``: its index lists no file of it, read
once per index before any venv is made.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from urllib.parse import unquote

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from builders.base.errors import AuditError, DeviceMissing, ProcessError, SelectionError
from builders.base.process import HostRunner, LogLike
from builders.base.sandbox import Isolation, candidate_env, isolation
from builders.channels.evidence import Containment, InstallVerdict, TargetVerdict
from builders.channels.manifest import ManifestFile
from builders.channels.promotion import project_files
from builders.families.device import require
from builders.families.hostfacts import Host
from builders.index import PAGE_LIMIT, PAGE_TIMEOUT
from builders.matrix.model import Matrix
from builders.matrix.release_channels import ChannelName, ReleaseChannel, nightly_date
from builders.matrix.targets import Target
from builders.pipeline.host import foreign
from builders.pipeline.summary import id_pattern
from builders.wheel.smoke import HIDDEN_ENV, INSTALLERS, find_uv, outcome, probe_argv, stage, venv_python

PASSED, FAILED, NOT_RUNNABLE, NOT_PUBLISHED = "passed", "failed", "not-runnable", "not-published"
STATUSES = (PASSED, FAILED, NOT_RUNNABLE, NOT_PUBLISHED)


@dataclass(frozen=True, kw_only=True)
class Source:
    """Where a target is installed from: its index (and any extra index) and what is asked for."""

    index_url: str
    requirement: str  # "<project>==2.15.0"
    dist_version: str  # the version the installed distribution must report ("2.15.0+cu132"; "2.15.0" on PyPI)
    pre: bool = False
    extra_index_urls: tuple[str, ...] = ()
    expected: ManifestFile | None = None  # the manifest's file for the target: both installers must get its bytes


def contained_as(iso: Isolation) -> Containment:
    """How the candidate's code ran, as the record holds it."""
    return Containment(pid_namespace=iso.complete, why=iso.why, environment="allowlisted")


# --- what can run here ----------------------------------------------------------------------


def not_runnable(target: Target, host: Host, env: Mapping[str, str], *, require_device: bool) -> str | None:
    """Why ``target`` cannot be installed and smoke-tested on this host, or None."""
    reason = foreign(target, host)
    if reason:
        return reason
    if host.interpreter(target.python.abi) is None:
        kind = "free-threaded CPython" if target.python.free_threaded else "CPython"
        return f"no {kind} {target.python} interpreter on this host"
    if require_device:
        try:
            require(target, env)
        except DeviceMissing as exc:
            return str(exc)
    return None


# --- one install ------------------------------------------------------------------------------


def clean_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without pip's and uv's configuration (and the variables a smoke never gets): the index alone counts."""
    kept = {k: v for k, v in env.items() if k not in HIDDEN_ENV and not k.startswith(("PIP_", "UV_"))}
    return {**kept, "PIP_CONFIG_FILE": "/dev/null", "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}


def pip_steps(python: str, venv: str, py: str, source: Source, report: str) -> list[list[str]]:
    extra = [a for url in source.extra_index_urls for a in ("--extra-index-url", url)]
    return [[python, "-m", "venv", venv],
            [py, "-m", "pip", "install", "--no-cache-dir", "--report", report, "--index-url", source.index_url, *extra,
             *(["--pre"] if source.pre else []), source.requirement]]


def uv_index_args(source: Source) -> list[str]:
    """uv searches its indexes in order and takes each package from the first that has it at all (its default
    strategy, against dependency confusion), and it puts ``--extra-index-url`` *before* ``--index-url``. Given
    pip's way, a second release's PyPI form would be looked for on PyPI alone, which holds only the first release:
    "no solution". So the index under validation goes first, the extra ones after it, the last as the default."""
    *first, last = (source.index_url, *source.extra_index_urls)
    return [*(a for url in first for a in ("--index", url)), "--default-index", last]


def uv_steps(uv: str, python: str, venv: str, py: str, source: Source, pinned: Path) -> list[list[str]]:
    """uv keeps no installation report; with a manifest, the requirement carries the manifest's sha256 in a
    requirements file, and uv (which checks a given hash against the bytes it downloaded, ``--verify-hashes``)
    installs the project's file only if it is the manifest's."""
    asked = ["-r", str(pinned)] if source.expected is not None else [source.requirement]
    return [[uv, "venv", "--no-config", "--no-project", "--python", python, venv],
            [uv, "pip", "install", "--no-config", "--no-cache", "--verify-hashes", "--python", py,
             *uv_index_args(source), *(["--prerelease", "allow"] if source.pre else []), *asked]]


def pinned_requirements(source: Source, path: Path) -> Path:
    """The requirements file of :func:`uv_steps`: the project's requirement with the manifest's sha256."""
    if source.expected is not None:
        path.write_text(f"{source.requirement} --hash=sha256:{source.expected.sha256}\n", encoding="utf-8")
    return path


def installed_file(report: Path, project: str) -> tuple[str, str]:
    """(file name, sha256) of ``project``'s file in pip's installation report."""
    from packaging.utils import canonicalize_name

    data = json.loads(report.read_text(encoding="utf-8"))
    for item in data.get("install", []):
        if canonicalize_name(item.get("metadata", {}).get("name", "")) == canonicalize_name(project):
            info = item.get("download_info", {})
            sha = info.get("archive_info", {}).get("hashes", {}).get("sha256", "")
            return unquote(info.get("url", "").split("#")[0].rsplit("/", 1)[-1]), sha
    return "", ""


def install_and_smoke(installer: str, target: Target, python: Path, source: Source, runner: HostRunner,
                      scratch: Path, progress: Progress | None = None) -> InstallVerdict:
    """One fresh venv with ``installer``, ``source`` installed into it, the smoke probe run there; ``progress``
    gets a line as each step starts (pip's venv and install are silent for half a minute)."""
    said = progress or _quiet
    venv, cwd = scratch / installer / "venv", scratch / installer / "cwd"
    cwd.mkdir(parents=True)
    py, report = venv_python(str(venv), target.platform.os), scratch / installer / "report.json"
    uv = find_uv()
    if installer == "uv" and uv is None:
        return InstallVerdict(installer=installer, status=FAILED, reason="uv is not installed with builders")
    pinned = pinned_requirements(source, scratch / installer / "requirements.txt")
    steps = (pip_steps(str(python), str(venv), py, source, str(report)) if installer == "pip"
             else uv_steps(str(uv), str(python), str(venv), py, source, pinned))
    try:
        for what, argv in zip(("a fresh venv", f"installing {source.requirement} from {source.index_url}"), steps):
            said(f"{installer}: {what}")
            runner.run(argv, env={}, timeout=target.project.timeouts.install)
    except ProcessError as exc:
        return InstallVerdict(installer=installer, status=FAILED, reason=f"install from {source.index_url} failed: "
                                                                  f"{_last_line(exc)}")
    filename, sha = installed_file(report, target.project.name) if installer == "pip" else _pinned(source)
    wrong = _not_the_manifests(source, filename, sha)
    if wrong:
        return InstallVerdict(installer=installer, status=FAILED, reason=wrong, filename=filename, sha256=sha)
    said(f"{installer}: smoke test of {filename or source.requirement}")
    return _smoked(installer, target, py, source, runner, scratch, cwd, filename, sha)


def _pinned(source: Source) -> tuple[str, str]:
    """What uv installed: with a manifest, its file (uv refused any other bytes); without one, unknown."""
    return (source.expected.name, source.expected.sha256) if source.expected is not None else ("", "")


def _not_the_manifests(source: Source, filename: str, sha: str) -> str:
    """Why the installed file is not the manifest's (``""`` when it is, or when there is no manifest)."""
    want = source.expected
    if want is None or (filename, sha) == (want.name, want.sha256):
        return ""
    return (f"installed {filename or 'an unknown file'} (sha256 {sha or 'unknown'}) from {source.index_url}, the "
            f"manifest's is {want.name} (sha256 {want.sha256}): the index serves other bytes than the candidate built")


def _smoked(installer: str, target: Target, py: str, source: Source, runner: HostRunner, scratch: Path, cwd: Path,
            filename: str, sha: str) -> InstallVerdict:
    staged = stage(scratch / installer / "probe", [target], dist_version=source.dist_version)
    try:
        out = runner.run(probe_argv(py, str(staged)), env={}, cwd=str(cwd), separate_stderr=True,
                         timeout=target.project.smoke_timeout + 120).stdout
    except ProcessError as exc:
        return InstallVerdict(installer=installer, status=FAILED, reason=f"smoke probe crashed: {_last_line(exc)}",
                       filename=filename, sha256=sha)
    found = outcome(out)
    if not found.ok:
        return InstallVerdict(installer=installer, status=FAILED, reason="; ".join(found.problems), filename=filename,
                       sha256=sha)
    return InstallVerdict(installer=installer, status=PASSED, filename=filename, sha256=sha)


def _last_line(exc: ProcessError) -> str:
    lines = [line.strip() for line in (exc.tail or str(exc)).splitlines() if line.strip()]
    errors = [line for line in lines if line.lower().startswith("error")]
    return f"exit code {exc.returncode}: " + ((errors or lines or [""])[-1][:400])


# --- every target -------------------------------------------------------------------------------


Progress = Callable[[str], None]  # one line as each installer starts and ends ("pip: installing ...")


def _quiet(_line: str) -> None:
    """The default :data:`Progress`: nothing shown."""


def validate_target(target: Target, host: Host, source: Source, env: Mapping[str, str], log: LogLike, *,
                    installers: Sequence[str] = INSTALLERS, require_device: bool = False,
                    progress: Progress = _quiet, contained: Isolation | None = None) -> TargetVerdict:
    """``target`` installed from ``source`` with each installer, smoke-tested; or why it cannot run here. The
    candidate's code (its build backend never runs: wheels only; its import does) sees only the allowlisted
    environment, inside ``contained`` (default: the best this host allows)."""
    why = not_runnable(target, host, env, require_device=require_device)
    if why is not None:
        return TargetVerdict(target=target.id, status=NOT_RUNNABLE, reason=why, index_url=source.index_url)
    python = host.interpreter(target.python.abi)
    assert python is not None
    contained = contained or isolation()
    if not contained.complete:
        progress(f"candidate code runs in its {contained.describe()}")
    runner = HostRunner(clean_env(candidate_env(env)), log, wrap=contained.prefix)
    with tempfile.TemporaryDirectory(prefix="builders-validate-") as tmp:
        installs = tuple(_shown(i, progress, partial(install_and_smoke, i, target, python, source, runner, Path(tmp),
                                                     progress)) for i in installers)
    reasons = [f"{i.installer}: {i.reason}" for i in installs if i.status != PASSED]
    shas = sorted({i.sha256 for i in installs if i.sha256})
    if len(shas) > 1:
        reasons.append(f"the installers got different files: {', '.join(shas)}")
    return TargetVerdict(target=target.id, status=FAILED if reasons else PASSED, reason="; ".join(reasons),
                     index_url=source.index_url, installs=installs, isolation=contained_as(contained))


def _shown(installer: str, progress: Progress, run: Callable[[], InstallVerdict]) -> InstallVerdict:
    """``run``'s install (which shows each of its steps as it starts), and a line with its verdict after."""
    started = time.monotonic()
    done = run()
    progress(f"{installer}: {done.status} ({time.monotonic() - started:.0f} s)" + (f": {done.reason}" if done.reason
                                                                                  else ""))
    return done


# --- what the index lists -------------------------------------------------------------------------


def serves(filename: str, project: str, source: Source, target: Target) -> bool:
    """Whether ``filename`` is ``target``'s wheel at the version ``source`` installs."""
    try:
        name, version, _build, tags = parse_wheel_filename(filename)
        wanted = Version(source.dist_version)
    except (InvalidWheelFilename, InvalidVersion):
        return False
    return name == canonicalize_name(project) and version == wanted and target.tag in tags


@dataclass(frozen=True)
class PageBounds:
    """What validate reads of an index it does not control before any installer does: at most ``limit`` bytes
    of the project's page, within ``timeout`` seconds (``--index-page-limit``, ``--index-timeout``)."""

    limit: int = PAGE_LIMIT
    timeout: float = PAGE_TIMEOUT


def unpublished(pairs: Sequence[tuple[Target, Source]], project: str, *, listed_only: bool = True,
                bounds: PageBounds = PageBounds()) -> dict[str, TargetVerdict]:
    """The targets whose index lists no wheel of theirs (``not-published``, with ``listed_only``) and those whose
    index cannot be read within ``bounds`` (failed), each index read once through the bounded reader, before any
    installer: what a channel does not hold is never worth a venv, and a page too big or too slow never reaches
    pip or uv."""
    listings: dict[str, frozenset[str] | str] = {}
    out = {}
    for target, source in pairs:
        for url in (source.index_url, *source.extra_index_urls):
            if url not in listings:
                listings[url] = _listing(url, project, bounds)
        unreadable = next((listings[u] for u in (source.index_url, *source.extra_index_urls)
                           if isinstance(listings[u], str)), None)
        files = listings[source.index_url]
        if isinstance(unreadable, str):
            out[target.id] = TargetVerdict(target=target.id, status=FAILED, reason=unreadable,
                                       index_url=source.index_url)
        elif listed_only and not any(serves(name, project, source, target) for name in files):
            out[target.id] = TargetVerdict(target=target.id, status=NOT_PUBLISHED, index_url=source.index_url,
                                       reason=f"the index lists no {project} {source.dist_version} wheel for "
                                              f"{target.tag}")
    return out


def _listing(index_url: str, project: str, bounds: PageBounds) -> frozenset[str] | str:
    """The file names ``project``'s page at ``index_url`` lists, or why it could not be read."""
    try:
        return frozenset(project_files(index_url, project, limit=bounds.limit, timeout=bounds.timeout))
    except (OSError, ValueError, KeyError, AuditError) as exc:
        return f"could not read the index {index_url}: {exc}"


def validate_all(pairs: Sequence[tuple[Target, Source]], host: Host, env: Mapping[str, str], *,
                 project: str, listed_only: bool, installers: Sequence[str] = INSTALLERS,
                 require_device: bool = False, show: Progress = _quiet, bounds: PageBounds = PageBounds(),
                 keep: Callable[[Sequence[TargetVerdict]], object] = lambda done: None) -> list[TargetVerdict]:
    """Every target validated in order, each line of progress shown as ``[n/N] ID: ...``; with ``listed_only``
    (a run over whatever the channel holds) the index is read first and what it does not list is not published;
    ``keep`` gets the verdicts reached as each target ends (the record is rewritten, so a timeout keeps them)."""
    read = pairs if listed_only else [(t, s) for t, s in pairs  # a selection: only what would run an installer
                                      if not_runnable(t, host, env, require_device=require_device) is None]
    skipped = unpublished(read, project, listed_only=listed_only, bounds=bounds)
    for status, said in ((NOT_PUBLISHED, "not published (their index lists no wheel of theirs)"),
                         (FAILED, "failed (their index cannot be read within the bounds)")):
        ids = [t.id for t, _ in pairs if t.id in skipped and skipped[t.id].status == status]
        if ids:
            show(f"{len(ids)} {said}: {id_pattern(ids, [t.id for t, _ in pairs])}")
    todo = [(t, s) for t, s in pairs if t.id not in skipped]
    results = dict(skipped)
    for number, (target, source) in enumerate(todo, 1):
        step = _prefixed(show, f"[{number}/{len(todo)}] {target.id}")
        done = validate_target(target, host, source, env, None, installers=installers,
                               require_device=require_device, progress=step)
        step(done.status + (f" ({done.reason})" if done.reason else ""))
        results[target.id] = done
        keep([results[t.id] for t, _ in pairs if t.id in results])
    return [results[t.id] for t, _ in pairs]


def _prefixed(show: Progress, prefix: str) -> Progress:
    return lambda line: show(f"{prefix}: {line}")


def channel_matrix(m: Matrix, channel: ReleaseChannel, version: str | None) -> Matrix:
    """The matrix as the channel built it (a nightly's date from ``--version``)."""
    if channel.name is not ChannelName.NIGHTLY:
        return m.on_channel(channel.name)
    day = nightly_date(Version(version)) if version else None
    if day is None:
        raise SelectionError("validate --channel nightly needs --version, the dev release (such as "
                             f"{channel.nightly_base(m.project.version)}.dev20261201)")
    return m.on_channel(channel.name, day)
