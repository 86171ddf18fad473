"""Host capability is a pure function of host facts: each host is described in one line."""

from __future__ import annotations

import pytest

from builders.base.arch import canonical_arch
from builders.matrix.model import OS, PythonVersion
from builders.matrix.targets import Selection, select
from builders.pipeline import interpreters
from builders.pipeline.host import Host, unbuildable
from tests.helpers import one

LINUX = Host(os=OS.LINUX, arch="x86_64", interpreters=(("cp312", "/py312"),), cxx20="/usr/bin/c++")


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
    host = Host(os=OS.LINUX, arch="x86_64", interpreters=(("cp312", "/p"),), tools=(("hipcc", "/opt/rocm/bin/hipcc", "7.14.0"),))
    assert unbuildable(one(m, "rocm7.14-cp312-linux-x86_64"), host) is None
    assert "found hipcc 7.14.0" in unbuildable(one(m, "rocm10.0-cp312-linux-x86_64"), host)


def test_container_engine_reason(m) -> None:
    from builders.engines.container import unbuildable_in_image

    assert "no working container engine" in unbuildable_in_image(one(m, "cpu-cp314-linux-x86_64"), LINUX)
    with_podman = Host(os=OS.LINUX, arch="x86_64", container_engines=("podman",))
    assert unbuildable_in_image(one(m, "cpu-cp314-linux-x86_64"), with_podman) is None


# -- interpreter discovery: the candidates are a function of the host's OS, arch and environment --------

def test_linux_candidates_are_pyenv_uv_then_path(tmp_path) -> None:
    (tmp_path / "pyenv/versions/3.12.9/bin").mkdir(parents=True)
    (tmp_path / "uv/cpython-3.12.9-linux-x86_64-gnu/bin").mkdir(parents=True)
    env = {"HOME": str(tmp_path), "PYENV_ROOT": str(tmp_path / "pyenv"), "UV_PYTHON_INSTALL_DIR": str(tmp_path / "uv"),
           "PATH": "/usr/local/bin:/usr/bin", "RUNNER_TOOL_CACHE": str(tmp_path / "toolcache")}
    assert interpreters.candidates(PythonVersion.parse("3.12"), env, OS.LINUX) == [
        (str(tmp_path / "pyenv/versions/3.12.9/bin/python3.12"),),
        (str(tmp_path / "uv/cpython-3.12.9-linux-x86_64-gnu/bin/python3.12"),),
        ("/usr/local/bin/python3.12",), ("/usr/bin/python3.12",)]
    assert interpreters.candidates(PythonVersion.parse("3.14t"), env, OS.LINUX)[-1] == ("/usr/bin/python3.14t",)


def windows_tool_cache(root, *installs: str) -> str:
    """setup-python's layout: Python/<version>/<arch folder>/<exe>, as empty files."""
    for install in installs:
        (root / install).parent.mkdir(parents=True, exist_ok=True)
        (root / install).write_bytes(b"")
    return str(root)


def test_windows_candidates_are_the_tool_cache_the_py_launcher_then_path(tmp_path) -> None:
    cache = windows_tool_cache(tmp_path, "Python/3.12.9/x64/python.exe", "Python/3.12.10/x64/python.exe",
                               "Python/3.12.10/x86/python.exe", "Python/3.14.2/x64/python.exe",
                               "Python/3.14.2/x64-freethreaded/python3.14t.exe")
    env = {"RUNNER_TOOL_CACHE": cache, "PATH": r"C:\Python312;C:\Windows\system32"}
    assert interpreters.candidates(PythonVersion.parse("3.12"), env, OS.WINDOWS, "x86_64") == [
        (str(tmp_path / "Python/3.12.10/x64/python.exe"),), (str(tmp_path / "Python/3.12.9/x64/python.exe"),),
        ("py", "-3.12"),
        (r"C:\Python312\python3.12.exe",), (r"C:\Python312\python.exe",),
        (r"C:\Windows\system32\python3.12.exe",), (r"C:\Windows\system32\python.exe",)]
    assert interpreters.candidates(PythonVersion.parse("3.14t"), env, OS.WINDOWS, "x86_64") == [
        (str(tmp_path / "Python/3.14.2/x64-freethreaded/python3.14t.exe"),), ("py", "-3.14t"),
        (r"C:\Python312\python3.14t.exe",), (r"C:\Windows\system32\python3.14t.exe",)]
    assert interpreters.candidates(PythonVersion.parse("3.12"), {}, OS.WINDOWS) == [("py", "-3.12")]


def test_a_launcher_is_recorded_as_the_interpreter_it_started() -> None:
    """The probe runs through the launcher's argv and answers with its real executable, which the host
    records. No ``py`` launcher runs here: the call answers as one on a Windows runner does."""
    import json

    from builders.base.process import Completed

    answer = json.dumps(["cpython", 3, 12, False, r"C:\hostedtoolcache\windows\Python\3.12.10\x64\python.exe"])
    seen: list[list[str]] = []

    def call(argv, **kwargs) -> Completed:
        seen.append(list(argv))
        return Completed(tuple(argv), 0, answer + "\n", 0.0)

    found = interpreters.probe(("py", "-3.12"), call)
    assert found == (PythonVersion.parse("3.12"), r"C:\hostedtoolcache\windows\Python\3.12.10\x64\python.exe")
    assert seen[0][:3] == ["py", "-3.12", "-c"]


def test_a_windows_host_says_where_it_searched(m) -> None:
    target = next(t for t in select(m, Selection(select=("cpu-*-windows-*",))))
    windows = Host(os=OS.WINDOWS, arch=canonical_arch(target.platform.arch), cxx20="cl.exe")  # the target's own arch
    assert "the runner's tool cache, the py launcher and PATH" in (unbuildable(target, windows) or "")
