"""Which channel a run of the release workflow plans, from the event's facts alone: builders' code, not the
workflow's shell.

The workflow hands ``plan`` three facts GitHub states about the run (``--event``, ``--ref``, ``--default-branch``,
each passed through ``env:``), and :func:`decide` reads them against :data:`TABLE`:

============================  =========================================================================
event, ref                    what the run plans
============================  =========================================================================
``push`` of a tag             that tag (``--release-tag``): a release or a candidate, or refused (exit 25)
``schedule`` of the default   the nightly (``--channel nightly``, the commit date from ``--commit-date``)
branch
``workflow_dispatch``         nothing: a dispatch builds, tests and assembles, and publishes nowhere
anything else                 nothing
============================  =========================================================================

A scheduled run is always the default branch's on GitHub; the check is there so that no other ref ever
plans a nightly (an empty ``--default-branch``, which a schedule's payload may lack, is taken as GitHub's
word). ``workflow --check`` refuses a plan step that decides any of this in shell
(:mod:`builders.ci.workflow_policy`, the plan kind's ``channel_facts``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Planned(enum.Enum):
    TAG = "tag"  # the pushed tag: a release or a candidate, as the tag's spelling says (builders.ci.checks.tag_kind)
    NIGHTLY = "nightly"
    NOTHING = "nothing"


TAGS, BRANCHES = "refs/tags/", "refs/heads/"


@dataclass(frozen=True, kw_only=True)
class Facts:
    """What GitHub says about the run (``github.event_name``, ``github.ref``,
    ``github.event.repository.default_branch``)."""

    event: str
    ref: str = ""
    default_branch: str = ""

    @property
    def ref_type(self) -> str:
        return "tag" if self.ref.startswith(TAGS) else "branch" if self.ref.startswith(BRANCHES) else ""

    @property
    def ref_name(self) -> str:
        return self.ref.removeprefix(TAGS) if self.ref_type == "tag" else self.ref.removeprefix(BRANCHES)


@dataclass(frozen=True, kw_only=True)
class Decision:
    planned: Planned
    why: str
    tag: str | None = None  # with Planned.TAG: the tag, as --release-tag takes it


def _tag_push(f: Facts) -> bool:
    return f.event == "push" and f.ref_type == "tag" and bool(f.ref_name)


def _default_branch_schedule(f: Facts) -> bool:
    return f.event == "schedule" and f.ref_type == "branch" and f.default_branch in ("", f.ref_name)


# The table, first match wins: (when, what is planned, why). A dispatch plans nothing, whatever its ref.
TABLE = (
    (_tag_push, Planned.TAG, "a pushed tag: its release or candidate"),
    (_default_branch_schedule, Planned.NIGHTLY, "the scheduled run of the default branch: the nightly"),
    (lambda f: f.event == "workflow_dispatch", Planned.NOTHING,
     "a dispatch builds, tests and assembles, and publishes nowhere"),
    (lambda f: True, Planned.NOTHING, "no channel for this event and ref"),
)


def decide(facts: Facts) -> Decision:
    """What a run with these facts plans (see the module's table)."""
    for when, planned, why in TABLE:
        if when(facts):
            return Decision(planned=planned, why=why, tag=facts.ref_name if planned is Planned.TAG else None)
    raise AssertionError("the table's last row matches every run")
