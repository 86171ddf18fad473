"""``validate --channel NAME [--site-url URL]``: install the published bytes over HTTP as a user would, then smoke-test."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from pathlib import Path

from builders.base import redact, safe_output
from builders.base.console import Console
from builders.base.errors import SelectionError, ValidationFailed
from builders.channels import manifest, validate
from builders.channels.evidence import TargetVerdict, ValidationRecord
from builders.cli import load
from builders.cli.arguments import Options
from builders.index.staging import staging_index
from builders.matrix.model import Matrix
from builders.matrix.release_channels import ReleaseChannel
from builders.matrix.targets import Target, select
from builders.pipeline.host import detect
from builders.wheel.pypi_form import public_version

HELP = "install a channel's published wheels over HTTP and smoke-test them"
DESCRIPTION = ("For every selected target this host can run: a fresh venv, then `pip install --index-url <the "
               "variant's index> <project>==<version>` with no pip configuration of this machine (the index alone "
               "must serve the wheel and its requirements), and the same with uv, then the smoke test in each venv. "
               "Without --target, --select or --manifest, each index is read first and the targets it does not list "
               "are recorded as not published, without a venv. "
               "With --pypi, the PyPI-form wheels (`promote`'s) of the PyPI default variants, from a staging package "
               "index at --index-url. The record names each target: passed (with the sha256 of the file installed), "
               "failed and why, or not runnable here and why. Exit 42 when a target failed or none passed.")


def execute(opts: Options, console: Console) -> int:
    m = load.matrix(opts)
    channel = m.declared_channel(opts.channel)
    built = validate.channel_matrix(m, channel, opts.version)
    release = manifest.load(opts.manifest) if opts.manifest else None
    targets = chosen_targets(built, opts, release)
    if opts.pypi_wheels and not opts.pypi:
        raise SelectionError("--pypi-wheels goes with --pypi (the PyPI form, from a staging index)")
    with contextlib.ExitStack() as stack:
        index_url = opts.index_url
        if opts.pypi_wheels:
            index_url = stack.enter_context(staging_index(manifest.public_wheels(opts.pypi_wheels)))
            console.line(f"staging index of {opts.pypi_wheels}: {index_url}")
        host = detect(built.pythons, dict(opts.env), engines=False)

        def keep(done: Sequence[TargetVerdict]) -> ValidationRecord:
            data = record(done, channel="pypi" if opts.pypi else channel.name.value,
                          version=str(built.project.version), project=m.project.name, host=host.platform,
                          manifest=release.digest if release else "")
            write_record(opts.record, data)
            return data

        results = validated(built, channel, targets, opts, index_url, release, console, keep)
    data = keep(results)
    passed, failed = data.count(validate.PASSED), data.count(validate.FAILED)
    console.line(f"{opts.record}: {passed} passed, {failed} failed, {data.count(validate.NOT_RUNNABLE)} not runnable, "
                 f"{data.count(validate.NOT_PUBLISHED)} not published")
    if failed or not passed:
        raise ValidationFailed(f"{failed} target(s) failed, {passed} passed (record: {opts.record})")
    return 0


def record(results: Sequence[TargetVerdict], *, channel: str, version: str, project: str, host: str,
           manifest: str = "") -> ValidationRecord:
    """The validation record: each target's verdict, and the digest of the manifest validated against (``""``:
    none; promotion takes only records of its manifest)."""
    return ValidationRecord(project=project, channel=channel, version=version, host=host, manifest_sha256=manifest,
                            targets=tuple(results))


def write_record(path: Path, data: ValidationRecord) -> None:
    """Write the record whole (a temporary file renamed over it): written after each target, so a job that
    reaches its timeout keeps every verdict it reached, and a reader never sees half a file."""
    safe_output.write_text(path, redact.redact(data.to_json().decode()))


def validated(m: Matrix, channel: ReleaseChannel, targets: tuple[Target, ...], opts: Options, index_url: str | None,
              release: manifest.Manifest | None, console: Console,
              keep: Callable[[Sequence[TargetVerdict]], object] = lambda done: None) -> list[TargetVerdict]:
    """Each target validated in turn, the record rewritten by ``keep`` as each ends (a timeout keeps them)."""
    env = dict(opts.env)
    host = detect(m.pythons, env, engines=False)
    pairs = [(target, source(m, channel, target, opts, release, index_url=index_url)) for target in targets]
    return validate.validate_all(pairs, host, env, project=m.project.name,
                                 listed_only=release is None and not (opts.target or opts.select),
                                 installers=opts.installer or validate.INSTALLERS,
                                 require_device=opts.require_device, show=console.line, keep=keep,
                                 bounds=validate.PageBounds(limit=opts.index_page_limit, timeout=opts.index_timeout))


def chosen_targets(m: Matrix, opts: Options, release: manifest.Manifest | None = None) -> tuple[Target, ...]:
    """The selected targets (the PyPI defaults with ``--pypi``); with a manifest, only those it has a file for."""
    targets = select(m, load.selection(opts))
    if opts.pypi:
        targets = tuple(t for t in targets if t.on_pypi)
    if release is not None:
        form = manifest.PYPI if opts.pypi else manifest.LABELLED
        targets = tuple(t for t in targets if release.for_target(t.id, form) is not None)
    if not targets:
        raise SelectionError("nothing selected to validate" + (" (--pypi: no PyPI default target)" if opts.pypi else ""))
    return targets


def source(m: Matrix, channel: ReleaseChannel, target: Target, opts: Options,
           release: manifest.Manifest | None = None, *, index_url: str | None = None) -> validate.Source:
    """Where ``target`` is installed from: its variant's index on the channel, or the staging index (``--pypi``);
    with a manifest, the file it must be."""
    index_url = index_url or opts.index_url
    if opts.site_url and (opts.pypi or opts.index_url):
        raise SelectionError("--site-url (the channels' site root) goes with neither --pypi nor --index-url (one "
                             "simple index for every target)")
    if opts.pypi:
        if not index_url:
            raise SelectionError("validate --pypi needs --pypi-wheels (a staging index for this run) or "
                                 "--index-url (a staging package index)")
        public = str(public_version(m))
        return validate.Source(index_url=index_url, requirement=f"{m.project.name}=={public}",
                               dist_version=public, extra_index_urls=tuple(opts.extra_index_url),
                               expected=release.for_target(target.id, manifest.PYPI) if release else None)
    site = (opts.site_url or m.channels.index_base_url).rstrip("/") + "/"
    return validate.Source(index_url=index_url or site + channel.index_path(target.variant.label),
                           requirement=f"{m.project.name}=={public_version(m)}", dist_version=str(target.version),
                           pre=channel.prerelease,
                           expected=release.for_target(target.id, manifest.LABELLED) if release else None)
