"""``build.core`` in plans: once per (variant, platform), its digest free of the Python, part of each
target's plan; and the compiler cache's variables and stats log. Pure: a matrix string and a host."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from builders.base.errors import MatrixError
from builders.families import loader as matrix
from builders.pipeline.compilercache import parse_stats_log
from builders.pipeline.plan import BuildPlan, location_vars
from tests.unit.test_buildplan import CONTAINER, HOST, LOCAL, built, context, plans

CORE = {"commands": [["cmake", "-S", "{source}/core", "-B", "{builddir}", "-DCMAKE_INSTALL_PREFIX={coredir}"],
                     ["cmake", "--build", "{builddir}", "--target", "install"]]}


def with_core(shipped_text: str, core: dict | None = CORE, var: str | None = "PROJ_CORE_DIR") -> str:
    data = yaml.safe_load(shipped_text)
    build = data["project"]["build"]
    build.pop("core", None)
    build.get("env", {}).pop("core_dir", None)
    if core is not None:
        build["core"] = core
    if var is not None:
        build.setdefault("env", {})["core_dir"] = var
    return yaml.safe_dump(data, sort_keys=False)


@pytest.fixture(scope="module")
def m(shipped_text: str):
    return matrix.loads(with_core(shipped_text))


def by_variant(found: dict[str, BuildPlan]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for plan in found.values():
        assert plan.core is not None
        out.setdefault(plan.target.variant.label, set()).add(plan.core.digest)
    return out


PODMAN_HOST = replace(HOST, container_engines=("podman",))


@pytest.mark.parametrize("engine", [LOCAL, CONTAINER], ids=["local", "container"])
def test_one_core_per_variant_and_platform_whatever_the_python(m, engine) -> None:
    # cpu and CUDA: the ROCm and XPU images take registry addresses from the environment
    found = built(plans(m, engine, ctx=context(host=PODMAN_HOST), glob="c*-linux-x86_64"))
    groups = by_variant(found)
    assert len(found) > len(groups) >= 2, "several Pythons of several variants are planned"
    assert all(len(digests) == 1 for digests in groups.values()), groups
    assert len({d for ds in groups.values() for d in ds}) == len(groups), "each variant has its own core"


def test_the_build_finds_the_core_through_the_declared_variable(m) -> None:
    for plan in built(plans(m)).values():
        assert plan.core is not None
        assert dict(plan.build.env)["PROJ_CORE_DIR"] == plan.core.installed
        assert plan.core.installed.startswith(plan.work)
        argv = [a for c in plan.core.commands for a in c.argv]
        assert f"-DCMAKE_INSTALL_PREFIX={plan.core.scratch}/install" in argv
        assert all("PROJ_CORE_DIR" not in dict(c.env) for c in plan.core.commands)
        assert ("core", plan.core.commands[0]) in plan.commands(), "the dry run shows the core's commands"


def test_the_core_digest_follows_source_and_settings_and_feeds_the_plan(m) -> None:
    before = built(plans(m))
    after = built(plans(m, ctx=context(source_digest="b" * 64)))
    for tid, plan in before.items():
        assert plan.core is not None and after[tid].core is not None
        assert plan.core.digest != after[tid].core.digest
        assert plan.digest != after[tid].digest
    moved = built(plans(m, ctx=context(output=Path("/elsewhere"))))
    assert {t: p.digest for t, p in moved.items()} == {t: p.digest for t, p in before.items()}, \
        "where the output folder is decides no digest"


def test_a_matrix_without_a_core_plans_none(shipped_text: str) -> None:
    m = matrix.loads(with_core(shipped_text, core=None, var=None))
    assert all(p.core is None for p in built(plans(m)).values())


@pytest.mark.parametrize(("core", "var", "phrase"), [
    (CORE, None, "build.core needs build.env.core_dir"),
    (None, "PROJ_CORE_DIR", "there is no build.core"),
    ({"commands": [["make", "{python}"]]}, "PROJ_CORE_DIR", "unknown placeholder {python}"),
    ({"commands": []}, "PROJ_CORE_DIR", "core.commands"),
])
def test_core_mistakes_are_named_where_they_are(shipped_text: str, core, var, phrase: str) -> None:
    with pytest.raises(MatrixError) as info:
        matrix.loads(with_core(shipped_text, core=core, var=var))
    assert phrase in str(info.value)
    assert re.search(r":\d+:\d+: project\.build", str(info.value)), str(info.value)


def test_host_builds_go_through_ccache_when_the_host_has_it(m) -> None:
    with_cache = built(plans(m, ctx=context(host=replace(HOST, ccache="/usr/bin/ccache"))))
    without = built(plans(m))
    for tid, plan in with_cache.items():
        env = dict(plan.build.env)
        assert env["CMAKE_CUDA_COMPILER_LAUNCHER"] == env["CMAKE_CXX_COMPILER_LAUNCHER"] == "ccache"
        assert env["CCACHE_STATSLOG"] == f"{plan.work}/ccache-stats.log"
        assert "CCACHE_DIR" not in dict(without[tid].build.env)
        assert plan.digest == without[tid].digest, "a compiler cache changes no wheel's bytes"
    assert {"CCACHE_DIR", "CMAKE_CXX_COMPILER_LAUNCHER"} <= location_vars()


def test_container_builds_cache_in_the_image_cache(m) -> None:
    found = built(plans(m, CONTAINER, ctx=context(host=PODMAN_HOST), glob="c*-linux-x86_64"))
    assert found
    for plan in found.values():
        env = dict(plan.build.env)
        assert env["CCACHE_DIR"] == "/ccache" and env["CCACHE_STATSLOG"] == "/work/ccache-stats.log"
        assert env["CMAKE_CUDA_COMPILER_LAUNCHER"] == "ccache"


def test_stats_log_counts_hits_misses_and_uncacheable_calls() -> None:
    log = ("# /s/a.cpp\ndirect_cache_hit\nlocal_storage_hit\n# /s/b.cu\ncache_miss\ndirect_cache_miss\n"
           "# /s/c.cpp\npreprocessed_cache_hit\n# conftest.c\ncompiler_check_failed\n")
    stats = parse_stats_log(log)
    assert (stats.hits, stats.misses, stats.uncacheable) == (2, 1, 1)
    assert stats.to_json()["uncacheable_reasons"] == {"compiler_check_failed": 1}
    assert stats.describe() == "2 hits, 1 misses, 1 uncacheable (compiler_check_failed 1); missed: /s/b.cu"
    assert stats.hit_rate == round(2 / 3, 3)
    assert parse_stats_log("").hit_rate is None


def test_environment_pass_reaches_every_build_and_its_digest(shipped_text: str) -> None:
    data = yaml.safe_load(with_core(shipped_text))
    data["project"]["build"]["environment_pass"] = ["PROJ_WEIGHT"]
    m = matrix.loads(yaml.safe_dump(data, sort_keys=False))
    env = {**context().env, "PROJ_WEIGHT": "3"}
    light = built(plans(m, CONTAINER, ctx=context(host=PODMAN_HOST), glob="c*-linux-x86_64"))
    heavy = built(plans(m, CONTAINER, ctx=context(host=PODMAN_HOST, env=env), glob="c*-linux-x86_64"))
    assert light and set(light) == set(heavy)
    for tid, plan in heavy.items():
        assert dict(plan.build.env)["PROJ_WEIGHT"] == "3"
        assert plan.core is not None and all(dict(c.env)["PROJ_WEIGHT"] == "3" for c in plan.core.commands)
        assert "PROJ_WEIGHT" not in dict(light[tid].build.env)
        assert plan.digest != light[tid].digest and plan.core.digest != light[tid].core.digest
