"""A release rehearsed at a profile's scale: every job's minutes, disk, bytes and dollars, before the run.

The workflows are read as they are (:mod:`builders.ci.workflow_graph`), for four runs: the
nightly (a schedule of the release workflow), a candidate (a tag ``v{version}-rcN``: built, published
to the test channel, validated), the final tag (built and checked, published nowhere: the bucket path)
and the promotion (``promote.yml``: the release channel, then PyPI and the GitHub Release). Which jobs
a run starts comes from their ``if:`` conditions evaluated with that run's plan outputs and
``vars.INDEX_BUCKET`` set (:func:`builders.ci.workflow_rules.outcomes`; a condition that depends on
something else counts as started); how many from their job matrices, filled from the plan of the
matrix's targets. A job's work follows from what its steps run: a build command compiles its targets'
core once and each Python after it, an image push builds the image, a smoke or validate command
installs each target's wheel and runtime requirements, ``builders publish`` sends what it downloaded
to the bucket, the PyPI action what the release puts on PyPI; every job pays its set-up and its
transfers. Disk high-water is conservative: checkout, toolkit or image, build tree, everything the job
downloads plus what it writes (a build job its wheels, another job what it uploads).

Pure: a function of the matrix's targets, the workflows' text, the profile and the price table.
"""

from __future__ import annotations

import fnmatch
import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

from builders.base.errors import WorkflowDrift
from builders.ci import expressions as ex
from builders.ci import jobs as ci
from builders.ci.workflow_graph import Job, Unset, entries, expand, read, value
from builders.ci.workflow_jobs import PYPI_ACTIONS
from builders.ci.workflow_rules import outcomes
from builders.matrix.targets import Target
from builders.report.prices import PricedRunner, Prices
from builders.report.scale_profile import Profile, Scale

BUILD = "nox -s build"
IMAGE = "ci/images.sh push"
SMOKE = "ci/smoke.sh run"
VALIDATE = "ci/validate.sh"
TO_BUCKET = "builders publish"
COPY_IN_BUCKET = ("ci/promote.sh index", "promote-release")  # every wheel, copied inside the bucket
RELEASE_ASSETS = "ci/github-release.sh"
BUCKET = "s3://rehearsal/"
PROMOTION_WORKFLOW = "promote.yml"


@dataclass(frozen=True, kw_only=True)
class Run:
    """One kind of workflow run: its file and what its plan says."""

    name: str
    workflow: str  # "": the release workflow given; else a file beside it
    outputs: Mapping[str, str]


RUNS = (
    Run(name="nightly", workflow="", outputs={"nightly": "true", "github.event_name": "schedule"}),
    Run(name="candidate", workflow="", outputs={"candidate": "true", "github.event_name": "push"}),
    Run(name="final tag", workflow="", outputs={"release": "true", "github.event_name": "push"}),
    Run(name="promote", workflow=PROMOTION_WORKFLOW, outputs={"github.event_name": "workflow_dispatch"}),
)
RELEASE = ("candidate", "final tag", "promote")  # what a release costs: its candidate, its tag, its promotion


@dataclass(frozen=True, kw_only=True)
class Artifact:
    """One uploaded artifact: its size, the wheels in it, its largest file and how long it is kept."""

    mb: float
    wheels_mb: float
    largest_mb: float
    retention_days: int | None


@dataclass(frozen=True, kw_only=True)
class Instance:
    """One job as GitHub starts it."""

    run: str
    job: Job
    label: str  # the job and its matrix entry, for findings
    runner: PricedRunner
    in_matrix: int  # the jobs its matrix starts (in its caller's instance)
    minutes_cold: float
    minutes_warm: float
    disk_mb: float
    down_mb: float
    up_mb: float
    bucket_mb: float = 0.0
    copied_mb: float = 0.0
    pypi_mb: float = 0.0
    largest_mb: float = 0.0  # the largest file it downloads or sends
    used_mb: float = 0.0  # of what it downloads, what its work needs (:func:`_used`)
    specific: bool = False  # its work is some wheels: those it installs, or the PyPI wheels it uploads
    from_other_run: tuple[str, ...] = ()
    artifact_gb_days: float = 0.0
    builds: tuple[str, ...] = ()  # the targets it builds (a build job)

    @property
    def compiles(self) -> bool:
        return BUILD in self.job.commands

    @property
    def dollars_cold(self) -> float:
        return self.minutes_cold * self.runner.per_minute

    @property
    def dollars_warm(self) -> float:
        return self.minutes_warm * self.runner.per_minute


