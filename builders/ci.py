"""What the GitHub Actions release workflow consumes: a ``strategy.matrix`` from the plan."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .model import OS
from .targets import Target


def engine_for(target: Target) -> str:
    """CI builds Linux wheels in the variant's image, macOS and Windows wheels with cibuildwheel."""
    return "container" if target.platform.os is OS.LINUX else "cibw"


def github_matrix(targets: Iterable[Target]) -> dict[str, Any]:
    """``{"include": [...]}``: one build job per target, on the runner the matrix names."""
    include = [
        {
            "id": t.id,
            "runner": t.runner,
            "engine": engine_for(t),
            "image": t.platform.base_image or "",
            "containerfile": t.containerfile or "",
            "variant": t.variant.label,
            "python": str(t.python),
            "platform": t.platform.name,
            "wheel": t.wheel_name,
            "smoke_runner": list(t.smoke_runner),
        }
        for t in targets
    ]
    return {"include": include}
