"""What the GitHub Actions release workflow consumes: the plan, cut into job matrices GitHub accepts.

GitHub starts at most 256 jobs from one job matrix, and a job's outputs hold at most 1 MB
(sized as UTF-16). A release of more targets than that would not start, so the plan is cut
into shards, one per accelerator family and platform (split further where a group is still
too large, never inside one build job). A shard holds two job matrices within both limits:
``builds``, one build job per (variant, platform) that builds every Python of it, so the
variant's ``build.core`` is compiled once per release run; and ``include``, one smoke job per
target, each naming the build job whose artifact holds its wheel. The workflow runs one reusable
workflow per shard from a matrix of shard indexes, so it never lists a shard by hand; a plan
that needs more shards than one matrix can start is refused with the limit named.

Everything here is pure: a function of the targets and the limits.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from builders import engines
from builders.base.errors import SelectionError
from builders.families.device import needed
from builders.matrix.targets import Target


@dataclass(frozen=True, kw_only=True)
class Limits:
    """GitHub's limits (docs.github.com, "Actions limits" and "Passing information between jobs")."""

    jobs: int = 256  # jobs one job matrix can generate per workflow run
    output_bytes: int = 1_000_000  # all outputs of one job, sized as UTF-16
    shards: int = 256  # the shard matrix is a job matrix too


GITHUB = Limits()
# The Python the release's own tools (nox, builders) run on in every job: noxfile.py's sessions.
TOOLS_PYTHON = "3.11"
# The labels every self-hosted runner has (docs.github.com, "Using self-hosted runners in a
# workflow"), compared in lower case.
SELF_HOSTED_DEFAULT_LABELS = frozenset({"self-hosted", "linux", "windows", "macos", "x64", "arm", "arm64"})


def engine_for(target: Target) -> str:
    """The engine CI builds ``target`` with (:func:`builders.engines.for_ci`)."""
    return engines.for_ci(target).name


def device_for(target: Target) -> str:
    """The accelerator whose device the smoke runner must show: only where the matrix names GPU runners."""
    accelerator = needed(target)
    return accelerator.value if accelerator else ""


def smoke_runner(target: Target, served: frozenset[str] | None = None) -> list[str]:
    """The runner labels of the target's smoke job.

    GitHub queues a job for a self-hosted runner nobody runs for up to 24 hours, and
    ``timeout-minutes`` does not count the wait. With ``served`` (the labels of the
    self-hosted runners the repository has, GitHub's default labels implied), a GPU smoke job
    whose runner nobody serves goes to its build runner instead, where ``--require-device``
    fails it at once (exit 23): the release is blocked in minutes, with the reason.
    """
    declared = list(target.smoke_runner)
    if served is None or not device_for(target):
        return declared
    known = {label.lower() for label in served} | SELF_HOSTED_DEFAULT_LABELS
    return declared if {label.lower() for label in declared} <= known else [target.runner]


def unserved(targets: Iterable[Target], served: frozenset[str]) -> list[str]:
    """The GPU smoke runners (label sets) no runner in ``served`` picks up, each once."""
    return sorted({",".join(t.smoke_runner) for t in targets if smoke_runner(t, served) != list(t.smoke_runner)})


def entry(target: Target, served: frozenset[str] | None = None) -> dict[str, Any]:
    """One build (and smoke) job of the matrix."""
    return {
        "id": target.id,
        "runner": target.runner,
        "engine": engine_for(target),
        "image": target.platform.base_image or "",
        "containerfile": target.containerfile or "",
        "variant": target.variant.label,
        "python": " ".join(str(p) for p in target.tested_pythons),  # a shared wheel's: each (ci/smoke.sh)
        "platform": target.platform.name,
        "wheel": target.wheel_name,
        "smoke_runner": smoke_runner(target, served),
        "device": device_for(target),
        "pypi": target.on_pypi,  # the candidate's validate jobs also install its PyPI form from staging
    }


