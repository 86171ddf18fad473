"""One name per concept: no class name is defined twice in builders/ (read with ``ast``), no module name twice outside cli/.

Two ``Result``s (a finished command and a target's outcome) or two ``Problem``s (an input error
and a METADATA mismatch) make a reader ask which one every time; each concept gets its own name.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "builders"

# Names defined twice for now, each with the modules that define it and why (empty: any repeat fails).
KNOWN_REPEATS: dict[str, tuple[tuple[str, ...], str]] = {}


def class_names(package: Path = PACKAGE) -> dict[str, list[str]]:
    """Every class name defined anywhere in ``package`` (nested classes too), with the files defining it."""
    found: dict[str, list[str]] = defaultdict(list)
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                found[node.name].append(path.relative_to(package.parent).as_posix())
    return found


def repeats(package: Path = PACKAGE) -> dict[str, tuple[str, ...]]:
    return {name: tuple(files) for name, files in class_names(package).items() if len(files) > 1}


def test_no_class_name_is_defined_twice() -> None:
    new = {name: files for name, files in repeats().items() if KNOWN_REPEATS.get(name, ((),))[0] != files}
    assert not new, "class names defined more than once: " + "; ".join(f"{n} in {', '.join(f)}" for n, f in new.items())


def test_every_accepted_repeat_still_exists() -> None:
    assert {name: files for name, (files, _why) in KNOWN_REPEATS.items()} == \
        {name: files for name, files in repeats().items() if name in KNOWN_REPEATS}


def test_a_repeat_is_found(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("class Result:\n    pass\n")
    (tmp_path / "b.py").write_text("def f():\n    class Result:\n        pass\n")
    (tmp_path / "c.py").write_text("class Other:\n    pass\n")
    assert repeats(tmp_path) == {"Result": (f"{tmp_path.name}/a.py", f"{tmp_path.name}/b.py")}


TESTS = Path(__file__).resolve().parents[1]


def module_basenames(tests: Path = TESTS) -> dict[str, list[str]]:
    """Test modules by file name, in folders without ``__init__.py`` (pytest's rootdir import mode)."""
    found: dict[str, list[str]] = defaultdict(list)
    for path in sorted(tests.rglob("test_*.py")):
        if not (path.parent / "__init__.py").exists():
            found[path.name].append(path.relative_to(tests).as_posix())
    return found


def test_no_two_test_modules_share_a_file_name() -> None:
    """pytest imports such modules by their bare name: a second one stops the whole collection."""
    shared = {name: files for name, files in module_basenames().items() if len(files) > 1}
    assert not shared, f"test modules sharing a file name (pytest cannot collect both): {shared}"


def test_a_shared_test_module_name_is_found(tmp_path: Path) -> None:
    for folder in ("unit", "integration"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "test_cache.py").write_text("")
    assert module_basenames(tmp_path) == {"test_cache.py": ["integration/test_cache.py", "unit/test_cache.py"]}


def module_names(package: Path = PACKAGE) -> dict[str, list[str]]:
    """builders' module files by name, outside ``cli/`` (a module per subcommand, named after it) and less
    ``__init__.py``: ``index/repair.py`` beside ``wheel/repair.py`` makes every reader of an import ask which."""
    found: dict[str, list[str]] = defaultdict(list)
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package)
        if path.name != "__init__.py" and rel.parts[0] != "cli":
            found[path.name].append(path.relative_to(package.parent).as_posix())
    return found


def test_no_module_name_is_used_twice_outside_cli() -> None:
    shared = {name: files for name, files in module_names().items() if len(files) > 1}
    assert not shared, "module names used more than once outside cli/: " + "; ".join(
        f"{n} in {', '.join(f)}" for n, f in shared.items())


def test_a_shared_module_name_is_found(tmp_path: Path) -> None:
    for folder in ("index", "wheel", "cli"):
        (tmp_path / folder).mkdir()
        for name in ("__init__.py", "repair.py"):
            (tmp_path / folder / name).write_text("")
    (tmp_path / "wheel" / "verify.py").write_text("")
    assert {n: f for n, f in module_names(tmp_path).items() if len(f) > 1} == \
        {"repair.py": [f"{tmp_path.name}/index/repair.py", f"{tmp_path.name}/wheel/repair.py"]}
