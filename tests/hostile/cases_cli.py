"""Hostile command lines and output files: results files, path arguments, empty folders,
selectors, workflows and a closed stdout. Every case gets the shipped matrix as ``m.yaml``
(unless it is about the matrix path itself), so only the named input is hostile.

Exit codes: 2 usage, 4 dropped, 5 selection, 13 results file, 15 nothing to promote,
16 nothing to index, 17 workflow, 19 bad path argument, 141 closed stdout.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from builders.wheel.writer import write_wheel
from tests.hostile.corpus import Case, Content

ROOT = Path(__file__).resolve().parent.parent.parent
TEXT = (ROOT / "matrix.yaml").read_text(encoding="utf-8")


def MATRIX(folder: Path) -> None:
    """The shipped matrix as ``m.yaml``, with the source folder and smoke script its paths name."""
    (folder / "m.yaml").write_text(TEXT, encoding="utf-8")
    project = yaml.safe_load(TEXT)["project"]
    (folder / project["source"]).mkdir(parents=True, exist_ok=True)
    if project.get("smoke", {}).get("script"):
        (folder / project["smoke"]["script"]).write_text("")

M = ("--matrix", "{dir}/m.yaml")
GOOD_ID = "cu132-cp312-linux-x86_64"
MIB = 2**20


def results_case(case_id: str, content: Content, *, exit_code: int = 13, message: str = "",
                 location: str | None = None) -> Case:
    """``report --results r.json``: the results file is the hostile input."""
    return Case(id=f"cli-results-{case_id}", argv=("report", *M, "--results", "{dir}/r.json", "--output", "{out}"),
                files={"m.yaml": MATRIX, "r.json": content}, exit_code=exit_code, message=message, location=location)


def results(*targets: dict) -> str:
    return json.dumps({"schema": 1, "targets": list(targets)})


def fifty_mib(folder: Path) -> None:
    with (folder / "r.json").open("w") as fh:
        fh.write('{"schema": 1, "targets": [')
        fh.write(",".join([json.dumps({"id": GOOD_ID, "status": "built", "reason": "x" * 1000})] * (50 * 1024)))
        fh.write("]}")


def wheel(name: str, version: str, tag: str = "cp312-cp312-manylinux_2_28_x86_64") -> Content:
    """A small valid wheel written as ``whl/<name>-<version>-<tag>.whl``."""
    def make(folder: Path) -> None:
        dist_info = f"{name}-{version}.dist-info"
        members = {
            f"{name}/__init__.py": b"",
            f"{dist_info}/METADATA": f"Metadata-Version: 2.4\nName: {name}\nVersion: {version}\n".encode(),
            f"{dist_info}/WHEEL": f"Wheel-Version: 1.0\nGenerator: t\nRoot-Is-Purelib: false\nTag: {tag}\n".encode(),
        }
        (folder / "whl").mkdir(exist_ok=True)
        write_wheel(folder / "whl" / f"{name}-{version}-{tag}.whl", members, dist_info, {}, 1700000000)
    return make


def alias_bomb() -> str:
    """Nine levels of nine aliases each (9**10 leaves once expanded) given as a step's ``run:``."""
    names = "abcdefghij"
    lines = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    lines += [f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]" for p, n in zip(names, names[1:])]
    return "\n".join(lines) + "\njobs: {build: {steps: [{run: *j}]}}\n"


def afile_and_adir(folder: Path) -> None:
    (folder / "afile").write_text("a file, not a folder\n")
    (folder / "adir").mkdir()


def path_case(case_id: str, argv: tuple[str, ...], message: str, *, exit_code: int = 19,
              files: dict[str, Content] | None = None) -> Case:
    """A path argument that is missing, of the wrong kind, or cannot be written; a file ``afile`` and
    an empty folder ``adir`` sit in the case folder."""
    return Case(id=f"cli-path-{case_id}", argv=argv, exit_code=exit_code, message=message,
                files={"m.yaml": MATRIX, "layout": afile_and_adir, **(files or {})})