@dataclass(frozen=True, kw_only=True)
class Totals:
    """One run's sums, and its wall-clock along the critical path of ``needs``."""

    minutes_cold: float
    minutes_warm: float
    wall_minutes: float
    dollars_cold: float
    dollars_warm: float
    down_gb: float
    up_gb: float
    bucket_gb: float
    pypi_gb: float
    artifact_gb_days: float


@dataclass(frozen=True, kw_only=True)
class Rehearsal:
    """Every started job of every run, the artifacts, and the run totals."""

    profile: Profile
    prices: Prices
    instances: tuple[Instance, ...]
    artifacts: Mapping[str, Artifact]
    totals: Mapping[str, Totals]
    ends: Mapping[str, Mapping[str, float]]  # per run, ``workflow: job`` -> minutes from the run's start
    wheel_gb: float  # every wheel of the release
    pypi_gb: float
    largest_pypi_mb: float
    nightlies_per_month: float
    downloads: int
    nightly_keep: int
    targets: int = 0
    unpriced: tuple[str, ...] = field(default_factory=tuple)
    measured_mb: Mapping[str, float] = field(default_factory=dict)  # by target id: the sizes measured for it
    budgets: Mapping[str, tuple[float, str]] = field(default_factory=dict)  # by target id: MiB, the matrix key

    def month(self) -> dict[str, float]:
        """The nightly's figures per month, bucket storage kept ``nightly_keep`` nightlies, and egress."""
        nightly = self.totals.get("nightly")
        runs = self.nightlies_per_month
        stored = (nightly.bucket_gb if nightly else 0.0) * self.nightly_keep
        egress = self.downloads * (self.wheel_gb / max(self.targets, 1))
        artifact = (nightly.artifact_gb_days if nightly else 0.0) * runs
        return {"runs": runs, "minutes_cold": runs * (nightly.minutes_cold if nightly else 0.0),
                "dollars_cold": runs * (nightly.dollars_cold if nightly else 0.0),
                "dollars_warm": runs * (nightly.dollars_warm if nightly else 0.0),
                "artifact_gb_days": artifact, "artifact_dollars": artifact * self.prices.artifact_gb_day,
                "bucket_gb": stored, "bucket_dollars": stored * self.prices.bucket_gb_month,
                "egress_gb": egress, "egress_dollars": egress * self.prices.egress_gb}


@dataclass(frozen=True, kw_only=True)
class Scope:
    """What every job's figures are computed from (built once per rehearsal)."""

    profile: Profile
    prices: Prices
    scale: Mapping[str, Scale]  # by target id
    wheel_mb: Mapping[str, float]  # by target id
    pypi_mb: float
    largest_pypi_mb: float
    catalogue: dict[str, Artifact]
    done: dict[tuple[str, str, int], tuple[Any, Instance]] = field(default_factory=dict)  # per job and entry


@functools.cache
def artifact_kinds() -> tuple[tuple[tuple[str, str], ...], float]:
    """builders/resources/scale/artifacts.json: (name glob, what it holds) in order, and a record's MB."""
    data = json.loads((resources.files("builders") / "resources" / "scale" / "artifacts.json").read_text("utf-8"))
    return tuple((a["name"], a["holds"]) for a in data["artifacts"]), float(data["records_mb"])


