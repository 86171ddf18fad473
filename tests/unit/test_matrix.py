"""Loading and validation of matrix.yaml: every error class, with file:line and key path."""

from __future__ import annotations

import pytest
from packaging.version import Version

from builders import matrix
from tests import expected
from builders.errors import DroppedError, MatrixError
from builders.model import Accelerator, PythonVersion


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
    assert cu134.accelerator is Accelerator.CUDA and cu134.version == "13.4"
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
        ('rpath: ["$ORIGIN/../nvidia/cu13/lib"]', 'rpath: ["/usr/local/cuda/lib64"]', "not relative to \\$ORIGIN"),
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
