"""The plan for GitHub, cut into shards GitHub accepts: a synthetic matrix of 1,000 targets and more.

GitHub starts at most 256 jobs from one job matrix and takes at most 1 MB of outputs per job
(sized as UTF-16); those two numbers are restated here from GitHub's documentation, not read
from builders.ci.jobs, and the sizes are measured here the way GitHub measures them.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest
import yaml

from builders.base.errors import SelectionError
from builders.ci import jobs as ci
from builders.families import loader as matrix
from builders.matrix.targets import expand

GITHUB_MAX_JOBS = 256
GITHUB_MAX_OUTPUT_BYTES = 1_000_000
# The loader's caps (builders.matrix.yaml_loader): at most 32 Pythons, 32 versions of a family and 4,000
# candidate targets.
MAX_PYTHONS = 32
MAX_VERSIONS = 32
MAX_CANDIDATES = 4_000


def cuda_version(version: str) -> str:
    label = "cu" + version.replace(".", "")
    return f"""\
      "{version}":
        label: {label}
        arch_list:
          linux-x86_64: "8.0;9.0;10.0;12.0+PTX"
          linux-aarch64: "8.0;9.0;10.0;12.0+PTX"
        toolkit:
          requirements: ["cuda-toolkit[nvcc,cudart,cccl,crt,nvvm]=={version}.0"]
        runtime_requirements:
          - 'cuda-toolkit[cudart]=={version}.0; platform_system == "Linux"'
"""


def new_pythons(listed: list[str]) -> list[str]:
    top = max(int(p.rstrip("t").split(".")[1]) for p in listed)
    return [f"3.{minor}{t}" for minor in range(top + 1, top + 40) for t in ("", "t")]


def growth(m) -> tuple[int, int]:
    """How many Pythons and CUDA versions to add for the most targets the loader's caps allow."""
    targets, _ = expand(m)
    pythons, platforms, variants = len(m.pythons), len(m.platforms), len(m.variants)
    cuda = [t for t in targets if t.variant.accelerator.value == "cuda"]
    versions = len({t.variant.label for t in cuda})
    per_cuda = len(cuda) / pythons / versions
    options = [(p, c) for p in range(MAX_PYTHONS - pythons + 1) for c in range(MAX_VERSIONS - versions + 1)
               if (pythons + p) * platforms * (variants + c) <= MAX_CANDIDATES]
    return max(options, key=lambda o: (pythons + o[0]) * (len(targets) / pythons + o[1] * per_cuda))


def synthetic(text: str) -> str:
    """``text`` (a matrix with a CUDA family) with Pythons and CUDA versions added up to the caps, the rest untouched."""
    m = matrix.loads(text, "matrix.yaml")
    more_pythons, more_cuda = growth(m)
    listed = yaml.safe_load(text)["pythons"]
    anchor, versions = f'  - "{listed[-1]}"\n', "\n    versions:\n"  # the first family with versions is CUDA's
    assert anchor in text and versions in text
    text = text.replace(anchor, anchor + "".join(f'  - "{p}"\n' for p in new_pythons(listed)[:more_pythons]), 1)
    taken = {v.label for v in m.variants}
    cuda = [v for v in (f"13.{minor}" for minor in range(5, 99)) if "cu" + v.replace(".", "") not in taken]
    return text.replace(versions, versions + "".join(cuda_version(v) for v in cuda[:more_cuda]), 1)


@pytest.fixture(scope="module")
def big(shipped_text: str) -> tuple:
    m = matrix.loads(synthetic(shipped_text), "matrix.yaml")
    targets, _ = expand(m)
    return m, targets


def github_bytes(value: object) -> int:
    """As GitHub counts an output: the compact JSON, two bytes per UTF-16 code unit."""
    return len(json.dumps(value, separators=(",", ":")).encode("utf-16-le"))


def family_of(m) -> dict[str, str]:
    return {v.label: v.accelerator.value for v in m.variants}