def github_matrix(targets: Iterable[Target], served: frozenset[str] | None = None) -> dict[str, Any]:
    """``{"include": [...]}``: one smoke job per target (one shard's smoke matrix)."""
    return {"include": [smoke_entry(t, served) for t in targets]}


def build_id(target: Target) -> str:
    """The build job a target's wheel comes from: one per (variant, platform), ``cu132-linux-x86_64``."""
    return f"{target.variant.label}-{target.platform.name}"


def smoke_entry(target: Target, served: frozenset[str] | None = None) -> dict[str, Any]:
    """One smoke job: the target, and the build job (and so the artifact) its wheel comes from."""
    return {**entry(target, served), "build": build_id(target)}


def setup_pythons(group: Sequence[Target]) -> str:
    """What setup-python installs for a build job, one per line, the tools' Python last (the default).

    A container build takes its Pythons from the image; cibuildwheel on macOS and Windows builds
    with the runner's own interpreters, so every Python of the job is set up there.
    """
    wanted = [] if engines.for_ci(group[0]).in_image(group[0]) else [str(t.python) for t in group]
    return "\n".join([*dict.fromkeys(p for p in wanted if p != TOOLS_PYTHON), TOOLS_PYTHON])


def build_entry(group: Sequence[Target]) -> dict[str, Any]:
    """One build job: every Python of one (variant, platform), so its ``build.core`` is built once.

    ``ids`` and ``wheels`` (JSON lists, in target order) name the job's per-wheel artifacts
    (``wheel-<target>``, one upload step per position), so that each smoke job downloads its own wheel
    and not the job's whole wheelhouse."""
    first = group[0]
    return {"id": build_id(first), "runner": first.runner, "engine": engine_for(first),
            "variant": first.variant.label, "platform": first.platform.name, "count": len(group),
            "targets": " ".join(t.id for t in group), "pythons": setup_pythons(group),
            "ids": json.dumps([t.id for t in group]), "wheels": json.dumps([t.wheel_name for t in group])}


def build_groups(targets: Iterable[Target]) -> list[list[Target]]:
    """Targets by build job, in plan order."""
    out: dict[str, list[Target]] = {}
    for t in targets:
        out.setdefault(build_id(t), []).append(t)
    return list(out.values())


def output_bytes(value: object) -> int:
    """What GitHub counts for ``value`` written compactly to ``$GITHUB_OUTPUT``."""
    return len(json.dumps(value, separators=(",", ":"), sort_keys=True).encode("utf-16-le"))


def groups(targets: Iterable[Target]) -> dict[str, list[Target]]:
    """Targets by ``{family}-{platform}`` (``cuda-linux-x86_64``), in plan order: one shard each unless too large."""
    out: dict[str, list[Target]] = {}
    for t in targets:
        out.setdefault(f"{t.variant.accelerator.value}-{t.platform.name}", []).append(t)
    return out


def shard_outputs(builds: Sequence[Sequence[Target]], served: frozenset[str] | None = None) -> dict[str, Any]:
    """What one shard's matrix job hands on: its build jobs and its smoke jobs."""
    return {"builds": {"include": [build_entry(g) for g in builds]},
            "include": {"include": [smoke_entry(t, served) for g in builds for t in g]}}


def fits(builds: Sequence[Sequence[Target]], limits: Limits) -> bool:
    """Whether one shard of these build jobs (and their smoke jobs) is within GitHub's limits."""
    outputs = shard_outputs(builds)
    return (len(outputs["include"]["include"]) <= limits.jobs and len(builds) <= limits.jobs
            and output_bytes(outputs) <= limits.output_bytes)


