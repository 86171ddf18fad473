"""Find CPython interpreters on this host: PATH, pyenv and uv-managed installs; on Windows, the
runner's tool cache (actions/setup-python), the ``py`` launcher and PATH.

Each candidate is asked what it is (version, free-threading and its real executable) rather
than trusted by name; a pyenv shim for a version that is not installed, or a ``python.exe`` of
another version, simply fails the question. The candidates are a function of the host's OS,
arch and environment, given as parameters, so a test describes a Windows host on Linux.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path, PureWindowsPath

from builders.base.arch import tool_cache_arch
from builders.base.process import Call, HostRunner, ProcessError
from builders.matrix.model import OS, PythonVersion

_PROBE = (
    "import json, sys, sysconfig;"
    "print(json.dumps([sys.implementation.name, *sys.version_info[:2], bool(sysconfig.get_config_var('Py_GIL_DISABLED')),"
    " sys.executable]))"
)
PROBE_TIMEOUT = 30.0
Candidate = tuple[str, ...]  # the argv prefix that runs an interpreter: a path, or ("py", "-3.12")


def search_dirs(env: Mapping[str, str]) -> list[Path]:
    """Where to look, in order: pyenv and uv installs first (real binaries), then PATH."""
    home = Path(env.get("HOME", "~")).expanduser()
    pyenv_root = Path(env.get("PYENV_ROOT", home / ".pyenv"))
    uv_root = Path(env.get("UV_PYTHON_INSTALL_DIR", home / ".local/share/uv/python"))
    dirs = sorted(pyenv_root.glob("versions/*/bin"), reverse=True)
    dirs += sorted(uv_root.glob("cpython-*/bin"), reverse=True)
    dirs += [Path(p) for p in env.get("PATH", "").split(os.pathsep) if p]
    return dirs


def candidates(python: PythonVersion, env: Mapping[str, str], os_: OS = OS.LINUX, arch: str = "x86_64") -> list[Candidate]:
    """Every command that may run ``python`` on a host of ``os_`` and ``arch``, best first, each once; the
    files among them may not exist (:func:`present` says), and each is asked what it is before it is used."""
    if os_ is OS.WINDOWS:
        found = windows_candidates(python, env, arch)
    else:
        name = f"python{python.release}" + ("t" if python.free_threaded else "")
        found = [(str(d / name),) for d in search_dirs(env)]
    return list(dict.fromkeys(found))


def windows_candidates(python: PythonVersion, env: Mapping[str, str], arch: str) -> list[Candidate]:
    """On Windows: setup-python's tool cache (newest patch release first), the ``py`` launcher (``py -3.12``,
    ``py -3.14t``), then PATH: ``python3.14t.exe`` for a free-threaded build, else ``python3.12.exe`` and
    ``python.exe``, whatever version that is (the probe tells)."""
    ft = python.free_threaded
    exe = f"python{python.release}t.exe" if ft else "python.exe"
    # setup-python's tool cache names an install's folder for its CPU (and ``-freethreaded`` for a ``t`` build):
    # %RUNNER_TOOL_CACHE%\Python\3.12.10\x64\python.exe, ...\3.14.2\x64-freethreaded\python3.14t.exe.
    folder = tool_cache_arch(arch) + ("-freethreaded" if ft else "")
    cache = env.get("RUNNER_TOOL_CACHE")
    installs = Path(cache).glob(f"Python/{python.release}.*/{folder}/{exe}") if cache else ()
    names = [f"python{python.release}t.exe"] if ft else [f"python{python.release}.exe", "python.exe"]
    path = [PureWindowsPath(p) for p in env.get("PATH", "").split(";") if p]
    return [*((str(p),) for p in sorted(installs, key=_patch_release, reverse=True)), ("py", f"-{python}"),
            *((str(d / name),) for d in path for name in names)]


def _patch_release(exe: Path) -> tuple[int, ...]:
    """``3.12.10`` after ``3.12.9``: the tool cache folder's version, compared as numbers."""
    return tuple(int(part) if part.isdigit() else -1 for part in exe.parent.parent.name.split("."))


def present(candidate: Candidate, env: Mapping[str, str]) -> bool:
    """A path candidate that is an executable file, or a command (the ``py`` launcher) found on PATH."""
    if len(candidate) > 1:
        return shutil.which(candidate[0], path=env.get("PATH")) is not None
    exe = Path(candidate[0])
    return exe.is_file() and os.access(exe, os.X_OK)


def identify(exe: str | Candidate, call: Call) -> PythonVersion | None:
    """What ``exe`` really is (asked through ``call``), or None if it is not a working CPython."""
    found = probe(exe, call)
    return found[0] if found else None


def probe_argv(exe: str | Candidate) -> list[str]:
    """The command that asks ``exe`` what it is (a build plan's check shows it)."""
    return [*([exe] if isinstance(exe, str) else exe), "-c", _PROBE]


def probe(exe: str | Candidate, call: Call) -> tuple[PythonVersion, str] | None:
    """What ``exe`` really is and the interpreter it runs (``sys.executable``: what ``py -3.12`` started),
    or None if it is not a working CPython."""
    argv = probe_argv(exe)
    try:
        out = call(argv, timeout=PROBE_TIMEOUT, separate_stderr=True).stdout
        impl, major, minor, ft, *rest = json.loads(out.strip().splitlines()[-1])
    except (ProcessError, ValueError, IndexError, TypeError):
        return None
    if impl != "cpython":
        return None
    return PythonVersion(major=major, minor=minor, free_threaded=ft), str(rest[0]) if rest else argv[0]


def discover(wanted: Iterable[PythonVersion], env: Mapping[str, str], os_: OS = OS.LINUX,
             arch: str = "x86_64") -> dict[str, Path]:
    """Map each wanted ABI (``cp312``) to a working interpreter, when one exists (asked in parallel)."""
    pythons = list(wanted)
    with ThreadPoolExecutor(max_workers=max(min(len(pythons), 4), 1)) as pool:
        found = pool.map(lambda python: _first_working(python, candidates(python, env, os_, arch), env), pythons)
        return {python.abi: exe for python, exe in zip(pythons, found) if exe is not None}


def _first_working(python: PythonVersion, found: Iterable[Candidate], env: Mapping[str, str]) -> Path | None:
    """The first candidate that is ``python``: a file as found (a pyenv version, not its shim's target), a
    launcher as the interpreter it started."""
    for candidate in found:
        if not present(candidate, env):
            continue
        answer = probe(candidate, HostRunner(env))
        if answer is not None and answer[0] == python:
            return Path(candidate[0] if len(candidate) == 1 else answer[1])
    return None


def image_interpreter(python: PythonVersion) -> str:
    """The manylinux layout; builders' own images make it too (resources/containers/install-build-deps.sh)."""
    return f"/opt/python/{python.interpreter}-{python.abi}/bin/python"
