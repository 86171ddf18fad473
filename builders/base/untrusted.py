"""The one reader for untrusted text files: a matrix, a results record, a script's answer.

Every input is refused, never half-read, when it is too large (at most ``limit + 1`` bytes are
ever read, so ``/dev/zero`` ends at once), not UTF-8, starts with a byte-order mark or holds
a NUL byte. :func:`load_json` adds a nesting cap (checked before Python's recursion could
fail), refuses duplicate keys, ``NaN`` and numbers too large for a float, and reports a bad
document at ``file:line:column`` (a file refused for its size at ``file:1:1``). Every refusal is
an :class:`~builders.base.errors.InputError` whose problems carry their location; a caller with
its own error class re-raises them::

    text = read_text(path, what="results file", limit=16 * MIB)
    data = load_json(path, limit=16 * MIB, max_depth=32)      # a Path is read from disk
    data = load_json(stdout, limit=MIB, max_depth=8, file="smoke output")  # a str is the text
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any, NoReturn

from builders.base.errors import InputError, Location, Problem

MIB = 2**20
JSON_LIMIT = 16 * MIB
JSON_DEPTH = 32
# What builders reads of an index it does not control before any installer does (validate, promote-release's
# package server): the project's page, at most this many bytes, each read within this many seconds. The defaults
# of ``validate --index-page-limit`` and ``--index-timeout``.
INDEX_PAGE_LIMIT = 64 * MIB  # torch's page on PyPI: about 2 MiB of JSON
INDEX_TIMEOUT = 60.0

_BOMS = (
    (b"\xef\xbb\xbf", "a UTF-8 byte-order mark"),
    (b"\xff\xfe\x00\x00", "a UTF-32 byte-order mark: the file is UTF-32"),
    (b"\x00\x00\xfe\xff", "a UTF-32 byte-order mark: the file is UTF-32"),
    (b"\xff\xfe", "a UTF-16 byte-order mark: the file is UTF-16"),
    (b"\xfe\xff", "a UTF-16 byte-order mark: the file is UTF-16"),
)
_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


def refuse(message: str, *, file: str, line: int | None = None, column: int = 1, key: str = "",
           hint: str = "") -> NoReturn:
    """Raise :class:`InputError` with one problem (at ``file:line:column`` when ``line`` is given)."""
    location = Location(file=file, line=line, column=column, key=key) if line is not None else None
    where = "" if location else f"{file}: "
    raise InputError([Problem(message=where + message, location=location, hint=hint)])


def position(text: str, index: int) -> tuple[int, int]:
    """1-based (line, column) of character ``index`` in ``text``."""
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


def read_bytes(path: Path | str, *, what: str, limit: int) -> bytes:
    """At most ``limit`` bytes of ``path``; a larger input is refused after reading ``limit + 1``."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        refuse(f"cannot read {what}: {exc.strerror or exc}", file=str(path))
    if len(data) > limit:
        refuse(f"{what} is larger than {_size(limit)}; refused without reading further",
               file=str(path), line=1, hint=f"is this the right file? a {what} is plain text well under {_size(limit)}")
    return data


def decode(data: bytes, *, file: str, what: str) -> str:
    """``data`` as UTF-8 text: no byte-order mark, no NUL byte, nothing that is not UTF-8."""
    for bom, name in _BOMS:
        if data.startswith(bom):
            refuse(f"{what} starts with {name}", file=file, line=1, hint="save it as UTF-8 without a byte-order mark")
    nul = data.find(b"\0")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if 0 <= nul < exc.start:
            _refuse_nul(data, nul, file, what)
        line, column = _byte_position(data, exc.start)
        refuse(f"{what} is not UTF-8: byte 0x{data[exc.start]:02x} cannot start or continue a character",
               file=file, line=line, column=column, hint="save it as UTF-8")
    if nul >= 0:
        _refuse_nul(data, nul, file, what)
    return text


def read_text(path: Path | str, *, what: str, limit: int) -> str:
    """The UTF-8 text of ``path`` (see :func:`read_bytes` and :func:`decode`)."""
    return decode(read_bytes(path, what=what, limit=limit), file=str(path), what=what)


def load_json(source: Path | str, *, limit: int = JSON_LIMIT, max_depth: int = JSON_DEPTH,
              what: str = "JSON document", file: str | None = None) -> Any:
    """A path is read (capped), a ``str`` is the text. Refused with ``file:line:column``: over ``limit``, deeper
    than ``max_depth``, a duplicate key, ``NaN``/``Infinity``, a number a float cannot hold."""
    if isinstance(source, Path):
        text, file = read_text(source, what=what, limit=limit), str(source)
    else:
        text, file = source, file or f"<{what}>"
        if len(text) > limit or len(text.encode("utf-8", "surrogatepass")) > limit:
            refuse(f"{what} is larger than {_size(limit)}", file=file, line=1)
    _check_depth(text, max_depth, file, what)
    try:
        return json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant, parse_float=_finite)
    except json.JSONDecodeError as exc:
        refuse(f"not valid JSON: {exc.msg}", file=file, line=exc.lineno, column=exc.colno)
    except (ValueError, RecursionError) as exc:
        refuse(f"not valid JSON: {exc}", file=file)


def _refuse_nul(data: bytes, index: int, file: str, what: str) -> NoReturn:
    line, column = _byte_position(data, index)
    refuse(f"{what} contains a NUL byte: it is binary, or UTF-16/UTF-32 without a byte-order mark",
           file=file, line=line, column=column, hint="save it as UTF-8 text")


def _byte_position(data: bytes, index: int) -> tuple[int, int]:
    """1-based (line, column in characters) of byte ``index``, counting undecodable bytes as one."""
    start = data.rfind(b"\n", 0, index) + 1
    column = len(data[start:index].decode("utf-8", "replace")) + 1
    return data.count(b"\n", 0, index) + 1, column


def _check_depth(text: str, max_depth: int, file: str, what: str) -> None:
    """Refuse nesting deeper than ``max_depth`` before the parser recurses into it."""
    depth = 0
    for match in _JSON_TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > max_depth:
                line, column = position(text, match.start())
                refuse(f"{what} nests deeper than {max_depth} levels", file=file, line=line, column=column)
        elif token in "]}":
            depth = max(depth - 1, 0)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def _no_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:40]} is too large for a float")
    return value


def _size(limit: int) -> str:
    return f"{limit / MIB:g} MiB" if limit >= MIB else f"{limit} bytes"
