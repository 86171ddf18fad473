"""The limits a release at scale crosses, each found with the job that crosses it and the fix.

Checked over a :class:`~builders.report.rehearsal.Rehearsal`: GitHub's 256 jobs per matrix, 6 hours
per job on a hosted runner (and the job's own ``timeout-minutes``), a runner's disk, the retention of an
artifact another run downloads against the promotion window, PyPI's file and project limits (with what
the project already holds), S3's 5 GB single PUT, a GitHub Release's 2 GB per asset, and the life of
the credentials a phase uses (the bucket's role session, a trusted-publishing token per upload step).
The numbers are GitHub's, PyPI's and S3's as docs/rehearsal.md cites them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from builders.ci.disk import PYPI_BATCH_MB
from builders.matrix.promotion_policy import PromotionPolicy
from builders.report.rehearsal import RELEASE_ASSETS, Instance, Rehearsal

MB, MIB = 1_000_000, 1 << 20  # the profile's sizes are MB, a budget is MiB


@dataclass(frozen=True, kw_only=True)
class ScaleLimits:
    """GitHub's, PyPI's and S3's numbers (checked 2026-12), and the promotion window."""

    matrix_jobs: int = 256
    job_minutes: float = 360.0  # a job on a GitHub-hosted runner
    single_put_mb: float = 5_000.0
    release_asset_mb: float = 2_000.0
    pypi_token_minutes: float = 15.0  # a trusted-publishing token (pypa/gh-action-pypi-publish#307)
    promotion_window_days: int = 30  # how long after its candidate a release may be promoted


@dataclass(frozen=True, kw_only=True)
class Crossed:
    """One limit crossed: which, by which job (and how many of its instances), what was found, the fix."""

    limit: str
    job: str
    found: str
    fix: str
    count: int = 1
    runs: tuple[str, ...] = ()

    def __str__(self) -> str:
        times = f" ({self.count} jobs)" if self.count > 1 else ""
        runs = f" [{', '.join(self.runs)}]" if self.runs else ""
        return f"{self.job}{times}{runs}: {self.limit}: {self.found}; fix: {self.fix}"


Check = Callable[[Instance, Rehearsal, ScaleLimits], "Crossed | None"]


def _key(i: Instance) -> str:
    return f"{i.job.workflow}: {i.job.name} on {i.runner.name}"


def matrix_jobs(i: Instance, r: Rehearsal, limits: ScaleLimits) -> Crossed | None:
    if i.in_matrix <= limits.matrix_jobs:
        return None
    return Crossed(limit="jobs per matrix", job=_key(i), found=f"its matrix starts {i.in_matrix} jobs, GitHub at most "
                   f"{limits.matrix_jobs}", fix="cut the matrix into shards of at most 256 (builders.ci.jobs.shards)")


def hours(i: Instance, r: Rehearsal, limits: ScaleLimits) -> Crossed | None:
    if not i.runner.hosted or i.minutes_cold <= limits.job_minutes:
        return None
    return Crossed(limit="6 hours per job", job=_key(i), found=f"{i.minutes_cold:.0f} min cold on a hosted runner",
                   fix="a larger or self-hosted runner, a warm compile cache, or fewer Pythons per job" if i.compiles
                   else "a larger or self-hosted runner, or fewer wheels per job (it compiles nothing)")


def timeout(i: Instance, r: Rehearsal, limits: ScaleLimits) -> Crossed | None:
    if i.job.timeout_minutes is None or i.minutes_cold <= i.job.timeout_minutes:
        return None
    shorten = "(warm compile cache)" if i.compiles else "(fewer wheels per job: it compiles nothing)"
    return Crossed(limit="timeout-minutes", job=_key(i), found=f"{i.minutes_cold:.0f} min cold, timeout-minutes "
                   f"{i.job.timeout_minutes:.0f}", fix=f"raise timeout-minutes or shorten the job {shorten}")


def disk(i: Instance, r: Rehearsal, limits: ScaleLimits) -> Crossed | None:
    if i.disk_mb <= i.runner.disk_gb * 1000:
        return None
    extra = i.down_mb - i.used_mb
    why = f", {extra / 1000:.1f} GB of it downloaded but not used" if extra > 0 else ""
    return Crossed(limit="runner disk", job=_key(i), found=f"{i.disk_mb / 1000:.1f} GB at its high-water, the runner "
                   f"has {i.runner.disk_gb:.0f} GB{why}",
                   fix="download only the wheels the job uses (wheel-<id> artifacts)" if why
                   else "a runner with more disk (declare it in the matrix's runner_costs), or split the job")


def retention(i: Instance, r: Rehearsal, limits: ScaleLimits) -> Crossed | None:
    short = sorted({n for n in i.from_other_run
                    if (r.artifacts[n].retention_days or r.prices.default_retention_days) < limits.promotion_window_days})
    if not short:
        return None
    days = min(r.artifacts[n].retention_days or 0 for n in short)
    return Crossed(limit="artifact retention", job=_key(i), found=f"downloads {', '.join(short[:3])} from another run, "
                   f"kept {days} days, less than the {limits.promotion_window_days}-day promotion window",
                   fix=f"retention-days of at least {limits.promotion_window_days} on those uploads")


def single_put(i: Instance, r: Rehearsal, limits: ScaleLimits) -> Crossed | None:
    if not (i.bucket_mb or i.copied_mb) or i.largest_mb <= limits.single_put_mb:
        return None
    return Crossed(limit="S3 single PUT", job=_key(i), found=f"a {i.largest_mb / 1000:.1f} GB file, one PUT takes at "
                   f"most {limits.single_put_mb / 1000:.0f} GB", fix="multipart uploads and copies (UploadPart, "
                   "UploadPartCopy) for files over 5 GB")


