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
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from .model import OS, Accelerator, Variant
from .process import Call, HostRunner, LogLike, ProcessError
from .targets import Target
from .toolchains.cuda import runtime_version
from .toolchains.rocm import runtime_release

PROBE = "smoke_probe.py"
PROJECT_SCRIPT = "project_smoke.py"
FACTS = "facts.json"
# Seconds the probe may take on top of the project's script (imports, library checks).
PROBE_MARGIN = 120.0
# How an accelerator's runtime reports its version without a device: a symbol ``int f(int *)``
# in the loaded library matching one of the globs; the number divided by ``divisor`` (default 1)
# is what expected_runtime_version promises. Accelerators not listed have no such probe.
RUNTIME_PROBES: dict[Accelerator, dict[str, Any]] = {
    Accelerator.CUDA: {"libraries": ["libcudart.so*", "cudart64_*.dll", "libcudart*.dylib"],
                       "symbol": "cudaRuntimeGetVersion"},
    # HIP_VERSION = major * 10**7 + minor * 10**5 + build (70253211 for HIP 7.2): the release is // 10**5.
    Accelerator.ROCM: {"libraries": ["libamdhip64.so*"], "symbol": "hipRuntimeGetVersion", "divisor": 100_000},
}
HIDDEN_ENV = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")  # never passed to a smoke test


def probe_resource() -> resources.abc.Traversable:
    """The probe inside the installed ``builders`` package (never a path outside it)."""
    return resources.files("builders").joinpath("resources", PROBE)


@dataclass(frozen=True, kw_only=True)
class SmokeOutcome:
    """The probe's record and the problems found in it (empty: the wheel passed)."""

    record: dict[str, Any]
    problems: tuple[str, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def summary(self) -> dict[str, Any]:
        """The flat facts results.json keeps for this wheel."""
        return summarize(self.record)


def expected_runtime_version(variant: Variant) -> int | None:
    """The number the variant's runtime must report (``13020`` for CUDA 13.2; ``702`` for ROCm 7.2,
    after the probe's divisor), if it has a probe."""
    if variant.accelerator is Accelerator.CUDA and variant.version:
        return runtime_version(variant.version)
    if variant.accelerator is Accelerator.ROCM and variant.version:
        return runtime_release(variant.version)
    return None


def facts(target: Target, *, dist_version: str | None = None) -> dict[str, Any]:
    """What the probe and the project's script are told about ``target`` (the facts file)."""
    project, variant = target.project, target.variant
    return {
        "distribution": project.name,
        "import_name": project.import_name,
        "version": dist_version or str(target.version),
        "variant": variant.label,
        "accelerator": variant.accelerator.value,
        "accelerator_version": variant.version,
        "expected_runtime_version": expected_runtime_version(variant),
        "runtime_probe": RUNTIME_PROBES.get(variant.accelerator),
        "runtime_libraries": sorted(lib for lib, _ in variant.lib_providers),
        "system_libraries": sorted(lib for lib, _ in variant.system_libs),
        "python_abi": target.python.abi,
        "free_threaded": target.python.free_threaded,
        "extension_modules": list(project.extension_modules),
        "script": PROJECT_SCRIPT if project.smoke_script else None,
        "script_timeout": project.smoke_timeout,
    }


def stage(folder: Path, targets: Sequence[Target], *, dist_version: str | None = None) -> Path:
    """Write the probe, the project's script and the facts into ``folder``.

    Several targets (one cibuildwheel run over many interpreters) share one folder: the facts
    are then keyed by ABI and the probe picks its own.
    """
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
    """The interpreter of a venv made on ``os``."""
    return f"{venv}/Scripts/python.exe" if os is OS.WINDOWS else f"{venv}/bin/python"


def smoke(wheel: Path, target: Target, interpreter: Path, env: Mapping[str, str], log: LogLike,
          dist_version: str | None = None) -> SmokeOutcome:
    """Smoke-test ``wheel`` on this host with ``interpreter`` (a fresh venv in a temp dir)."""
    clean = {k: v for k, v in env.items() if k not in HIDDEN_ENV}
    with tempfile.TemporaryDirectory(prefix="builders-smoke-") as tmp:
        staged = stage(Path(tmp) / "probe", [target], dist_version=dist_version)
        return smoke_with(HostRunner(clean, log), python=str(interpreter), wheel=str(wheel), staged=str(staged),
                          scratch=tmp, target=target)


@dataclass(frozen=True, kw_only=True)
class Step:
    """One command of the smoke test, in the filesystem of the runner it runs in."""

    argv: tuple[str, ...]
    cwd: str | None = None
    timeout: float = 1800.0
    record: bool = False  # its stdout is the probe's JSON record


def smoke_steps(*, python: str, wheel: str, staged: str, scratch: str, target: Target) -> tuple[Step, ...]:
    """The smoke test's commands, in order: the same list a build plan shows and :func:`smoke_with` runs."""
    venv, empty = f"{scratch}/venv", f"{scratch}/cwd"
    py = venv_python(venv, target.platform.os)
    install = target.project.timeouts.install
    return (
        Step(argv=(python, "-c", "import os, sys; os.makedirs(sys.argv[1], exist_ok=True)", empty), timeout=60),
        Step(argv=(python, "-m", "venv", venv), timeout=min(300.0, install)),
        Step(argv=(py, "-m", "pip", "install", "--no-input", wheel), timeout=install),
        Step(argv=tuple(probe_argv(py, staged)), cwd=empty, timeout=target.project.smoke_timeout + PROBE_MARGIN,
             record=True),
    )


def smoke_with(call: Call, *, python: str, wheel: str, staged: str, scratch: str, target: Target) -> SmokeOutcome:
    """The smoke steps through any runner; paths are in that runner's filesystem.

    ``staged`` is a folder written by :func:`stage`.
    """
    *setup, probe = smoke_steps(python=python, wheel=wheel, staged=staged, scratch=scratch, target=target)
    for step in setup:
        call(list(step.argv), timeout=step.timeout)
    try:
        out = call(list(probe.argv), cwd=probe.cwd, separate_stderr=True, timeout=probe.timeout).stdout
    except ProcessError as exc:
        return crashed(exc)
    return outcome(out)


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


def summarize(record: Mapping[str, Any]) -> dict[str, Any]:
    """The record's facts results.json keeps: versions, runtime library, GIL, which checks failed."""
    seen, checks = record.get("facts", {}), record.get("checks", [])
    cuda = seen.get("accelerator") == Accelerator.CUDA.value
    project_ok = _all_ok(checks, "project")
    return {
        "version": seen.get("version"),
        "runtime_version": seen.get("runtime_version"),
        "runtime_libraries": seen.get("runtime_libraries", []),
        "system_libraries": seen.get("system_libraries", []),
        "cuda_runtime_version": seen.get("runtime_version") if cuda else None,
        "cudart_path": seen.get("runtime_library") if cuda else None,
        "gil_enabled": seen.get("gil_enabled"),
        "extension_loaded": _all_ok(checks, "extension "),
        "project_ok": project_ok,
        "op_ok": project_ok,
        "failed_checks": [c.get("name") for c in checks if isinstance(c, dict) and c.get("ok") is not True],
        "project": seen.get("project", {}),
    }