RESULTS = [
    results_case("a-list", "[]", message="must be object, not an array"),
    results_case("an-object-of-nothing", "{}", message="'schema' is a required property"),
    results_case("missing-id", results({"status": "built"}), message="'id' is a required property"),
    results_case("missing-status", results({"id": GOOD_ID}), message="'status' is a required property"),
    results_case("id-not-a-string", results({"id": 12, "status": "built"}), message="targets[0].id: must be string"),
    results_case("deep-100k", "[" * 100_000 + "]" * 100_000, message="nests deeper than 32 levels",
                 location="r.json:1:33:"),
    results_case("deep-objects", '{"a":' * 100_000 + "1" + "}" * 100_000, message="nests deeper",
                 location="r.json:1:"),
    results_case("50-mib", fifty_mib, message="larger than 4 MiB"),
    results_case("unknown-ids", results(*({"id": f"cu999-cp312-linux-x86_64{i}", "status": "built"} for i in range(9))),
                 message="9 target id(s) that"),
    results_case("excluded-id", results({"id": "cu132-cp312-macos-arm64", "status": "built"}),
                 message="does not have: cu132-cp312-macos-arm64"),
    results_case("non-utf8", b'{"schema": 1, "targets": [{"id": "\xff\xfe", "status": "built"}]}',
                 message="not UTF-8", location="r.json:1:"),
    results_case("utf16-bom", "\ufeff[]".encode("utf-16"), message="byte-order mark"),
    results_case("nul-byte", b'{"schema": 1,\x00 "targets": []}', message="NUL byte"),
    results_case("empty-file", b"", message="not valid JSON"),
    results_case("truncated", results({"id": GOOD_ID, "status": "built"})[:-5] + "\n",
                 message="not valid JSON", location="r.json:"),
    results_case("script-in-status", results({"id": GOOD_ID, "status": "<script>alert(1)</script>"}),
                 message="status: '<script>alert(1)</script>' is not one of"),
    results_case("script-in-reason-is-escaped", results({"id": GOOD_ID, "status": "failed",
                                                         "reason": "<script>alert(1)</script>"}),
                 exit_code=0, message="compatibility.html"),
    results_case("schema-2", '{"schema": 2, "targets": []}', message="1 was expected"),
    results_case("targets-an-object", '{"schema": 1, "targets": {}}', message="targets: must be array"),
    results_case("unexpected-key", results({"id": GOOD_ID, "status": "built", "secret": "x"}),
                 message="'secret' was unexpected"),
    results_case("duplicate-id", results(*[{"id": GOOD_ID, "status": "built"}] * 2), message="listed twice"),
    results_case("duplicate-key", '{"schema": 1, "schema": 1, "targets": []}', message="duplicate key 'schema'"),
    results_case("nan", '{"schema": NaN, "targets": []}', message="NaN is not a JSON number"),
    results_case("huge-float", results({"id": GOOD_ID, "status": "built", "size": 1}).replace("1}", "1e400}"),
                 message="too large for a float"),
    results_case("huge-int", results({"id": GOOD_ID, "status": "built", "size": 1}).replace("1}", "9" * 5000 + "}"),
                 message="not valid JSON"),
    results_case("negative-size", results({"id": GOOD_ID, "status": "built", "size": -1}), message="size"),
    results_case("million-empty-arrays", "[" + "[]," * 1_000_000 + "[]]", message="must be object"),
    Case(id="cli-results-missing-file", argv=("report", *M, "--results", "{dir}/nope.json", "--output", "{out}"),
         files={"m.yaml": MATRIX}, exit_code=19, message="--results"),
    Case(id="cli-results-second-missing", argv=("report", *M, "--results", "{dir}/r.json", "--results",
                                                "{dir}/nope.json", "--output", "{out}"),
         files={"m.yaml": MATRIX, "r.json": results()}, exit_code=19, message="nope.json: no such file"),
    Case(id="cli-results-a-folder", argv=("report", *M, "--results", "{dir}/r.json", "--output", "{out}"),
         files={"m.yaml": MATRIX, "r.json": lambda d: (d / "r.json").mkdir()}, exit_code=19,
         message="is a folder, a file is expected"),
]

