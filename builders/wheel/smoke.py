"""Dynamic check of one wheel, the same for every framework and every engine.

A fresh venv gets the wheel and its requirements; builders' probe (package data,
``builders/resources/smoke_probe.py``, stdlib only) then runs with the venv's interpreter from
an empty directory. The probe checks what holds for every framework (the distribution's
version, extension modules loaded from the venv, accelerator runtime libraries loaded from the
runtime wheels and reporting the promised version, the GIL off on free-threaded builds), runs
the project's own smoke script (``project.smoke.script``) and prints one JSON record. We read
its whole stdout and turn each failed check into a problem.

The probe, the project's script and the target's facts are staged together in one folder
(:func:`stage`) that an engine makes visible where the wheel is installed: a temp dir here, a
mount in a container, cibuildwheel's test sources.

The venv is made and the wheel installed by uv where it can run (:class:`Installer`): the
binary of the ``uv`` package installed with builders, copied into a container's inbox, with
uv's cache kept under builders' cache so runtime requirements (CUDA runtime wheels) are
downloaded once, not once per smoke. uv reads no pip configuration, so pip's settings where the
smoke runs (``pip config list`` there: its files and ``PIP_*`` variables) are translated into
uv's (:func:`uv_env`). Where uv is absent, does not run, or fails, ``python -m venv`` + pip
runs instead and the smoke record says why (``installer_note``). The checks are the same.
"""

from __future__ import annotations

import ast
import functools
import json
import shutil
import tempfile
import threading
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from builders.base.errors import SmokeError
from builders.base.process import HostRunner, LogLike, ProcessError, Runner, as_log
from builders.base.sandbox import candidate_env, isolation
from builders.families import Family, families, family_for
from builders.families.provision import default_cache
from builders.matrix.model import OS, Variant
from builders.matrix.targets import Target

if TYPE_CHECKING:
    from builders.base.runnerspec import RunnerSpec

PROBE = "smoke_probe.py"
PROJECT_SCRIPT = "project_smoke.py"
FACTS = "facts.json"
# Seconds the probe may take on top of the project's script (imports, library checks).
PROBE_MARGIN = 120.0
HIDDEN_ENV = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")  # never passed to a smoke test
INSTALLERS = ("pip", "uv")  # the installers validate runs, each in a fresh venv
UV, PIP = "uv", "pip"
# Where a container's smoke sees builders' uv cache, if its engine mounts it there.
UV_CACHE_MOUNT = "/uv-cache"
# pip's options (``pip config list`` names, ``PIP_*`` variables) and the uv variable each becomes, with the
# separator uv wants between several values (None: one value). pip splits lists on whitespace.
PIP_TO_UV: dict[str, tuple[str, str | None]] = {
    "index-url": ("UV_DEFAULT_INDEX", None), "extra-index-url": ("UV_INDEX", " "),
    "find-links": ("UV_FIND_LINKS", ","), "constraint": ("UV_CONSTRAINT", " "), "cert": ("SSL_CERT_FILE", None),
    "trusted-host": ("UV_INSECURE_HOST", " "), "timeout": ("UV_HTTP_TIMEOUT", None),
    "default-timeout": ("UV_HTTP_TIMEOUT", None),
}
PIP_FLAGS = {"no-index": ("UV_NO_INDEX", "1"), "pre": ("UV_PRERELEASE", "allow")}  # pip's switches, when on
# Every variable :func:`ready` may give uv where the smoke runs (read there, so no plan can show the values).
UV_RUNTIME_ENV = frozenset({*(name for name, _ in PIP_TO_UV.values()), *(name for name, _ in PIP_FLAGS.values()),
                            "UV_SYSTEM_CERTS", "UV_CACHE_DIR", "UV_LINK_MODE"})
# pip's order of precedence between the sections of its configuration (later wins).
PIP_SECTIONS = ("global", "install", ":env:")


