"""Loading and validation of matrix.yaml: every error class, with file:line and key path."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from packaging.version import Version

from builders.base import untrusted, yamlmarks
from builders.base.errors import DroppedError, EngineError, InputError, MatrixError
from builders.families import loader as matrix
from builders.matrix import findings, rules
from builders.matrix.model import PythonVersion
from tests import expected
from tests.helpers import accelerator, edit, only_problem, problems_of


def line_of(text: str, needle: str, nth: int = 0) -> int:
    """1-based line of the nth occurrence of ``needle`` (computed from the text itself)."""
    lines = [i + 1 for i, line in enumerate(text.splitlines()) if needle in line]
    return lines[nth]


def load_edit(text: str, old: str, new: str, count: int = 1):
    assert old in text, old
    return matrix.loads(text.replace(old, new, count), "m.yaml")


def test_shipped_matrix_loads(shipped_text: str) -> None:
    m = matrix.loads(shipped_text, "matrix.yaml")
    data = expected.raw(shipped_text)
    assert m.project.version == Version(str(data["project"]["version"]))
    assert [str(p) for p in m.pythons] == data["pythons"]
    assert [v.label for v in m.variants] == expected.labels(data)
    assert [p.name for p in m.platforms] == list(data["platforms"])
    assert m.project.extension_modules == tuple(data["project"]["extension_modules"])


def test_family_defaults_are_inherited_and_overridden(shipped_text: str) -> None:
    m = matrix.loads(shipped_text)
    cu134 = m.variant("cu134")
    assert cu134.accelerator == accelerator("cuda") and cu134.version == "13.4"
    assert "libcudart.so.13" in cu134.exclude_libs
    assert cu134.rpath == ("$ORIGIN/../nvidia/cu13/lib",)
    assert cu134.toolkit.root == "nvidia/cu13"
    assert cu134.toolkit.requirements == ("cuda-toolkit[nvcc,cudart,cccl,crt,nvvm]==13.4.3",)
    assert "10.7" in cu134.arch_list("linux-x86_64").split(";")
    assert "10.7" not in m.variant("cu132").arch_list("linux-x86_64").split(";")
    assert m.variant("rocm10.0").arch_list("linux-x86_64").endswith("gfx1250")
    assert "gfx1250" not in m.variant("rocm7.14").arch_list("linux-x86_64")


def test_values_are_frozen_and_hashable(shipped_text: str) -> None:
    m = matrix.loads(shipped_text)
    assert len({*m.variants, *m.variants}) == len(m.variants)
    with pytest.raises(AttributeError):
        m.variants[0].label = "x"  # type: ignore[misc]


def test_python_310_is_rejected_with_place_release_and_reason(shipped_text: str) -> None:
    text = shipped_text.replace('  - "3.11"\n', '  - "3.10"\n  - "3.11"\n', 1)
    with pytest.raises(DroppedError) as err:
        matrix.loads(text, "m.yaml")
    msg = str(err.value)
    line = line_of(text, '- "3.10"')
    assert f"m.yaml:{line}:" in msg
    assert "3.10" in msg and "dropped in 2.15" in msg and "end of life" in msg
    assert err.value.exit_code == 4


def test_unquoted_310_is_not_read_as_31(shipped_text: str) -> None:
    with pytest.raises(DroppedError, match="Python 3.10"):
        load_edit(shipped_text, '  - "3.11"\n', '  - 3.10\n  - "3.11"\n')


def test_free_threaded_313_is_rejected(shipped_text: str) -> None:
    with pytest.raises(DroppedError, match="3.13t.*dropped in 2.15"):
        load_edit(shipped_text, '  - "3.14"\n', '  - "3.13t"\n  - "3.14"\n')


def test_misspelt_key_names_line_and_suggests(shipped_text: str) -> None:
    text = shipped_text.replace("        arch_list:\n          linux-x86_64: \"7.5;8.0;8.6;9.0;10.0;10.7",
                                "        arch_lsit:\n          linux-x86_64: \"7.5;8.0;8.6;9.0;10.0;10.7", 1)
    with pytest.raises(MatrixError) as err:
        matrix.loads(text, "m.yaml")
    msg = str(err.value)
    assert f"m.yaml:{line_of(text, 'arch_lsit')}:" in msg
    assert "accelerators.cuda.versions.\"13.4\".arch_lsit" in msg
    assert "did you mean 'arch_list'?" in msg
    assert not isinstance(err.value, DroppedError) and err.value.exit_code == 3


def test_every_problem_is_reported_at_once(shipped_text: str) -> None:
    text = shipped_text.replace("  import_name:", "  import_nam:", 1).replace("    runner: macos-15", "    runer: macos-15")
    with pytest.raises(MatrixError) as err:
        matrix.loads(text, "m.yaml")
    keys = {p.location.key for p in err.value.problems if p.location}
    assert {"project.import_nam", "platforms.macos-arm64.runer"} <= keys


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("version: 2.15.0", "version: 2.15.0+cu132", "has a local label"),
        ("version: 2.15.0", "version: two", "not a PEP 440 version"),
        ('requires_python: ">=3.11"', 'requires_python: ">=3.10"', "admits Python 3.10"),
        ("cxx_standard: 20", "cxx_standard: 17", "C\\+\\+17 was dropped in 2.15"),
        ('mps_min_macos: "15.0"', 'mps_min_macos: "14.0"', "MPS acceleration on macOS 14 was dropped"),
        ("label: cu134", "label: cu132", "label 'cu132' is used twice"),
        ("runtime_dirs: [nvidia/cu13/lib]", "runtime_dirs: [/usr/local/cuda/lib64]", "is not one relative path"),
        ('targets: "cu*-*-macos-*"', 'targets: "cuda-*-macos-*"', "matches no target"),
        ("    linux-aarch64: cu132\n", "    linux-aarch64: cu999\n", "unknown variant label 'cu999'"),
        ("          linux-aarch64: \"8.0;9.0;10.0;11.0", "          linux-arm64: \"8.0;9.0;10.0;11.0", "unknown platform 'linux-arm64'"),
        ("'cuda-toolkit[cudart]==13.2.2;", "'cuda-toolkit[cudart==13.2.2;", "not a valid requirement"),
        ("  linux-aarch64:\n    os: linux", "  linux-arm64:\n    os: linux", "did you mean 'linux-aarch64'"),
        ("wheel_platform: win_amd64", "wheel_platform: win32", "does not match arch"),
        ("schema_version: 1", "schema_version: 2", "1 was expected"),
        ("  cpu:\n    label: cpu\n", "  cpu:\n    notes: no label\n", "neither versions nor a label"),
        ("    reason: CUDA does not support macOS\n", "", "'reason' is a required property"),
        ("    runner: windows-2025\n", "    runner: windows-2025\n    runner: windows-2022\n", "duplicate key 'runner'"),
        ("pythons:\n", "pythons: [\n", "not valid YAML"),
    ],
)
def test_validation_errors(shipped_text: str, old: str, new: str, expected: str) -> None:
    with pytest.raises(MatrixError, match=expected) as err:
        load_edit(shipped_text, old, new)
    assert all(p.location is not None and p.location.line >= 1 for p in err.value.problems)


def test_error_points_at_the_right_line(shipped_text: str) -> None:
    text = shipped_text.replace("wheel_platform: win_amd64", "wheel_platform: win32")
    with pytest.raises(MatrixError) as err:
        matrix.loads(text, "m.yaml")
    (problem,) = err.value.problems
    assert problem.location.line == line_of(text, "wheel_platform: win32")
    assert problem.location.key == "platforms.windows-x86_64.wheel_platform"


def test_empty_and_missing_files(tmp_path) -> None:
    with pytest.raises(MatrixError, match="empty"):
        matrix.loads("", "m.yaml")
    with pytest.raises(MatrixError, match="cannot read matrix"):
        matrix.load(tmp_path / "nope.yaml")


def test_python_version_values() -> None:
    ft = PythonVersion.parse("3.14t")
    assert (ft.interpreter, ft.abi, ft.release, str(ft)) == ("cp314", "cp314t", "3.14", "3.14t")
    assert PythonVersion.parse("3.11") < PythonVersion.parse("3.12")


# --- issue 9: every boundary refuses bad data with a clear error -------------------------------


def after(text: str, anchor: str, old: str, new: str) -> str:
    """Replace the first ``old`` that follows ``anchor``."""
    head, sep, tail = text.partition(anchor)
    assert sep and old in tail, (anchor, old)
    return head + sep + tail.replace(old, new, 1)


HANG = 30.0  # a bound on a hang, generous on a loaded machine: speed goals live in benchmarks/
BOMB = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{b}: &{b} [{', '.join([f'*{a}'] * 9)}]\n" for a, b in zip("abcdefgh", "bcdefghi"))


# the reader: size, encoding, YAML safety

def test_alias_bomb_is_refused_at_the_alias_quickly() -> None:
    start = time.monotonic()
    problem = only_problem(BOMB, "alias bomb")
    assert time.monotonic() - start < HANG  # expanded, it would not end (nor fit in memory)
    assert problem.location.line <= BOMB.count("\n")


@pytest.mark.parametrize("text", ["a: " + "[" * 5000 + "]" * 5000, "a:\n" + "".join(" " * i + "b:\n" for i in range(1, 80)),
                                  "a: " + "{b: " * 100 + "c" + "}" * 100])
def test_deep_nesting_is_refused_before_recursion(text: str) -> None:
    only_problem(text, "nest")


@pytest.mark.parametrize("tag", ["!!python/object:os.system", "!!python/name:os.system", "!!binary", "!!timestamp",
                                 "!!set", "!!omap", "!custom", "!<tag:example.com,2000:x>"])
def test_tags_outside_the_core_schema_are_refused_with_their_place(shipped_text: str, tag: str) -> None:
    text = edit(shipped_text, "  import_name: ", f"  import_name: {tag} ")
    problem = only_problem(text, "is not allowed here")
    assert problem.location.line == line_of(text, tag)


def test_python_object_tag_on_a_mapping_is_refused_not_ignored(shipped_text: str) -> None:
    text = edit(shipped_text, "project:\n", "project: !!python/object:argparse.Namespace\n")
    assert only_problem(text, "!!python/object").location.line == line_of(text, "!!python/object")


def test_core_tags_are_accepted(shipped_text: str) -> None:
    text = edit(shipped_text, "  import_name: ", "  import_name: !!str ")
    assert matrix.loads(text, "m.yaml").project.import_name == expected.raw(shipped_text)["project"]["import_name"]


@pytest.mark.parametrize(("value", "phrase"), [("!!int abc", "not a valid int"), ("!!bool maybe", "not a valid bool"),
                                               ("9" * 5000, "out of range"), ("0x" + "f" * 40, "out of range"),
                                               ("!!float x", "not a valid float")])
def test_scalars_that_are_not_what_their_tag_says(shipped_text: str, value: str, phrase: str) -> None:
    problem = only_problem(edit(shipped_text, "  cxx_standard: 20", f"  cxx_standard: {value}"), phrase)
    assert problem.location.key == "project.cxx_standard"


@pytest.mark.parametrize(("old", "new", "phrase"), [
    ("  import_name: ", "  <<: {a: 1}\n  import_name: ", "merge keys"),
    ("  import_name: ", "  import_name: *nowhere\n  x: ", "names no anchor"),
    ("schema_version: 1\n", "schema_version: 1\n---\n", "one YAML document"),
    ("  import_name: ", "  import_name: a\x07b\n  x: ", "U+0007"),
    ("  import_name: ", "  import_name: a\ufeffb\n  x: ", "U+FEFF"),
])
def test_yaml_refusals_name_file_line_and_column(shipped_text: str, old: str, new: str, phrase: str) -> None:
    text = edit(shipped_text, old, new)
    problem = problems_of(text)[0]
    assert phrase.lower() in str(problem).lower()
    assert problem.location.file == "m.yaml" and problem.location.line >= line_of(text, new.split("\n")[0].strip()[:8])


def test_recursive_anchor_is_refused() -> None:
    only_problem("a: &a [*a]\n", "names no anchor")


def test_no_yaml_error_names_unicode_string(shipped_text: str) -> None:
    for text in ("a: [\n", "a: b: c\n", "a: 'x\n", "\x00", "a:\n\t- x\n"):
        with pytest.raises(MatrixError) as err:
            matrix.loads(text, "m.yaml")
        assert "<unicode string>" not in str(err.value) and "position" not in str(err.value)
        assert all(p.location for p in err.value.problems)


@pytest.mark.parametrize(("data", "phrase", "line"), [
    (b"\xef\xbb\xbfa: 1\n", "UTF-8 byte-order mark", 1),
    ("a: 1\n".encode("utf-16"), "UTF-16", 1),
    ("a: 1\n".encode("utf-16-le"), "NUL byte", 1),
    (b"a: 1\nb: \x00\n", "NUL byte", 2),
    (b"a: 1\nb: caf\xe9\n", "not UTF-8", 2),
    (b"\x7fELF\x02\x01\x01\x00\x00\x00", "NUL byte", 1),
])
def test_encodings_are_refused_with_their_place(tmp_path: Path, data: bytes, phrase: str, line: int) -> None:
    path = tmp_path / "m.yaml"
    path.write_bytes(data)
    with pytest.raises(MatrixError, match=phrase) as err:
        matrix.load(path)
    assert f"m.yaml:{line}:" in str(err.value)
    assert err.value.exit_code == 3


def test_size_cap_reads_no_further(tmp_path: Path) -> None:
    big = tmp_path / "m.yaml"
    big.write_bytes(b"#" * (matrix.MATRIX_LIMIT + 1))
    with pytest.raises(MatrixError, match="larger than 1 MiB") as err:
        matrix.load(big)
    assert str(err.value).startswith(f"{big}:1:1: matrix is larger than 1 MiB")  # located like every refusal
    if os.path.exists("/dev/zero"):
        start = time.monotonic()
        with pytest.raises(MatrixError, match="larger than"):
            matrix.load("/dev/zero")
        assert time.monotonic() - start < HANG  # read whole, it would never end


def test_unreadable_paths(tmp_path: Path) -> None:
    with pytest.raises(MatrixError, match="cannot read matrix"):
        matrix.load(tmp_path)


# one run reports everything, capped

def test_schema_errors_do_not_stop_the_semantic_checks(shipped_text: str) -> None:
    text = edit(shipped_text, "  import_name:", "  import_nam:")
    text = edit(text, "  version: ", "  version: two\n  x_version: ")
    pypi = expected.raw(shipped_text)["channels"]["pypi"]
    platform, label = next(iter(pypi.items()))
    text = after(text, "\n  pypi:\n", f"    {platform}: {label}\n", f"    {platform}: nolabel\n")
    messages = " | ".join(str(p) for p in problems_of(text))
    assert "unknown key 'import_nam'" in messages and "not a PEP 440 version" in messages
    assert "unknown variant label 'nolabel'" in messages


def test_problems_come_in_file_order(shipped_text: str) -> None:
    text = edit(edit(shipped_text, "  import_name:", "  import_nam:"), "wheel_platform: win_amd64", "wheel_platform: win32")
    lines = [p.location.line for p in problems_of(text)]
    assert lines == sorted(lines)


def test_thousands_of_problems_print_the_first_50_then_a_count() -> None:
    text = "".join(f"key{i}: {i}\n" for i in range(5000))
    start = time.monotonic()
    with pytest.raises(MatrixError) as err:
        matrix.loads(text, "m.yaml")
    assert time.monotonic() - start < HANG
    shown = str(err.value)
    assert len(err.value.problems) > 5000
    assert f"and {len(err.value.problems) - 50} more problems" in shown
    assert shown.count("unknown key") <= 50


def test_a_huge_document_is_refused() -> None:
    only_problem("".join(f"- {i}\n" for i in range(yamlmarks.MAX_VALUES + 1)), "more than")


# values checked for what they mean

@pytest.mark.parametrize(("python", "phrase"), [
    ("3.1", 'write "3.10"'),
    ("3.9", "not admitted by requires_python"),
    ("3.11t", "free-threaded CPython exists from 3.13"),
    ("3.011", "does not match"),
    ("4.0", "does not match"),
])
def test_python_values(shipped_text: str, python: str, phrase: str) -> None:
    first = expected.raw(shipped_text)["pythons"][0]
    text = edit(shipped_text, f'  - "{first}"\n', f'  - "{python}"\n  - "{first}"\n')
    problem = only_problem(text, phrase)
    assert problem.location.line == line_of(text, f'- "{python}"')


def test_unquoted_31_gets_the_quoting_hint(shipped_text: str) -> None:
    first = expected.raw(shipped_text)["pythons"][0]
    only_problem(edit(shipped_text, f'  - "{first}"\n', f'  - 3.1\n  - "{first}"\n'), "without quotes")


def test_a_thousand_pythons_are_refused(shipped_text: str) -> None:
    pythons = expected.raw(shipped_text)["pythons"]
    many = "".join(f'  - "3.{m}{t}"\n' for m in range(40, 100) for t in ("", "t")) * 8
    start = time.monotonic()
    problems = problems_of(edit(shipped_text, f'  - "{pythons[0]}"\n', many))
    assert time.monotonic() - start < HANG
    assert {str(p).split(": ", 2)[2].split("\n")[0] for p in problems} == {
        f"has {960 + len(pythons) - 1} entries, more than the 32 allowed", "lists '3.40' more than once"}


def test_candidate_targets_are_capped(shipped_text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    data = expected.raw(shipped_text)
    monkeypatch.setattr(rules, "MAX_TARGETS", len(expected.candidates(data)) - 1)
    problem = only_problem(shipped_text, "candidate targets")
    assert problem.location.key == "pythons"


@pytest.mark.parametrize("label", ["cu134.", "cu..134", "Cu134", "cu-134", "cu_134", ".cu134", "cu/134", "../x"])
def test_labels_are_pep440_local_segments_and_safe_folder_names(shipped_text: str, label: str) -> None:
    cuda = expected.raw(shipped_text)["accelerators"]["cuda"]["versions"]
    old = next(iter(cuda.values()))["label"]
    text = edit(shipped_text, f"label: {old}\n", f"label: '{label}'\n")
    assert any("does not match" in str(p) and p.location.key.endswith(".label") for p in problems_of(text))


@pytest.mark.parametrize(("tag", "phrase"), [
    ("linux_x86_64", "not a Linux platform tag"),
    ("manylinux2014_x86_64", "legacy alias"),
    ("manylinux_2_28_aarch64", "does not match arch"),
    ("manylinux_3_28_x86_64", "no real C library"),
    ("win_amd64", "not a Linux platform tag"),
    ("banana", "not a Linux platform tag"),
])
def test_wheel_platform_is_a_real_tag_for_the_platform(shipped_text: str, tag: str, phrase: str) -> None:
    text = after(shipped_text, "  linux-x86_64:\n", "wheel_platform: manylinux_2_28_x86_64", f"wheel_platform: {tag}")
    problem = only_problem(text, phrase)
    assert problem.location.key == "platforms.linux-x86_64.wheel_platform"


def test_musllinux_and_windows_arm64_tags_are_accepted() -> None:
    assert findings.wheel_platform_problem("linux", "x86_64", "musllinux_1_2_x86_64", None) is None
    assert findings.wheel_platform_problem("windows", "arm64", "win_arm64", None) is None
    assert findings.wheel_platform_problem("macos", "arm64", "macosx_11_0_arm64", None) is None
    assert "does not match arch" in findings.wheel_platform_problem("macos", "arm64", "macosx_14_0_x86_64", None).message
    assert "deployment_target" in findings.wheel_platform_problem("macos", "arm64", "macosx_14_0_arm64", "15.0").message
    assert "runs on arm64" in findings.wheel_platform_problem("macos", "arm64", "macosx_10_15_arm64", None).message


def test_linux_arch_must_be_linux_spelling(shipped_text: str) -> None:
    text = after(shipped_text, "  linux-aarch64:\n", "arch: aarch64", "arch: arm64")
    assert "not how linux names a CPU" in str(problems_of(text)[0])


@pytest.mark.parametrize(("old", "new", "phrase"), [
    ("  name: ", "  name: 'my project!'\n  x_name: ", "does not match"),
    ("  released: ", "  released: 2026-13-45\n  x_released: ", "is not a date"),
    ("  released: ", "  released: '26-1-1'\n  x_released: ", "is not a date"),
    ("wheel_size_budget_mb: ", "wheel_size_budget_mb: 0\n  x_budget: ", "above 0"),
    ("wheel_size_budget_mb: ", "wheel_size_budget_mb: 0.0\n  x_budget: ", "above 0"),
    ("wheel_size_budget_mb: ", "wheel_size_budget_mb: -3\n  x_budget: ", "above 0"),
])
def test_project_values(shipped_text: str, old: str, new: str, phrase: str) -> None:
    text = edit(shipped_text, old, new)
    messages = [str(p) for p in problems_of(text)]
    assert any(phrase in m for m in messages), messages


@pytest.mark.parametrize(("source", "phrase"), [("does-not-exist", "does not exist"), ("..", "leads outside"),
                                                ("/usr", "is absolute"), ("matrix.yaml", "is not a folder")])
def test_source_must_be_an_existing_folder_inside_the_matrix_folder(shipped_text: str, root: Path, source: str,
                                                                   phrase: str) -> None:
    old = expected.raw(shipped_text)["project"]["source"]
    text = edit(shipped_text, f"source: {old}\n", f"source: {source}\n")
    with pytest.raises(MatrixError, match=phrase) as err:
        matrix.loads(text, root / "m.yaml")
    (problem,) = err.value.problems
    assert problem.location.key == "project.source"


def test_source_on_the_command_line_overrides_the_matrix(shipped_text: str, root: Path, tmp_path: Path) -> None:
    old = expected.raw(shipped_text)["project"]["source"]
    text = edit(shipped_text, f"source: {old}\n", "source: ../elsewhere\n")
    assert matrix.loads(text, root / "m.yaml", source=tmp_path).project.source == tmp_path


def test_smoke_script_stays_inside(root: Path) -> None:
    assert "leads outside" in findings.path_problem(root, "../x.py", folder=False).message
    assert "does not exist" in findings.path_problem(root, "nope.py", folder=False).message
    assert findings.path_problem(root, "matrix.yaml", folder=False) is None


def test_requires_python_above_310_admits_3101(shipped_text: str) -> None:
    text = edit(shipped_text, 'requires_python: ">=3.11"', 'requires_python: ">3.10"')
    with pytest.raises(DroppedError, match="admits Python 3.10") as err:
        matrix.loads(text, "m.yaml")
    assert err.value.exit_code == 4


@pytest.mark.parametrize(("arch", "phrase"), [("garbage", "not a cuda architecture"), ("8.0;;9.0", "not a cuda"),
                                              ("8.0;8.0", "twice"), ("sm_80", "not a cuda"), ("8.0 9.0", "not a cuda")])
def test_arch_lists_name_real_architectures(shipped_text: str, arch: str, phrase: str) -> None:
    text = after(shipped_text, "\n    versions:\n", 'linux-x86_64: "', f'linux-x86_64: "{arch}" #')
    problem = only_problem(text, phrase)
    assert problem.location.key.endswith("arch_list.linux-x86_64")


def test_arch_list_rule_per_family() -> None:
    assert findings.arch_list_problem(accelerator("rocm"), "gfx90a;gfx942;gfx90a:xnack-") is None
    assert findings.arch_list_problem(accelerator("rocm"), "8.0") is not None
    assert findings.arch_list_problem(accelerator("cuda"), "7.5;9.0a;10.0f;12.0+PTX") is None


@pytest.mark.parametrize(("entry", "phrase"), [
    ("$ORIGIN/..:/usr/local/cuda/lib64", "several paths"),
    ("$ORIGINAL/lib", "not relative to $ORIGIN"),
    ("/usr/local/cuda/lib64", "not relative to $ORIGIN"),
    ("$ORIGIN/../..", "climbs out of site-packages"),
    ("$ORIGIN/../../../..", "climbs out"),
    ("$ORIGIN/../../../../lib", "climbs out"),
    ("$ORIGIN//lib", "empty"),
    ("$ORIGIN/./lib", "empty"),
    ("$ORIGIN/$LIB", "variable"),
])
def test_rpath_entries_refused(entry: str, phrase: str) -> None:
    assert phrase in findings.rpath_problem(entry).message


@pytest.mark.parametrize("entry", ["$ORIGIN", "${ORIGIN}/lib", "$ORIGIN/../nvidia/cu13/lib", "$ORIGIN/../../..",
                                   "$ORIGIN/../../../intel", "$ORIGIN/sub/../.."])
def test_rpath_entries_accepted(entry: str) -> None:
    assert findings.rpath_problem(entry) is None


def test_rpath_rule_applies_to_the_matrix(shipped_text: str) -> None:
    folder = expected.raw(shipped_text)["accelerators"]["cuda"]["runtime_dirs"][0]
    text = edit(shipped_text, f"runtime_dirs: [{folder}]", 'rpath: ["$ORIGIN/..:/usr/local/cuda/lib64"]')
    assert only_problem(text, "several paths").location.line == line_of(text, "/usr/local/cuda/lib64")


@pytest.mark.parametrize(("entry", "phrase"), [
    ("/usr/local/cuda/lib64", "not one relative path"),
    ("$ORIGIN/../nvidia", "not one relative path"),
    ("a:b", "not one relative path"),
    ("..", "leaves the environment's lib folder"),
    ("../../..", "leaves"),
    ("nvidia//lib", "empty"),
    ("./nvidia", "empty"),
])
def test_runtime_dirs_refused(entry: str, phrase: str) -> None:
    assert phrase in findings.runtime_dir_problem(entry).message


@pytest.mark.parametrize("entry", ["nvidia/cu13/lib", "_rocm_sdk_core/lib", "../..", "../../intel", "a/../b"])
def test_runtime_dirs_accepted(entry: str) -> None:
    assert findings.runtime_dir_problem(entry) is None


def test_the_old_rpath_key_still_declares_the_same_runtime_folder(shipped_text: str) -> None:
    """A matrix written with ``rpath`` (entries for an ELF in site-packages/<pkg>/) means the folder it reaches."""
    folder = expected.raw(shipped_text)["accelerators"]["cuda"]["runtime_dirs"][0]
    old = matrix.loads(edit(shipped_text, f"runtime_dirs: [{folder}]", f'rpath: ["$ORIGIN/../{folder}"]'))
    assert old.variant("cu134").runtime_dirs == matrix.loads(shipped_text).variant("cu134").runtime_dirs == (folder,)


def test_pypi_default_must_be_built_on_its_platform(shipped_text: str) -> None:
    data = expected.raw(shipped_text)
    live = expected.live_ids(data)
    pairs = [(p, label) for p in data["channels"]["pypi"] for label in expected.labels(data)
             if not any(i.startswith(f"{label}-") and i.endswith(f"-{p}") for i in live)]
    if not pairs:
        pytest.skip("no variant is excluded on a platform with a PyPI default")
    platform, label = pairs[0]
    current = data["channels"]["pypi"][platform]
    text = after(shipped_text, "\n  pypi:\n", f"    {platform}: {current}\n", f"    {platform}: {label}\n")
    problem = only_problem(text, "is excluded")
    assert problem.location.key == f"channels.pypi.{platform}"


@pytest.mark.parametrize(("url", "phrase"), [
    ("http://download.example.org/", "plain http"),
    ("https://x.invalid/\"><script>/", "special in HTML"),
    ("https://x.invalid/<b>/", "special in HTML"),
    ("https://user:secret@x.invalid/", "credentials"),
    ("ftp://x.invalid/", "does not match"),
    ("https://x.invalid:99999/", "not a valid URL"),
])
def test_index_base_url_must_be_safe(shipped_text: str, url: str, phrase: str) -> None:
    base = expected.raw(shipped_text)["channels"]["index"]["base_url"]
    problem = only_problem(edit(shipped_text, f"base_url: {base}", f"base_url: '{url}'"), phrase)
    assert problem.location.key == "channels.index.base_url"


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080/", "http://127.3.4.5/", "http://localhost/", "http://[::1]:80/",
                                 "https://x.invalid/", "file:///srv/index/"])
def test_loopback_http_and_https_are_accepted(url: str) -> None:
    assert findings.url_problem(url) is None


def test_toolkit_urls_allow_env_references_only_in_full() -> None:
    assert findings.url_problem("${INDEX}", variables=True) is None
    assert findings.url_problem("${INDEX}/simple", variables=True) is None
    assert "not a ${VAR}" in findings.url_problem("$INDEX", variables=True).message
    assert "plain http" in findings.url_problem("http://evil.example/", variables=True).message


@pytest.mark.parametrize(("layout", "phrase"), [("../{label}/", "'..' segment"), ("/srv/{label}/", "relative path"),
                                                ("whl/{lable}/", "unknown placeholder"), ("whl/{0}/", "unknown placeholder"),
                                                ("whl/{label!r}/", "unknown placeholder"), ("whl/{label", "expected '}'"),
                                                ("whl/", "has no {label}"), ("whl/{label}/<x>/", "relative path")])
def test_index_layout(shipped_text: str, layout: str, phrase: str) -> None:
    old = expected.raw(shipped_text)["channels"]["index"]["layout"]
    problem = only_problem(edit(shipped_text, f'layout: "{old}"', f"layout: '{layout}'"), phrase)
    assert problem.location.key == "channels.index.layout"


@pytest.mark.parametrize("arg", ["{pyhton}", "{outdri}", "--flag={sourc}"])
def test_build_command_placeholders(shipped_text: str, arg: str) -> None:
    text = edit(shipped_text, '"{outdir}",', f'"{{outdir}}", "{arg}",')
    problem = only_problem(text, "unknown placeholder")
    assert problem.location.key.startswith("project.build.command[")


@pytest.mark.parametrize("arg", ["{0}", "{source", "}", "{python.__class__}", "${HOME}", "${{HOME}}"])
def test_braces_that_name_no_placeholder_stay_as_written(shipped_text: str, arg: str) -> None:
    """Only a known ``{name}`` is filled: a shell's ``${VAR}`` and any other brace reach the command as written."""
    matrix.loads(edit(shipped_text, '"{outdir}",', f'"{{outdir}}", "{arg}",'), "m.yaml")


