"""Read a matrix knowing builders' own families: :func:`builders.matrix.yaml_loader.load` with them as its default.

The matrix loader sits below this package and knows no family; every command reads a matrix
through here, and a caller with families of its own (a plug-in, a test's) passes them all.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from builders.families.registry import accelerators
from builders.matrix import yaml_loader as loader
from builders.matrix.family import Accelerator
from builders.matrix.model import Matrix
from builders.matrix.yaml_loader import MATRIX_LIMIT

__all__ = ["MATRIX_LIMIT", "load", "loads"]


def load(path: Path | str, *, families: Iterable[Accelerator] | None = None, source: Path | None = None,
         builds: bool = True) -> Matrix:
    """:func:`builders.matrix.yaml_loader.load` with ``families`` (None: builders' own)."""
    return loader.load(path, families=accelerators() if families is None else families, source=source, builds=builds)


def loads(text: str, path: Path | str = "matrix.yaml", *, families: Iterable[Accelerator] | None = None,
          source: Path | None = None, builds: bool = True) -> Matrix:
    """:func:`builders.matrix.yaml_loader.loads` with ``families`` (None: builders' own)."""
    return loader.loads(text, path, families=accelerators() if families is None else families, source=source,
                        builds=builds)
