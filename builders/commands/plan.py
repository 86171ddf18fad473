"""``plan``: the expanded targets, with what this host can build and why not."""

from __future__ import annotations

import argparse
import json
import os
import shlex

from .. import ci
from .. import matrix as matrix_mod
from ..cli import add_matrix_option, add_selection_options
from ..console import Console
from ..errors import SelectionError
from ..host import detect, unbuildable
from ..images import engine_env
from ..model import Matrix
from ..targets import Selection, Target, expand, select


def configure_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plan", help="list the targets the matrix implies",
                       description="Expand matrix.yaml into targets and show, for this host, which can be built "
                                   "and why the others cannot.")
    add_matrix_option(p)
    add_selection_options(p)
    p.add_argument("--format", choices=("table", "json", "github"), default="table",
                   help="table (default); json: full records; github: the shards of job matrices the release "
                        "workflow consumes (<= 256 jobs each) and the images to build")
    p.add_argument("--json", dest="format", action="store_const", const="json", help="same as --format json")
    p.add_argument("--engine", choices=("local", "container"), default="local",
                   help="which engine's host capability to report (default: local)")
    p.set_defaults(execute=execute)


def selection_of(args: argparse.Namespace) -> Selection:
    return Selection(targets=tuple(args.target), select=tuple(args.select), skip=tuple(args.skip))


def selected(m: Matrix, args: argparse.Namespace) -> tuple[Target, ...]:
    """The targets the command line selects; an empty selection is an error, never a run of nothing."""
    selection = selection_of(args)
    targets = select(m, selection)
    if targets:
        return targets
    given = [f"--{flag} {shlex.quote(value)}" for flag in ("target", "select", "skip")
             for value in getattr(selection, "targets" if flag == "target" else flag)]
    hint = ("; --target takes an exact id, --select a glob" if any(set(t) & set("*?[") for t in selection.targets)
            else "")
    raise SelectionError(f"nothing selected by {' '.join(given)}{hint}")


def one_target(m: Matrix, target_id: str) -> Target:
    """The target ``--target ID`` names: an exact id (a glob is refused with a hint, never unpacked to nothing)."""
    return selected(m, argparse.Namespace(target=[target_id], select=[], skip=[]))[0]


def execute(args: argparse.Namespace, console: Console) -> int:
    m = matrix_mod.load(args.matrix)
    targets = selected(m, args)
    if args.format == "github":
        print(json.dumps(ci.github_plan(targets), indent=None, sort_keys=True))
        return 0
    host = detect(m.pythons, engine_env(os.environ))
    reasons = {t.id: unbuildable(t, host, args.engine) for t in targets}
    if args.format == "json":
        _, excluded = expand(m)
        records = [{**t.record(), "buildable_here": reasons[t.id] is None, "reason": reasons[t.id]} for t in targets]
        out = {"matrix": str(args.matrix), "host": host.platform, "engine": args.engine, "count": len(records),
               "targets": records, "excluded": [{"id": e.id, "reason": e.reason, "where": e.where} for e in excluded]}
        print(json.dumps(out, indent=2))
        return 0
    rows = [(t.id, ",".join(t.channels), t.wheel_name, "yes" if reasons[t.id] is None else f"no: {reasons[t.id]}")
            for t in targets]
    print(console_table(rows))
    here = sum(r is None for r in reasons.values())
    console.line(f"{len(targets)} targets, {here} buildable here ({host.platform}, engine {args.engine})")
    return 0


def console_table(rows: list[tuple[str, str, str, str]]) -> str:
    from ..console import render_table

    return render_table(("target", "channel", "wheel", "buildable here"), rows)
