"""The results record: what happened to each target of a build run.

``build`` appends to it as targets finish (so an interrupted run keeps what finished);
``report`` reads it. One JSON file per output folder: ``results.json``.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .errors import BuildersError

SCHEMA = 1
STATUSES = ("built", "failed", "skipped", "interrupted")


@dataclass(frozen=True, kw_only=True)
class Result:
    id: str
    status: str
    engine: str = ""
    stage: str = ""
    reason: str = ""
    wheel: str = ""
    channels: tuple[str, ...] = ()
    sha256: str = ""
    size: int = 0
    policy: str = ""
    durations: dict[str, float] = field(default_factory=dict)
    smoke: dict[str, Any] = field(default_factory=dict)
    findings: tuple[dict[str, str], ...] = ()
    log: str = ""

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        return {k: v for k, v in data.items() if v not in ("", (), [], {}, 0) or k in ("id", "status")}


class ResultsError(BuildersError):
    exit_code = 13


def read(path: Path) -> dict[str, dict[str, Any]]:
    """Results by target id; an absent file is an empty record."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ResultsError(f"{path}: cannot read results: {exc}") from exc
    if data.get("schema") != SCHEMA:
        raise ResultsError(f"{path}: unknown results schema {data.get('schema')!r} (expected {SCHEMA})")
    return {r["id"]: r for r in data.get("targets", [])}


def record(path: Path, result: Result) -> None:
    """Insert or replace ``result`` in ``path``, atomically (write, then rename)."""
    current = read(path)
    current[result.id] = result.to_json()
    payload = {"schema": SCHEMA, "targets": [current[k] for k in sorted(current)]}
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".results-", suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(payload, fh, indent=2)
        fh.write("\n")
    os.replace(tmp, path)
