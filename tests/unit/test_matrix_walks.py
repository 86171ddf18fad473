"""The matrix is read once after the schema: every mapping of the parsed YAML is visited once, by
:mod:`builders.matrix.build` alone, and each variant is merged once (by :func:`draft.overlay`).

Counted on the real :func:`builders.matrix.yaml_loader.loads` over the shipped matrix: the parsed data is
swapped for mappings that count every access, switched on after the schema check, so the count
covers the one pass, the rules and the model together.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from builders.base import yamlmarks
from builders.families import accelerators
from builders.matrix import build, draft
from builders.matrix import yaml_loader as loader
from builders.matrix.model import Matrix
from tests import importgraph
from tests.importgraph import modules

COUNTING = {"on": False}


class Counted(dict[str, Any]):
    """A parsed YAML mapping that counts how often it is read (any access: items, keys, get, [])."""

    def __init__(self, data: dict[str, Any], key: tuple[str | int, ...], visits: dict[tuple[str | int, ...], int]) -> None:
        super().__init__(data)
        self.key, self.visits = key, visits
        visits.setdefault(key, 0)

    def count(self) -> None:
        if COUNTING["on"]:
            self.visits[self.key] += 1

    def items(self) -> Any:
        self.count()
        return super().items()

    def keys(self) -> Any:
        self.count()
        return super().keys()

    def values(self) -> Any:
        self.count()
        return super().values()

    def __iter__(self) -> Iterator[str]:
        self.count()
        return super().__iter__()

    def __getitem__(self, name: str) -> Any:
        self.count()
        return super().__getitem__(name)

    def get(self, name: str, default: Any = None) -> Any:
        self.count()
        return super().get(name, default)


def counted(value: Any, key: tuple[str | int, ...], visits: dict[tuple[str | int, ...], int]) -> Any:
    if isinstance(value, dict):
        return Counted({k: counted(v, (*key, k), visits) for k, v in value.items()}, key, visits)
    if isinstance(value, list):
        return [counted(v, (*key, i), visits) for i, v in enumerate(value)]
    return value


@pytest.fixture
def walked(shipped_text: str, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[tuple[str | int, ...], int], list[Any], Matrix]:
    """Load the shipped matrix with counting mappings: the visits of each, the key of each merge, the model."""
    visits: dict[tuple[str | int, ...], int] = {}
    merges: list[Any] = []
    real_parse, real_schema, real_overlay = yamlmarks.parse, loader.check_schema, build.overlay

    def parse(text: str, file: str) -> yamlmarks.Parsed:
        parsed = real_parse(text, file)
        return yamlmarks.Parsed(counted(parsed.data, (), visits), parsed.marks, parsed.problems, parsed.invalid)

    def check_schema(*args: Any, **kwargs: Any) -> Any:
        found = real_schema(*args, **kwargs)
        COUNTING["on"] = True
        return found

    def overlay(defaults: draft.Level, own: draft.Level) -> draft.Level:
        merges.append(own.key)
        return real_overlay(defaults, own)

    monkeypatch.setattr(loader.yamlmarks, "parse", parse)
    monkeypatch.setattr(loader, "check_schema", check_schema)
    monkeypatch.setattr(build, "overlay", overlay)
    try:
        m = loader.loads(shipped_text, "m.yaml", families=accelerators())
    finally:
        COUNTING["on"] = False
    assert m.variants
    return visits, merges, m


def test_every_mapping_is_visited_once_after_the_schema(walked: tuple[dict[Any, int], list[Any], Matrix]) -> None:
    visits, _, _ = walked
    assert len(visits) > 20  # the shipped matrix has many mappings
    assert {key: n for key, n in visits.items() if n != 1} == {}


def test_each_versioned_variant_is_merged_once(walked: tuple[dict[Any, int], list[Any], Matrix]) -> None:
    _, merges, m = walked
    versioned = [("accelerators", v.accelerator.value, "versions", v.version) for v in m.variants if v.version is not None]
    assert versioned and sorted(merges) == sorted(versioned)


def test_a_problem_still_names_its_line_after_the_merge(shipped_text: str) -> None:
    """A family default that is wrong is reported where it is written, once, though every version merges it."""
    m = loader.loads(shipped_text, families=accelerators())
    family = next(v for v in m.variants if v.version is not None).accelerator.value
    text = shipped_text.replace(f"  {family}:\n", f"  {family}:\n    rpath: [\"/abs/lib\"]\n", 1)
    assert text != shipped_text
    with pytest.raises(Exception) as err:
        loader.loads(text, "m.yaml", families=accelerators())
    line = text.splitlines().index('    rpath: ["/abs/lib"]') + 1
    assert str(err.value).count(f"m.yaml:{line}:") == 1 and "not relative to $ORIGIN" in str(err.value)


def calls_in(tree: ast.AST) -> Iterator[ast.Call]:
    return (node for node in ast.walk(tree) if isinstance(node, ast.Call))


def name_of(func: ast.expr) -> str:
    return ast.unparse(func)


def test_only_the_loader_parses_the_matrix_and_hands_the_data_to_the_schema_and_the_one_pass() -> None:
    """Structure: ``yamlmarks.parse`` is called by the loader alone, and its ``data`` goes to two calls only:
    the shape check and :func:`build.read`; nothing else in builders gets the raw mapping."""
    parsers = {name for name, path in modules().items()
               if any(name_of(c.func).endswith("yamlmarks.parse") for c in calls_in(ast.parse(path.read_text())))}
    assert parsers == {"builders.matrix.yaml_loader"}
    tree = ast.parse(Path(loader.__file__).read_text())
    users = {name_of(c.func) for c in calls_in(tree) if any(ast.unparse(a) == "parsed.data" for a in c.args)}
    every = [n for n in ast.walk(tree) if isinstance(n, ast.Attribute) and ast.unparse(n) == "parsed.data"]
    assert users == {"check_schema", "build.read"} and len(every) == 2


def test_the_raw_reader_stays_in_the_builder() -> None:
    """Only :mod:`builders.matrix.build` defines and uses the reader of parsed YAML (``RawMapping``); the rules, the
    checks and the model import neither it nor the parsed data."""
    users = set()
    for name, path in modules().items():
        tree = ast.parse(path.read_text())
        if any((isinstance(n, ast.Name) and n.id == "RawMapping") or (isinstance(n, ast.Attribute) and n.attr == "RawMapping")
               or (isinstance(n, ast.alias) and n.name == "RawMapping") for n in ast.walk(tree)):
            users.add(name)
    assert users == {"builders.matrix.build"}
    graph = importgraph.graph()
    for module in ("rules", "findings", "properties", "policy", "model", "draft", "schema"):
        assert "builders.matrix.build" not in graph[f"builders.matrix.{module}"], module
    assert [m for m, imported in graph.items() if "builders.matrix.build" in imported] == ["builders.matrix.yaml_loader"]
