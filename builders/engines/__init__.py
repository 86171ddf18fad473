"""Build engines: where a target's build command runs (this host, a container, cibuildwheel).

An engine supplies only "build this target's raw wheel into this folder"; label, repair,
verify and smoke are written once, in :mod:`builders.pipeline`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from ..smoke import SmokeOutcome
from ..targets import Target


class Engine(Protocol):
    name: str

    def provision(self, target: Target, env: Mapping[str, str], log: Path) -> dict[str, str]:
        """Make the target's toolchain ready; return build settings (``toolkit_root``)."""

    def build(self, target: Target, source: Path, out_dir: Path, env: Mapping[str, str], log: Path) -> Path:
        """Build the raw wheel of ``target`` from ``source`` into ``out_dir``; return it."""

    def smoke(self, wheel: Path, target: Target, env: Mapping[str, str], log: Path) -> SmokeOutcome:
        """Install ``wheel`` into a fresh environment where the engine builds, and run the smoke test."""