PATHS = [
    # the matrix itself
    Case(id="cli-path-matrix-missing", argv=("plan", "--matrix", "{dir}/nope.yaml"), exit_code=19,
         message="--matrix"),
    Case(id="cli-path-matrix-default-missing", argv=("plan",), exit_code=19, message="--matrix matrix.yaml: no such file"),
    path_case("matrix-a-folder", ("plan", "--matrix", "{dir}/adir"), "is a folder, a file is expected"),
    path_case("matrix-a-device", ("plan", "--matrix", "/dev/zero"), "not a regular file"),
    path_case("matrix-under-a-file", ("images", "--dry-run", "--matrix", "{dir}/afile/m.yaml"), "no such file"),
    # --output: a file, under a file (fails even for root, who ignores permission bits)
    path_case("report-output-a-file", ("report", *M, "--output", "{dir}/afile"), "is a file, an output folder"),
    path_case("report-output-under-a-file", ("report", *M, "--output", "{dir}/afile/sub"),
              "cannot create this folder"),
    path_case("build-output-a-file", ("build", *M, "--dry-run", "--target", GOOD_ID, "--output", "{dir}/afile"),
              "--output"),
    path_case("build-output-under-a-file", ("build", *M, "--dry-run", "--target", GOOD_ID, "--output",
                                            "{dir}/afile/sub/deeper"), "afile is a file"),
    path_case("build-cache-under-a-file", ("build", *M, "--dry-run", "--target", GOOD_ID, "--cache", "{dir}/afile/c"),
              "--cache"),
    path_case("build-source-missing", ("build", *M, "--dry-run", "--target", GOOD_ID, "--source", "{dir}/nope"),
              "no such folder"),
    path_case("build-source-a-file", ("build", *M, "--dry-run", "--target", GOOD_ID, "--source", "{dir}/afile"),
              "a folder is expected"),
    path_case("promote-output-under-a-file", ("promote", *M, "{dir}/adir", "--output", "{dir}/afile/pypi"),
              "--output"),
    path_case("index-output-a-file", ("index", *M, "{dir}/adir", "--output", "{dir}/afile"), "--output"),
    path_case("index-output-under-a-file", ("index", *M, "{dir}/adir", "--output", "{dir}/afile/site"),
              "cannot create this folder"),
    # inputs every command takes
    path_case("verify-wheel-missing", ("verify", *M, "{dir}/nope.whl", "--target", GOOD_ID), "WHEEL"),
    path_case("verify-wheel-a-folder", ("verify", *M, "{dir}/adir", "--target", GOOD_ID), "is a folder"),
    path_case("smoke-wheel-missing", ("smoke", *M, "{dir}/nope.whl", "--target", GOOD_ID), "no such file"),
    path_case("smoke-python-missing", ("smoke", *M, "{dir}/afile", "--target", GOOD_ID, "--python", "{dir}/py"),
              "--python"),
    path_case("promote-missing", ("promote", *M, "{dir}/nope", "--output", "{out}"), "no such file or folder"),
    path_case("index-missing", ("index", *M, "{dir}/nope", "--output", "{out}"), "no such folder"),
    path_case("index-wheelhouse-a-file", ("index", *M, "{dir}/afile", "--output", "{out}"), "a folder is expected"),
    path_case("variants-missing", ("variants", *M, "{dir}/nope", "--output", "{out}"), "no such folder"),
    path_case("variants-output-under-a-file", ("variants", *M, "{dir}/adir", "--output", "{dir}/afile/site"),
              "cannot create this folder"),
    path_case("workflow-missing", ("workflow", *M, "--check", "--workflow", "{dir}/nope.yml"), "--workflow"),
    path_case("workflow-a-folder", ("workflow", *M, "--check", "--workflow", "{dir}/adir"), "is a folder"),
    # empty selections for promote and index
    path_case("promote-empty-folder", ("promote", *M, "{dir}/adir", "--output", "{out}"), "nothing to promote",
              exit_code=15),
    path_case("index-empty-folder", ("index", *M, "{dir}/adir", "--output", "{out}"), "nothing to index",
              exit_code=16),
    path_case("promote-only-unlabelled", ("promote", *M, "{dir}/whl", "--output", "{out}"), "none of its 1 wheel",
              exit_code=15, files={"w": wheel("minifw", "2.15.0")}),
    path_case("promote-only-non-default", ("promote", *M, "{dir}/whl", "--output", "{out}"),
              "nothing to promote", exit_code=15, files={"w": wheel("minifw", "2.15.0+cpu")}),
    path_case("index-only-unlabelled", ("index", *M, "{dir}/whl", "--output", "{out}"), "carries a variant label",
              exit_code=16, files={"w": wheel("minifw", "2.15.0")}),
]