def test_the_synthetic_matrix_is_larger_than_one_github_matrix(big) -> None:
    m, targets = big
    assert len(m.pythons) <= MAX_PYTHONS
    assert len(targets) > GITHUB_MAX_JOBS


def test_the_shipped_matrix_grows_to_1000_targets(root) -> None:
    """The committed matrix.yaml, grown within the loader's caps, plans at least 1,000 targets."""
    targets, _ = expand(matrix.loads(synthetic((root / "matrix.yaml").read_text()), root / "matrix.yaml"))
    assert len(targets) >= 1000


def test_every_shard_is_within_githubs_limits(big) -> None:
    _, targets = big
    plan = ci.github_plan(targets)
    for shard in plan["shards"]:
        assert 0 < len(shard["include"]) <= GITHUB_MAX_JOBS, shard["name"]
        assert 0 < len(shard["builds"]) <= GITHUB_MAX_JOBS, shard["name"]
        assert shard["count"] == len(shard["include"])
        outputs = {"builds": {"include": shard["builds"]}, "include": {"include": shard["include"]}}
        assert github_bytes(outputs) <= GITHUB_MAX_OUTPUT_BYTES, shard["name"]
    assert len(plan["shards"]) <= GITHUB_MAX_JOBS
    outputs = ci.plan_outputs(plan)
    assert sum(github_bytes(v) for v in outputs.values()) <= GITHUB_MAX_OUTPUT_BYTES
    assert len(outputs["images"]["include"]) <= GITHUB_MAX_JOBS


def test_shards_cover_every_target_exactly_once(big) -> None:
    _, targets = big
    plan = ci.github_plan(targets)
    ids = Counter(e["id"] for s in plan["shards"] for e in s["include"])
    assert set(ids) == {t.id for t in targets}
    assert set(ids.values()) == {1}
    assert plan["targets"] == len(targets)
    assert [s["index"] for s in plan["shards"]] == list(range(len(plan["shards"])))
    assert len({s["name"] for s in plan["shards"]}) == len(plan["shards"])


def test_a_shard_holds_one_family_on_one_platform(big) -> None:
    m, targets = big
    family = family_of(m)
    for shard in ci.github_plan(targets)["shards"]:
        kinds = {(family[e["variant"]], e["platform"]) for e in shard["include"]}
        assert len(kinds) == 1, shard["name"]
        (fam, platform), = kinds
        assert shard["name"].startswith(f"{fam}-{platform}")


def test_a_group_over_the_limit_is_split_between_build_jobs(big) -> None:
    _, targets = big
    in_group = [t for t in targets if t.variant.accelerator.value == "cuda" and t.platform.name == "linux-x86_64"]
    assert len(in_group) > GITHUB_MAX_JOBS  # the synthetic matrix makes this group too large for one matrix
    pieces = [s for s in ci.github_plan(targets)["shards"] if s["name"].startswith("cuda-linux-x86_64")]
    assert [s["name"] for s in pieces] == [f"cuda-linux-x86_64-{i}" for i in range(1, len(pieces) + 1)]
    assert len(pieces) > 1
    assert sum(s["count"] for s in pieces) == len(in_group)
    builds = [b["id"] for s in pieces for b in s["builds"]]
    assert len(builds) == len(set(builds)) == len({(t.variant.label, t.platform.name) for t in in_group})


def test_the_output_size_splits_a_group_too(big) -> None:
    _, targets = big
    limits = ci.Limits(jobs=256, output_bytes=45_000)
    plan = ci.github_plan(targets, limits)
    for s in plan["shards"]:
        assert github_bytes({"builds": {"include": s["builds"]}, "include": {"include": s["include"]}}) <= 45_000
    assert any(s["name"][-2:] == "-2" for s in plan["shards"])


