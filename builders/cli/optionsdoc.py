"""``docs/options.md``, rendered from the options table: ``python -m builders.cli.optionsdoc > docs/options.md``.

A unit test renders it again (in a fresh interpreter, so only builders' own engines and families
are listed) and fails when the committed page differs.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from typing import Any

from builders.cli import commands
from builders.cli.arguments import Subcommand
from builders.cli.options import ENVIRONMENT, OPTIONS, Computed, Option

COMMAND = "python -m builders.cli.optionsdoc > docs/options.md"
INTRO = f"""# Options and environment variables

Each option's variable, matrix key, default and first clause (`--help` has the rest), then the other
variables read; from `builders/cli/options.py` (`{COMMAND}`).
**Precedence: the command line, else the variable, else the matrix key, else the default.**
"""
LEAD = 12  # a clause ends at ";" or "(" only after this many characters ("fail (exit 23) unless ..." goes on)
EVERY = 10  # an option of at least this many commands is listed as "all but" the others


def markdown(listed: Sequence[Subcommand]) -> str:
    """The whole page: a row per option of the ``listed`` commands under a row naming them, then the other variables."""
    names = [c.name for c in listed]
    rows, above = [], ""
    for option in (o for o in OPTIONS if (o.flags or o.env) and set(o.commands) & set(names)):
        taking = _commands(option, names)
        if taking != above:
            rows.append(f"**{taking}** | |")
            above = taking
        rows.append(_row(option))
    table = "option | variable · matrix · default | meaning\n---|---|---\n"  # no outer pipes (GFM): 1 KB less
    return "\n".join([INTRO, table + "\n".join(rows) + "\n", environment_section()])


def _row(option: Option) -> str:
    shown = " · ".join(x for x in (f"`{option.env}`" if option.env else "",
                                   f"`{option.matrix}`" if option.matrix else "", _default(option)) if x)
    use = usage(option) if option.flags else "(variable only)"
    text = option.help_text()
    lists_choices = re.split(r"[:;]| \(", text, maxsplit=1)[0] in (option.choice_list() or ())
    return f"{use} | {shown} | {_cell(short(text, clause=not lists_choices))}"


def _commands(option: Option, names: Sequence[str]) -> str:
    taking = [n for n in names if n in option.commands]
    if len(taking) < EVERY:
        return ", ".join(taking)
    return "all but " + ", ".join(n for n in names if n not in option.commands)


def short(text: str, clause: bool = True) -> str:
    """The help's first clause, whole: up to the first ``;`` or parenthesis after its first :data:`LEAD`
    characters (its first sentence where it goes choice by choice). Never cut inside the clause: a cut left
    ``--index-url`` and ``--site-url`` reading the same (issue 43); ``--help`` has the rest."""
    text = " ".join(text.split())
    if not clause:
        return text.split(". ", 1)[0]
    return text[:LEAD] + re.split(r"; | \(", text[LEAD:], maxsplit=1)[0]


def usage(option: Option) -> str:
    """``--jobs N``, ``-j``; ``--format {table,json,github}``; ``WHEEL`` for a positional."""
    choices = option.choice_list()
    value = "{" + ",".join(choices) + "}" if choices else option.metavar or option.name.upper()
    if option.positional:
        return f"`{value}`"
    takes = option.action in (None, "append")
    return ", ".join(f"`{flag} {value}`" if takes else f"`{flag}`" for flag in option.flags)


def _default(option: Option) -> str:
    if option.flags and (option.required or option.positional):
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
    """The variables that are no option, each with what it tells builders."""
    rows = [f"`{f.name}` | {_cell(short(f.why))}" for f in ENVIRONMENT]
    return "## Other environment variables\n\nvariable | meaning\n---|---\n" + "\n".join(rows) + "\n"


def main() -> int:
    sys.stdout.write(markdown(commands()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
