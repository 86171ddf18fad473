"""Dynamic check of one wheel: a fresh venv, the wheel and its runtime requirements
installed, ``scripts/smoke_test.py`` run from an empty directory, its JSON record compared
with what the target promises."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import SmokeError
from .model import Accelerator
from .process import HostRunner, ProcessError, Runner
from .targets import Target
from .toolchains.cuda import runtime_version

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "smoke_test.py"


@dataclass(frozen=True, kw_only=True)
class SmokeOutcome:
    record: dict[str, Any]
    problems: tuple[str, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        return not self.problems


def smoke(wheel: Path, target: Target, interpreter: Path, env: Mapping[str, str], log: Path | None,
          script: Path = SCRIPT, dist_version: str | None = None) -> SmokeOutcome:
    """Smoke-test ``wheel`` on this host with ``interpreter`` (a fresh venv in a temp dir)."""
    clean = {k: v for k, v in env.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    with tempfile.TemporaryDirectory(prefix="builders-smoke-") as tmp:
        return smoke_with(HostRunner(clean, log), python=str(interpreter), wheel=str(wheel), script=str(script),
                          scratch=tmp, target=target, dist_version=dist_version)


def smoke_with(call: Runner, *, python: str, wheel: str, script: str, scratch: str, target: Target,
               dist_version: str | None = None) -> SmokeOutcome:
    """The smoke steps through any :class:`Runner`; paths are in that runner's filesystem."""
    venv, empty = f"{scratch}/venv", f"{scratch}/cwd"
    call([python, "-c", "import os, sys; os.makedirs(sys.argv[1], exist_ok=True)", empty], timeout=60)
    call([python, "-m", "venv", venv], timeout=300)
    py = f"{venv}/bin/python"
    call([py, "-m", "pip", "install", "--no-input", wheel], timeout=1800)
    try:
        out = call([py, script], cwd=empty, separate_stderr=True, timeout=300).stdout
    except ProcessError as exc:
        out = exc.tail
    record = _parse(out)
    problems = compare(record, target, venv=Path(venv), dist_version=dist_version or str(target.version))
    return SmokeOutcome(record=record, problems=tuple(problems))


def _parse(out: str) -> dict[str, Any]:
    start = out.find("{")
    try:
        return json.loads(out[start:]) if start >= 0 else {}
    except ValueError as exc:
        raise SmokeError(f"smoke script did not print one JSON record: {exc}\n{out[-2000:]}") from exc


def compare(record: Mapping[str, Any], target: Target, *, venv: Path, dist_version: str) -> Iterator[str]:
    """Differences between the smoke record and what ``target`` promises."""
    v = target.variant
    expected: dict[str, Any] = {
        "version": str(target.version),
        "dist_version": dist_version,
        "accelerator": v.accelerator.value,
        "extension_loaded": True,
        "op_ok": True,
        "free_threaded": target.python.free_threaded,
    }
    if v.accelerator is Accelerator.CUDA:
        expected |= {"cuda": v.version, "cuda_runtime_version": runtime_version(v.version or "0.0")}
    else:
        expected |= {"cuda": None, "cuda_runtime_version": None}
    if target.python.free_threaded:
        expected["gil_enabled"] = False
    for key, want in expected.items():
        if record.get(key) != want:
            yield f"{key}: got {record.get(key)!r}, expected {want!r}"
    for key in ("extension_path", "cudart_path") if v.accelerator is Accelerator.CUDA else ("extension_path",):
        path = record.get(key)
        if not path or not _inside(Path(path), venv):
            yield f"{key}: {path!r} is not inside the test venv {venv}"
    for error in record.get("errors", []):
        yield f"smoke script error: {error.splitlines()[0] if error else error}"


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True
