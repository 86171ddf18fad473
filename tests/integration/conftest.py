from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from builders.base import folderlock
from builders.engines.images import engine_env, image_lock_folder
from builders.families import loader as matrix
from builders.matrix.model import Matrix
from tests.helpers import require_tool

BASE = "localhost/builders-base:sid"


@pytest.fixture(scope="session")
def base_image(root: Path) -> str:
    """The local Debian unstable base (debootstrap; nothing is pulled), made once if missing (once across the
    suite's xdist workers too: the first holds the image's build lock, the others find it made)."""
    require_tool("podman")
    env = engine_env(os.environ)
    with folderlock.held(image_lock_folder("podman", BASE)):
        exists = subprocess.run(["podman", "image", "exists", BASE], env=env, capture_output=True, timeout=600)
        if exists.returncode != 0:
            require_tool("debootstrap")
            subprocess.run([str(root / "scripts/podman-base.sh"), BASE], check=True, env=env, timeout=1800)
    return BASE


@pytest.fixture(scope="session")
def m(root: Path) -> Matrix:
    """The shipped matrix read from its file (an absolute path, as the CLI reads it)."""
    return matrix.load(root / "matrix.yaml")
