"""builders' own import graph, read with ``ast`` (never by importing): module-level and
function-level imports alike, relative imports resolved. Shared by the layering and store tests."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "builders"


def module_name(path: Path, package: Path = PACKAGE) -> str:
    """``builders/engines/__init__.py`` -> ``builders.engines``; ``builders/pipeline/core.py`` -> ``builders.pipeline.core``."""
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(package: Path = PACKAGE) -> dict[str, Path]:
    """Every module of the package by dotted name."""
    return {module_name(p, package): p for p in sorted(package.rglob("*.py")) if "__pycache__" not in p.parts}


def _resolve(importer: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = importer.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The builders modules ``name`` imports anywhere in its body (a function's imports too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            source = _resolve(name, path.name == "__init__.py", node)
            # ``from . import x`` names a module when x is one, else something defined in the package
            candidates = [f"{source}.{alias.name}" if f"{source}.{alias.name}" in known else source
                          for alias in node.names]
        else:
            continue
        for candidate in candidates:
            while candidate and candidate not in known:  # ``import builders.x.y`` -> the longest module named
                candidate = candidate.rpartition(".")[0]
            if candidate and candidate != name:
                found.add(candidate)
    return found


# Imports made by name at run time, which the reader cannot see: a registry imports each module of its
# package named in its ``BUILTIN`` tuple of names (:mod:`builders.engines`).
REGISTRIES = {"builders.engines": "builders.engines"}


def builtin(path: Path) -> tuple[str, ...]:
    """The module-level ``BUILTIN`` tuple of names ``path`` assigns (empty when it assigns none)."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        target, value = (node.targets[0], node.value) if isinstance(node, ast.Assign) else \
            (node.target, node.value) if isinstance(node, ast.AnnAssign) else (None, None)
        if isinstance(target, ast.Name) and target.id == "BUILTIN" and value is not None:
            return tuple(ast.literal_eval(value))
    return ()


def graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Each builders module and the builders modules it imports (a registry's discoveries too;
    ``package``: another checkout's)."""
    mods = modules(package)
    known = set(mods)
    out = {name: imports_of(name, path, known) for name, path in mods.items()}
    for registry, owner in REGISTRIES.items():
        if registry in out:
            out[registry] |= {f"{owner}.{name}" for name in builtin(mods[registry])} & known
    return out
