"""The results record: what happened to each target of a build run.

``build`` records each target as it finishes (so an interrupted run keeps what finished),
through one :class:`Writer` that owns the file and replaces it atomically, keeping the records
of earlier runs' other targets; ``report`` reads it. One JSON file per output folder:
``results.json``.

A results file is untrusted input (the report job downloads one per build artifact): it is
read with a size and a nesting cap, checked against ``schema/results.schema.json`` shipped
in the package, and refused with the place and the reason, never half-used.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Collection, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema

from builders.base import safe_output, untrusted
from builders.base.errors import InputError, ResultsError

SCHEMA = 1
STATUSES = ("built", "reused", "failed", "skipped", "interrupted")
FINISHED = frozenset({"built", "reused"})  # a verified wheel is in the wheelhouse
MAX_BYTES = 4 * untrusted.MIB  # a release of ~1,000 targets writes well under 2 MiB
MAX_DEPTH = 32
MAX_SHOWN = 5  # schema errors / unknown ids listed in one message


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
    digest: str = ""  # the build plan's digest: the key the wheel is stored under
    core: dict[str, Any] = field(default_factory=dict)  # build.core: its digest, built or reused, seconds
    compiler_cache: dict[str, Any] = field(default_factory=dict)  # ccache hits/misses of this target's compiles
    requirements: dict[str, Any] = field(default_factory=dict)  # the source's own, as its metadata was read
    rebuild: dict[str, Any] = field(default_factory=dict)  # what a rebuild needs (builders.pipeline.buildrecord)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        return {k: v for k, v in data.items() if v not in ("", (), [], {}, 0) or k in ("id", "status")}

    @classmethod
    def from_json(cls, entry: Mapping[str, Any]) -> Result:
        """A record as :meth:`to_json` wrote it (checked against the schema, whose keys are this class's fields)."""
        data = dict(entry)
        data["channels"] = tuple(data.get("channels", ()))
        data["findings"] = tuple(data.get("findings", ()))
        return cls(**data)


@cache
def schema() -> dict[str, Any]:
    return json.loads(resources.files("builders").joinpath("schema/results.schema.json").read_text(encoding="utf-8"))


def read(path: Path) -> dict[str, dict[str, Any]]:
    """Results by target id; an absent file is an empty record, anything else must be valid."""
    if not path.exists():
        return {}
    data = load_json(path)
    problems = list(schema_problems(data))
    if problems:
        more = f"\n  ... and {len(problems) - MAX_SHOWN} more" if len(problems) > MAX_SHOWN else ""
        raise ResultsError(f"{path}: not a results file (schema {SCHEMA}):\n  "
                           + "\n  ".join(problems[:MAX_SHOWN]) + more)
    by_id: dict[str, dict[str, Any]] = {}
    for i, entry in enumerate(data["targets"]):
        if entry["id"] in by_id:
            raise ResultsError(f"{path}: targets[{i}]: target {entry['id']!r} is listed twice")
        by_id[entry["id"]] = entry
    return by_id


def load(path: Path) -> list[Result]:
    """The results of ``path`` as values, in file order (:func:`read`'s checks first; an absent file has none)."""
    return [Result.from_json(entry) for entry in read(path).values()]


def check_known(path: Path, found: Collection[str], known: Collection[str], matrix: Path | str) -> None:
    """Refuse results for ids ``matrix`` does not have (a file from another matrix or release)."""
    unknown = sorted(set(found) - set(known))
    if not unknown:
        return
    shown = ", ".join(unknown[:MAX_SHOWN]) + (f" and {len(unknown) - MAX_SHOWN} more" if len(unknown) > MAX_SHOWN else "")
    raise ResultsError(f"{path}: {len(unknown)} target id(s) that {matrix} does not have: {shown} "
                       "(results of another matrix or release?)")


def load_json(path: Path) -> Any:
    """``path`` parsed as JSON by the one untrusted-input reader, within the caps above."""
    try:
        return untrusted.load_json(path, limit=MAX_BYTES, max_depth=MAX_DEPTH, what="results file")
    except InputError as exc:
        raise ResultsError(str(exc)) from None


def schema_problems(data: Any) -> Iterator[str]:
    """One line per schema violation, with its JSON path (``targets[3].status``)."""
    validator = jsonschema.Draft202012Validator(schema())
    for error in sorted(validator.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path]):
        yield f"{_json_path(error.absolute_path)}: {_explain(error)}"


def _explain(error: jsonschema.ValidationError) -> str:
    if error.validator == "type":
        return f"must be {'/'.join(_as_list(error.validator_value))}, not {_json_type(error.instance)}"
    return _shorten(error.message)


def _as_list(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def _json_type(value: Any) -> str:
    names = ((bool, "a boolean"), (int, "a number"), (float, "a number"), (str, "a string"), (list, "an array"),
             (dict, "an object"))
    return next((name for kind, name in names if isinstance(value, kind)), "null")


def _json_path(parts: Any) -> str:
    out = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts).lstrip(".")
    return out or "(top level)"


def _shorten(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def record(path: Path, result: Result) -> None:
    """Insert or replace ``result`` in ``path``, atomically (write, then rename)."""
    Writer(path).record(result)


class Writer:
    """The one owner of a results file during a run: reads it once, replaces it whole on each record.

    A run's view is merged, never written alone: the records of targets this run did not record stay
    as they were. Reading once is right because ``build`` holds the output folder's lock
    (:mod:`builders.base.folderlock`) for as long as its writer lives: no other run writes the file
    meanwhile.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        safe_output.regular(path)  # read back and merged: a symlink out, a FIFO or a device is refused first
        self._current = read(path)
        self.previous: dict[str, dict[str, Any]] = dict(self._current)  # as it was before this run
        self._lock = threading.Lock()

    def record(self, result: Result) -> None:
        with self._lock:
            self._current[result.id] = result.to_json()
            payload = {"schema": SCHEMA, "targets": [self._current[k] for k in sorted(self._current)]}
            _replace(self.path, payload)


def _replace(path: Path, payload: dict[str, Any]) -> None:
    safe_output.write_text(path, json.dumps(payload, indent=2) + "\n")