def _held(name: str, scope: Scope, groups: Mapping[str, list[str]], runtime: float) -> tuple[float, float, float]:
    """(MB, wheel MB, largest file MB) of the artifact ``name``."""
    kinds, records = artifact_kinds()
    every = sum(scope.wheel_mb.values())
    largest = max(scope.wheel_mb.values(), default=0.0)
    for glob, holds in kinds:
        if not fnmatch.fnmatchcase(name, glob):
            continue
        key = name[len(glob.split("*", 1)[0]):]
        chosen = groups.get(key, []) if holds == "build" else [key] if holds == "target" and key in scope.wheel_mb else []
        if holds in ("build", "target"):
            sizes = [scope.wheel_mb[i] for i in chosen]
            return sum(sizes), sum(sizes), max(sizes, default=0.0)
        if holds == "release":
            return 2 * every + scope.pypi_mb, every, largest
        if holds == "pypi":
            return scope.pypi_mb, scope.pypi_mb, scope.largest_pypi_mb
        if holds == "indexes":
            return every + runtime, every, largest
        return records, 0.0, 0.0
    return records, 0.0, 0.0


def _context(run: Run, images: int) -> dict[str, str]:
    plan = {f"needs.plan.outputs.{k}": "false" for k in ("release", "candidate", "nightly")}
    plan |= {f"needs.plan.outputs.{k}": v for k, v in run.outputs.items() if "." not in k}
    return plan | {k: v for k, v in run.outputs.items() if "." in k} | {
        "vars.INDEX_BUCKET": BUCKET, "needs.plan.outputs.image_count": str(images), "needs.plan.result": "success",
        "github.ref_type": "tag" if run.outputs.get("github.event_name") == "push" else "branch"}


def _starts(job: Job, context: Mapping[str, str], started: Mapping[str, bool]) -> bool:
    """Whether ``job`` starts: its needs started (unless its condition calls a status function) and its ``if``."""
    try:
        node = ex.parse(job.condition)
    except WorkflowDrift:
        return True
    results = {n: "success" if started.get(n, True) else "skipped" for n in job.needs}
    if not ex.calls(node) & {"always", "cancelled", "failure", "success"} and "skipped" in results.values():
        return False
    here = {**context, **{f"needs.{n}.result": r for n, r in results.items()}}
    try:
        return True in outcomes(node, here, results)
    except WorkflowDrift:
        return True


def shards(targets: Sequence[Target]) -> list[dict[str, Any]]:
    """The plan's shards cut by GitHub's jobs per matrix alone (the plan also weighs its outputs' bytes, which
    costs more than the whole rehearsal and moves no job from one runner to another)."""
    out: list[dict[str, Any]] = []
    for name, group in ci.groups(targets).items():
        pieces: list[list[list[Target]]] = [[]]
        for builds in ci.build_groups(group):
            if pieces[-1] and sum(map(len, pieces[-1])) + len(builds) > ci.GITHUB.jobs:
                pieces.append([])
            pieces[-1].append(builds)
        for i, piece in enumerate(pieces, 1):
            out.append({"index": len(out), "name": name if len(pieces) == 1 else f"{name}-{i}",
                        "count": sum(map(len, piece)), "builds": [ci.build_entry(g) for g in piece],
                        "include": [ci.smoke_entry(t) for g in piece for t in g]})
    return out


def plan_lists(targets: Sequence[Target]) -> dict[str, list[dict[str, Any]]]:
    """The plan's job matrices by output name (``shards``, ``images``, ``validate``), as the plan job writes them
    (``validate`` as ci/plan.sh groups the smoke jobs by runner, with a build job's ``ids`` and ``wheels`` too)."""
    plan = {"shards": shards(targets), "images": ci.images(targets)}
    smoke = [e for s in plan["shards"] for e in s["include"]]
    groups: dict[str, list[dict[str, Any]]] = {}
    for e in smoke:
        groups.setdefault(",".join(e["smoke_runner"]), []).append(e)
    validate = [{"name": k.replace(",", "-"), "runner": g[0]["smoke_runner"], "targets": " ".join(e["id"] for e in g),
                 "pypi": " ".join(e["id"] for e in g if e["pypi"]), "count": len(g),
                 "ids": json.dumps([e["id"] for e in g]), "wheels": json.dumps([e["wheel"] for e in g])}
                for k, g in groups.items()]
    return {"shards": plan["shards"], "images": plan["images"], "validate": validate,
            "builds": [b for s in plan["shards"] for b in s["builds"]], "include": smoke}


