"""Exit codes are unique; the report shows every cell with its status or reason."""

from __future__ import annotations

import dataclasses
import json

import pytest

from builders.base import errors
from builders.base.process import ProcessError
from builders.pipeline import results
from builders.pipeline.results import ResultsError
from builders.report import compatibility as report
from tests import expected


def typed(entries: dict[str, dict]) -> dict[str, results.Result]:
    """Results records as the report reads them: values, as :func:`results.load` makes them."""
    return {tid: results.Result.from_json(entry) for tid, entry in entries.items()}


def all_subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from all_subclasses(sub)


def test_exit_codes_are_unique_and_not_argparse() -> None:
    classes = [errors.BuildersError, *all_subclasses(errors.BuildersError)]
    assert ProcessError in classes and ResultsError in classes
    codes = [c.exit_code for c in classes if "exit_code" in vars(c)]  # a class without its own shares its parent's
    assert len(codes) == len(set(codes))
    assert 0 not in codes and 2 not in codes
    table = [code for code, _ in errors.exit_codes()]
    assert len(table) == len(set(table)) and set(codes) - {errors.BuildersError.exit_code} <= set(table)


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
    results = typed({"cu132-cp312-linux-x86_64": {"id": "cu132-cp312-linux-x86_64", "status": "built", "engine": "local"},
                     "cpu-cp311-linux-x86_64": {"id": "cpu-cp311-linux-x86_64", "status": "failed", "stage": "verify",
                                                "reason": "bad tag"}})
    md = report.to_markdown(m, results)
    assert "✅ built (local)" in md and "❌ failed [" in md and "at verify: bad tag" in md
    data = json.loads(json.dumps(report.to_json(m, results)))
    statuses = {c["id"]: c["status"] for c in data["cells"]}
    assert statuses["cu132-cp312-linux-x86_64"] == "built"
    assert data["install"]["cu134"].endswith("--index-url https://download.minifw.invalid/whl/cu134/")
    assert "<table" in report.to_html(m, results)


# --- every exit code is documented, from one table ---------------------------------------


def import_every_module() -> None:
    import importlib
    import pkgutil

    import builders

    for info in pkgutil.walk_packages(builders.__path__, "builders."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)


def test_every_error_class_is_declared_in_errors_with_a_meaning() -> None:
    """With every module imported, each error class is in errors.py, so the table made there is complete."""
    import_every_module()
    for cls in all_subclasses(errors.BuildersError):
        if cls.__module__.startswith("builders."):
            assert cls.__module__ == "builders.base.errors", cls
            assert cls.what and "\n" not in cls.what, cls


def documented_exit_codes(root) -> list[tuple[int, str]]:
    """docs/exit-codes.md's table as (code, meaning), links reduced to their text."""
    import re

    text = (root / "docs" / "exit-codes.md").read_text(encoding="utf-8")
    table = text[text.index("# Exit codes"):]
    table = table[: table.index("\n\n", table.index("| code |"))]
    rows = re.findall(r"^\| (\d+) \| (.*) \|$", table, re.MULTILINE)
    return [(int(code), re.sub(r"\[([^]]*)\]\([^)]*\)", r"\1", what).replace("\\|", "|")) for code, what in rows]


def test_the_documented_table_is_the_derived_table_row_by_row(root) -> None:
    from builders import cli

    assert {12, 13, 16, 17, 18, 19, 22, 23} <= {code for code, _ in cli.EXIT_CODES}  # moved classes are in
    assert documented_exit_codes(root) == list(errors.exit_codes()) == list(cli.EXIT_CODES)


def test_help_lists_every_exit_code_with_its_meaning(capsys) -> None:
    import re

    from builders import cli

    with pytest.raises(SystemExit):
        cli.main(["--help"])
    listed = capsys.readouterr().out.split("exit codes:\n", 1)[1]
    rows = [(int(code), " ".join(what.split())) for code, what in re.findall(r"^ +(\d+)  (.*?)(?=^ +\d+  |\Z)",
                                                                              listed, re.MULTILINE | re.DOTALL)]
    assert rows == list(errors.exit_codes())


def test_no_error_leaves_with_the_base_class_code(root) -> None:
    """``raise BuildersError(...)`` would exit 10, which no table lists: raise a subclass."""
    for path in (root / "builders").rglob("*.py"):
        assert "raise BuildersError(" not in path.read_text(encoding="utf-8"), path


def test_index_errors_exit_16() -> None:
    from builders.index.pages import IndexBuildError

    assert IndexBuildError.exit_code == 16


# --- results files are untrusted: schema, caps, known ids ---------------------------------


def write(path, data) -> object:
    path.write_bytes(data if isinstance(data, bytes) else json.dumps(data).encode())
    return path


GOOD_ID = "cu132-cp312-linux-x86_64"


