"""A step's ``run:`` text read as the shell reads it: commands, their words, and their ``--channel``.

A regex over the text misses ``--channel=release``, a ``--channel`` on a backslash-continuation line
and ``python -m builders publish`` split over lines; here continuations are joined, each command is
split by :mod:`shlex` (comments dropped, quotes honoured) at ``;``, ``&&``, ``||``, ``|`` and newlines,
and an option is read as argparse reads it (``--channel X``, ``--channel=X``, the last one wins).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

SEPARATORS = frozenset({";", "&&", "||", "|", "&", "(", ")", "{", "}", "!", "then", "do", "else"})
CONTINUATION = re.compile(r"\\\r?\n")
SHELLS = frozenset({"bash", "sh", "exec", "time", "env", "sudo"})


def commands(run: str) -> list[list[str]]:
    """The simple commands of ``run`` (each a list of words, leading ``bash``/``env`` and assignments kept)."""
    found: list[list[str]] = []
    for line in CONTINUATION.sub(" ", run).splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|()")
        lexer.whitespace_split, lexer.commenters = True, "#"
        try:
            words = list(lexer)
        except ValueError:  # an unbalanced quote: read the line word by word
            words = line.split()
        current: list[str] = []
        for word in words:
            if word in SEPARATORS:
                found += [current] if current else []
                current = []
            else:
                current.append(word)
        found += [current] if current else []
    return found


def program(words: Sequence[str]) -> list[str]:
    """The words from the program on: ``bash ci/x.sh a`` is ``ci/x.sh a``, ``A=1 python -m builders y`` is
    ``builders y``, ``python -m twine upload`` is ``twine upload``."""
    rest = list(words)
    while rest and (("=" in rest[0] and not rest[0].startswith("-")) or rest[0] in SHELLS):
        rest = rest[1:]
    if len(rest) >= 3 and re.fullmatch(r"python[0-9.]*", rest[0]) and rest[1] == "-m":
        rest = rest[2:]
    return rest


def has_command(run: str, wanted: Sequence[str]) -> bool:
    """Some command of ``run`` starts (after :func:`program`) with the words ``wanted``."""
    return any(program(c)[:len(wanted)] == list(wanted) for c in commands(run))


def channel_of(words: Sequence[str]) -> str | None:
    """The ``--channel`` a command passes, read as argparse reads an option (``--channel X`` or
    ``--channel=X``, the last one wins, nothing after ``--``); builders' parser is the one place that
    declares options, so this reads the words, it declares nothing."""
    found = None
    for i, word in enumerate(words):
        if word == "--":
            break
        if word == "--channel" and i + 1 < len(words):
            found = words[i + 1]
        elif word.startswith("--channel="):
            found = word.split("=", 1)[1]
    return found


def builders_command(words: Sequence[str]) -> str | None:
    """The builders subcommand a command runs (``builders publish``, ``python -m builders publish``)."""
    rest = program(words)
    if len(rest) >= 2 and rest[0] == "builders":
        return next((w for w in rest[1:] if not w.startswith("-")), None)
    return None
