"""``build.core`` for real: the demo's core library built once per variant, reused by digest, rebuilt
when a core source changes, and compiled through ccache (that rebuild hits on every unit but the changed one).

Local engine, the cpu and cu132 variants, two of this host's Pythons, the lightest core
(``MINIFW_CORE_WEIGHT=1``, passed through ``build.environment_pass``), one GPU arch. The source is
a copy, so a core source can be changed; the compiler cache is a folder of this test's own.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from builders.families import loader as matrix_mod
from tests import helpers

pytestmark = pytest.mark.slow

VARIANTS = ("cpu", "cu132")


def builders(root: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return helpers.builders(*args, cwd=root, env={**os.environ, **env})


@pytest.fixture(scope="module")
def setup(root: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    helpers.require_tool("ccache")  # the hit counts below come from it: a missing one fails here, by name
    m = matrix_mod.load(root / "matrix.yaml")
    assert m.project.core_commands and m.project.core_dir_var, "the shipped matrix declares build.core"
    tmp = tmp_path_factory.mktemp("core")
    source = tmp / "src"
    shutil.copytree(m.project.source, source, ignore=shutil.ignore_patterns("build", "_skbuild", "*.egg-info"))
    matrix = narrowed_archs(root, tmp)
    env = {"MINIFW_CORE_WEIGHT": "1", "CCACHE_DIR": str(tmp / "ccache")}
    plans = builders(root, "build", "--dry-run", "--json", "--matrix", str(matrix), "--output", str(tmp / "probe"),
                     *(a for v in VARIANTS for a in ("--select", f"{v}-*-linux-x86_64")), "--allow-skip", env=env)
    assert plans.returncode == 0, plans.stderr[-3000:]
    ids = sorted(p["id"] for p in json.loads(plans.stdout)["plans"])
    per_variant = {v: [i for i in ids if i.startswith(f"{v}-")][:2] for v in VARIANTS}
    if any(len(found) < 2 for found in per_variant.values()):
        pytest.skip(f"this host builds fewer than two Pythons of {VARIANTS}: {per_variant}")
    selection = [a for found in per_variant.values() for t in found for a in ("--target", t)]
    return {"source": source, "matrix": matrix, "env": env, "out": tmp / "out", "targets": per_variant,
            "selection": selection}


def narrowed_archs(root: Path, tmp: Path) -> Path:
    """The shipped matrix beside the source's copy (``tmp/src``), each CUDA version compiling for one arch: what is
    tested is the core's reuse and its compiler cache, and nvcc compiles every arch of the list in turn (the cold
    compile of six was most of this module's time)."""
    data = yaml.safe_load((root / "matrix.yaml").read_text())
    data["project"]["source"] = "src"
    data["project"]["smoke"]["script"] = "src/smoke.py"
    for spec in data["accelerators"]["cuda"]["versions"].values():
        spec["arch_list"] = dict.fromkeys(spec["arch_list"], "9.0")
    (tmp / "matrix.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return tmp / "matrix.yaml"


def build(root: Path, setup: dict, *extra: str) -> dict[str, dict]:
    proc = builders(root, "build", "--no-smoke", "--jobs", "2", "--matrix", str(setup["matrix"]),
                    "--output", str(setup["out"]), *setup["selection"], *extra, env=setup["env"])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    data = json.loads((setup["out"] / "results.json").read_text())
    return {r["id"]: r for r in data["targets"]}


def core_logs(out: Path, results: dict[str, dict]) -> dict[str, int]:
    """How often each core's build announcement appears across the targets' logs."""
    counts: dict[str, int] = {}
    for r in results.values():
        for name in re.findall(r"^# core (\S+) \w+: building", (out / r["log"]).read_text(), re.M):
            counts[name] = counts.get(name, 0) + 1
    return counts


def check_once_per_variant(setup: dict, results: dict[str, dict]) -> None:
    for variant, ids in setup["targets"].items():
        cores = [results[i]["core"] for i in ids]
        assert all(results[i]["status"] == "built" for i in ids)
        assert len({c["digest"] for c in cores}) == 1, cores
        assert sorted(c["status"] for c in cores) == ["built"] + ["reused"] * (len(ids) - 1), (variant, cores)
    assert core_logs(setup["out"], results) == {f"{v}-linux-x86_64": 1 for v in setup["targets"]}


def test_core_once_per_variant_then_reused_then_rebuilt_through_the_compiler_cache_when_a_core_source_changes(
        root: Path, setup: dict) -> None:
    """The rebuild after the change is the compiler cache's second build: every unit but the changed one hits."""
    first = build(root, setup)
    check_once_per_variant(setup, first)
    digests = {v: first[ids[0]]["core"]["digest"] for v, ids in setup["targets"].items()}
    assert len(set(digests.values())) == len(digests), "each variant has its own core"

    again = build(root, setup)
    assert {r["status"] for r in again.values()} == {"reused"}

    # Code in one unit of the core: a header's change would miss every unit that includes it, and a comment's
    # would hit anyway (ccache's preprocessed mode drops comments).
    core_source = setup["source"] / "core" / "src" / "info.cpp"
    core_source.write_text(core_source.read_text() + "\nnamespace { [[maybe_unused]] constexpr int changed_by_test = 1; }\n")
    changed = build(root, setup)
    check_once_per_variant(setup, changed)
    for variant, ids in setup["targets"].items():
        assert changed[ids[0]]["core"]["digest"] != digests[variant]
        assert all(changed[i]["digest"] != first[i]["digest"] for i in ids)
        builder = next(i for i in ids if changed[i]["core"]["status"] == "built")
        stats = changed[builder]["compiler_cache"]
        missed = helpers.missed_sources(setup["out"] / changed[builder]["log"])
        assert stats["hits"] >= 3 and len(missed) == stats["misses"], (variant, stats, missed)
        # The only misses: the changed unit and CMake's own compiler probes (try_compile, in a folder of a random name).
        assert [m for m in missed if "/CMakeScratch/TryCompile-" not in m] == ["../src/core/src/info.cpp"], missed
        assert all(changed[i]["compiler_cache"]["hits"] >= 1 for i in ids), "the per-Python extension hits too"