def release_asset(i: Instance, r: Rehearsal, limits: ScaleLimits) -> Crossed | None:
    if RELEASE_ASSETS not in i.job.commands or i.largest_mb <= limits.release_asset_mb:
        return None
    return Crossed(limit="GitHub Release asset", job=_key(i), found=f"a {i.largest_mb / 1000:.1f} GB file, a Release "
                   f"asset is at most {limits.release_asset_mb / 1000:.0f} GB",
                   fix="attach checksums and attestations only; link the wheels from the index")


def bucket_session(i: Instance, r: Rehearsal, limits: ScaleLimits) -> Crossed | None:
    seconds = i.bucket_mb / r.profile.transfer_mb_s
    if i.job.session_seconds is None or seconds <= i.job.session_seconds:
        return None
    return Crossed(limit="credential lifetime", job=_key(i), found=f"uploads to the bucket for {seconds / 60:.0f} min, "
                   f"its role session lasts {i.job.session_seconds / 60:.0f} min",
                   fix="a longer BUCKET_SESSION_SECONDS (the role's MaxSessionDuration too), or renew before it ends")


def pypi_token(i: Instance, r: Rehearsal, limits: ScaleLimits) -> Crossed | None:
    minutes = min(PYPI_BATCH_MB, i.pypi_mb) / r.profile.transfer_mb_s / 60
    if not i.pypi_mb or minutes <= limits.pypi_token_minutes:
        return None
    return Crossed(limit="credential lifetime", job=_key(i), found=f"one upload step sends for {minutes:.0f} min, a "
                   f"trusted-publishing token lives {limits.pypi_token_minutes:.0f}",
                   fix="smaller PyPI batches (builders.ci.disk.PYPI_BATCH_MB), one token each")


PER_JOB: tuple[Check, ...] = (matrix_jobs, hours, timeout, disk, retention, single_put, release_asset, bucket_session,
                              pypi_token)


def pypi(r: Rehearsal, policy: PromotionPolicy, held_gb: float) -> Iterator[Crossed]:
    """PyPI's per-file and per-project limits, for the job that uploads to PyPI."""
    uploads = sorted({_key(i) for i in r.instances if i.pypi_mb})
    job = uploads[0] if uploads else "the PyPI upload"
    if r.largest_pypi_mb > policy.pypi_file_limit_mb:
        yield Crossed(limit="PyPI file limit", job=job, found=f"a {r.largest_pypi_mb:.0f} MB wheel, the project's "
                      f"limit is {policy.pypi_file_limit_mb:.0f} MB", fix="ask PyPI to raise the project's file limit "
                      "(then set channels.promotion.pypi_file_limit_mb), or publish that variant to the index only")
    if held_gb + r.pypi_gb > policy.pypi_total_limit_gb:
        yield Crossed(limit="PyPI project limit", job=job, found=f"{held_gb:.1f} GB held + {r.pypi_gb:.1f} GB this "
                      f"release, the project's limit is {policy.pypi_total_limit_gb:.0f} GB",
                      fix="ask PyPI to raise the project's limit (channels.promotion.pypi_total_limit_gb), or "
                      "delete old pre-releases' files")


def size_budgets(r: Rehearsal) -> Iterator[Crossed]:
    """Each wheel measured over its budget (verify would refuse it), named with the job that builds it. A
    profile's own sizes are another release's scale, not this project's wheels: only a measured size counts."""
    builders = {t: _key(i) for i in r.instances for t in i.builds}
    for target, (budget, key) in sorted(r.budgets.items()):
        mb = r.measured_mb.get(target, 0.0)
        if mb * MB > budget * MIB:
            yield Crossed(limit="wheel size budget", job=builders.get(target, f"the build of {target}"),
                          found=f"{target}'s wheel is {mb:,.0f} MB, over its budget of {budget:g} MiB ({key}): "
                          "verify refuses it", fix=f"a smaller wheel (fewer archs in its arch_list, stripped debug "
                          f"info, libraries from runtime wheels rather than bundled), or a larger {key}")


def collapse(found: Iterable[tuple[str, Crossed]]) -> list[Crossed]:
    """One finding per job and limit: the first one's text, how many jobs crossed it and in which runs."""
    out: dict[tuple[str, str], Crossed] = {}
    counts: dict[tuple[str, str], dict[str, int]] = {}
    for run, f in found:
        key = (f.job, f.limit)
        out.setdefault(key, f)
        per_run = counts.setdefault(key, {})
        per_run[run] = per_run.get(run, 0) + 1
    return [Crossed(limit=f.limit, job=f.job, found=f.found, fix=f.fix, count=max(counts[k].values()),
                    runs=tuple(counts[k])) for k, f in out.items()]


def check(r: Rehearsal, policy: PromotionPolicy, *, held_gb: float = 0.0,
          limits: ScaleLimits = ScaleLimits()) -> list[Crossed]:
    """Every limit the rehearsed release crosses (empty: none)."""
    found = [(i.run, f) for i in r.instances for c in PER_JOB if (f := c(i, r, limits)) is not None]
    return collapse(found) + list(size_budgets(r)) + list(pypi(r, policy, held_gb))


def overdownloads(r: Rehearsal) -> list[Crossed]:
    """The jobs whose work is some wheels (those it installs, the PyPI wheels it uploads) that download more and
    so outgrow their runner's disk (``workflow --check`` refuses them at the shipped profile). A job that builds,
    assembles or publishes the release to the bucket is judged by ``plan --rehearse`` alone."""
    found = [(i.run, f) for i in r.instances
             if i.specific and i.down_mb > i.used_mb and (f := disk(i, r, ScaleLimits())) is not None]
    return collapse(found)
