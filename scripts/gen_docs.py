#!/usr/bin/env python3
"""Regenerate the parts of docs/ that are derived from code, so they cannot drift from it.

- docs/matrix.md: the key reference, from builders/schema/matrix.schema.json;
- docs/exit-codes.md: the exit-code table, from builders/base/errors.py (``exit_codes()``).

Each generated part sits between ``<!-- BEGIN generated: NAME -->`` and ``<!-- END generated:
NAME -->``; the prose around it is written by hand. ``python scripts/gen_docs.py`` rewrites the
parts in place; ``--check`` exits 1 when a committed page differs (tests/unit/test_docs.py runs
the same comparison).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = ROOT / "builders" / "schema" / "matrix.schema.json"
MEANING = 40  # characters of a key's description shown; the schema has the rest
PLACEHOLDERS = {"platforms": "<platform>", "accelerators": "<family>", "versions": "<version>",
                "optional_dependencies": "<extra>", "providers": "<provider>"}


def begin(name: str) -> str:
    return f"<!-- BEGIN generated: {name} (python scripts/gen_docs.py) -->"


def end(name: str) -> str:
    return f"<!-- END generated: {name} -->"


def resolve(schema: Mapping[str, Any], node: Mapping[str, Any]) -> tuple[Mapping[str, Any], str]:
    """``node`` with its ``$ref`` followed (keys beside the ref win), and the ref it came from."""
    ref = ""
    while "$ref" in node:
        ref = node["$ref"]
        target: Any = schema
        for part in ref.removeprefix("#/").split("/"):
            target = target[part]
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node, ref


def kind(schema: Mapping[str, Any], node: Mapping[str, Any]) -> str:
    """The value's type as a reader says it: ``string``, ``list of string``, ``one of 17, 20``."""
    if "const" in node:
        return f"`{json.dumps(node['const'])}`"
    if "enum" in node:
        return "one of " + ", ".join(f"`{json.dumps(v)}`" for v in node["enum"])
    alternatives = [kind(schema, resolve(schema, alt)[0]) for alt in node.get("oneOf", node.get("anyOf", ()))]
    if alternatives and all(alternatives):  # not a oneOf that only says which keys go together
        return " or ".join(alternatives)
    shape = node.get("type", "")
    if shape == "array" and isinstance(node.get("items"), Mapping):
        return "list of " + (kind(schema, resolve(schema, node["items"])[0]) or "values")
    if shape == "object" and isinstance(node.get("additionalProperties"), Mapping) and "properties" not in node:
        return "mapping"
    if not shape and "properties" in node:
        return "object"
    return shape if isinstance(shape, str) else " or ".join(shape)


def describe(node: Mapping[str, Any]) -> str:
    text = node.get("description", "")
    items = node.get("items")
    if not text and isinstance(items, Mapping):
        text = items.get("description", "")
    names = node.get("propertyNames")
    if isinstance(names, Mapping) and names.get("description"):
        text += (" " if text else "") + f"Keys: {names['description']}."
    return " ".join(text.split())


def rows(schema: Mapping[str, Any], node: Mapping[str, Any], path: str, required: bool,
         seen: tuple[str, ...] = ()) -> Iterator[tuple[str, str, str, str]]:
    """(key path, type, required, meaning) for ``node`` and everything under it, depth first."""
    node, ref = resolve(schema, node)
    if ref and ref in seen:
        return
    seen = (*seen, ref) if ref else seen
    if path:
        yield path, kind(schema, node), "yes" if required else "", describe(node)
    needed = set(node.get("required", ()))
    for key, child in node.get("properties", {}).items():
        yield from rows(schema, child, f"{path}.{key}" if path else key, key in needed, seen)
    extra = node.get("additionalProperties")
    if isinstance(extra, Mapping) and extra:
        name = PLACEHOLDERS.get(path.rsplit(".", 1)[-1], "<name>")
        inner, _ = resolve(schema, extra)
        if "properties" in inner:
            yield from rows(schema, extra, f"{path}.{name}", False, seen)
    items = node.get("items")
    if isinstance(items, Mapping):
        inner = resolve(schema, items)[0]
        for entry in (items, *inner.get("oneOf", inner.get("anyOf", ()))):  # an entry may be one of several forms
            if "properties" in resolve(schema, entry)[0]:
                yield from rows(schema, entry, f"{path}[]", False, seen)


def cell(text: str) -> str:
    return text.replace("|", "\\|")


