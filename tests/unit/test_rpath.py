"""Which RPATHs an interpreter's link flags add (the ones the pipeline removes)."""

from __future__ import annotations

import pytest

from builders.wheel.rpath import rpaths_in_flags

PYENV = ("gcc -shared -L/root/.pyenv/versions/3.12.1/lib -Wl,-rpath,/root/.pyenv/versions/3.12.1/lib "
         "-L/root/.pyenv/versions/3.12.1/lib")


@pytest.mark.parametrize(("flags", "expected"), [
    (PYENV, {"/root/.pyenv/versions/3.12.1/lib"}),
    ("-Wl,-rpath=/opt/py/lib -Wl,-R,/other", {"/opt/py/lib", "/other"}),
    ("-Wl,-rpath,/a:/b -Wl,-rpath,$ORIGIN/lib", {"/a", "/b", "$ORIGIN/lib"}),
    ("gcc -shared -Wl,-z,relro -L/usr/lib", set()),
    ("", set()),
])
def test_rpaths_in_link_flags(flags: str, expected: set[str]) -> None:
    assert rpaths_in_flags(flags) == expected
