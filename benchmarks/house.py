"""The floor plan of builders, measured: modules per folder, floors, cycles, upward imports, long docstrings.

The import graph is read with ``ast`` (:mod:`tests.importgraph`: module-level and function-level
imports alike), so a checkout of any revision can be measured without importing it:

    python benchmarks/house.py [PACKAGE_DIR] [--verbose]     # default: this checkout's builders/

- *modules per folder*: ``.py`` files per package folder (``(top)`` is the package root);
- *module floors*: the longest import chain, counted in modules, after merging each cycle
  into one node (a module's floor is one above the highest floor it imports);
- *package floors*: the same over packages (two packages in a cycle share a floor; packages
  that do not import each other may share one too: the order the layering test enforces is
  ``tests/unit/test_layering.py``'s ``FLOORS``);
- *cycles*: strongly connected components of more than one module or package;
- *docstrings*: functions with a docstring, and those whose docstring has as many lines as their
  body or more (the body counted from the first statement after the docstring to the end of the
  last, so a body of only a docstring counts as 0 lines); ``--verbose`` lists the worst.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests import importgraph  # noqa: E402


def components(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components (Tarjan, iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    member, component = "", []
                    while member != node:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                    found.append(sorted(component))
    return found


def floors(graph: dict[str, set[str]]) -> dict[str, int]:
    """Each node's floor (1 = imports nothing of ours), cycles merged into one node."""
    comps = components(graph)
    of = {node: i for i, comp in enumerate(comps) for node in comp}
    level: dict[int, int] = {}
    for i, comp in enumerate(comps):  # Tarjan yields a component after every component it reaches
        deps = {of[d] for node in comp for d in graph.get(node, ()) if d in of and of[d] != i}
        level[i] = 1 + max((level[d] for d in deps), default=0)
    return {node: level[of[node]] for node in graph}


def package_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and _is_package(module)) else "(top)"


_PACKAGES: set[str] = set()


def _is_package(module: str) -> bool:
    return module in _PACKAGES


def measure(package: Path) -> dict[str, object]:
    mods = importgraph.modules(package)
    _PACKAGES.clear()
    _PACKAGES.update(name for name, path in mods.items() if path.name == "__init__.py")
    graph = importgraph.graph(package)
    graph = {m: deps for m, deps in graph.items() if ".resources." not in m}
    per_folder = Counter(package_of(m) for m in graph)
    packages: dict[str, set[str]] = {}
    for module, deps in graph.items():
        packages.setdefault(package_of(module), set()).update(package_of(d) for d in deps)
    packages = {p: deps - {p, "(top)"} for p, deps in packages.items() if p != "(top)"}
    package_floors = floors(packages)
    return {
        "modules": len(graph),
        "per_folder": dict(sorted(per_folder.items())),
        "module_floors": max(floors(graph).values()),
        "module_cycles": [c for c in components(graph) if len(c) > 1],
        "package_floors": dict(sorted(package_floors.items(), key=lambda kv: (kv[1], kv[0]))),
        "package_cycles": [c for c in components(packages) if len(c) > 1],
    }


def docstring_lines(function: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[int, int]:
    """(docstring lines, body lines after it) of a function that has a docstring."""
    doc, *rest = function.body
    body = (rest[-1].end_lineno or rest[-1].lineno) - rest[0].lineno + 1 if rest else 0
    return (doc.end_lineno or doc.lineno) - doc.lineno + 1, body


def docstrings(package: Path) -> tuple[int, list[tuple[int, int, str]]]:
    """How many functions have a docstring, and (docstring, body, where) for each one as long as its body."""
    documented, long = 0, []
    for path in importgraph.modules(package).values():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and ast.get_docstring(node) is not None:
                documented += 1
                doc, body = docstring_lines(node)
                if doc >= body:
                    where = f"{path.relative_to(package.parent)}:{node.lineno} {node.name}"
                    long.append((doc, body, where))
    return documented, sorted(long, key=lambda t: (t[1] - t[0], t[2]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", nargs="?", type=Path, default=importgraph.PACKAGE,
                        help="a builders/ folder of any checkout (default: this one)")
    parser.add_argument("--verbose", "-v", action="store_true",
                        help="list every function whose docstring is as long as its body, worst first")
    args = parser.parse_args(argv)
    m = measure(args.package.resolve())
    print(f"modules: {m['modules']}")
    print("modules per folder: " + ", ".join(f"{k} {v}" for k, v in m["per_folder"].items()))  # type: ignore[attr-defined]
    print(f"module floors (longest import chain): {m['module_floors']}")
    print(f"module cycles: {len(m['module_cycles'])} " + "; ".join(" ".join(c) for c in m["module_cycles"]))  # type: ignore[attr-defined]
    print("package floors: " + ", ".join(f"{k} {v}" for k, v in m["package_floors"].items()))  # type: ignore[attr-defined]
    print(f"package cycles: {len(m['package_cycles'])} " + "; ".join(" ".join(c) for c in m["package_cycles"]))  # type: ignore[attr-defined]
    documented, long = docstrings(args.package.resolve())
    print(f"documented functions: {documented}, docstring as long as the body or longer: {len(long)}")
    if args.verbose:
        for doc, body, where in long:
            print(f"  {doc:3} doc / {body:3} body  {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
