"""Fixtures the unit tests share: the shipped matrix (or the grown copy), loaded once per module."""

from __future__ import annotations

import pytest

from builders.families import loader as matrix
from builders.matrix.model import Matrix


@pytest.fixture(scope="module")
def m(shipped_text: str) -> Matrix:
    return matrix.loads(shipped_text)


@pytest.fixture(scope="module")
def shipped(m: Matrix) -> Matrix:
    """The same loaded matrix under the name the verify, metadata and ROCm tests use."""
    return m