def probe_resource() -> resources.abc.Traversable:
    """The probe inside the installed ``builders`` package (never a path outside it)."""
    return resources.files("builders").joinpath("resources", PROBE)


@dataclass(frozen=True, kw_only=True)
class SmokeOutcome:
    """The probe's record and the problems found in it (empty: the wheel passed)."""

    record: dict[str, Any]
    problems: tuple[str, ...] = field(default_factory=tuple)
    installer: str = ""  # "uv" or "pip": what made the venv and installed the wheel
    note: str = ""  # why venv + pip ran where uv was wanted
    isolation: str = ""  # how the wheel's code was contained (:meth:`builders.base.sandbox.Isolation.describe`)

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def summary(self) -> dict[str, Any]:
        """The flat facts results.json keeps for this wheel, with the installer that ran."""
        return {**summarize(self.record), "installer": self.installer, "installer_note": self.note}


def expected_runtime_version(variant: Variant) -> int | None:
    """``13020`` for CUDA 13.2; ``702`` for ROCm 7.2, after the probe's divisor."""
    return family_for(variant.accelerator).expected_runtime_version(variant)


def facts(target: Target, *, dist_version: str | None = None) -> dict[str, Any]:
    """What the probe and the project's script are told about ``target`` (the facts file)."""
    project, variant = target.project, target.variant
    return {
        "distribution": project.name,
        "import_name": project.import_name,
        "version": dist_version or str(target.version),
        # the labelled version the build was given (build.env.version): what the code says about itself, also in a
        # wheel promoted or made a variant with the public version
        "build_version": str(target.version),
        "variant": variant.label,
        "accelerator": variant.accelerator.value,
        "accelerator_version": variant.version,
        "expected_runtime_version": expected_runtime_version(variant),
        "runtime_probe": family_for(variant.accelerator).runtime_probe,
        "runtime_libraries": sorted(lib for lib, _ in variant.lib_providers),
        "system_libraries": sorted(lib for lib, _ in variant.system_libs),
        "python_abi": target.python.abi,
        "free_threaded": target.python.free_threaded,
        "extension_modules": list(target.bare_modules),  # a module that needs an extra is checked by verify only
        "script": PROJECT_SCRIPT if project.smoke_script else None,
        "script_timeout": project.smoke_timeout,
    }


def stage(folder: Path, targets: Sequence[Target], *, dist_version: str | None = None) -> Path:
    """Several targets (one cibuildwheel run over many interpreters) share one folder: facts keyed by ABI."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / PROBE).write_bytes(probe_resource().read_bytes())
    script = targets[0].project.smoke_script
    if script is not None:
        shutil.copyfile(script, folder / PROJECT_SCRIPT)
    described = [facts(t, dist_version=dist_version) for t in targets]
    doc = described[0] if len(described) == 1 else {"by_abi": {t.python.abi: f for t, f in zip(targets, described)}}
    (folder / FACTS).write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return folder


def probe_argv(python: str, staged: str, *, strict: bool = False) -> list[str]:
    """The probe's command line; ``-I`` keeps the working directory and user site out of sys.path."""
    return [python, "-I", f"{staged}/{PROBE}", *(["--strict"] if strict else []), f"{staged}/{FACTS}"]


def venv_python(venv: str, os: OS) -> str:
    return f"{venv}/Scripts/python.exe" if os is OS.WINDOWS else f"{venv}/bin/python"


Pairs = tuple[tuple[str, str], ...]


