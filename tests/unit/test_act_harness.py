"""The act harness reads act's --json log: each job's result, and which jobs never started."""

from __future__ import annotations

import json

from tests.act.harness import NEVER_STARTED, narrowed, parse


def line(job: str, **fields: object) -> str:
    return json.dumps({"job": job, "level": "info", "msg": "", **fields})


def test_results_by_job_and_a_job_no_runner_serves_is_never_started() -> None:
    log = "\n".join([
        "not json",
        line("release/plan ", jobResult="success"),
        line("shard x/release shard/smoke gpu", msg=f"  🐳  docker pull image={NEVER_STARTED} platform="),
        line("shard x/release shard/smoke gpu", jobResult="failure"),
        line("release/report", msg="⭐ Run Main", stepResult="success"),
    ])
    jobs, never = parse(log)
    assert jobs == {"release/plan": "success", "shard x/release shard/smoke gpu": "never started"}
    assert never == ("shard x/release shard/smoke gpu",)


def test_the_narrowed_matrix_keeps_one_cpu_and_one_cu132_target_of_linux_x86_64(shipped_text: str) -> None:
    from builders.families import loader as matrix
    from builders.matrix.targets import expand

    text = narrowed(shipped_text, version="9.8.7", base_image="localhost/base@sha256:" + "0" * 64, python="3.13")
    m = matrix.loads(text, "matrix.yaml")
    targets, _ = expand(m)
    assert sorted(t.id for t in targets) == ["cpu-cp313-linux-x86_64", "cu132-cp313-linux-x86_64"]
    assert str(m.project.version) == "9.8.7"
    assert all(not t.smoke_runner or t.smoke_runner == (t.runner,) for t in targets)


def test_tag_pushes_build_with_empty_caches_and_other_runs_with_the_hosts(tmp_path) -> None:
    """A tag build on GitHub restores no cache: under act it gets an empty XDG_CACHE_HOME of its own."""
    from pathlib import Path

    from tests.act.harness import Harness

    cold = Harness.cache_home("push", "refs/tags/v2.15.0", tmp_path / "state")
    assert cold.is_dir() and not any(cold.iterdir()) and cold.is_relative_to(tmp_path)
    for event, ref in (("workflow_dispatch", "refs/tags/v2.15.0"), ("push", "refs/heads/main")):
        assert Harness.cache_home(event, ref, tmp_path / "other") == Path.home() / ".cache"


def test_a_tag_run_may_share_the_hosts_caches_when_asked(tmp_path) -> None:
    from pathlib import Path

    from tests.act.harness import Harness

    assert Harness.cache_home("push", "refs/tags/v2.15.1", tmp_path / "s", cold=False) == Path.home() / ".cache"
    assert Harness.cache_home("workflow_dispatch", "refs/heads/main", tmp_path / "s", cold=True).is_relative_to(tmp_path)