def short(text: str) -> str:
    """A meaning's first sentence or clause, cut at a word to :data:`MEANING` characters."""
    text = text.removeprefix("Optional: ")
    first = re.split(r"(?<=[a-z0-9)'])(?<!e\.g)(?<!i\.e)\. |; ", text, maxsplit=1)[0].rstrip(".")
    first = text if len(first) < 12 else first
    return first if len(first) <= MEANING else first[:MEANING].rsplit(" ", 1)[0] + " …"


def matrix_reference(schema: Mapping[str, Any]) -> str:
    """Every key of the matrix as one Markdown table, in the schema's order; a required key in bold.

    A key whose keys are among those of a key above it (a version's settings repeat its family's) says
    so in one row instead of repeating them; sibling keys of one type and meaning share a row."""
    out = ["| key | type | meaning |", "| --- | --- | --- |"]
    for names, shape, required, meaning in siblings(condensed(list(rows(schema, schema, "", True)))):
        key = f"**`{cell(names)}`**" if required else f"`{cell(names)}`"
        out.append(f"| {key} | {cell(shape)} | {cell(meaning)} |")
    return "\n".join(out)


def condensed(found: list[tuple[str, str, str, str]]) -> Iterator[tuple[str, str, str, str]]:
    """``found`` with meanings shortened, a key repeating an earlier key's keys named once, and an object
    with no meaning of its own left to the keys below it."""
    shown: dict[frozenset[tuple[str, ...]], str] = {}
    skip = ""
    for path, shape, required, meaning in found:
        if skip and path.startswith(skip):
            continue
        below = tuple((p.removeprefix(path), *rest) for p, *rest in found if p.startswith(path + "."))
        same = next((q for sig, q in shown.items() if below and set(below) <= sig), None)
        shown.setdefault(frozenset(below), path)
        skip = path + "." if same else ""
        if shape == "object" and not meaning and below and not same:
            continue  # its keys below name it
        yield path, shape, required, f"the keys of `{cell(same)}`, for this one" if same else short(meaning)


def siblings(found: Iterator[tuple[str, str, str, str]]) -> Iterator[tuple[str, str, str, str]]:
    """Consecutive keys of one parent, type, requiredness and meaning as one ``parent.{a,b}`` row."""
    group: list[tuple[str, str, str, str]] = []
    for row in [*found, ("", "", "", "")]:
        parent = row[0].rpartition(".")[0]
        if group and (parent != group[0][0].rpartition(".")[0] or row[1:] != group[0][1:] or not row[0]):
            head, _, _ = group[0][0].rpartition(".")
            names = group[0][0] if len(group) == 1 else f"{head}.{{{','.join(r[0].rpartition('.')[2] for r in group)}}}"
            yield names, *group[0][1:]
            group = []
        group.append(row)


def exit_code_table() -> str:
    """The exit codes and what each means, as ``python -m builders --help`` lists them."""
    sys.path.insert(0, str(ROOT))
    from builders.base.errors import exit_codes

    out = ["| code | meaning |", "| --- | --- |"]
    out += [f"| {code} | {cell(what)} |" for code, what in exit_codes()]
    return "\n".join(out)


def generated() -> dict[Path, dict[str, str]]:
    """Each page and the text of each of its generated parts."""
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    return {ROOT / "docs" / "matrix.md": {"matrix keys": matrix_reference(schema)},
            ROOT / "docs" / "exit-codes.md": {"exit codes": exit_code_table()}}


def replaced(text: str, name: str, body: str) -> str:
    """``text`` with the generated part ``name`` set to ``body``; the markers must be there."""
    head, tail = begin(name), end(name)
    if head not in text or tail not in text:
        raise SystemExit(f"the page has no '{head}' ... '{tail}' markers")
    start, stop = text.index(head) + len(head), text.index(tail)
    return text[:start] + "\n" + body + "\n" + text[stop:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a page differs; write nothing")
    args = parser.parse_args(argv)
    stale = []
    for page, parts in generated().items():
        text = page.read_text(encoding="utf-8")
        new = text
        for name, body in parts.items():
            new = replaced(new, name, body)
        if new != text:
            stale.append(page)
            if not args.check:
                page.write_text(new, encoding="utf-8")
    for page in stale:
        sys.stdout.write(f"{'stale' if args.check else 'rewrote'}: {page.relative_to(ROOT)}\n")
    return 1 if stale and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
