"""``promote-release``: the validated candidate's bytes to the release channel, then its PyPI wheels, never rebuilt."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from builders.base.console import Console
from builders.base.errors import InputError, Problem, SelectionError
from builders.cli import add_matrix_option, add_selection_options, input_dir, input_file, output_file
from builders.cli.publish import declared
from builders.matrix import loader as matrix_mod
from builders.matrix.targets import Selection, select
from builders.release import promotion
from builders.release.index import find_wheels
from builders.release.objectstore import open_bucket


def configure_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("promote-release", help="copy the validated candidate from test to release, then upload to PyPI",
                       description="Release the matrix's version without rebuilding: a preflight first (every "
                                   "selected target passed validation, or was not runnable and --accept-not-runnable "
                                   "accepts it, and the test channel still serves the file that passed; each release "
                                   "file new or byte-identical; each PyPI file validated from staging, under the "
                                   "file limit, the release under its total budget; the version not on the package "
                                   "server); then the test channel's files are copied server-side to the release "
                                   "channel and read back (sha256 unchanged), the release pages written, and only "
                                   "then the PyPI wheels uploaded with twine, and the package server polled until it "
                                   "serves each with its sha256 (exit 21 otherwise). A refusal (exit 43) writes "
                                   "nothing.")
    add_matrix_option(p)
    add_selection_options(p)
    p.add_argument("--bucket", required=True, metavar="URL", help="s3://BUCKET/[PREFIX/]: the channels' site")
    p.add_argument("--validation", type=input_file, action="append", required=True, metavar="PATH",
                   help="a validation record of the test channel (`validate --channel test`; repeatable: one per host)")
    p.add_argument("--pypi-wheels", type=input_dir, metavar="DIR", help="the PyPI-form wheels (`promote`'s output)")
    p.add_argument("--pypi-validation", type=input_file, action="append", default=[], metavar="PATH",
                   help="a validation record of those wheels from the staging index (`validate --pypi`; repeatable)")
    p.add_argument("--repository-url", metavar="URL", help="the package server's upload URL (twine --repository-url)")
    p.add_argument("--simple-url", metavar="URL", help="the package server's simple index, asked whether the version "
                                                       "is already there")
    p.add_argument("--accept-not-runnable", action="append", default=[], metavar="GLOB",
                   help="targets that may be released although no host could run their validation (repeatable)")
    p.add_argument("--file-limit-mb", type=float, default=promotion.FILE_LIMIT_MB,
                   help=f"the project's PyPI file limit (default: PyPI's {promotion.FILE_LIMIT_MB:g} MB)")
    p.add_argument("--total-limit-gb", type=float, default=promotion.TOTAL_LIMIT_GB,
                   help=f"the budget for the release's PyPI files (default: PyPI's {promotion.TOTAL_LIMIT_GB:g} GB)")
    p.add_argument("--audit-timeout", type=float, default=300.0, metavar="SECONDS",
                   help="how long to wait for the package server to serve the uploaded files (default: 300; exit 21)")
    p.add_argument("--dry-run", action="store_true", help="the preflight and the plan only")
    p.add_argument("--record", type=output_file, default=None, metavar="PATH", help="write the promotion record here")
    p.set_defaults(execute=execute)


def execute(args: argparse.Namespace, console: Console) -> int:
    m = matrix_mod.load(args.matrix, builds=False)
    declared(m, "test")
    targets = select(m, Selection(targets=tuple(args.target), select=tuple(args.select), skip=tuple(args.skip)))
    pypi_files = find_wheels(args.pypi_wheels) if args.pypi_wheels else []
    if pypi_files and not (args.repository_url and args.simple_url):
        raise SelectionError("--pypi-wheels needs --repository-url and --simple-url (the package server)")
    env = dict(os.environ)
    bucket = open_bucket(args.bucket, env)
    on_server = (promotion.files_on_server(args.simple_url, m.project.name, str(m.project.version.public))
                 if args.simple_url else [])
    plan = promotion.plan(bucket, m, targets, [read(p) for p in args.validation],
                          [read(p) for p in args.pypi_validation], pypi_files, accept=args.accept_not_runnable,
                          limits=promotion.Limits(file_mb=args.file_limit_mb, total_gb=args.total_limit_gb),
                          on_server=on_server)
    write_record(args.record, plan)
    for reason in plan.refusals:
        console.error(f"refused: {reason}")
    promotion.preflight(plan)
    console.line(f"preflight passed: {len(plan.copies)} file(s) to copy, {len(plan.unchanged)} already released, "
                 f"{len(plan.pypi)} PyPI file(s)")
    if args.dry_run:
        return 0
    promotion.copy_release(bucket, plan)
    console.line(f"{bucket.url}: release channel updated, every copy's sha256 checked")
    if plan.pypi:
        promotion.upload_pypi(plan, args.repository_url, env)
        promotion.audit_pypi(plan, args.simple_url, m.project.name, timeout=args.audit_timeout)
        console.line(f"{args.simple_url}: serves the {len(plan.pypi)} uploaded file(s), each with its sha256")
    return 0


def read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError([Problem(message=f"{path}: not a validation record: {exc}")]) from None
    if not isinstance(data, dict) or not isinstance(data.get("targets"), list):
        raise InputError([Problem(message=f"{path}: not a validation record (no targets list)")])
    return data


def write_record(path: Path | None, plan: promotion.Promotion) -> None:
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(plan.to_json(), indent=2, sort_keys=True) + "\n", encoding="utf-8")