def split(name: str, targets: Sequence[Target], limits: Limits) -> list[tuple[str, list[list[Target]]]]:
    """``targets`` in as few shards as keep each within the limits, a build job never cut in two."""
    pieces: list[list[list[Target]]] = [[]]
    for group in build_groups(targets):
        if pieces[-1] and not fits([*pieces[-1], group], limits):
            pieces.append([])
        pieces[-1].append(group)
    for piece in pieces:
        if not fits(piece, limits):
            raise SelectionError(f"the build job {build_id(piece[0][0])} ({len(piece[0])} targets) exceeds GitHub's "
                                 "limits even alone; release it in parts with --select/--skip")
    if len(pieces) == 1:
        return [(name, pieces[0])]
    return [(f"{name}-{i}", p) for i, p in enumerate(pieces, 1)]


def shards(targets: Iterable[Target], limits: Limits = GITHUB,
           served: frozenset[str] | None = None) -> list[dict[str, Any]]:
    """Every target in exactly one shard: ``{"index", "name", "count", "builds", "include"}``."""
    named = [piece for name, group in groups(targets).items() for piece in split(name, group, limits)]
    out = []
    for i, (name, builds) in enumerate(named):
        outputs = shard_outputs(builds, served)
        out.append({"index": i, "name": name, "count": sum(map(len, builds)),
                    "builds": outputs["builds"]["include"], "include": outputs["include"]["include"]})
    return out


def images(targets: Iterable[Target]) -> list[dict[str, Any]]:
    """One image job per (variant, platform) built in a container: the image every Python of it shares."""
    out: dict[str, dict[str, Any]] = {}
    for t in targets:
        if engines.for_ci(t).in_image(t):
            name = f"{t.variant.label}-{t.platform.name}"
            out.setdefault(name, {"name": name, "family": t.variant.accelerator.value, "runner": t.runner,
                                  "target": t.id})
    return list(out.values())


def github_plan(targets: Sequence[Target], limits: Limits = GITHUB,
                served: frozenset[str] | None = None) -> dict[str, Any]:
    """The release workflow's plan: ``{"targets", "limits", "shards": [...], "images": [...]}``.

    The plan job hands on only the shard index (``{"include": [{"index", "name", "count"}]}``)
    and the image list; each shard's own job extracts its ``include`` from this document.
    """
    plan = {"targets": len(targets), "limits": {"jobs": limits.jobs, "output_bytes": limits.output_bytes},
            "shards": shards(targets, limits, served), "images": images(targets),
            "builds": len(build_groups(targets)), "wheels": sorted(t.wheel_name for t in targets)}
    check(plan, limits)
    return plan


def plan_outputs(plan: dict[str, Any]) -> dict[str, Any]:
    """What the plan job writes to ``$GITHUB_OUTPUT`` (``ci/plan.sh`` writes the same from the JSON)."""
    index = [{k: s[k] for k in ("index", "name", "count")} for s in plan["shards"]]
    return {"shards": {"include": index}, "images": {"include": plan["images"]}}


def check(plan: dict[str, Any], limits: Limits) -> None:
    """Refuse a plan GitHub would not start, naming the limit."""
    found = len(plan["shards"])
    if found > limits.shards:
        raise SelectionError(f"the selection needs {found} shards of at most {limits.jobs} jobs, more than the "
                             f"{limits.shards} jobs one GitHub job matrix can start; release it in parts with "
                             "--select/--skip")
    if len(plan["images"]) > limits.jobs:
        raise SelectionError(f"the selection needs {len(plan['images'])} images, more than the {limits.jobs} "
                             "jobs one GitHub job matrix can start; release it in parts with --select/--skip")
    size = output_bytes(plan_outputs(plan))
    if size > limits.output_bytes:
        raise SelectionError(f"the plan job's outputs would be {size:,} bytes, more than GitHub's "
                             f"{limits.output_bytes:,} per job; release it in parts with --select/--skip")
    for shard in plan["shards"]:
        outputs = {"builds": {"include": shard["builds"]}, "include": {"include": shard["include"]}}
        if max(len(shard["builds"]), len(shard["include"])) > limits.jobs or output_bytes(outputs) > limits.output_bytes:
            raise SelectionError(f"shard {shard['name']} exceeds GitHub's limits even alone ({len(shard['include'])} "
                                 f"jobs); release it in parts with --select/--skip")
