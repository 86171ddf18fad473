"""``{name}`` placeholders in a matrix's commands and build variables, filled by name and nothing else.

``str.format`` made every brace special: a shell's ``${VAR}`` had to be written ``${{VAR}}`` and a
``{`` anywhere else was an error. Here only a known ``{name}`` (lower-case letters, digits, ``_``)
is filled; ``${...}`` is always the shell's, whatever is inside; any other brace stays as written.
``{{`` and ``}}`` still stand for one literal brace, so a matrix written for ``str.format`` keeps
its meaning (``${{VAR}}`` is ``${VAR}``), and ``{{name}}`` is how a literal ``{name}`` is written.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping

TOKEN = re.compile(r"\{\{|\}\}|(?<!\$)\{([a-z_][a-z0-9_]*)\}")


def fill(text: str, values: Mapping[str, str]) -> str:
    """``text`` with each ``{name}`` of ``values`` filled; unknown names, ``${...}`` and other braces as written."""
    def one(m: re.Match[str]) -> str:
        name = m.group(1)
        if name is None:
            return m.group(0)[0]
        return values.get(name, m.group(0))
    return TOKEN.sub(one, text)


def unknown(text: str, known: Collection[str]) -> list[str]:
    """The ``{name}`` placeholders of ``text`` that are not in ``known`` (a typo would stay as written)."""
    return [m.group(1) for m in TOKEN.finditer(text) if m.group(1) is not None and m.group(1) not in known]
