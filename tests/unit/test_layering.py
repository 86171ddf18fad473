"""Layers point one way: builders' import graph has no cycle.

Every import counts, at module level, inside a function (the usual way to hide a cycle) or
under ``TYPE_CHECKING``; relative imports are resolved (:mod:`tests.importgraph`). A cycle is
broken by moving the shared piece down (``builders.hostfacts``, ``builders.runnerspec`` and
``builders.once`` were made that way), not by hiding the import.
"""

from __future__ import annotations

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
    assert "builders.toolchains" in graph["builders.host"]  # ``from .toolchains import ...`` inside detect()
    assert "builders.engines.container" in graph["builders.engines"]  # inside open_runner()
    assert "builders.toolchains.cpu" in graph["builders.toolchains"]  # ``from . import cpu, ...`` in a function
    assert "builders.errors" in graph["builders.engines.cibw"]  # ``from ..errors import ...``


def test_a_cycle_is_found_and_named() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert one_cycle(graph, ["a", "b", "c"]) == ["a", "b", "c", "a"]