@dataclass(frozen=True, kw_only=True)
class Installer:
    """What makes the smoke venv and installs the wheel: uv, or ``python -m venv`` + pip (the default)."""

    kind: str = PIP
    uv: str = ""  # the uv binary, where the smoke runs
    source: str = ""  # the uv binary on this host; copied to ``uv`` where that is another place (a container)
    env: Pairs = ()  # uv's settings: pip's, translated where the smoke runs (:func:`ready`), and its cache
    note: str = ""  # why venv + pip runs where uv was wanted
    indexes: tuple[str, ...] = ()  # the variant's runtime indexes, expanded when the smoke runs (:func:`for_target`)
    configured: tuple[str, ...] = ()  # the indexes uv was configured with, kept by :meth:`fallback` for messages

    def fallback(self, why: str) -> Installer:
        """venv + pip instead, saying why (the variant's indexes are still needed)."""
        return Installer(note=f"{why}; venv + pip ran instead", indexes=self.indexes, configured=self.index_urls())

    def index_urls(self) -> tuple[str, ...]:
        """Every index this installer asks that is known here: pip's configured ones (as translated for uv)
        and the variant's; a failed install names them."""
        env = dict(self.env)
        found = (*self.configured, env.get("UV_DEFAULT_INDEX", ""), *env.get("UV_INDEX", "").split(), *self.indexes)
        return tuple(dict.fromkeys(url for url in found if url))

    def for_target(self, target: Target, env: Mapping[str, str]) -> Installer:
        """Expanded from ``env`` where the smoke runs, like pip's settings, so no plan shows a registry address."""
        return replace(self, indexes=target.variant.runtime_indexes(env))


VENV_PIP = Installer()


@functools.cache
def find_uv() -> str | None:
    """The binary of the ``uv`` package installed with builders (``uv.find_uv_bin``), or None; looked up once
    (about 2 ms: every plan asks)."""
    try:
        from uv import find_uv_bin
    except ImportError:
        return None
    try:
        return find_uv_bin()
    except FileNotFoundError:
        return None


def planned_installer(inbox: str, uv: str | None) -> Installer:
    """uv where builders has its binary ``uv`` (copied into ``inbox`` when the smoke runs elsewhere); else pip."""
    if not uv:
        return VENV_PIP.fallback("the uv package is not installed with builders")
    return Installer(kind=UV, uv=f"{inbox}/{Path(uv).name}" if inbox else uv, source=uv)


def chosen_installer(wanted: str = "auto", inbox: str = "") -> Installer:
    """``auto``: uv if builders has it, else venv + pip with a note; ``uv``: uv or an error; ``pip``: venv + pip."""
    if wanted == PIP:
        return VENV_PIP
    planned = planned_installer(inbox, find_uv())
    if wanted == UV and planned.kind != UV:
        raise SmokeError(f"uv was asked for, but {planned.note.split(';')[0]}: install builders with its "
                         "dependencies (the uv package ships the binary)")
    return planned


def smoke(wheel: Path, target: Target, interpreter: Path, env: Mapping[str, str], log: LogLike,
          dist_version: str | None = None, installer: str = "auto") -> SmokeOutcome:
    """In a fresh venv; uv's cache sits beside the toolchain cache, so runtime requirements download once. The
    wheel's code sees only the allowlisted environment, in its own PID namespace where the host allows it
    (:mod:`builders.base.sandbox`); the log says which."""
    clean = {k: v for k, v in candidate_env(env).items() if k not in HIDDEN_ENV}
    contained = isolation()
    runner, python = HostRunner(clean, log, wrap=contained.prefix), str(interpreter)
    sink = as_log(log)
    if sink is not None:
        sink.write(f"# candidate code runs in its {contained.describe()}\n")
    cache = {"UV_CACHE_DIR": str(uv_cache_folder((), env))}
    with tempfile.TemporaryDirectory(prefix="builders-smoke-") as tmp:
        # a shared wheel: the facts of each Python it is tested on, the probe picks its own (by ABI)
        staged = stage(Path(tmp) / "probe", [target.on_python(p) for p in target.tested_pythons],
                       dist_version=dist_version)
        how = ready(chosen_installer(installer), runner, python=python, key=host_key(python, clean), cache=cache)
        how = how.for_target(target, clean)
        done = smoke_with(runner, python=python, wheel=str(wheel), staged=str(staged), scratch=tmp, target=target,
                          installer=how)
    return replace(done, isolation=contained.describe())