def _transfers_down(job: Job, entry: Mapping[str, Any], scope: Scope) -> tuple[list[str], list[str]]:
    """The artifacts a job downloads (names), and those of them from another run."""
    names, other = [], []
    for step in job.downloads:
        try:
            wanted = expand(step.name, entry)
        except Unset:
            continue
        found = ([n for n in scope.catalogue if fnmatch.fnmatchcase(n, wanted)]
                 if any(c in wanted for c in "*?[") else [wanted] if wanted in scope.catalogue else [])
        names += found
        other += found if step.other_run else []
    return names, other


def _uploads(job: Job, entry: Mapping[str, Any]) -> list[tuple[str, int | None]]:
    out = []
    for step in job.uploads:
        try:
            out.append((expand(step.name, entry), step.retention_days))
        except Unset:
            continue
    return out


def _targets_of(entry: Mapping[str, Any], key: str, scope: Scope) -> list[str]:
    return [i for i in str(entry.get(key, "")).split() if i in scope.wheel_mb]


def _installs(targets: Iterable[str], scope: Scope) -> tuple[float, float]:
    """(minutes, largest install MB) of smoke-testing each target in a fresh environment, one at a time."""
    sizes = [scope.wheel_mb[i] + scope.scale[i].runtime_mb for i in targets]
    minutes = sum(scope.profile.smoke_min + mb / scope.profile.transfer_mb_s / 60 for mb in sizes)
    return minutes, max(sizes, default=0.0)


def _build(entry: Mapping[str, Any], scope: Scope) -> tuple[float, float, float, float]:
    """(cold minutes, warm minutes, disk MB besides its outputs, outputs MB) of one build job's own work."""
    group = _targets_of(entry, "targets", scope)
    if not group:
        return 0.0, 0.0, 0.0, 0.0
    s = scope.scale[group[0]]
    container = entry.get("engine") == "container"
    pull = s.image_mb / scope.profile.transfer_mb_s / 60 if container else 0.0
    ratio = s.core_warm_min / s.core_cold_min if s.core_cold_min else 1.0
    wheels = sum(scope.wheel_mb[i] for i in group)
    cold = s.core_cold_min + len(group) * s.per_python_min + pull
    warm = s.core_warm_min + len(group) * s.per_python_min * ratio + pull
    return cold, warm, (s.image_mb if container else s.toolkit_mb) + s.build_tree_mb, wheels


def _installed(job: Job, entry: Mapping[str, Any], scope: Scope) -> list[str]:
    """The targets a smoke or validate job installs (none for another job)."""
    if VALIDATE in job.commands:
        return _targets_of(entry, "targets", scope) + _targets_of(entry, "pypi", scope)
    if SMOKE in job.commands and str(entry.get("id")) in scope.wheel_mb:
        return [str(entry["id"])]
    return []


def _used(job: Job, entry: Mapping[str, Any], scope: Scope, down: float, wheels: float) -> float:
    """The MB of downloads a job needs: the wheels it installs, the PyPI wheels it uploads, each wheel once where
    it publishes to the bucket; a job of another kind (building, assembling) needs all it downloads."""
    if BUILD in job.commands:
        return down
    installed = _installed(job, entry, scope)
    if installed:
        return sum(scope.wheel_mb[i] for i in set(installed))
    if any(a in PYPI_ACTIONS for a in job.actions):
        return scope.pypi_mb
    return wheels if TO_BUCKET in job.commands else down


def _work(job: Job, entry: Mapping[str, Any], scope: Scope) -> tuple[float, float, float, float]:
    """(cold minutes, warm minutes, disk MB besides checkout and downloads, outputs MB) of a job's own work."""
    if BUILD in job.commands:
        return _build(entry, scope)
    if IMAGE in job.commands and str(entry.get("target", "")) in scope.scale:
        s = scope.scale[str(entry["target"])]
        return s.image_min, s.image_min, s.image_mb, 0.0
    installed = _installed(job, entry, scope)
    if installed:
        minutes, largest = _installs(installed, scope)
        return minutes, minutes, largest, 0.0
    return scope.profile.other_min, scope.profile.other_min, 0.0, -1.0


