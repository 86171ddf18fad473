"""``channels.promotion``: what promote-release's preflight holds a release to, as matrix data (its PyPI limits and
the targets accepted as not runnable, with their reasons), validated at load like every other key."""

from __future__ import annotations

import fnmatch

import pytest

from builders.matrix import loader as matrix
from builders.matrix.model import Matrix
from builders.matrix.promotion_policy import FILE_LIMIT_MB, TOTAL_LIMIT_GB, PromotionPolicy
from tests import expected
from tests.helpers import edit, only_problem

EMPTY = "    accept_not_runnable: []\n"


def promotion_raw(text: str) -> dict:
    return expected.raw(text)["channels"]["promotion"]


def line_of(text: str, needle: str) -> int:
    """The 1-based line of the first line of ``text`` holding ``needle`` (computed apart from the loader's marks)."""
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def with_accepts(text: str, *entries: tuple[str, str | None]) -> str:
    """``text`` with ``accept_not_runnable`` listing ``(glob, reason)`` entries (reason None: left out)."""
    lines = "".join(f'      - targets: "{glob}"\n' + (f'        reason: "{reason}"\n' if reason is not None else "")
                    for glob, reason in entries)
    return edit(text, EMPTY, "    accept_not_runnable:\n" + lines)


def test_the_shipped_key_is_in_the_model(m: Matrix, shipped_text: str) -> None:
    raw = promotion_raw(shipped_text)
    policy = m.channels.promotion
    assert policy.pypi_file_limit_mb == raw["pypi_file_limit_mb"]
    assert policy.pypi_total_limit_gb == raw["pypi_total_limit_gb"]
    assert [(a.targets, a.reason) for a in policy.accept_not_runnable] == [
        (e["targets"], e["reason"]) for e in raw["accept_not_runnable"]]


def test_the_shipped_key_writes_out_pypis_defaults(shipped_text: str) -> None:
    raw = promotion_raw(shipped_text)
    assert (raw["pypi_file_limit_mb"], raw["pypi_total_limit_gb"]) == (FILE_LIMIT_MB, TOTAL_LIMIT_GB) == (100, 10)


def test_without_the_key_or_its_entries_the_defaults_hold(shipped_text: str) -> None:
    raw = promotion_raw(shipped_text)
    block = (f"  promotion:\n    pypi_file_limit_mb: {raw['pypi_file_limit_mb']}\n"
             f"    pypi_total_limit_gb: {raw['pypi_total_limit_gb']}\n")
    assert matrix.loads(edit(shipped_text, block, "  promotion:\n")).channels.promotion == PromotionPolicy()
    assert matrix.loads(edit(shipped_text, block + EMPTY, "")).channels.promotion == PromotionPolicy()
    assert PromotionPolicy().pypi_file_limit_mb == 100 and PromotionPolicy().pypi_total_limit_gb == 10


def test_limits_are_read_as_written(shipped_text: str) -> None:
    raw = promotion_raw(shipped_text)
    text = edit(shipped_text, f"pypi_file_limit_mb: {raw['pypi_file_limit_mb']}\n", "pypi_file_limit_mb: 0.5\n")
    text = edit(text, f"pypi_total_limit_gb: {raw['pypi_total_limit_gb']}\n", "pypi_total_limit_gb: 25\n")
    policy = matrix.loads(text).channels.promotion
    assert (policy.pypi_file_limit_mb, policy.pypi_total_limit_gb) == (0.5, 25.0)


@pytest.mark.parametrize("key", ["pypi_file_limit_mb", "pypi_total_limit_gb"])
@pytest.mark.parametrize(("value", "phrase"), [("0", "above 0"), ("-1", "above 0"), ("0.0", "above 0"),
                                               ("many", "allowed form"), ("true", "allowed form")])
def test_a_limit_must_be_a_number_over_zero(shipped_text: str, key: str, value: str, phrase: str) -> None:
    old = f"{key}: {promotion_raw(shipped_text)[key]}\n"
    text = edit(shipped_text, old, f"{key}: {value}\n")
    problem = only_problem(text, phrase)
    assert problem.location.key == f"channels.promotion.{key}"
    assert problem.location.line == line_of(text, f"{key}:")


def test_an_accepted_target_needs_a_reason(shipped_text: str) -> None:
    planned = sorted(expected.live_ids(expected.raw(shipped_text)))[0]
    text = with_accepts(shipped_text, (planned, None))
    problem = only_problem(text, "'reason' is a required property")
    assert problem.location.key == "channels.promotion.accept_not_runnable[0]"
    assert problem.location.line == line_of(text, f'targets: "{planned}"')
    blank = only_problem(with_accepts(shipped_text, (planned, "  ")), "reason")
    assert blank.location.key == "channels.promotion.accept_not_runnable[0].reason"


def test_a_glob_that_accepts_no_planned_target_is_refused(shipped_text: str) -> None:
    data = expected.raw(shipped_text)
    live = expected.live_ids(data)
    # an exclusion's glob matches candidates only: none of them is planned
    excluded = next(e["targets"] for e in data["exclude"] if not fnmatch.filter(live, e["targets"]))
    planned = sorted(live)[0]
    for glob in (excluded, "nosuch-*"):
        text = with_accepts(shipped_text, (planned, "fine"), (glob, "why"))
        problem = only_problem(text, "matches no planned target")
        assert problem.location.key == "channels.promotion.accept_not_runnable[1].targets"
        assert problem.location.line == line_of(text, f'targets: "{glob}"')
        assert problem.location.file == "m.yaml"


def test_accepted_targets_keep_their_reason_and_place(shipped_text: str) -> None:
    live = sorted(expected.live_ids(expected.raw(shipped_text)))
    glob = live[0].split("-")[0] + "-*"
    text = with_accepts(shipped_text, (glob, "no runner has this device"))
    (accepted,) = matrix.loads(text).channels.promotion.accept_not_runnable
    assert (accepted.targets, accepted.reason) == (glob, "no runner has this device")
    assert accepted.location is not None and accepted.location.line == line_of(text, f'targets: "{glob}"')
    assert {tid for tid in live if accepted.accepts(tid)} == set(fnmatch.filter(live, glob))