def pairs(mapping: Mapping[str, str]) -> Pairs:
    """``mapping`` as a sorted tuple: hashable, so it can be a frozen value's field or a cache key."""
    return tuple(sorted(mapping.items()))


def host_key(python: str, env: Mapping[str, str]) -> Hashable:
    """Where :func:`smoke` reads pip's configuration: this host, ``python``, ``env`` (:func:`pip_config`)."""
    return ("host", python, pairs(env))


# ---- uv where the smoke runs: the binary, pip's settings translated, the cache ------------------

def ready(planned: Installer, runner: Runner, *, python: str, key: Hashable, cache: Mapping[str, str]) -> Installer:
    """uv copied in where the runner cannot see this host's and given pip's settings there; venv + pip, with a
    note, where uv does not run. ``key``: pip's configuration is read once per place."""
    if planned.kind != UV:
        return planned
    try:
        if planned.source and planned.source != planned.uv:
            runner.copy_in(Path(planned.source), planned.uv)
        runner.run([planned.uv, "--version"], env={}, timeout=60)
    except (ProcessError, OSError) as exc:
        return planned.fallback(f"uv ({planned.uv}) does not run where the smoke runs: {_last_words(exc)}")
    return replace(planned, env=pairs({**uv_env(pip_config(runner, python, key)), **cache}))


_PIP_CONFIG: dict[Hashable, dict[str, str]] = {}
_PIP_CONFIG_LOCK = threading.Lock()
# Without pip: its variables alone (what a venv's pip, bootstrapped by ensurepip, would read of them).
PIP_ENV_SCRIPT = "import json, os; print(json.dumps({k: v for k, v in os.environ.items() if k.startswith('PIP_')}))"


def pip_config(runner: Runner, python: str, key: Hashable) -> dict[str, str]:
    """pip's options where the smoke runs, as ``python -m pip config list`` shows them there (its files and
    ``PIP_*`` variables): what the venv's pip would use. Read once per ``key`` per process (about a second)."""
    with _PIP_CONFIG_LOCK:
        if key not in _PIP_CONFIG:
            try:
                listed = runner.run([python, "-m", "pip", "config", "list"], env={}, separate_stderr=True,
                                    timeout=300).stdout
                _PIP_CONFIG[key] = pip_settings(listed)
            except ProcessError:
                found = runner.run([python, "-I", "-c", PIP_ENV_SCRIPT], env={}, separate_stderr=True, timeout=60)
                _PIP_CONFIG[key] = pip_env_settings(json.loads(found.stdout))
        return dict(_PIP_CONFIG[key])


def pip_settings(listing: str) -> dict[str, str]:
    """pip's options for ``pip install`` from ``pip config list`` lines (``section.name='value'``): the
    ``:env:`` section (``PIP_*`` variables) over ``install`` over ``global``, as pip itself orders them."""
    found: dict[str, dict[str, str]] = {section: {} for section in PIP_SECTIONS}
    for line in listing.splitlines():
        key, equals, raw = line.partition("=")
        section, dot, name = key.strip().rpartition(".")
        if equals and dot and section in found:
            found[section][name] = _literal(raw)
    return {name: value for section in PIP_SECTIONS for name, value in found[section].items()}


def pip_env_settings(env: Mapping[str, str]) -> dict[str, str]:
    """pip's options from ``PIP_*`` variables (``PIP_EXTRA_INDEX_URL`` is ``extra-index-url``)."""
    return {k[4:].lower().replace("_", "-"): v for k, v in env.items() if k.startswith("PIP_")}


def _literal(raw: str) -> str:
    """A value as ``pip config list`` prints it (Python's repr of a string)."""
    try:
        value = ast.literal_eval(raw.strip())
    except (ValueError, SyntaxError):
        return raw.strip()
    return value if isinstance(value, str) else str(value)


