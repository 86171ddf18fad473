"""Exit codes are unique; the report shows every cell with its status or reason."""

from __future__ import annotations

import json

import pytest

from builders import errors, matrix, report
from tests import expected
from builders.process import ProcessError
from builders.results import ResultsError


def all_subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from all_subclasses(sub)


def test_exit_codes_are_unique_and_not_argparse() -> None:
    classes = [errors.BuildersError, *all_subclasses(errors.BuildersError)]
    assert ProcessError in classes and ResultsError in classes
    codes = [c.exit_code for c in classes]
    assert len(codes) == len(set(codes))
    assert 0 not in codes and 2 not in codes


@pytest.fixture(scope="module")
def m(shipped_text: str):
    return matrix.loads(shipped_text)


def test_report_cells_cover_every_combination_and_reason(m, shipped_text: str) -> None:
    cells = report.cells(m, {})
    data = expected.raw(shipped_text)
    pythons = len(data["pythons"]) + len(expected.dropped_pythons(data))
    assert len(cells) == len(data["platforms"]) * pythons * len(expected.labels(data))
    by = {(c.platform, c.python, c.variant): c for c in cells}
    assert by[("macos-arm64", "3.12", "cu132")].status == "excluded"
    assert by[("macos-arm64", "3.12", "cu132")].reason == "CUDA does not support macOS"
    assert by[("linux-x86_64", "3.10", "cpu")].status == "dropped"
    assert "end of life" in by[("linux-x86_64", "3.10", "cpu")].reason
    assert by[("linux-x86_64", "3.12", "cu132")].status == "planned"


def test_report_shows_results(m) -> None:
    results = {"cu132-cp312-linux-x86_64": {"id": "cu132-cp312-linux-x86_64", "status": "built", "engine": "local"},
               "cpu-cp311-linux-x86_64": {"id": "cpu-cp311-linux-x86_64", "status": "failed", "stage": "verify",
                                          "reason": "bad tag"}}
    md = report.to_markdown(m, results)
    assert "✅ built (local)" in md and "❌ failed [" in md and "at verify: bad tag" in md
    data = json.loads(json.dumps(report.to_json(m, results)))
    statuses = {c["id"]: c["status"] for c in data["cells"]}
    assert statuses["cu132-cp312-linux-x86_64"] == "built"
    assert data["install"]["cu134"].endswith("--index-url https://download.minifw.invalid/whl/cu134/")
    assert "<table" in report.to_html(m, results)
