"""``workflow --check``: fail when the release workflow no longer matches the plan."""

from __future__ import annotations

import argparse
from pathlib import Path

from .. import matrix as matrix_mod
from ..cli import add_matrix_option
from ..console import Console
from ..errors import MatrixError, Problem
from ..workflow import drift


class WorkflowDrift(MatrixError):
    exit_code = 17


def configure_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("workflow", help="check the release workflow against the plan",
                       description="Check that .github/workflows/release.yml still consumes what the plan emits "
                                   "(exit 17 on drift). The workflow is not generated: adding a Python or a variant "
                                   "to matrix.yaml needs no workflow edit.")
    add_matrix_option(p)
    p.add_argument("--workflow", type=Path, default=Path(".github/workflows/release.yml"), metavar="PATH")
    p.add_argument("--check", action="store_true", help="check for drift (the only mode)")
    p.set_defaults(execute=execute)


def execute(args: argparse.Namespace, console: Console) -> int:
    problems = drift(matrix_mod.load(args.matrix), args.workflow)
    if problems:
        raise WorkflowDrift([Problem(message=p) for p in problems])
    console.line(f"{args.workflow}: in step with {args.matrix}")
    return 0