def uv_env(settings: Mapping[str, str]) -> dict[str, str]:
    """uv's variables for pip's options: the same index, extra indexes, find-links, constraints, trust and
    timeout. Without a configured ``cert`` pip (>= 24.2) trusts the system's certificates, and so does uv."""
    env: dict[str, str] = {}
    for option, value in settings.items():
        if option in PIP_TO_UV:
            name, separator = PIP_TO_UV[option]
            env[name] = separator.join(value.split()) if separator else value.strip()
        elif option in PIP_FLAGS and value.strip().lower() in {"1", "true", "yes", "on", "y", "t"}:
            env[PIP_FLAGS[option][0]] = PIP_FLAGS[option][1]
    if "SSL_CERT_FILE" not in env:
        env["UV_SYSTEM_CERTS"] = "1"
    return env


def uv_cache_folder(places: Sequence[tuple[str, str]], env: Mapping[str, str]) -> Path:
    """builders' uv cache: ``uv`` beside the toolchain cache (a plan's ``{cache}`` place, else the default)."""
    cache = dict(places).get("{cache}")
    return (Path(cache) if cache else default_cache(env)).parent / UV


def uv_cache(spec: RunnerSpec, folder: Path) -> dict[str, str]:
    """``folder`` as the runner sees it: itself on this host, the mount in a container (:data:`UV_CACHE_MOUNT`,
    made here first), else the container's own (gone with it)."""
    seen = spec.sees(folder)
    if seen is None:
        return {}
    if spec.on_host:
        return {"UV_CACHE_DIR": seen}
    folder.mkdir(parents=True, exist_ok=True)
    return {"UV_CACHE_DIR": seen, "UV_LINK_MODE": "copy"}


# ---- the steps ----------------------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class Step:
    """One command of the smoke test, in the filesystem of the runner it runs in."""

    argv: tuple[str, ...]
    env: Pairs = ()
    cwd: str | None = None
    timeout: float = 1800.0
    record: bool = False  # its stdout is the probe's JSON record
    at_run: str = ""  # what :func:`at_run` fills in where the smoke runs: "uv", "uv-install", "pip-install"


def smoke_steps(*, python: str, wheel: str, staged: str, scratch: str, target: Target,
                installer: Installer = VENV_PIP) -> tuple[Step, ...]:
    """The smoke test's commands, in order, with ``installer``'s run-time values filled in (:func:`at_run`)."""
    return tuple(at_run(step, installer) for step in planned_steps(python=python, wheel=wheel, staged=staged,
                                                                   scratch=scratch, target=target, installer=installer))


def planned_steps(*, python: str, wheel: str, staged: str, scratch: str, target: Target,
                  installer: Installer = VENV_PIP) -> tuple[Step, ...]:
    """The smoke test's commands, in order, as a build plan holds them and :func:`run_planned` runs them: without
    what is known only where and when the smoke runs (``installer.env``, ``installer.indexes``: :func:`at_run`)."""
    venv, empty = f"{scratch}/venv", f"{scratch}/cwd"
    py = venv_python(venv, target.platform.os)
    return (
        Step(argv=(python, "-c", "import os, sys; os.makedirs(sys.argv[1], exist_ok=True)", empty), timeout=60),
        *install_steps(installer, python=python, venv=venv, py=py, wheel=wheel,
                       timeout=target.project.timeouts.install),
        Step(argv=tuple(probe_argv(py, staged)), cwd=empty, timeout=target.project.smoke_timeout + PROBE_MARGIN,
             record=True),
    )


def install_steps(installer: Installer, *, python: str, venv: str, py: str, wheel: str,
                  timeout: float) -> tuple[Step, Step]:
    """A venv for ``python`` (nothing seeded by uv), then ``wheel`` with its requirements installed into it.

    uv is told to read no uv configuration (pip's is translated into ``installer.env`` when the smoke runs) and to
    pick the best version across all indexes, as pip does, not the first index that has a package.
    """
    make = min(300.0, timeout)
    if installer.kind != UV:
        return (Step(argv=(python, "-m", "venv", venv), timeout=make),
                Step(argv=(py, "-m", "pip", "install", "--no-input", wheel), timeout=timeout, at_run="pip-install"))
    uv = installer.uv
    return (Step(argv=(uv, "venv", "--no-config", "--no-project", "--python", python, venv), timeout=make,
                 at_run="uv"),
            Step(argv=(uv, "pip", "install", "--no-config", "--index-strategy", "unsafe-best-match", "--python", py,
                       wheel), timeout=timeout, at_run="uv-install"))


