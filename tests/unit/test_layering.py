"""Layers point one way: builders' import graph has no cycle.

Every import counts, at module level, inside a function (the usual way to hide a cycle) or
under ``TYPE_CHECKING``; relative imports are resolved (:mod:`tests.importgraph`). A cycle is
broken by moving the shared piece down (``builders.families.hostfacts``, ``builders.base.runnerspec`` and
``builders.base.once`` were made that way), not by hiding the import.
"""

from __future__ import annotations

import ast
from pathlib import Path

from builders import cli
from tests import importgraph

# Cycles accepted for now, each as the sorted modules of its strongly connected component,
# with why it is not broken yet. Empty: any cycle fails.
KNOWN_CYCLES: dict[tuple[str, ...], str] = {}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def one_cycle(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """A shortest path around the component from its first module back to it: ``a -> b -> a``."""
    start, members = component[0], set(component)
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for nxt in sorted(graph[node] & members):
            if nxt == start:
                return [*paths[node], start]
            if nxt not in paths:
                paths[nxt] = [*paths[node], nxt]
                queue.append(nxt)
    return component


def test_the_import_graph_has_no_new_cycle() -> None:
    graph = importgraph.graph()
    new = [c for c in cycles(graph) if tuple(c) not in KNOWN_CYCLES]
    assert not new, "import cycles: " + "; ".join(" -> ".join(one_cycle(graph, c)) for c in new)


def test_the_reader_sees_function_level_and_relative_imports() -> None:
    graph = importgraph.graph()
    assert "builders.families" in graph["builders.pipeline.host"]  # ``from .toolchains import ...`` inside detect()
    assert "builders.families.cpu" in graph["builders.families.registry"]  # listed in its BUILTIN
    assert "builders.families.device" not in graph["builders.families.registry"]  # not listed
    assert "builders.engines.auto" in graph["builders.engines"]  # listed in its BUILTIN
    assert "builders.base.errors" in graph["builders.engines.cibw"]  # ``from ..errors import ...``


def test_a_cycle_is_found_and_named() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert one_cycle(graph, ["a", "b", "c"]) == ["a", "b", "c", "a"]


# The house, floor by floor: a package imports only from its own floor and the floors below.
# The top-level modules (``builders``, ``builders.__main__``) stand outside the floors.
FLOORS = ("base", "matrix", "families", "wheel", "pipeline", "engines", "index", "channels", "ci", "report", "cli")
# Upward imports accepted for now, with why (empty: any upward import fails).
KNOWN_UPWARD: dict[tuple[str, str], str] = {}


def floor(module: str) -> int | None:
    parts = module.split(".")
    return FLOORS.index(parts[1]) if len(parts) > 1 and parts[1] in FLOORS else None


def upward_imports(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Every import of a module on a higher floor than the importer's."""
    found = []
    for module, imported in sorted(graph.items()):
        for dep in sorted(imported):
            low, high = floor(module), floor(dep)
            if low is not None and high is not None and high > low:
                found.append((module, dep))
    return found


def test_every_package_is_a_floor_and_every_module_lives_in_one() -> None:
    graph = importgraph.graph()
    packages = {m.split(".")[1] for m in graph if m.count(".") >= 1} - {"__main__", "resources"}
    assert packages == set(FLOORS)
    loose = [m for m in graph if floor(m) is None and m not in ("builders", "builders.__main__")
             and not m.startswith("builders.resources.")]
    assert not loose, f"modules outside every package: {loose}"


def test_no_package_imports_from_a_floor_above_it() -> None:
    new = [edge for edge in upward_imports(importgraph.graph()) if edge not in KNOWN_UPWARD]
    assert not new, "upward imports: " + "; ".join(f"{a} -> {b}" for a, b in new)


def test_every_accepted_upward_import_still_exists() -> None:
    assert set(KNOWN_UPWARD) <= set(upward_imports(importgraph.graph()))


def test_an_upward_import_is_found() -> None:
    graph = {"builders.base.errors": {"builders.cli"}, "builders.cli": {"builders.base.errors"}}
    assert upward_imports(graph) == [("builders.base.errors", "builders.cli")]


def command_modules() -> set[str]:
    """One module per subcommand (:data:`builders.cli.COMMANDS`); the rest of ``cli/`` is the plumbing they share."""
    return {f"builders.cli.{name.replace('-', '_')}" for name in cli.COMMANDS}


def commands_importing_commands(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    commands = command_modules()
    return sorted((a, b) for a in commands for b in graph.get(a, set()) & commands)


def test_no_command_module_imports_another() -> None:
    """A command parses, loads the matrix (:mod:`builders.cli.load`), calls the layer below and prints: what two
    commands share lives below ``cli/`` or in its plumbing, never in a third command."""
    graph = importgraph.graph()
    assert command_modules() <= set(graph)
    found = commands_importing_commands(graph)
    assert not found, "command modules importing command modules: " + "; ".join(f"{a} -> {b}" for a, b in found)


def test_a_command_importing_a_command_is_found() -> None:
    graph = {"builders.cli.build": {"builders.cli.plan", "builders.cli.load"}, "builders.cli.plan": set()}
    assert commands_importing_commands(graph) == [("builders.cli.build", "builders.cli.plan")]


# print() writes past the console: its CI folding and annotations, its live status lines, stdout kept for answers.
# Code that runs in another interpreter is a string to the reader (``-c`` programs), never a call.
PRINTS = {"builders.base.console": "the console: every line builders writes goes through it"}


def print_calls(path: Path) -> list[int]:
    """The lines of ``path`` that call the builtin ``print``."""
    return [node.lineno for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print"]


def test_only_the_console_prints() -> None:
    modules = importgraph.modules()
    found = [f"{modules[name].relative_to(importgraph.PACKAGE.parent)}:{line}" for name in sorted(modules) if name not in PRINTS
             for line in print_calls(modules[name])]
    assert not found, "print() outside builders.base.console (write through the Console): " + ", ".join(found)
    assert all(print_calls(modules[name]) for name in PRINTS)  # the reader finds the calls it exempts
