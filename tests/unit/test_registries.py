"""Families and engines are each listed in one tuple; nothing registers itself at import.

``import builders`` imports nothing else; the family registry is a plain tuple of builders'
family modules and the engine registry imports its engines when first asked (both checked in a
fresh interpreter, since this one has imported them all by now). Every family module and every
engine module of builders is listed in its registry's ``BUILTIN``. The matrix loader is handed
its families, so it works in a fresh interpreter whatever was imported first; and importing any
module of builders changes no other module's tables.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from builders import engines
from builders.families import registry
from builders.matrix.model import Matrix
from tests import importgraph
from tests.conftest import shipped_matrix_path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "builders"
FAMILY_NAMES = tuple(module.__name__.rpartition(".")[2] for module in registry.BUILTIN)
FAMILY_MODULES = {module.__name__ for module in registry.BUILTIN}
ENGINE_MODULES = {f"builders.engines.{name}" for name in engines.BUILTIN}


def fresh(code: str, root: Path = ROOT, *args: str) -> str:
    """What a fresh interpreter running ``code`` (on the checkout at ``root``, with ``args``) prints last."""
    out = subprocess.run([sys.executable, "-c", code, *args], cwd=root, env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.splitlines()[-1]


def imported_after(code: str) -> set[str]:
    """The builders modules a fresh interpreter holds after running ``code`` (this checkout's)."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(m for m in sys.modules if m.startswith('builders'))))"
    return set(json.loads(fresh(probe)))


def test_importing_builders_imports_nothing_else() -> None:
    assert imported_after("import builders") == {"builders"}


def test_the_family_registry_is_its_modules_and_the_engine_registry_imports_none_until_asked() -> None:
    assert all(module.FAMILY.accelerator.facts.module == module.__name__ for module in registry.BUILTIN)
    loaded = imported_after("import builders.families.registry, builders.engines")
    assert loaded >= FAMILY_MODULES and not loaded & ENGINE_MODULES


def test_asking_the_registries_imports_what_they_list() -> None:
    loaded = imported_after("from builders import engines\nengines.names()")
    assert loaded >= ENGINE_MODULES


def assigns(path: Path, name: str) -> bool:
    return any(isinstance(t, ast.Name) and t.id == name
               for node in ast.parse(path.read_text(encoding="utf-8")).body if isinstance(node, ast.Assign)
               for t in node.targets)


@pytest.mark.parametrize(("folder", "marker", "listed"), [
    ("families", "FAMILY", FAMILY_NAMES), ("engines", "FACTORY", engines.BUILTIN)])
def test_every_module_that_defines_one_is_listed(folder: str, marker: str, listed: tuple[str, ...]) -> None:
    defining = sorted(p.stem for p in (PACKAGE / folder).glob("*.py") if assigns(p, marker))
    assert defining == sorted(listed)


def test_the_registries_answer_in_their_listed_order() -> None:
    assert registry.declared() == tuple(sorted(FAMILY_NAMES))  # families by name
    assert engines.names()[:len(engines.BUILTIN)] == engines.BUILTIN  # each module's engine is named as its module
    assert engines.DEFAULT in engines.names()


LOAD = ("m = builders.matrix.yaml_loader.load(" + repr(str(shipped_matrix_path())) + ", builds=False, "
        "families=[f.ACCELERATOR for f in ({given})])\nprint(len(m.variants))")


@pytest.mark.parametrize("first", [
    "import builders.matrix.yaml_loader\nfrom builders.families import cpu, cuda, rocm, xpu",
    "from builders.families import xpu, rocm, cuda, cpu\nimport builders.matrix.yaml_loader",
    "from builders.families import cpu, cuda, rocm, xpu\nimport builders.cli\nimport builders.matrix.yaml_loader",
])
def test_the_loader_takes_its_families_in_a_fresh_interpreter_whatever_came_first(first: str, m: Matrix) -> None:
    assert fresh(f"{first}\n{LOAD.format(given='cpu, cuda, rocm, xpu')}") == str(len(m.variants))


def test_a_family_the_loader_was_not_given_is_a_matrix_problem_not_an_ordering_trap(m: Matrix) -> None:
    others = sorted({v.accelerator.value for v in m.variants} - {"cpu"})
    code = ("import builders.matrix.yaml_loader\nfrom builders.families import cpu\nfrom builders.base.errors import MatrixError\n"
            "try:\n    " + LOAD.format(given="cpu,").replace("\n", "\n    ") + "\n"
            "except MatrixError as exc:\n    print(type(exc).__name__, [n for n in "
            f"{others!r} if f\"'{{n}}' is not allowed here\" in str(exc)])")
    assert fresh(code) == f"MatrixError {others!r}"


# Every module-level table (dict, list, set) and every cache of builders' modules: importing one
# module must leave those of the modules imported before it as they were.
SNAPSHOT = """
import importlib, json, sys
import builders
ORDER = json.loads(sys.argv[1])
def tables():
    out = {}
    for name, module in list(sys.modules.items()):
        if name.startswith("builders"):
            for attr, value in list(vars(module).items()):
                if isinstance(value, (dict, list, set)) and not attr.startswith("__"):
                    out[f"{name}.{attr}"] = repr(sorted(map(repr, value)))
                elif hasattr(value, "cache_info") and getattr(value, "__module__", None) == name:
                    out[f"{name}.{attr}()"] = str(value.cache_info().currsize)
    return out
changed = {}
for name in ORDER:
    before = tables()
    importlib.import_module(name)
    after = tables()
    moved = sorted(k for k in before if after[k] != before[k])
    if moved:
        changed[name] = moved
print(json.dumps(changed))
"""


def leaves_first(graph: dict[str, set[str]]) -> list[str]:
    """Every module after its package and the modules it imports, so that importing it runs it alone (but
    where they import each other: a package and its registry's modules)."""
    order: list[str] = []
    seen: set[str] = set()

    def visit(name: str) -> None:
        if name in seen or name not in graph:
            return
        seen.add(name)
        for needed in sorted({*graph[name], name.rpartition(".")[0]} - {name}):
            visit(needed)
        order.append(name)

    for name in sorted(graph):
        visit(name)
    return [name for name in order if name != "builders.__main__"]


def test_importing_any_module_changes_no_table_of_another() -> None:
    """No module registers itself (or anything) at import: builders' modules are imported one at a time in a
    fresh interpreter, each after what it imports, and each time the tables and caches of the modules loaded
    before it are compared."""
    assert json.loads(fresh(SNAPSHOT, ROOT, json.dumps(leaves_first(importgraph.graph())))) == {}


def test_the_snapshot_sees_a_registration_at_import(tmp_path: Path) -> None:
    """The check above can fail: a module that fills another's table when imported is named."""
    package = tmp_path / "builders"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("TABLE: dict[str, int] = {}\n")
    (package / "b.py").write_text("from builders import a\na.TABLE['b'] = 1\n")
    order = leaves_first(importgraph.graph(package))
    assert order == ["builders", "builders.a", "builders.b"]
    assert json.loads(fresh(SNAPSHOT, tmp_path, json.dumps(order))) == {"builders.b": ["builders.a.TABLE"]}


def test_every_command_finds_an_engine_through_the_registry() -> None:
    """No module of builders/cli/ imports an engine's module: each asks :mod:`builders.engines` by name."""
    graph = importgraph.graph()
    direct = {name: sorted(graph[name] & ENGINE_MODULES) for name in graph if name.startswith("builders.cli")}
    assert {name: found for name, found in direct.items() if found} == {}


def test_the_container_engines_are_named_once() -> None:
    """``podman`` and ``docker`` as a pair (the order builders tries them in) are written in one place."""
    written = [f"{path.relative_to(ROOT)}:{node.lineno}" for path in sorted(PACKAGE.rglob("*.py"))
               for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
               if isinstance(node, ast.Tuple | ast.List) and {getattr(e, "value", None) for e in node.elts} >= {"podman", "docker"}]
    assert written == ["builders/pipeline/host.py:21"]
