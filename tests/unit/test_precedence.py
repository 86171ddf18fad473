"""One rule, one place: the options table (``builders/cli/options.py``) is where a default or a precedence is written.

Read with ``ast`` over every module of builders but the table and the module that applies its rule
(``builders/cli/arguments.py``): no ``os.environ`` or ``os.getenv``; no variable the table declares read
with a fallback (``env.get(VAR) or ...``, ``env.get(VAR, default)``); no matrix value the table names
standing in for an option (``value or cache.location``). A legitimate edge is listed in :data:`ALLOWED`
with its reason. And every matrix key the table names is a value of the shipped matrix.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from builders.cli import arguments
from builders.cli.options import OPTIONS
from builders.matrix.model import Matrix

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "builders"
THE_TABLE = {"builders/cli/options.py", "builders/cli/arguments.py"}
VARIABLES = frozenset(o.env for o in OPTIONS if o.env)
# each matrix key's last two parts, ``<platform>`` read as ``platform``: ("compile_cache", "location")
MATRIX_ENDS = frozenset(tuple(p.strip("<>") for p in o.matrix.split(".")[-2:]) for o in OPTIONS if o.matrix)
# (file, what it reads) -> why it is no second rule
ALLOWED = {
    ("builders/engines/images.py", "base_image"): "the table's per-target key (platforms.<platform>.base_image): "
    "--base-image, else the target's platform's, applied for each target where its image is computed, only there",
    ("builders/channels/credentials.py", "GITHUB_RUN_ID"): "a label in the cloud session's name (as CloudTrail shows "
    "it), not manifest's --run-id: 'run' names a session outside CI, no option's default",
}


def _value(node: ast.expr, module: str) -> object:
    """A string constant, or the module-level name it refers to (``ROCM_SOURCE_ENV``), else None."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return getattr(importlib.import_module(module), node.id, None) if module else None
    return None


def _env_fallback(node: ast.AST, module: str) -> str | None:
    """The table's variable that ``node`` reads with a fallback of its own (``env.get(VAR) or x``, ``.get(VAR, x)``)."""
    call = node.values[0] if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or) else node
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "get"
            and call.args and (call is not node or len(call.args) > 1)):
        return None
    name = _value(call.args[0], module)
    return name if isinstance(name, str) and name in VARIABLES else None


def _names_matrix_value(node: ast.expr) -> str | None:
    """The key's last part where ``node`` reads a matrix value the table names: ``cache.location`` for
    ``compile_cache.location`` (the owner's name ends the key's owner), ``target.platform.base_image``."""
    if not isinstance(node, ast.Attribute):
        return None
    owner = node.value.id if isinstance(node.value, ast.Name) else \
        node.value.attr if isinstance(node.value, ast.Attribute) else ""
    hit = any(node.attr == leaf and owner and parent.endswith(owner) for parent, leaf in MATRIX_ENDS)
    return node.attr if hit else None


def _matrix_fallback(node: ast.AST) -> str | None:
    """The matrix value the table names that stands in when ``node``'s first operand is empty."""
    later = node.values[1:] if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or) else \
        [node.orelse] if isinstance(node, ast.IfExp) else []
    found = [name for e in later if (name := _names_matrix_value(e))]
    return found[0] if found else None


def _environ(node: ast.AST) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "os" \
            and node.attr in ("environ", "getenv"):
        return f"os.{node.attr}"
    if isinstance(node, ast.ImportFrom) and node.module == "os" and {a.name for a in node.names} & {"environ", "getenv"}:
        return "from os import environ/getenv"
    return None


def rules_outside(path: Path, root: Path = ROOT, module: str = "") -> list[tuple[str, int, str]]:
    """Each place in ``path`` that reads the environment or settles a table option's default or precedence:
    (file, line, what)."""
    rel = path.relative_to(root).as_posix()
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        what = _environ(node) or _env_fallback(node, module) or _matrix_fallback(node)
        if what:
            found.append((rel, getattr(node, "lineno", 0), what))
    return found


def module_of(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def test_no_default_or_precedence_is_written_outside_the_table() -> None:
    found = [hit for path in sorted(PACKAGE.rglob("*.py")) if path.relative_to(ROOT).as_posix() not in THE_TABLE
             for hit in rules_outside(path, module=module_of(path))]
    new = [f"{rel}:{line}: {what}" for rel, line, what in found if (rel, what) not in ALLOWED]
    assert not new, "settled outside builders/cli/options.py (put it in the table, or allow it with a reason):\n" + \
        "\n".join(new)
    assert {(rel, what) for rel, _, what in found} == set(ALLOWED)  # an allowance nothing needs any more goes


def test_the_scan_finds_each_kind(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("import os\nfrom os import getenv\n"
                      "a = os.environ['HOME']\n"
                      "b = env.get('BUILDERS_SCCACHE_DIST') or 'http://x'\n"
                      "c = env.get('BUILDERS_BASE_IMAGE', 'debian')\n"
                      "d = location or cache.location\n"
                      "e = base if base else target.platform.base_image\n"
                      "f = env.get('PATH') or '/bin'\n"  # not the table's variable, nor its matrix value below
                      "g = copied if copied else recipe.source\n")
    found = sorted((line, what) for _, line, what in rules_outside(sample, tmp_path))
    assert found == [(2, "from os import environ/getenv"), (3, "os.environ"), (4, "BUILDERS_SCCACHE_DIST"),
                     (5, "BUILDERS_BASE_IMAGE"), (6, "location"), (7, "base_image")]


@pytest.mark.parametrize("option", [o for o in OPTIONS if o.matrix and "<" not in o.matrix], ids=lambda o: o.flags[0])
def test_every_matrix_key_the_table_names_is_a_value_of_the_matrix(option, m: Matrix) -> None:
    path = option.matrix.split(".")
    owner = arguments._lookup(m, ".".join(path[:-1]))
    assert owner is not None and hasattr(owner, path[-1]), f"{option.flags[0]}: the matrix has no {option.matrix}"