def instance(run: str, job: Job, entry: Mapping[str, Any], in_matrix: int, scope: Scope) -> Instance:
    """One started job's figures."""
    p = scope.profile
    names, other = _transfers_down(job, entry, scope)
    down = sum(scope.catalogue[n].mb for n in names)
    down_wheels = sum(scope.catalogue[n].wheels_mb for n in names)
    ups = _uploads(job, entry)
    up = sum(scope.catalogue[n].mb for n, _ in ups if n in scope.catalogue)
    cold, warm, disk, outputs = _work(job, entry, scope)
    to_bucket = down_wheels if TO_BUCKET in job.commands else 0.0
    copied = sum(scope.wheel_mb.values()) if any(c in job.commands for c in COPY_IN_BUCKET) else 0.0
    pypi = scope.pypi_mb if any(a in PYPI_ACTIONS for a in job.actions) else 0.0
    moved = (down + up + to_bucket + pypi) / p.transfer_mb_s / 60
    retention = scope.prices.default_retention_days
    days = sum(scope.catalogue[n].mb / 1000 * (d or retention) for n, d in ups if n in scope.catalogue)
    largest = max([scope.catalogue[n].largest_mb for n in names] + [0.0])
    runner = scope.prices.runner(value(job.runs_on, entry) or "ubuntu-latest")
    return Instance(run=run, job=job, label=_label(job, entry), runner=runner, in_matrix=in_matrix,
                    minutes_cold=p.setup_min + cold + moved, minutes_warm=p.setup_min + warm + moved,
                    disk_mb=p.checkout_mb + disk + down + (up if outputs < 0 else outputs), down_mb=down, up_mb=up,
                    bucket_mb=to_bucket, copied_mb=copied, pypi_mb=pypi, largest_mb=largest,
                    from_other_run=tuple(other), artifact_gb_days=days, used_mb=min(_used(job, entry, scope, down, down_wheels), down),
                    specific=BUILD not in job.commands and bool(_installed(job, entry, scope) or pypi),
                    builds=tuple(_targets_of(entry, "targets", scope)) if BUILD in job.commands else ())


def _once(run: str, job: Job, entry: Mapping[str, Any], in_matrix: int, scope: Scope) -> Instance:
    """:func:`instance`, computed once per job and matrix entry: the nightly, a candidate and the final tag start
    the same build and smoke jobs."""
    key = (job.workflow, job.name, id(entry))
    if key not in scope.done:  # the entry is kept with it: its id is not reused while the rehearsal runs
        scope.done[key] = (entry, instance(run, job, entry, in_matrix, scope))
    found = scope.done[key][1]
    return found if found.run == run else replace(found, run=run)


def _label(job: Job, entry: Mapping[str, Any]) -> str:
    which = entry.get("id") or entry.get("name") or entry.get("target")
    return f"{job.workflow}: {job.name}" + (f" ({which})" if which else "")


@dataclass(frozen=True, kw_only=True)
class Workflows:
    """The release workflow, the local workflows it calls, and the promotion workflow beside it."""

    release: tuple[Job, ...]
    called: Mapping[str, tuple[Job, ...]]
    promotion: tuple[Job, ...]

    @classmethod
    def read(cls, release: Path) -> Workflows:
        jobs = read(release)
        called = {j.calls: read(release.parent / j.calls) for j in jobs
                  if j.calls and (release.parent / j.calls).is_file()}
        promote = release.parent / PROMOTION_WORKFLOW
        return cls(release=jobs, called=called, promotion=read(promote) if promote.is_file() else ())

    def of(self, run: Run) -> tuple[Job, ...]:
        return self.promotion if run.workflow else self.release


