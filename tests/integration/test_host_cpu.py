"""verify flags code compiled for the build host's CPU only (-march=native): real gcc builds of one tiny .so with
and without it. The check reads the compiler's own record of its options (DW_AT_producer, kept with -g): gcc
expands -march=native into this host's CPU name plus its cache sizes, which no hand-written flag set carries.
Where gcc cannot name this host's CPU, -march=native means the baseline and the test is skipped with that reason.
"""

from __future__ import annotations

import platform
import subprocess
from pathlib import Path

import pytest

from builders.families import loader as matrix
from builders.matrix.model import OS
from builders.matrix.targets import Target, expand
from builders.wheel.archive import Wheel
from builders.wheel.verify import Contents, Expectation, check_libraries
from builders.wheel.writer import write_wheel
from tests.helpers import require_tool

pytestmark = pytest.mark.slow

SOURCE = "void scale(float *restrict a, const float *restrict b, int n) { for (int i = 0; i < n; i++) a[i] = a[i] * 2.0f + b[i]; }\n"


@pytest.fixture(scope="module")
def target(shipped_text: str) -> Target:
    if platform.machine() != "x86_64":
        pytest.skip("the shipped matrix's cpu target is built for x86_64 here")
    targets, _excluded = expand(matrix.loads(shipped_text))
    return next(t for t in targets if t.variant.accelerator.value == "cpu" and t.platform.os is OS.LINUX
                and t.platform.arch == "x86_64")


def native_march() -> str:
    """What gcc makes of -march=native on this host (``znver2``); the baseline where it cannot tell."""
    out = subprocess.run([require_tool("gcc"), "-march=native", "-Q", "--help=target"], capture_output=True,
                         text=True, check=True).stdout
    return next(line.split()[-1] for line in out.splitlines() if line.strip().startswith("-march="))


def compiled(tmp_path: Path, name: str, *flags: str) -> bytes:
    (tmp_path / "v.c").write_text(SOURCE)
    out = tmp_path / f"{name}.so"
    subprocess.run([require_tool("gcc"), "-O2", "-shared", "-fPIC", *flags, "-o", str(out), "v.c"], cwd=tmp_path,
                   check=True)
    return out.read_bytes()


def findings(tmp_path: Path, target: Target, members: dict[str, bytes]) -> set[tuple[str, str]]:
    dist_info = f"{target.project.import_name}-1.0.dist-info"
    files = {**members, f"{dist_info}/METADATA": b"Metadata-Version: 2.1\nName: x\nVersion: 1.0\n"}
    path = tmp_path / "x-1.0-py3-none-linux_x86_64.whl"
    write_wheel(path, files, dist_info, dict.fromkeys(files, 0o100755 << 16), 315532800)
    with Wheel(path).open() as reader:
        found = check_libraries(Contents(reader), Expectation(target=target, dropped=()))
        return {(f.code, f.file) for f in found if f.code == "host-cpu-only"}


def test_march_native_is_flagged_and_portable_builds_are_not(tmp_path: Path, target: Target) -> None:
    host = native_march()
    if host in ("x86-64", "native"):
        pytest.skip(f"gcc names no CPU for this host (-march=native is {host}): the build cannot be told apart")
    pkg = target.project.import_name
    members = {
        f"{pkg}/native.so": compiled(tmp_path, "native", "-g", "-march=native"),
        f"{pkg}/plain.so": compiled(tmp_path, "plain", "-g"),
        f"{pkg}/tuned.so": compiled(tmp_path, "tuned", "-g", "-mtune=native"),  # tuning only: runs anywhere
        f"{pkg}/v2.so": compiled(tmp_path, "v2", "-g", "-march=x86-64-v2"),  # a declared level, not this host
        f"{pkg}/bare.so": compiled(tmp_path, "bare", "-march=native"),  # no -g: no record, the check cannot tell
    }
    assert findings(tmp_path, target, members) == {("host-cpu-only", f"{pkg}/native.so")}