def test_literal_braces_in_the_build_command_are_fine(shipped_text: str) -> None:
    matrix.loads(edit(shipped_text, '"{outdir}",', '"{outdir}", "{{x}}",'), "m.yaml")


def test_expand_env_names_the_key_and_checks_the_url() -> None:
    key = "m.yaml:3:4: accelerators.rocm.toolkit.index_url"
    with pytest.raises(EngineError, match="accelerators.rocm.toolkit.index_url: needs \\$\\{IDX\\}"):
        findings.expand_env("${IDX}", {}, key=key)
    with pytest.raises(EngineError, match="plain http"):
        findings.expand_env("${IDX}", {"IDX": "http://evil.example/"}, key=key)
    assert findings.expand_env("${IDX}simple/", {"IDX": "https://i.example/"}, key=key) == "https://i.example/simple/"
    assert findings.expand_env(None, {}, key=key) == ""


def test_toolkit_url_expands_a_variants_setting(shipped_text: str) -> None:
    m = matrix.loads(shipped_text)
    variant = next((v for v in m.variants if v.toolkit.index_url and "${" in v.toolkit.index_url), None)
    if variant is None:
        pytest.skip("no variant takes its index from the environment")
    with pytest.raises(EngineError) as err:
        variant.toolkit_url("index_url", {})
    assert f"{variant.location.key}.toolkit.index_url" in str(err.value) and str(variant.location) in str(err.value)


