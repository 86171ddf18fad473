"""A build stage is never named like a command that does something else: a target "failed at publish" read as the
``publish`` command (the stage stores the wheel and places it in the wheelhouse: ``store``)."""

from __future__ import annotations

import ast
from pathlib import Path

from builders import cli
from builders.pipeline import executor

# The stages that run their command's own work inside a build: `verify` and `smoke` check a wheel as the commands
# do, and `build` is the build command's compile. Any other stage shares no name with a command.
SAME_WORK = {"build", "verify", "smoke"}


def stage_names() -> list[str]:
    """Every name the executor passes to its stage runner (``run_stage("NAME", ...)``), read from its source."""
    tree = ast.parse(Path(executor.__file__).read_text(encoding="utf-8"))
    return [node.args[0].value for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "run_stage"
            and node.args and isinstance(node.args[0], ast.Constant)]


def test_no_stage_shares_a_commands_name_unless_it_does_that_commands_work() -> None:
    stages = stage_names()
    assert {"provision", "build", "repair", "verify", "store"} <= set(stages), stages
    assert set(stages) & set(cli.COMMANDS) <= SAME_WORK
    assert "publish" not in stages and "publish" in cli.COMMANDS
