"""Families and engines are each listed in one tuple, imported only when one is asked for.

``import builders`` (and importing the two registries) imports no family or engine module: checked
in a fresh interpreter, since this one has imported them all by now. Every family module and
every engine module of builders is listed in its registry's ``BUILTIN``; and a program that reads
a matrix before asking the family registry is told what to call, not handed a schema that admits
no family.
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
from builders.matrix import family

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "builders"
FAMILY_MODULES = {f"builders.families.{name}" for name in registry.BUILTIN}
ENGINE_MODULES = {f"builders.engines.{name}" for name in engines.BUILTIN}


def imported_after(code: str) -> set[str]:
    """The builders modules a fresh interpreter holds after running ``code`` (this checkout's)."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(m for m in sys.modules if m.startswith('builders'))))"
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
                         capture_output=True, text=True, timeout=60, check=True).stdout
    return set(json.loads(out.splitlines()[-1]))


def test_importing_builders_imports_nothing_else() -> None:
    assert imported_after("import builders") == {"builders"}


def test_importing_the_registries_imports_no_family_or_engine_module() -> None:
    loaded = imported_after("import builders.families, builders.families.registry, builders.engines")
    assert "builders.families.registry" in loaded and "builders.engines" in loaded
    assert not loaded & (FAMILY_MODULES | ENGINE_MODULES)


def test_asking_the_registries_imports_what_they_list() -> None:
    loaded = imported_after("from builders import engines\nfrom builders.families import registry\n"
                            "registry.families(); engines.names()")
    assert loaded >= FAMILY_MODULES | ENGINE_MODULES


def assigns(path: Path, name: str) -> bool:
    return any(isinstance(t, ast.Name) and t.id == name
               for node in ast.parse(path.read_text(encoding="utf-8")).body if isinstance(node, ast.Assign)
               for t in node.targets)


@pytest.mark.parametrize(("folder", "marker", "listed"), [
    ("families", "FAMILY", registry.BUILTIN), ("engines", "FACTORY", engines.BUILTIN)])
def test_every_module_that_defines_one_is_listed(folder: str, marker: str, listed: tuple[str, ...]) -> None:
    defining = sorted(p.stem for p in (PACKAGE / folder).glob("*.py") if assigns(p, marker))
    assert defining == sorted(listed)


def test_the_registries_answer_in_their_listed_order() -> None:
    assert registry.declared() == tuple(sorted(registry.BUILTIN))  # families by name
    assert engines.names()[:len(engines.BUILTIN)] == engines.BUILTIN  # each module's engine is named as its module
    assert engines.DEFAULT in engines.names()


def test_a_matrix_read_before_any_family_is_declared_says_what_to_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(family, "_DECLARED", {})
    with pytest.raises(RuntimeError, match=r"registry\.load_builtin\(\)"):
        family.admitted()
    with pytest.raises(ValueError, match="declared: none"):
        family.Accelerator("cpu")
