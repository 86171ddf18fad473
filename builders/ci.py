"""What the GitHub Actions release workflow consumes: the plan, cut into job matrices GitHub accepts.

GitHub starts at most 256 jobs from one job matrix, and a job's outputs hold at most 1 MB
(sized as UTF-16). A release of more targets than that would not start, so the plan is cut
into shards, one per accelerator family and platform (split further where a group is still
too large), each a ``{"include": [...]}`` within both limits. The workflow runs one reusable
workflow per shard from a matrix of shard indexes, so it never lists a shard by hand; a plan
that needs more shards than one matrix can start is refused with the limit named.

Everything here is pure: a function of the targets and the limits.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .device import needed
from .errors import SelectionError
from .model import OS
from .targets import Target


@dataclass(frozen=True, kw_only=True)
class Limits:
    """GitHub's limits (docs.github.com, "Actions limits" and "Passing information between jobs")."""

    jobs: int = 256  # jobs one job matrix can generate per workflow run
    output_bytes: int = 1_000_000  # all outputs of one job, sized as UTF-16
    shards: int = 256  # the shard matrix is a job matrix too


GITHUB = Limits()


def engine_for(target: Target) -> str:
    """CI builds Linux wheels in the variant's image, macOS and Windows wheels with cibuildwheel."""
    return "container" if target.platform.os is OS.LINUX else "cibw"


def device_for(target: Target) -> str:
    """The accelerator whose device the smoke runner must show: only where the matrix names GPU runners."""
    accelerator = needed(target)
    return accelerator.value if accelerator else ""


def entry(target: Target) -> dict[str, Any]:
    """One build (and smoke) job of the matrix."""
    return {
        "id": target.id,
        "runner": target.runner,
        "engine": engine_for(target),
        "image": target.platform.base_image or "",
        "containerfile": target.containerfile or "",
        "variant": target.variant.label,
        "python": str(target.python),
        "platform": target.platform.name,
        "wheel": target.wheel_name,
        "smoke_runner": list(target.smoke_runner),
        "device": device_for(target),
    }


def github_matrix(targets: Iterable[Target]) -> dict[str, Any]:
    """``{"include": [...]}``: one build job per target, on the runner the matrix names (one shard's matrix)."""
    return {"include": [entry(t) for t in targets]}


def output_bytes(value: object) -> int:
    """What GitHub counts for ``value`` written compactly to ``$GITHUB_OUTPUT``."""
    return len(json.dumps(value, separators=(",", ":"), sort_keys=True).encode("utf-16-le"))


def groups(targets: Iterable[Target]) -> dict[str, list[Target]]:
    """Targets by ``{family}-{platform}`` (``cuda-linux-x86_64``), in plan order."""
    out: dict[str, list[Target]] = {}
    for t in targets:
        out.setdefault(f"{t.variant.accelerator.value}-{t.platform.name}", []).append(t)
    return out


def split(name: str, targets: Sequence[Target], limits: Limits) -> list[tuple[str, list[Target]]]:
    """``targets`` in as few contiguous, evenly sized pieces as keep each within the limits."""
    count = max(1, math.ceil(len(targets) / limits.jobs))
    while True:
        pieces = _even(targets, count)
        if all(output_bytes(github_matrix(p)) <= limits.output_bytes for p in pieces) or count == len(targets):
            break
        count += 1
    if count == 1:
        return [(name, pieces[0])]
    return [(f"{name}-{i}", p) for i, p in enumerate(pieces, 1)]


def _even(items: Sequence[Target], count: int) -> list[list[Target]]:
    size, extra = divmod(len(items), count)
    bounds = [i * size + min(i, extra) for i in range(count + 1)]
    return [list(items[a:b]) for a, b in itertools.pairwise(bounds)]


def shards(targets: Iterable[Target], limits: Limits = GITHUB) -> list[dict[str, Any]]:
    """Every target in exactly one shard: ``{"index", "name", "count", "include"}``."""
    named = [piece for name, group in groups(targets).items() for piece in split(name, group, limits)]
    return [{"index": i, "name": name, "count": len(piece), "include": github_matrix(piece)["include"]}
            for i, (name, piece) in enumerate(named)]


def images(targets: Iterable[Target]) -> list[dict[str, Any]]:
    """One image job per (variant, platform) built in a container: the image every Python of it shares."""
    out: dict[str, dict[str, Any]] = {}
    for t in targets:
        if engine_for(t) == "container":
            name = f"{t.variant.label}-{t.platform.name}"
            out.setdefault(name, {"name": name, "family": t.variant.accelerator.value, "runner": t.runner,
                                  "target": t.id})
    return list(out.values())


def github_plan(targets: Sequence[Target], limits: Limits = GITHUB) -> dict[str, Any]:
    """The release workflow's plan: ``{"targets", "limits", "shards": [...], "images": [...]}``.

    The plan job hands on only the shard index (``{"include": [{"index", "name", "count"}]}``)
    and the image list; each shard's own job extracts its ``include`` from this document.
    """
    plan = {"targets": len(targets), "limits": {"jobs": limits.jobs, "output_bytes": limits.output_bytes},
            "shards": shards(targets, limits), "images": images(targets)}
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
        if len(shard["include"]) > limits.jobs or output_bytes({"include": shard["include"]}) > limits.output_bytes:
            raise SelectionError(f"shard {shard['name']} exceeds GitHub's limits even alone ({len(shard['include'])} "
                                 f"jobs); release it in parts with --select/--skip")
