"""How much a release's files weigh on the runners that handle them, from the planned wheel sizes.

No wheel exceeds ``project.wheel_size_budget_mb`` (verify refuses one that does), so the budget
times the wheels planned is an upper bound known before anything is built. Two limits of
GitHub-hosted runners follow from it, and the plan states both so a release that would not fit
stops in minutes, at the plan, not hours later on a full disk or a dead token:

- release-files holds every wheel :data:`RELEASE_FILES_COPIES` times (the downloaded artifacts,
  the PyPI copies promote writes, the wheel variants, the per-variant indexes' files) on one
  runner with about :data:`RUNNER_DISK_MB` free;
- the PyPI upload mints a trusted-publishing token per step, and the token lives about 15
  minutes (pypa/gh-action-pypi-publish#307), so the PyPI wheels go in batches of at most
  :data:`PYPI_BATCH_MB` (10 MB/s or better: about 5 minutes each), one step per batch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from builders.matrix.model import Matrix
from builders.matrix.targets import Target

RELEASE_FILES_COPIES = 4
RUNNER_DISK_MB = 14_000  # free disk of a standard GitHub-hosted ubuntu runner, less head room
PYPI_BATCH_MB = 3_000
DEFAULT_WHEEL_MB = 1_000  # a project that sets no budget: a framework wheel is about a gigabyte


def wheel_mb(matrix: Matrix) -> float:
    """The largest a wheel of ``matrix`` may be (its size budget)."""
    return matrix.project.wheel_size_budget_mb or DEFAULT_WHEEL_MB


def pypi_targets(matrix: Matrix, targets: Sequence[Target]) -> list[Target]:
    """The targets whose wheels are promoted to PyPI (the default variant of their platform)."""
    return [t for t in targets if matrix.channels.pypi_label(t.platform.name) == t.variant.label]


def batches_needed(matrix: Matrix, targets: Sequence[Target]) -> int:
    """PyPI upload steps the planned wheels need, each within one token's life (at least one)."""
    per_batch = max(1, int(PYPI_BATCH_MB // wheel_mb(matrix)))
    return max(1, math.ceil(len(pypi_targets(matrix, targets)) / per_batch))


def estimate(matrix: Matrix, targets: Sequence[Target]) -> dict[str, Any]:
    """The plan's ``disk`` entry: bounds on what release-files downloads and holds, and the PyPI batches.

    ``ci/disk.sh`` compares them (and then the wheels' real sizes) with the runner's free disk
    before anything is downloaded or copied.
    """
    download = round(len(targets) * wheel_mb(matrix))
    return {"wheel_mb": wheel_mb(matrix), "wheels": len(targets), "download_mb": download,
            "release_files_mb": download * RELEASE_FILES_COPIES, "copies": RELEASE_FILES_COPIES,
            "runner_disk_mb": RUNNER_DISK_MB, "pypi_wheels": len(pypi_targets(matrix, targets)),
            "pypi_batch_mb": PYPI_BATCH_MB, "pypi_batches": batches_needed(matrix, targets)}
