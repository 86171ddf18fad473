"""Host capability is a pure function of host facts: each host is described in one line."""

from __future__ import annotations

import pytest

from builders import matrix
from builders.host import Host, unbuildable
from builders.model import OS
from builders.targets import Selection, select

LINUX = Host(os=OS.LINUX, arch="x86_64", interpreters=(("cp312", "/py312"),), cxx20="/usr/bin/c++")


@pytest.fixture(scope="module")
def m(shipped_text: str):
    return matrix.loads(shipped_text)


def one(m, tid: str):
    (t,) = select(m, Selection(targets=(tid,)))
    return t


def test_buildable(m) -> None:
    assert unbuildable(one(m, "cpu-cp312-linux-x86_64"), LINUX) is None
    assert unbuildable(one(m, "cu132-cp312-linux-x86_64"), LINUX) is None


@pytest.mark.parametrize(
    ("tid", "host", "reason"),
    [
        ("cpu-cp314t-linux-x86_64", LINUX, "no free-threaded CPython 3.14t interpreter"),
        ("cpu-cp315-linux-x86_64", LINUX, "no CPython 3.15 interpreter"),
        ("cpu-cp312-linux-aarch64", LINUX, "needs a linux-aarch64 host"),
        ("cpu-cp312-macos-arm64", LINUX, "needs a macos-arm64 host"),
        ("rocm7.14-cp312-linux-x86_64", LINUX, "TheRock ROCm 7.14 toolkit is not installed"),
        ("xpu-cp312-linux-x86_64", LINUX, "icpx"),
        ("cpu-cp312-linux-x86_64", Host(os=OS.LINUX, arch="x86_64", interpreters=(("cp312", "/p"),),
                                        cxx20_problem="g++ 9 cannot compile C++20"), "no C++20 compiler"),
    ],
)
def test_reasons(m, tid: str, host: Host, reason: str) -> None:
    assert reason in (unbuildable(one(m, tid), host) or "")


def test_rocm_builds_where_matching_hipcc_exists(m) -> None:
    host = Host(os=OS.LINUX, arch="x86_64", interpreters=(("cp312", "/p"),), hipcc_version="7.14.0")
    assert unbuildable(one(m, "rocm7.14-cp312-linux-x86_64"), host) is None
    assert "found hipcc 7.14.0" in unbuildable(one(m, "rocm10.0-cp312-linux-x86_64"), host)


def test_container_engine_reason(m) -> None:
    assert "no working container engine" in unbuildable(one(m, "cpu-cp314-linux-x86_64"), LINUX, "container")
    with_podman = Host(os=OS.LINUX, arch="x86_64", container_engines=("podman",))
    assert unbuildable(one(m, "cpu-cp314-linux-x86_64"), with_podman, "container") is None
