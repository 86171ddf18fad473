"""``docs/options.md``, rendered from the options table: ``python -m builders.cli.optionsdoc > docs/options.md``.

A unit test renders it again (in a fresh interpreter, so only builders' own engines and families
are listed) and fails when the committed page differs.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from builders.cli import commands
from builders.cli.arguments import Subcommand
from builders.cli.options import ENVIRONMENT, OPTIONS, Computed, Option, for_command

COMMAND = "python -m builders.cli.optionsdoc > docs/options.md"
INTRO = f"""# Options and environment variables

Every command-line option of every `python -m builders` command, and every environment variable
builders reads. Generated from the one table in `builders/cli/options.py` (`{COMMAND}`;
a unit test fails when this page and the table differ).

Each option is settled by one rule: **the command line, else its environment variable, else the
matrix value it names, else its default.** The environment is read once per run and handed down;
nothing below the command line reads it for itself.
"""


def markdown(listed: Sequence[Subcommand]) -> str:
    """The whole page: one table per command, then the environment variables."""
    parts = [INTRO]
    for command in listed:
        parts.append(command_section(command))
    parts.append(environment_section())
    return "\n".join(parts)


def command_section(command: Subcommand) -> str:
    rows = [_row(o) for o in for_command(command.name) if o.flags]
    head = f"## `{command.name}`\n\n{_cell(command.help)}.\n"
    table = "| option | environment | matrix | default | what it does |\n|---|---|---|---|---|\n"
    return head + "\n" + table + "\n".join(rows) + "\n"


def _row(option: Option) -> str:
    env = f"`{option.env}`" if option.env else ""
    matrix = f"`{option.matrix}`" if option.matrix else ""
    return f"| {usage(option)} | {env} | {matrix} | {_default(option)} | {_cell(option.help_text())} |"


def usage(option: Option) -> str:
    """``--jobs N``, ``-j``; ``--format {table,json,github}``; ``WHEEL`` for a positional."""
    choices = option.choice_list()
    value = "{" + ",".join(choices) + "}" if choices else option.metavar or option.name.upper()
    if option.positional:
        return f"`{value}`"
    takes = option.action in (None, "append")
    return ", ".join(f"`{flag} {value}`" if takes else f"`{flag}`" for flag in option.flags)


def _default(option: Option) -> str:
    if option.required or option.positional:
        return "required"
    value: Any = option.default
    if isinstance(value, Computed):
        return _cell(value.text)
    if value is None or isinstance(value, (bool, list, tuple)):
        return ""
    return f"`{value}`"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def environment_section() -> str:
    """Every variable: the options' (with their commands) and the facts builders reads (with where and why)."""
    rows = []
    for name in dict.fromkeys(o.env for o in OPTIONS if o.env):
        options = [o for o in OPTIONS if o.env == name]
        flag = f"`{options[0].flags[0]}`" if options[0].flags else "(environment only)"
        used = ", ".join(f"`{c}`" for c in dict.fromkeys(c for o in options for c in o.commands))
        rows.append(f"| `{name}` | {flag} of {used} | {_cell(options[0].help_text())} |")
    for fact in ENVIRONMENT:
        where = ", ".join(f"`{m.strip()}`" for m in fact.read_by.split(","))
        rows.append(f"| `{fact.name}` | read by {where} | {_cell(fact.why)} |")
    return "## Environment variables\n\n| variable | where | what it means |\n|---|---|---|\n" + "\n".join(rows) + "\n"


def main() -> int:
    sys.stdout.write(markdown(commands()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