def at_run(step: Step, installer: Installer) -> Step:
    """The one place a planned step gets what is known only where the smoke runs (pip's configuration translated
    for uv, the runtime indexes); a plan shows each step without it."""
    if step.at_run == "uv":
        return replace(step, env=pairs({**dict(installer.env), **dict(step.env)}), at_run="")
    if step.at_run == "uv-install":
        return replace(step, env=with_uv_indexes(installer.env, installer.indexes), at_run="")
    if step.at_run == "pip-install":
        return replace(step, argv=(*step.argv[:-1], *pip_index_args(installer.indexes), step.argv[-1]), at_run="")
    return step


def pip_index_args(indexes: Sequence[str]) -> tuple[str, ...]:
    """pip's ``--extra-index-url`` per index: added to the index pip is configured with, not replacing it."""
    return tuple(arg for url in indexes for arg in ("--extra-index-url", url))


def with_uv_indexes(env: Pairs, indexes: Sequence[str]) -> Pairs:
    """uv's settings with ``indexes`` appended to ``UV_INDEX`` (pip's extra indexes, translated), which a
    ``--index`` flag would replace."""
    if not indexes:
        return env
    settings = dict(env)
    settings["UV_INDEX"] = " ".join(filter(None, (settings.get("UV_INDEX", ""), *indexes)))
    return pairs(settings)


def smoke_with(runner: Runner, *, python: str, wheel: str, staged: str, scratch: str, target: Target,
               installer: Installer = VENV_PIP) -> SmokeOutcome:
    """Paths are the runner's; where uv fails, venv + pip runs in a fresh folder and the outcome says why."""
    steps = planned_steps(python=python, wheel=wheel, staged=staged, scratch=scratch, target=target,
                          installer=installer)
    fallback = fallback_steps(python=python, wheel=wheel, staged=staged, scratch=scratch, target=target,
                              installer=installer)
    return run_planned(runner, steps, fallback, installer)


def fallback_steps(*, python: str, wheel: str, staged: str, scratch: str, target: Target,
                   installer: Installer) -> tuple[Step, ...]:
    """Where uv is planned: venv + pip in a fresh folder under ``scratch``, should uv not run or fail."""
    if installer.kind != UV:
        return ()
    return planned_steps(python=python, wheel=wheel, staged=staged, scratch=f"{scratch}/{PIP}", target=target)


def run_planned(runner: Runner, steps: Sequence[Step], fallback: Sequence[Step], installer: Installer) -> SmokeOutcome:
    """Where uv cannot run or fails, the planned ``fallback`` runs instead and the outcome says why."""
    if installer.kind != UV and fallback:
        steps, fallback = fallback, ()
    *setup, probe = (at_run(step, installer) for step in steps)
    try:
        for step in setup:
            runner.run(list(step.argv), env=dict(step.env), cwd=step.cwd, timeout=step.timeout)
    except ProcessError as exc:
        if installer.kind != UV or not fallback:
            if "install" in exc.argv:
                raise install_failed(exc, installer) from exc
            raise
        return run_planned(runner, fallback, (), installer.fallback(f"uv failed: {_last_words(exc)}"))
    try:
        out = runner.run(list(probe.argv), env={}, cwd=probe.cwd, separate_stderr=True, timeout=probe.timeout).stdout
        found = outcome(out)
    except ProcessError as exc:
        found = crashed(exc)
    return replace(found, installer=installer.kind, note=installer.note)