SELECTORS = [
    Case(id=f"cli-select-{name}", argv=("plan", *M, "--format", "github", *flags), files={"m.yaml": MATRIX},
         exit_code=code, message=message)
    for name, flags, code, message in [
        ("target-a-glob", ("--target", "cu13*"), 5, "--target takes an exact id"),
        ("skip-everything", ("--skip", "*"), 5, "nothing selected by --skip '*'"),
        ("select-nothing", ("--select", "cu999-*"), 5, "matches no target"),
        ("target-empty", ("--target", ""), 5, "matches no target"),
        ("select-open-bracket", ("--select", "["), 5, "matches no target"),
        ("select-only-excluded", ("--select", "cu132-cp312-macos-arm64"), 5, "only matches excluded"),
        ("target-dropped-python", ("--target", "cpu-cp310-linux-x86_64"), 4, "dropped"),
        ("select-skip-cancel", ("--select", "cpu-*", "--skip", "cpu-*"), 5, "nothing selected"),
        ("unknown-format", ("--format", "yaml"), 2, "invalid choice"),
    ]
] + [
    Case(id="cli-select-verify-unknown-target", argv=("verify", *M, "{dir}/x.whl", "--target", "nope"),
         files={"m.yaml": MATRIX, "x.whl": b"PK"}, exit_code=5, message="matches no target"),
    Case(id="cli-usage-unknown-command", argv=("deploy",), exit_code=2, message="invalid choice"),
    Case(id="cli-usage-index-without-output", argv=("index", *M, "{dir}"), files={"m.yaml": MATRIX}, exit_code=2,
         message="--output"),
]

WORKFLOWS = [
    Case(id=f"cli-workflow-{name}", argv=("workflow", *M, "--check", "--workflow", "{dir}/w.yml"),
         files={"m.yaml": MATRIX, "w.yml": text}, exit_code=17, message=message, location=location)
    for name, text, message, location in [
        ("not-yaml", "jobs: {build: [\n", "not valid YAML", "w.yml:2:"),
        ("a-list", "- 1\n- 2\n", "not a mapping", None),
        ("jobs-a-list", "jobs: [1]\n", "jobs: not a mapping", None),
        ("run-a-list", "jobs: {build: {steps: [{run: [1, 2]}]}}\n", "not a string", None),
        ("non-utf8", b"jobs:\n  build: \xff\n", "not UTF-8", "w.yml:2:"),
        ("alias-bomb", alias_bomb(), "not a string", None),
    ]
]

PIPES = [
    Case(id="cli-pipe-plan-table", argv=("plan", *M), files={"m.yaml": MATRIX}, exit_code=141, stdout_closed=True),
    Case(id="cli-pipe-plan-github", argv=("plan", *M, "--format", "github"), files={"m.yaml": MATRIX},
         exit_code=141, stdout_closed=True),
    Case(id="cli-pipe-plan-json", argv=("plan", *M, "--json"), files={"m.yaml": MATRIX}, exit_code=141,
         stdout_closed=True),
]

CASES: list[Case] = [*RESULTS, *PATHS, *SELECTORS, *WORKFLOWS, *PIPES]
