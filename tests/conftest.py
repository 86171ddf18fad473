from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests import expected

ROOT = Path(__file__).resolve().parent.parent

# The demo's lightest core (one GEMM variant) for every build the tests run: the suite proves
# the pipeline, not compile throughput (`nox -s bench` measures that at the default weight). It
# reaches container builds too, through the matrix's build.environment_pass.
os.environ.setdefault("MINIFW_CORE_WEIGHT", "1")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-slow", action="store_true", help="also run tests marked slow (real builds)")


# Modules that run longest, first. Under ``nox -s tests`` pytest-xdist's two workers take whole
# modules (``--dist loadscope``: a module's module-scoped builds run once, on one worker), in
# collection order (``--no-loadscope-reorder``); starting the long ones first lets both workers
# end together (longest-first scheduling), and the many short modules fill in at the end. One
# exception: the two act modules build the same cpu image (same Containerfile, base and Python), and
# started together each built it cold, at once, on the same 2 cores (about 4 minutes each); with
# test_release_act a few modules later, its image build finds the layers the lifecycle's first
# nightly left in the engine's cache. Only the order changes: no test depends on it, and a module
# missing from this list runs after these.
LONG_FIRST = ("test_lifecycle_act", "test_rocm", "test_hostile", "test_release_act", "test_kill_anywhere",
              "test_build", "test_rebuild", "test_ledger_kills", "test_channels_release", "test_cuda_toolkit",
              "test_containers", "test_core", "test_compile_cache_servers", "test_hanging_index")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    long_modules_first(items)
    skip_slow_unless_asked(config, items)
    only_matrix_readers_on_a_grown_matrix(config, items)


def long_modules_first(items: list[pytest.Item]) -> None:
    order = {name: rank for rank, name in enumerate(LONG_FIRST)}
    items.sort(key=lambda item: order.get(item.path.stem, len(order)))  # stable: the order within a module stays


def skip_slow_unless_asked(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--run-slow"):
        return
    skip = pytest.mark.skip(reason="slow: real builds; run with --run-slow (nox -s tests)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


def reads_the_test_matrix(item: pytest.Item) -> bool:
    """Whether ``item`` can see BUILDERS_TEST_MATRIX: through the ``shipped_text`` fixture (``m``,
    ``shipped`` and ``data`` are built on it), or a module that calls ``shipped_matrix_path``."""
    module = getattr(item, "module", None)
    return "shipped_text" in getattr(item, "fixturenames", ()) or hasattr(module, "shipped_matrix_path")


def only_matrix_readers_on_a_grown_matrix(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On a grown matrix (test_matrix_growth.py's rerun), only the tests that read it run: the others
    would see the shipped matrix or none, and pass or fail exactly as they did in the same suite."""
    if not os.environ.get("BUILDERS_TEST_MATRIX"):
        return
    kept, blind = [], []
    for item in items:
        (kept if reads_the_test_matrix(item) else blind).append(item)
    if blind:
        config.hook.pytest_deselected(items=blind)
        items[:] = kept


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


def shipped_matrix_path() -> Path:
    """The matrix the unit tests read: the shipped one, or a grown copy (BUILDERS_TEST_MATRIX).

    ``tests/integration/test_matrix_growth.py`` reruns the unit tests on a copy with another
    Python, CUDA version and platform added: tests must derive facts, never pin them.
    """
    return Path(os.environ.get("BUILDERS_TEST_MATRIX") or ROOT / "matrix.yaml")


@pytest.fixture(scope="session")
def shipped_text() -> str:
    return shipped_matrix_path().read_text()


@pytest.fixture(scope="module")
def data(shipped_text: str) -> dict:
    """The shipped matrix as plain YAML data, for expectations computed without builders' model."""
    return expected.raw(shipped_text)
