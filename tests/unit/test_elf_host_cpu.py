"""Which recorded compiler options mean "built for the build host's CPU" (the strings as gcc and clang write them;
tests/integration/test_host_cpu.py compiles real ones)."""

from __future__ import annotations

import pytest

from builders.wheel.elf import is_native_record


@pytest.mark.parametrize(("record", "native"), [
    (b"GNU C17 12.2.0 -march=znver2 -mmmx -mavx2 --param=l1-cache-size=32 --param=l2-cache-size=512 -mtune=znver2 -g",
     True),
    (b"clang version 19.1.0 -march=native -O2", True),
    (b"GNU C17 12.2.0 -mtune=generic -march=x86-64 -g -O3 -fPIC", False),
    (b"GNU C17 12.2.0 -march=haswell -g -O2", False),  # chosen by hand: a declared CPU, not host detection
    (b"GNU C17 12.2.0 -march=x86-64 -mtune=znver2 --param=l1-cache-size=32 -g", False),  # -mtune=native
    (b"GNU C17 12.2.0 -march=x86-64-v3 --param=l1-cache-size=32 -g", False),
    (b"", False),
])
def test_host_cpu_records(record: bytes, native: bool) -> None:
    assert is_native_record(record) is native
