"""builders' own code in a plan's digest: every module unless it is explicitly release-only work."""

from __future__ import annotations

from fnmatch import fnmatch
from pathlib import Path

from builders import store
from tests import importgraph

# Release-only modules that a hashed module may still import, and why that cannot reach a wheel.
ALLOWED_IMPORTS = {
    "console": "it prints progress; nothing it does reaches a wheel",
    "commands.plan": "build takes its target selection from it: which targets, not their bytes",
}


def package_files() -> list[Path]:
    package = Path(store.__file__).resolve().parent
    return [p.relative_to(package) for p in store._source_files(package)]


def relative_name(module: str) -> str:
    return module.removeprefix("builders").removeprefix(".") or "__init__"


def excluded_modules() -> set[str]:
    return {store.module_of(r) for r in package_files() if r.suffix == ".py" and not store.hashed(r)}


def test_every_module_is_hashed_unless_a_pattern_excludes_it() -> None:
    for relative in package_files():
        if relative.suffix != ".py":
            continue
        name = store.module_of(relative)
        explicit = name not in store.HASHED_ANYWAY and any(fnmatch(name, p) for p in store.RELEASE_ONLY)
        assert store.hashed(relative) != explicit, name


def test_a_new_module_is_hashed_by_default() -> None:
    assert store.hashed(Path("newstage.py")) and store.hashed(Path("engines/newengine.py"))
    assert store.hashed(Path("toolchains/newfamily.py"))
    assert store.hashed(Path("resources/containers/new.Containerfile"))


def test_what_builds_label_repairs_verifies_or_smokes_a_wheel_is_hashed() -> None:
    for name in ("pipeline", "buildplan", "core", "repair", "rpath", "verify", "smoke", "wheels", "process", "host",
                 "images", "interpreters", "compilercache", "results", "targets", "model", "matrix", "policy",
                 "commands.build", "engines.__init__", "engines.container", "engines.cibw", "engines.local",
                 "toolchains.__init__", "toolchains.cuda", "toolchains.provision", "resources.smoke_probe"):
        assert store.hashed(Path(*name.split(".")).with_suffix(".py")), name
    assert not store.hashed(Path("templates/compatibility.html.j2"))
    assert not store.hashed(Path("schema/matrix.schema.json"))


def test_every_exclusion_pattern_matches_a_module() -> None:
    excluded = excluded_modules()
    for pattern in store.RELEASE_ONLY:
        assert any(fnmatch(name, pattern) for name in excluded), f"{pattern} matches no module: drop it"


def test_hashed_modules_import_no_release_only_module_but_the_allowed_ones() -> None:
    """A release-only module that code which builds imports could change a wheel: hash it, or say here why not."""
    excluded = excluded_modules()
    for module, imported in importgraph.graph().items():
        name = store.module_of(Path(*relative_name(module).split(".")).with_suffix(".py"))
        if name in excluded or f"{name}.__init__" in excluded:
            continue
        for dep in imported:
            dep_name = relative_name(dep)
            if dep_name in excluded or f"{dep_name}.__init__" in excluded:
                assert dep_name in ALLOWED_IMPORTS, f"{module} (hashed) imports {dep} (release-only)"
