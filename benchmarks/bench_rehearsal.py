"""How long ``plan --rehearse`` takes to rehearse and print: the shipped matrix and one of at least 1,000 targets.

In-process, after the imports and the matrix's load (what ``plan`` pays for any output): the rehearsal of
every run from the committed workflows at the shipped profile, its limits, its layouts and the printed
table. Issue 38 wants each under a second; prints the seconds (best of three) and the target counts.

    PYTHONPATH=. python benchmarks/bench_rehearsal.py
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench import synthetic

from builders.families import loader
from builders.matrix.model import Matrix
from builders.matrix.targets import expand
from builders.report import layouts, limits, prices, rehearsal, rehearsal_report, scale_profile

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"


def once(m: Matrix) -> tuple[float, int]:
    """Seconds to rehearse and render ``m`` at the shipped profile, and the characters printed."""
    start = time.perf_counter()
    targets = expand(m)[0]
    profile, table = scale_profile.load(scale_profile.SHIPPED), prices.shipped(m.runner_costs)
    r = rehearsal.rehearse(targets, WORKFLOW, profile, table)
    out = rehearsal_report.text(r, layouts.compare(targets, profile, table),
                                limits.check(r, m.channels.promotion, held_gb=profile.pypi_held_gb))
    return time.perf_counter() - start, len(out)


def main() -> int:
    shipped = loader.load(ROOT / "matrix.yaml", builds=False)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "matrix.yaml"
        path.write_text(synthetic((ROOT / "matrix.yaml").read_text(), ROOT / "matrix.yaml"))
        big = loader.load(path, builds=False, source=shipped.project.source)
    for name, m in (("shipped", shipped), ("grown", big)):
        best = min(once(m)[0] for _ in range(3))
        print(f"{name} matrix, {len(expand(m)[0])} targets: rehearsed and printed in {best:.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