def _lists_for(entry: Mapping[str, Any], lists: Mapping[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """A called workflow's job matrices: its caller's entry (a shard) names them."""
    return {**lists, **{k: v for k, v in entry.items() if isinstance(v, list)}}


def expanded(jobs: Sequence[Job], wfs: Workflows, lists: Mapping[str, list[dict[str, Any]]]
             ) -> Iterable[tuple[Job, dict[str, Any], int]]:
    """Every (job, matrix entry, jobs in that matrix) ``jobs`` start, a called workflow's jobs per caller entry."""
    for job in jobs:
        found = entries(job.matrix, lists)
        if job.calls is None:
            yield from ((job, e, len(found)) for e in found)
            continue
        for e in found:
            yield from expanded(wfs.called.get(job.calls, ()), wfs, _lists_for(e, lists))


def catalogue(wfs: Workflows, lists: Mapping[str, list[dict[str, Any]]], scope: Scope,
              groups: Mapping[str, list[str]], runtime: float) -> dict[str, Artifact]:
    """Every artifact any job uploads, by name, sized from what its name says it holds."""
    out: dict[str, Artifact] = {}
    for job, entry, _ in expanded((*wfs.release, *wfs.promotion), wfs, lists):
        for name, days in _uploads(job, entry):
            if name not in out:
                mb, wheels, largest = _held(name, scope, groups, runtime)
                out[name] = Artifact(mb=mb, wheels_mb=wheels, largest_mb=largest, retention_days=days)
    return out


def started(jobs: Sequence[Job], context: Mapping[str, str]) -> list[Job]:
    """The jobs a run starts, in the order of ``needs``."""
    ran: dict[str, bool] = {}
    pending = list(jobs)
    while pending:
        ready = [j for j in pending if all(n in ran for n in j.needs)] or pending[:1]
        for job in ready:
            ran[job.name] = _starts(job, context, ran)
            pending.remove(job)
    return [j for j in jobs if ran.get(j.name)]


def ends(jobs: Sequence[Job], longest: Mapping[str, float]) -> dict[str, float]:
    """When each job ends, from the run's start: its slowest instance after the last of its needs ended."""
    done: dict[str, float] = {}
    for job in sorted(jobs, key=lambda j: _depth(j, {k.name: k for k in jobs})):
        done[job.name] = max((done.get(n, 0.0) for n in job.needs), default=0.0) + longest.get(job.name, 0.0)
    return done


def wall(jobs: Sequence[Job], longest: Mapping[str, float]) -> float:
    """The critical path through ``needs``: the last job's end."""
    return max(ends(jobs, longest).values(), default=0.0)


def _depth(job: Job, by_name: Mapping[str, Job], seen: frozenset[str] = frozenset()) -> int:
    if job.name in seen:
        return 0
    return 1 + max((_depth(by_name[n], by_name, seen | {job.name}) for n in job.needs if n in by_name), default=0)


def _totals(items: Sequence[Instance], wall_minutes: float) -> Totals:
    return Totals(minutes_cold=sum(i.minutes_cold for i in items), minutes_warm=sum(i.minutes_warm for i in items),
                  wall_minutes=wall_minutes, dollars_cold=sum(i.dollars_cold for i in items),
                  dollars_warm=sum(i.dollars_warm for i in items), down_gb=sum(i.down_mb for i in items) / 1000,
                  up_gb=sum(i.up_mb for i in items) / 1000,
                  bucket_gb=sum(i.bucket_mb + i.copied_mb for i in items) / 1000,
                  pypi_gb=sum(i.pypi_mb for i in items) / 1000,
                  artifact_gb_days=sum(i.artifact_gb_days for i in items))


def _run(run: Run, wfs: Workflows, lists: Mapping[str, list[dict[str, Any]]], scope: Scope
         ) -> tuple[list[Instance], dict[str, float]]:
    """The run's started jobs as instances, and when each job ends (``workflow: job``, minutes from the start)."""
    context = _context(run, len(lists["images"]))
    jobs = started(wfs.of(run), context)
    out: list[Instance] = []
    longest: dict[str, float] = {}
    inner: dict[str, dict[str, float]] = {}  # a calling job's called jobs, when each ends within it
    for job in jobs:
        these = [_once(run.name, j, e, n, scope) for j, e, n in expanded([job], wfs, lists)]
        out += these
        if job.calls:
            called = started(wfs.called.get(job.calls, ()), context)
            by_job = {j.name: max((i.minutes_cold for i in these if i.job.name == j.name), default=0.0) for j in called}
            inner[job.name] = {f"{job.calls}: {k}": v for k, v in ends(called, by_job).items()}
            longest[job.name] = max(inner[job.name].values(), default=0.0)
        else:
            longest[job.name] = max((i.minutes_cold for i in these), default=0.0)
    done = ends(jobs, longest)
    found = {f"{wfs.of(run)[0].workflow}: {k}": v for k, v in done.items()} if jobs else {}
    for name, within in inner.items():
        found |= {k: done[name] - longest[name] + v for k, v in within.items()}
    return out, found


def rehearse(targets: Sequence[Target], release_workflow: Path, profile: Profile, prices: Prices, *,
             downloads: int = 10_000, nightlies_per_month: float = 30.0, nightly_keep: int = 14) -> Rehearsal:
    """Every run of ``release_workflow`` (and the promotion beside it) at ``profile``'s scale."""
    wfs = Workflows.read(release_workflow)
    lists = plan_lists(targets)
    ids = [t.id for t in targets]
    scale = {i: profile.of(t) for i, t in zip(ids, targets)}
    wheel_mb = {i: s.wheel_mb for i, s in scale.items()}
    groups: dict[str, list[str]] = {}
    for i, t in zip(ids, targets):
        groups.setdefault(ci.build_id(t), []).append(i)
    runtime = sum(max(scale[i].runtime_mb for i in g) for g in groups.values())
    pypi = [i for i, t in zip(ids, targets) if t.on_pypi]
    scope = Scope(profile=profile, prices=prices, scale=scale, wheel_mb=wheel_mb,
                  pypi_mb=sum(wheel_mb[i] for i in pypi), largest_pypi_mb=max((wheel_mb[i] for i in pypi), default=0.0),
                  catalogue={})
    scope.catalogue.update(catalogue(wfs, lists, scope, groups, runtime))
    instances: list[Instance] = []
    totals, finished = {}, {}
    for run in RUNS:
        if run.workflow and not wfs.promotion:
            continue
        these, finish = _run(run, wfs, lists, scope)
        instances += these
        totals[run.name] = _totals(these, max(finish.values(), default=0.0))
        finished[run.name] = finish
    return Rehearsal(profile=profile, prices=prices, instances=tuple(instances), artifacts=scope.catalogue,
                     totals=totals, ends=finished, wheel_gb=sum(wheel_mb.values()) / 1000, pypi_gb=scope.pypi_mb / 1000,
                     largest_pypi_mb=scope.largest_pypi_mb,
                     nightlies_per_month=nightlies_per_month, downloads=downloads, nightly_keep=nightly_keep,
                     targets=len(targets), unpriced=tuple(sorted({i.runner.name for i in instances if not i.runner.priced})),
                     measured_mb={t.id: mb for t in targets if (mb := profile.measured_mb(t)) is not None},
                     budgets={t.id: b for t in targets if (b := t.size_budget) is not None})


def release_totals(r: Rehearsal) -> Totals:
    """A release: its candidate, its final tag and its promotion, one after the other."""
    parts = [r.totals[k] for k in RELEASE if k in r.totals]
    return Totals(**{f: sum(getattr(p, f) for p in parts) for f in Totals.__dataclass_fields__})


def per_month(top: Mapping[str, Any], days: float = 30.0) -> float:
    """Runs a month of a workflow's ``on.schedule`` crons: minute x hour entries a day, on every day unless the
    day-of-month or day-of-week field narrows it (then the days it names, by count)."""
    on = top.get("on", top.get("True", {}))  # YAML 1.1 reads a bare ``on`` as true
    crons = [c.get("cron", "") for c in on.get("schedule", []) if isinstance(c, dict)] if isinstance(on, dict) else []
    total = 0.0
    for cron in crons:
        fields = str(cron).split()
        if len(fields) != 5:
            continue
        minute, hour, dom, _, dow = fields
        per_day = _count(minute, 60) * _count(hour, 24)
        share = _count(dom, 31) / 31 if dom != "*" else _count(dow, 7) / 7 if dow != "*" else 1.0
        total += per_day * days * share
    return total


def _count(field_text: str, span: int) -> int:
    """How many values a cron field names (lists, ranges, steps)."""
    if field_text == "*":
        return span
    found = 0
    for part in field_text.split(","):
        base, _, step = part.partition("/")
        lo, _, hi = base.partition("-")
        first, last = (0, span - 1) if base == "*" else (int(lo), int(hi or lo))
        found += len(range(first, last + 1, int(step or 1)))
    return found
