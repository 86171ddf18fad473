"""Facts of a matrix computed straight from its YAML, independently of builders' model.

Tests compare the code under test with these instead of pinning numbers of the shipped
matrix, so adding a Python, a CUDA version or a platform never breaks a test.
"""

from __future__ import annotations

import fnmatch
from typing import Any

import yaml


def raw(text: str) -> dict[str, Any]:
    return yaml.safe_load(text)


def abi(python: str) -> str:
    """``"3.14t"`` -> ``"cp314t"``."""
    return "cp" + python.replace(".", "")


def labels(data: dict[str, Any]) -> list[str]:
    out = []
    for family in data["accelerators"].values():
        versions = family.get("versions")
        out += [v["label"] for v in versions.values()] if versions else [family["label"]]
    return out


def label_of(data: dict[str, Any], family: str, version: str | None = None) -> str:
    node = data["accelerators"][family]
    return node["versions"][version]["label"] if version else node["label"]


def candidates(data: dict[str, Any]) -> list[str]:
    return [f"{label}-{abi(py)}-{plat}" for label in labels(data) for py in data["pythons"] for plat in data["platforms"]]


def live_ids(data: dict[str, Any]) -> set[str]:
    """Candidate ids that no exclusion glob matches."""
    globs = [e["targets"] for e in data.get("exclude", [])]
    return {i for i in candidates(data) if not any(fnmatch.fnmatchcase(i, g) for g in globs)}


def dropped_pythons(data: dict[str, Any]) -> list[str]:
    return [d["python"] for d in data.get("dropped", []) if "python" in d]