def install_failed(exc: ProcessError, installer: Installer) -> SmokeError:
    """The wheel and its requirements could not be installed: which installer, from which indexes, and why."""
    urls = ", ".join(installer.index_urls()) or "the index pip is configured with (pip config list)"
    after = f" ({installer.note})" if installer.note else ""
    return SmokeError(f"installing the wheel and its runtime requirements with {installer.kind} from {urls} "
                      f"failed: {_last_words(exc)}{after}")


def _last_words(exc: BaseException) -> str:
    """What a failed command said last: its last ``error:`` line (uv's, podman's), else its last line."""
    tail = exc.tail if isinstance(exc, ProcessError) else ""
    lines = [line.strip() for line in (tail or str(exc)).splitlines() if line.strip()]
    errors = [line for line in lines if line.lower().startswith("error")]
    code = f"exit code {exc.returncode}: " if isinstance(exc, ProcessError) else ""
    return code + ((errors or lines)[-1][:300] if lines else type(exc).__name__)


def crashed(exc: ProcessError) -> SmokeOutcome:
    """The probe itself failed (an extension that segfaults on import, a timeout): no record."""
    problem = f"smoke probe exited with code {exc.returncode} before printing its record; output ends:\n{exc.tail}"
    return SmokeOutcome(record={}, problems=(problem,))


def outcome(stdout: str) -> SmokeOutcome:
    """The probe's whole stdout, read as its record, judged."""
    try:
        record = json.loads(stdout)
    except ValueError as exc:
        problem = f"smoke probe printed no JSON record ({exc}); stdout ends:\n{stdout[-2000:]}"
        return SmokeOutcome(record={}, problems=(problem,))
    return SmokeOutcome(record=record, problems=tuple(problems(record)))


def problems(record: Mapping[str, Any]) -> list[str]:
    """One problem per failed check, saying which check failed and why."""
    checks = record.get("checks")
    if not isinstance(checks, list) or not checks:
        return ["smoke probe record has no checks"]
    return [_problem(c) for c in checks if not (isinstance(c, dict) and c.get("ok") is True)]


def _problem(check: Any) -> str:
    if not isinstance(check, dict):
        return f"smoke probe record holds a malformed check: {check!r}"
    return f"smoke check {check.get('name')!r} failed: {check.get('detail') or 'no detail'}"


def _all_ok(checks: Iterable[Mapping[str, Any]], prefix: str) -> bool | None:
    """True/False over the checks whose name starts with ``prefix``; None when there are none."""
    found = [c.get("ok") is True for c in checks if isinstance(c, dict) and str(c.get("name", "")).startswith(prefix)]
    return all(found) if found else None


def family_summary(seen: Mapping[str, Any], extra: Iterable[Family] = ()) -> dict[str, Any]:
    """Every family's own smoke fields (None), filled in by the family the probe ran for (``extra``: a plug-in's)."""
    out = {key: None for family in families(extra) for key in family.smoke_summary({})}
    ran = next((f for f in families(extra) if f.accelerator.value == seen.get("accelerator")), None)
    return out | (ran.smoke_summary(seen) if ran else {})


def summarize(record: Mapping[str, Any], extra: Iterable[Family] = ()) -> dict[str, Any]:
    """The record's facts results.json keeps: versions, runtime library, GIL, which checks failed."""
    seen, checks = record.get("facts", {}), record.get("checks", [])
    project_ok = _all_ok(checks, "project")
    return {
        "version": seen.get("version"),
        "runtime_version": seen.get("runtime_version"),
        "runtime_libraries": seen.get("runtime_libraries", []),
        "system_libraries": seen.get("system_libraries", []),
        **family_summary(seen, extra),
        "gil_enabled": seen.get("gil_enabled"),
        "extension_loaded": _all_ok(checks, "extension "),
        "project_ok": project_ok,
        "op_ok": project_ok,
        "failed_checks": [c.get("name") for c in checks if isinstance(c, dict) and c.get("ok") is not True],
        "project": seen.get("project", {}),
    }
