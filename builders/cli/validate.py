"""``validate --channel NAME --index-url URL``: install the published bytes over HTTP as a user would, then smoke-test."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from packaging.version import Version

from builders.base.console import Console
from builders.base.errors import SelectionError, ValidationFailed
from builders.cli import add_matrix_option, add_selection_options, output_file
from builders.cli.publish import declared, nightly_date
from builders.matrix import loader as matrix_mod
from builders.matrix.model import Matrix
from builders.matrix.release_channels import ChannelName, ReleaseChannel
from builders.matrix.targets import Selection, Target, select
from builders.pipeline.host import detect
from builders.release import validate
from builders.release.promote import public_version


def configure_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("validate", help="install a channel's published wheels over HTTP and smoke-test them",
                       description="For every selected target this host can run: a fresh venv, then `pip install "
                                   "--index-url <the variant's index> <project>==<version>` with no pip "
                                   "configuration of this machine (the index alone must serve the wheel and its "
                                   "requirements), and the same with uv, then the smoke test in each venv. With "
                                   "--pypi, the PyPI-form wheels (`promote`'s) of the PyPI default variants, from "
                                   "a staging package index at --index-url. The record names each target: passed "
                                   "(with the sha256 of the file installed), failed and why, or not runnable here "
                                   "and why. Exit 42 when a target failed or none passed.")
    add_matrix_option(p)
    add_selection_options(p)
    p.add_argument("--channel", choices=[c.value for c in ChannelName], default=ChannelName.TEST.value,
                   help="the channel to validate (default: test)")
    p.add_argument("--index-url", metavar="URL", default=None,
                   help="where the channel's site is served: each variant's index is URL + the channel's layout "
                        "(default: the matrix's channels.index.base_url); with --pypi, the staging index's simple URL")
    p.add_argument("--pypi", action="store_true", help="validate the PyPI-form wheels from a staging package index")
    p.add_argument("--extra-index-url", action="append", default=[], metavar="URL",
                   help="with --pypi: where the wheels' requirements come from, as PyPI would serve them (repeatable)")
    p.add_argument("--version", default=None, help="the version to install (nightly: the dev release, required)")
    p.add_argument("--installer", action="append", choices=validate.INSTALLERS, default=[],
                   help="pip, uv, or both (repeatable; default: both)")
    p.add_argument("--require-device", action="store_true",
                   help="a GPU target whose device this machine does not show is not runnable here")
    p.add_argument("--record", type=output_file, default=Path("validation.json"), metavar="PATH",
                   help="the validation record (default: ./validation.json)")
    p.set_defaults(execute=execute)


def execute(args: argparse.Namespace, console: Console) -> int:
    m = matrix_mod.load(args.matrix, builds=False)
    channel = declared(m, args.channel)
    built = channel_matrix(m, channel, args.version)
    targets = chosen_targets(built, args)
    env = dict(os.environ)
    host = detect(built.pythons, env, engines=False)
    results = []
    for target in targets:
        outcome = validate.validate_target(target, host, source(built, channel, target, args), env, None,
                                           installers=args.installer or validate.INSTALLERS,
                                           require_device=args.require_device)
        console.line(f"{target.id}: {outcome.status}" + (f" ({outcome.reason})" if outcome.reason else ""))
        results.append(outcome)
    data = validate.record(results, channel="pypi" if args.pypi else channel.name.value,
                           version=str(built.project.version), project=m.project.name, host=host)
    args.record.parent.mkdir(parents=True, exist_ok=True)
    args.record.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    console.line(f"{args.record}: {data['passed']} passed, {data['failed']} failed, {data['not-runnable']} not runnable")
    if data["failed"] or not data["passed"]:
        raise ValidationFailed(f"{data['failed']} target(s) failed, {data['passed']} passed (record: {args.record})")
    return 0


def channel_matrix(m: Matrix, channel: ReleaseChannel, version: str | None) -> Matrix:
    """The matrix as the channel built it (a nightly's date from ``--version``)."""
    if channel.name is not ChannelName.NIGHTLY:
        return m.on_channel(channel.name)
    day = nightly_date(Version(version)) if version else None
    if day is None:
        raise SelectionError("validate --channel nightly needs --version, the dev release (such as "
                             f"{channel.nightly_base(m.project.version)}.dev20261201)")
    return m.on_channel(channel.name, day)


def chosen_targets(m: Matrix, args: argparse.Namespace) -> tuple[Target, ...]:
    targets = select(m, Selection(targets=tuple(args.target), select=tuple(args.select), skip=tuple(args.skip)))
    if args.pypi:
        targets = tuple(t for t in targets if t.on_pypi)
    if not targets:
        raise SelectionError("nothing selected to validate" + (" (--pypi: no PyPI default target)" if args.pypi else ""))
    return targets


def source(m: Matrix, channel: ReleaseChannel, target: Target, args: argparse.Namespace) -> validate.Source:
    """Where ``target`` is installed from: its variant's index on the channel, or the staging index (``--pypi``)."""
    if args.pypi:
        if not args.index_url:
            raise SelectionError("validate --pypi needs --index-url, the staging package index")
        public = str(public_version(m))
        return validate.Source(index_url=args.index_url, requirement=f"{m.project.name}=={public}",
                               dist_version=public, extra_index_urls=tuple(args.extra_index_url))
    base = (args.index_url or m.channels.index_base_url).rstrip("/") + "/"
    return validate.Source(index_url=base + channel.index_path(target.variant.label),
                           requirement=f"{m.project.name}=={public_version(m)}", dist_version=str(target.version),
                           pre=channel.prerelease)
