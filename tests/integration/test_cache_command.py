"""Bounded caches for real: a store over its budget trimmed by the next build, then ``builders cache`` on it.

One cpu target is built into a fresh output; older wheels of other plans (made up, with old
modification times) and a leftover of a killed run are put beside it in the store. The next
build (a reuse) with ``--store-budget`` removes the leftover and the least recently used entries
until the store fits, never the entry it just used. ``cache list`` then shows that entry as in
use by the matrix's plans, and ``cache prune --max-size 0`` of the store leaves only what the
plans use.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from tests.helpers import builders

pytestmark = pytest.mark.slow

TARGET = "cpu-cp312-linux-x86_64"
MIB = 2**20


def plant(store: Path, name: str, days_ago: float, size: int = MIB) -> None:
    """A whole store entry of another plan, last used ``days_ago`` days ago."""
    folder = store / name
    folder.mkdir(parents=True)
    (folder / "old.whl").write_bytes(b"\0" * size)
    (folder / "record.json").write_text(json.dumps({"wheel": "old.whl", "size": size}))
    when = time.time() - days_ago * 86400
    for path in (*folder.iterdir(), folder):
        os.utime(path, (when, when))


def test_the_store_stays_within_its_budget_and_cache_prunes_what_no_plan_uses(root: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = builders("build", "--target", TARGET, "--output", str(out), "--no-smoke", cwd=root)
    assert first.returncode == 0, first.stderr[-3000:]
    ours = json.loads((out / "results.json").read_text())["targets"][0]["digest"]
    store = out / ".store"
    for name, days in (("a" * 64, 30), ("b" * 64, 20), ("c" * 64, 10)):
        plant(store, name, days)
    (store / f".{'d' * 12}-999999999-x").mkdir()  # a killed run's temporary folder: its pid is gone
    used = sum(p.stat().st_size for folder in (store / ours, store / "core") for p in folder.rglob("*") if p.is_file())

    again = builders("build", "--target", TARGET, "--output", str(out), "--no-smoke",
                     "--store-budget", str(used + 2 * MIB + 4096), cwd=root)
    assert again.returncode == 0, again.stderr[-3000:]
    assert f"{TARGET} reused" in again.stderr
    left = sorted(p.name for p in store.iterdir())
    assert left == sorted([ours, "b" * 64, "c" * 64, "core"]), left  # the oldest and the leftover went (the core
    # the plan uses counts in the budget, and stays)
    assert "removed 2 entries" in again.stderr  # the oldest wheel and the leftover

    listing = builders("cache", "list", "--output", str(out), "--kind", "store", "--kind", "core", cwd=root)
    assert listing.returncode == 0, listing.stderr[-3000:]
    rows = {line.split()[1]: line for line in listing.stdout.splitlines() if line.startswith(("store", "core"))}
    assert rows[ours].rstrip().endswith("yes") and not rows["b" * 64].rstrip().endswith("yes")
    print("\n" + listing.stdout)

    prune = builders("cache", "prune", "--output", str(out), "--kind", "store", "--kind", "core", "--max-size", "0",
                     cwd=root)
    assert prune.returncode == 0, prune.stderr[-3000:]
    assert sorted(p.name for p in store.iterdir()) == sorted([ours, "core"])
    assert len(list((store / "core").iterdir())) == 1  # the core the plan uses, kept
    assert "still" in prune.stderr  # over 0 bytes: what the plans use is kept anyway
