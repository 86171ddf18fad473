"""The shape check: ``matrix.yaml`` against its JSON Schema, and the schema's errors as problems
a person can act on (``unknown key 'lable'`` with "did you mean 'label'?", ``must be a string, not
a mapping``), each at its ``file:line:col``.

Besides the problems it gives the key paths whose values are not to be trusted: the one-pass
reader (:mod:`builders.matrix.build`) leaves them out, so no semantic rule sees an ill-shaped value.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import cache
from importlib import resources
from typing import Any

import jsonschema

from builders.base import yamlmarks
from builders.base.errors import SHOWN_PROBLEMS, Problem
from builders.base.yamlmarks import Marks
from builders.matrix.findings import short, suggest

KeyPath = tuple[str | int, ...]


def schema(families: Iterable[str]) -> dict[str, Any]:
    """The shipped schema (editors use it too), admitting the families the loader was given."""
    return _schema(tuple(sorted(families)))


@cache
def _schema(families: tuple[str, ...]) -> dict[str, Any]:
    text = resources.files("builders").joinpath("schema/matrix.schema.json").read_text(encoding="utf-8")
    data = json.loads(text)
    data["properties"]["accelerators"]["propertyNames"] = {"enum": list(families)}
    return data

def check_schema(data: Any, marks: Marks, invalid: Iterable[KeyPath] = (), *,
                 families: Iterable[str]) -> tuple[list[Problem], set[KeyPath]]:
    """Also the paths the semantic rules must not trust; ``invalid`` (``!!int abc``) is not reported again."""
    report = _SchemaReport(marks)
    refused = set(invalid)
    report.bad.update(refused)
    for error in jsonschema.Draft202012Validator(schema(families)).iter_errors(data):
        if tuple(error.absolute_path) not in refused:
            report.add(error)
    return report.problems, report.bad


class _SchemaReport:
    def __init__(self, marks: Marks) -> None:
        self.marks = marks
        self.problems: list[Problem] = []
        self.bad: set[KeyPath] = set()

    def add(self, error: jsonschema.ValidationError) -> None:
        path = tuple(error.absolute_path)
        schema_: Any = error.schema
        if error.validator == "additionalProperties" and isinstance(error.instance, dict):
            allowed = sorted(schema_.get("properties", {}))
            for key in [k for k in error.instance if k not in allowed]:
                self.bad.add((*path, key))
                self.problem((*path, key), f"unknown key {key!r}", allowed, key)
        elif list(error.schema_path)[-2:-1] == ["propertyNames"]:
            name = str(error.instance)
            self.bad.add((*path, name))
            choices = schema_.get("enum", []) if isinstance(schema_, dict) else []
            self.problem((*path, name), f"{name!r} is not allowed here ({short(error.message)})", choices, name,
                         hint=_schema_hint(error))
        elif error.validator != "required":
            self.bad.add(path)
            self.problem(path, _message(error), hint=_schema_hint(error))
        else:
            self.problem(path, error.message)

    def problem(self, path: KeyPath, message: str, choices: Iterable[str] = (), word: str = "", hint: str = "") -> None:
        if word and choices and len(self.problems) < SHOWN_PROBLEMS:  # difflib only for what is shown
            hint = suggest(word, list(choices))
        self.problems.append(Problem(message=message, location=self.marks.at(path), hint=hint))


def _message(error: jsonschema.ValidationError) -> str:
    instance: Any = error.instance
    value: Any = error.validator_value
    if error.validator == "type":
        return f"must be {_a(value)}, not {_kind(instance)}"
    if error.validator in ("maxItems", "maxProperties"):
        return f"has {len(instance)} entries, more than the {value} allowed"
    if error.validator == "uniqueItems":
        return f"lists {short(repr(_first_repeat(instance)), 60)} more than once"
    if error.validator == "oneOf":
        return f"does not match any allowed form: {', '.join(sorted({short(_cause(e)) for e in error.context}))}"
    return short(error.message)


def _first_repeat(items: list[Any]) -> Any:
    seen: list[Any] = []
    for item in items:
        if item in seen:
            return item
        seen.append(item)
    return None


def _schema_hint(error: jsonschema.ValidationError) -> str:
    value: Any = error.validator_value
    if error.validator == "enum":
        return suggest(str(error.instance), [str(v) for v in value])
    schema_: Any = error.schema
    return str(schema_.get("description", "")) if isinstance(schema_, dict) else ""


def _a(types: str | list[str]) -> str:
    names = [types] if isinstance(types, str) else types
    return " or ".join(("an " if t[0] in "aeiou" else "a ") + t for t in names)


def _kind(value: Any) -> str:
    kinds = {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean", int: "an integer", float: "a number"}
    if isinstance(value, yamlmarks.YamlFloat):
        return f"the number {value}"
    return "null" if value is None else kinds.get(type(value), type(value).__name__)



def _cause(error: jsonschema.ValidationError) -> str:
    deepest = error.context[-1] if error.context else error
    return short(deepest.message)