@pytest.mark.parametrize(("data", "phrase"), [
    ([], "(top level): must be object, not an array"),
    ({"schema": 1, "targets": [{"status": "built"}]}, "targets[0]: 'id' is a required property"),
    ({"schema": 2, "targets": []}, "schema: 1 was expected"),
    ({"schema": 1, "targets": [{"id": GOOD_ID, "status": "<script>"}]}, "targets[0].status: '<script>' is not one of"),
    ({"schema": 1, "targets": [{"id": GOOD_ID, "status": "built", "size": -1}]}, "targets[0].size"),
    ({"schema": 1, "targets": [{"id": GOOD_ID, "status": "built", "extra": 1}]}, "'extra' was unexpected"),
    ({"schema": 1, "targets": [{"id": GOOD_ID, "status": "built"}] * 2}, "listed twice"),
    ({"schema": 1, "targets": {"id": GOOD_ID}}, "targets: must be array, not an object"),
    (b"[" * 100_000 + b"]" * 100_000, ":1:33: results file nests deeper than 32 levels"),
    (b'{"schema": 1, "targets": [\xff]}', ":1:27: results file is not UTF-8"),
    (b'{"schema": 1,\n "targets": [}', ":2:14: not valid JSON"),
    (b'{"schema": NaN, "targets": []}', "NaN is not a JSON number"),
    (b" " * (results.MAX_BYTES + 1), "larger than 4 MiB"),
])
def test_a_bad_results_file_is_refused(tmp_path, data, phrase: str) -> None:
    with pytest.raises(ResultsError) as err:
        results.read(write(tmp_path / "r.json", data))
    assert phrase in str(err.value)


def test_what_build_records_is_a_valid_results_file(tmp_path) -> None:
    full = results.Result(id=GOOD_ID, status="failed", engine="container", stage="verify", reason="bad tag",
                          wheel="whl/cu132/x.whl", channels=("index", "pypi"), sha256="0" * 64, size=12, policy="p",
                          durations={"build": 1.5}, smoke={"version": "2.15.0", "gil_enabled": None},
                          findings=({"code": "c", "message": "m", "file": ""},), log="logs/x.log")
    path = tmp_path / "results.json"
    results.record(path, full)
    results.record(path, results.Result(id="cpu-cp312-linux-x86_64", status="built"))
    assert set(results.read(path)) == {GOOD_ID, "cpu-cp312-linux-x86_64"}
    assert results.read(tmp_path / "absent.json") == {}


def test_load_gives_back_the_values_that_were_recorded(tmp_path) -> None:
    full = results.Result(id=GOOD_ID, status="failed", engine="container", stage="verify", reason="bad tag",
                          channels=("index", "pypi"), sha256="0" * 64, size=12, durations={"build": 1.5},
                          findings=({"code": "c", "message": "m", "file": ""},), log="logs/x.log",
                          compiler_cache={"hits": 3, "misses": 1, "hit_rate": 0.75})
    bare = results.Result(id="cpu-cp312-linux-x86_64", status="built")
    path = tmp_path / "results.json"
    for result in (full, bare):
        results.record(path, result)
    assert sorted(results.load(path), key=lambda r: r.id) == sorted([full, bare], key=lambda r: r.id)
    assert results.load(tmp_path / "absent.json") == []


def test_the_results_schema_names_exactly_the_fields_of_a_result() -> None:
    """Every key the schema admits becomes a field of the value the report reads, and the other way round."""
    keys = set(results.schema()["$defs"]["result"]["properties"])
    assert keys == {f.name for f in dataclasses.fields(results.Result)}


def test_ids_the_matrix_does_not_have_are_listed(m, tmp_path) -> None:
    known = {t.id for t in matrix_targets(m)}
    results.check_known(tmp_path / "r.json", {GOOD_ID}, known, "matrix.yaml")
    with pytest.raises(ResultsError, match=r"2 target id\(s\) that matrix.yaml does not have: a-cp1-x-y, b-cp1-x-y"):
        results.check_known(tmp_path / "r.json", {GOOD_ID, "a-cp1-x-y", "b-cp1-x-y"}, known, "matrix.yaml")


def matrix_targets(m):
    from builders.matrix.targets import expand

    return expand(m)[0]


# --- the HTML report escapes everything it did not write itself ---------------------------


EVIL = '<script>alert("x")</script>'


def test_html_report_escapes_status_and_every_result_value(m) -> None:
    hostile = typed({GOOD_ID: {"id": GOOD_ID, "status": EVIL, "reason": f'" onmouseover="{EVIL}', "engine": EVIL,
                               "wheel": EVIL}})
    page = report.to_html(m, hostile)
    assert "<script" not in page and "onmouseover=\"" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert 'title="&quot; onmouseover=&quot;' in page


def test_markdown_report_has_no_raw_html_from_results(m) -> None:
    hostile = typed({GOOD_ID: {"id": GOOD_ID, "status": "failed", "stage": "smoke", "reason": f"{EVIL}\nsecond line",
                               "engine": EVIL}})
    md = report.to_markdown(m, hostile)
    assert "<script" not in md and "&lt;script>" in md
    assert "second line" in md and f"{EVIL}\n" not in md


def test_report_command_escapes_a_results_file(m, root, tmp_path, monkeypatch) -> None:
    from builders.cli import main

    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    good = {"schema": 1, "targets": [{"id": GOOD_ID, "status": "failed", "reason": EVIL, "engine": EVIL}]}
    out = tmp_path / "out"
    assert main(["report", "--matrix", str(root / "matrix.yaml"), "--results", str(write(tmp_path / "r.json", good)),
                 "--output", str(out)]) == 0
    page = (out / "compatibility.html").read_text()
    assert "<script" not in page and "&lt;script&gt;" in page
    bad = {"schema": 1, "targets": [{"id": GOOD_ID, "status": EVIL}]}
    assert main(["report", "--matrix", str(root / "matrix.yaml"), "--results", str(write(tmp_path / "b.json", bad)),
                 "--output", str(tmp_path / "out2")]) == 13
    assert not (tmp_path / "out2").exists()
