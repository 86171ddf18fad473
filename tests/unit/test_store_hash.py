"""builders' own code in a plan's digest: every package unless it is release-only work (by package)."""

from __future__ import annotations

from pathlib import Path

from builders.pipeline import store
from tests import importgraph

# Release-only modules that a hashed module may still import, and why that cannot reach a wheel.
ALLOWED_IMPORTS = {
    "cli.load": "build reads the matrix and its target selection through it: which targets, not their bytes",
    "cli.__init__": "the argparse types and the exit-code epilog: how a path is checked, not what is built",
    "cli.channel_args": "--channel picks the version (Matrix.on_channel, hashed), which every plan carries in its digest",
}


def package_files() -> list[Path]:
    package = Path(store.__file__).resolve().parent.parent
    return [p.relative_to(package) for p in store._source_files(package)]


def relative_name(module: str) -> str:
    name = module.removeprefix("builders").removeprefix(".") or "__init__"
    return name if (importgraph.PACKAGE / Path(*name.split("."))).with_suffix(".py").exists() else f"{name}.__init__"


def excluded_modules() -> set[str]:
    return {store.module_of(r) for r in package_files() if r.suffix == ".py" and not store.hashed(r)}


def test_a_module_is_left_out_exactly_when_its_package_is_release_only() -> None:
    for relative in package_files():
        if relative.suffix != ".py":
            continue
        name = store.module_of(relative)
        release_only = relative.parts[0] in store.RELEASE_ONLY and name not in store.HASHED_ANYWAY
        assert store.hashed(relative) != release_only, name


def test_a_new_module_or_package_is_hashed_by_default() -> None:
    assert store.hashed(Path("pipeline/newstage.py")) and store.hashed(Path("engines/newengine.py"))
    assert store.hashed(Path("families/newfamily.py")) and store.hashed(Path("newpackage/__init__.py"))
    assert store.hashed(Path("resources/containers/new.Containerfile"))
    assert not store.hashed(Path("report/newreport.py"))


def test_what_builds_label_repairs_verifies_or_smokes_a_wheel_is_hashed() -> None:
    for folder in ("base", "matrix", "families", "wheel", "pipeline", "engines"):
        modules = sorted((importgraph.PACKAGE / folder).glob("*.py"))
        assert modules, folder
        for path in modules:
            assert store.hashed(path.relative_to(importgraph.PACKAGE)), path
    assert store.hashed(Path("cli/build.py")) and store.hashed(Path("resources/smoke_probe.py"))
    assert not store.hashed(Path("templates/compatibility.html.j2"))
    assert not store.hashed(Path("schema/matrix.schema.json"))


def test_every_release_only_package_exists() -> None:
    for package in store.RELEASE_ONLY:
        assert (importgraph.PACKAGE / package / "__init__.py").is_file(), package


def test_hashed_modules_import_no_release_only_module_but_the_allowed_ones() -> None:
    """A release-only module that code which builds imports could change a wheel: hash it, or say here why not."""
    excluded = excluded_modules()
    for module, imported in importgraph.graph().items():
        if relative_name(module) in excluded:
            continue
        for dep in imported:
            if relative_name(dep) in excluded:
                assert relative_name(dep) in ALLOWED_IMPORTS, f"{module} (hashed) imports {dep} (release-only)"
