"""Which channel a release-workflow run plans, from the event's facts (builders.ci.run_channel), and ``plan --event``
as the workflow runs it: a dispatch from any branch plans no channel; only the default branch's schedule is a
nightly; a pushed tag is checked as ``--release-tag`` checks it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from builders import cli
from builders.base.errors import SelectionError
from builders.ci.run_channel import Facts, Planned, decide
from builders.families import loader

ROOT = Path(__file__).resolve().parents[2]

TABLE = [
    # event, ref, default branch -> planned
    (("push", "refs/tags/v2.15.0", "main"), Planned.TAG),
    (("push", "refs/tags/v2.15.0-rc1", "main"), Planned.TAG),
    (("schedule", "refs/heads/main", "main"), Planned.NIGHTLY),
    (("schedule", "refs/heads/main", ""), Planned.NIGHTLY),  # a schedule's payload without the repository
    (("schedule", "refs/heads/feature", "main"), Planned.NOTHING),
    (("schedule", "refs/tags/v2.15.0", "main"), Planned.NOTHING),
    (("workflow_dispatch", "refs/heads/feature", "main"), Planned.NOTHING),
    (("workflow_dispatch", "refs/heads/main", "main"), Planned.NOTHING),
    (("workflow_dispatch", "refs/tags/v2.15.0", "main"), Planned.NOTHING),
    (("push", "refs/heads/main", "main"), Planned.NOTHING),
    (("pull_request", "refs/pull/7/merge", "main"), Planned.NOTHING),
    (("push", "refs/tags/", "main"), Planned.NOTHING),
]


@pytest.mark.parametrize(("facts", "planned"), TABLE, ids=[" ".join(f or "''" for f in t[0]) for t in TABLE])
def test_the_table(facts: tuple[str, str, str], planned: Planned) -> None:
    event, ref, default = facts
    decision = decide(Facts(event=event, ref=ref, default_branch=default))
    assert decision.planned is planned and decision.why
    assert decision.tag == (ref.removeprefix("refs/tags/") if planned is Planned.TAG else None)


def plan(tmp_path: Path, *facts: str) -> tuple[int, dict]:
    out = tmp_path / "plan.json"
    code = cli.main(["plan", "--matrix", str(ROOT / "matrix.yaml"), "--format", "github", "--output", str(out),
                     "--commit-date", "2026-12-01", *facts])
    return code, json.loads(out.read_text()) if out.exists() else {}


def test_a_dispatch_from_a_branch_plans_no_channel(tmp_path: Path) -> None:
    code, found = plan(tmp_path, "--event", "workflow_dispatch", "--ref", "refs/heads/feature",
                       "--default-branch", "main")
    assert code == 0
    assert (found["release"], found["candidate"], found["nightly"], found["nightly_date"]) == (False, False, False, "")
    assert found["version"] == str(loader.load(ROOT / "matrix.yaml", builds=False).project.version)


def test_the_default_branch_schedule_plans_the_nightly_of_the_commit_date(tmp_path: Path) -> None:
    code, found = plan(tmp_path, "--event", "schedule", "--ref", "refs/heads/main",
                       "--default-branch", "main")
    assert code == 0 and found["nightly"] is True and found["nightly_date"] == "2026-12-01"
    assert found["release"] is False and found["candidate"] is False
    assert all(".dev20261201+" in e["wheel"] for s in found["shards"] for e in s["include"])


def test_a_pushed_tag_is_checked_as_release_tag_checks_it(tmp_path: Path) -> None:
    code, found = plan(tmp_path, "--event", "push", "--ref", "refs/tags/v0.0.1",
                       "--default-branch", "main")
    assert code == 25 and found == {}  # the tag is not v{project.version}: refused, no plan written


def test_event_facts_and_a_channel_of_its_own_are_refused_together(tmp_path: Path) -> None:
    code, found = plan(tmp_path, "--event", "workflow_dispatch", "--channel", "nightly")
    assert code == SelectionError.exit_code and found == {}