def test_one_build_job_per_variant_and_platform_builds_every_python_of_it(big) -> None:
    """The core is built once per (variant, platform): one build job each, holding all its targets."""
    _, targets = big
    plan = ci.github_plan(targets)
    pairs = {(t.variant.label, t.platform.name): [] for t in targets}
    for t in targets:
        pairs[(t.variant.label, t.platform.name)].append(t.id)
    builds = [b for s in plan["shards"] for b in s["builds"]]
    assert plan["builds"] == len(builds) == len(pairs)
    for b in builds:
        assert b["targets"].split() == pairs[(b["variant"], b["platform"])]
        assert b["count"] == len(b["targets"].split())
        assert json.loads(b["ids"]) == b["targets"].split()  # the per-wheel artifacts, in target order
        by_id = {t.id: t.wheel_name for t in targets}
        assert json.loads(b["wheels"]) == [by_id[i] for i in json.loads(b["ids"])]
    for s in plan["shards"]:
        own = {b["id"] for b in s["builds"]}
        assert {e["build"] for e in s["include"]} == own  # a smoke job's build job is in its shard
    assert plan["wheels"] == sorted(t.wheel_name for t in targets)


def test_build_jobs_set_up_the_pythons_their_engine_needs(shipped_text: str) -> None:
    m = matrix.loads(shipped_text, "matrix.yaml")
    targets, _ = expand(m)
    for group in ci.build_groups(targets):
        b = ci.build_entry(group)
        lines = b["pythons"].split("\n")
        assert lines[-1] == ci.TOOLS_PYTHON  # the last one is setup-python's default: nox runs on it
        if b["engine"] == "container":
            assert lines == [ci.TOOLS_PYTHON]
        else:
            assert set(lines) == {str(t.python) for t in group} | {ci.TOOLS_PYTHON}


def test_a_plan_needing_more_shards_than_a_matrix_starts_is_refused_with_the_limit(big) -> None:
    _, targets = big
    with pytest.raises(SelectionError, match=r"more than the 4 jobs one GitHub job matrix can start"):
        ci.github_plan(targets, ci.Limits(shards=4))


def test_the_shipped_matrix_needs_no_split(shipped_text: str) -> None:
    m = matrix.loads(shipped_text, "matrix.yaml")
    targets, _ = expand(m)
    plan = ci.github_plan(targets)
    family = family_of(m)
    groups = {(family[t.variant.label], t.platform.name) for t in targets}
    assert len(plan["shards"]) == len(groups)
    linux = {(t.variant.label, t.platform.name) for t in targets if t.platform.os.value == "linux"}
    assert {i["name"] for i in plan["images"]} == {f"{v}-{p}" for v, p in linux}


def test_a_gpu_smoke_runner_nobody_serves_goes_to_the_build_runner(shipped_text: str) -> None:
    """Queued for a day otherwise; there --require-device fails it at once."""
    m = matrix.loads(shipped_text, "matrix.yaml")
    targets, _ = expand(m)
    gpu = [t for t in targets if ci.device_for(t)]
    assert gpu
    for t in gpu:
        assert ci.smoke_runner(t, frozenset()) == [t.runner]
        labels = frozenset(label for label in t.smoke_runner if label.lower() not in ci.SELF_HOSTED_DEFAULT_LABELS)
        assert ci.smoke_runner(t, labels) == list(t.smoke_runner)
        assert ci.smoke_runner(t, None) == list(t.smoke_runner)
    assert set(ci.unserved(targets, frozenset())) == {",".join(t.smoke_runner) for t in gpu}
    cpu = [t for t in targets if not ci.device_for(t)]
    assert all(ci.smoke_runner(t, frozenset()) == list(t.smoke_runner) for t in cpu)


def test_gpu_smoke_jobs_name_the_device_they_need(shipped_text: str) -> None:
    m = matrix.loads(shipped_text, "matrix.yaml")
    targets, _ = expand(m)
    for t in targets:
        e = ci.entry(t)
        declared = t.variant.smoke_runner(t.platform.name)
        assert e["device"] == (t.variant.accelerator.value if declared else ""), t.id
        assert e["smoke_runner"] == list(declared or (t.runner,))