# the untrusted reader's JSON API (used for results files and scripts' answers)

def test_load_json_caps_and_locations(tmp_path: Path) -> None:
    assert untrusted.load_json('{"a": [1, 2.5]}') == {"a": [1, 2.5]}
    cases = [("[" * 100 + "]" * 100, "nests deeper", 1), ('{"a": 1,\n "a": 2}', "duplicate key", None),
             ('{"a": NaN}', "not a JSON number", None), ("[1e999]", "too large", None), ('{"a": 1,\n  "b": }', "Expecting value", 2)]
    for text, phrase, line in cases:
        with pytest.raises(InputError, match=phrase) as err:
            untrusted.load_json(text, max_depth=32, file="r.json")
        if line:
            assert err.value.problems[0].location.line == line
    path = tmp_path / "r.json"
    path.write_bytes(b'{"a": "' + b"x" * 100 + b'"}')
    with pytest.raises(InputError, match="larger than 50 bytes") as err:
        untrusted.load_json(path, limit=50)
    assert str(err.value.problems[0].location) == f"{path}:1:1"
    with pytest.raises(InputError, match="larger than 50 bytes") as err:
        untrusted.load_json("[" + " " * 60 + "]", limit=50, file="r.json")
    assert str(err.value).startswith("r.json:1:1: JSON document is larger than 50 bytes")
    path.write_bytes(b'\xef\xbb\xbf{}')
    with pytest.raises(InputError, match="byte-order mark"):
        untrusted.load_json(path)
