"""Find CPython interpreters on this host: PATH, pyenv and uv-managed installs.

Each candidate is asked what it is (version and free-threading) rather than trusted by name;
a pyenv shim for a version that is not installed simply fails the question.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .model import PythonVersion
from .process import Call, HostRunner, ProcessError

_PROBE = (
    "import json, sys, sysconfig;"
    "print(json.dumps([sys.implementation.name, *sys.version_info[:2], bool(sysconfig.get_config_var('Py_GIL_DISABLED'))]))"
)


def search_dirs(env: Mapping[str, str]) -> list[Path]:
    """Where to look, in order: pyenv and uv installs first (real binaries), then PATH."""
    home = Path(env.get("HOME", "~")).expanduser()
    pyenv_root = Path(env.get("PYENV_ROOT", home / ".pyenv"))
    uv_root = Path(env.get("UV_PYTHON_INSTALL_DIR", home / ".local/share/uv/python"))
    dirs = sorted(pyenv_root.glob("versions/*/bin"), reverse=True)
    dirs += sorted(uv_root.glob("cpython-*/bin"), reverse=True)
    dirs += [Path(p) for p in env.get("PATH", "").split(os.pathsep) if p]
    return dirs


def candidates(python: PythonVersion, dirs: Iterable[Path]) -> Iterator[Path]:
    name = f"python{python.release}" + ("t" if python.free_threaded else "")
    seen: set[Path] = set()
    for d in dirs:
        exe = d / name
        if exe.is_file() and os.access(exe, os.X_OK) and exe not in seen:
            seen.add(exe)
            yield exe


def identify(exe: str, call: Call) -> PythonVersion | None:
    """What ``exe`` really is (asked through ``call``), or None if it is not a working CPython."""
    try:
        out = call([exe, "-c", _PROBE], timeout=30, separate_stderr=True).stdout
        impl, major, minor, ft = json.loads(out.strip().splitlines()[-1])
    except (ProcessError, ValueError, IndexError):
        return None
    if impl != "cpython":
        return None
    return PythonVersion(major=major, minor=minor, free_threaded=ft)


def discover(wanted: Iterable[PythonVersion], env: Mapping[str, str]) -> dict[str, Path]:
    """Map each wanted ABI (``cp312``) to a working interpreter, when one exists (asked in parallel)."""
    dirs = search_dirs(env)
    pythons = list(wanted)
    with ThreadPoolExecutor(max_workers=max(min(len(pythons), 4), 1)) as pool:
        found = pool.map(lambda python: _first_working(python, dirs, env), pythons)
        return {python.abi: exe for python, exe in zip(pythons, found) if exe is not None}


def _first_working(python: PythonVersion, dirs: Iterable[Path], env: Mapping[str, str]) -> Path | None:
    return next((exe for exe in candidates(python, dirs) if identify(str(exe), HostRunner(env)) == python), None)


def image_interpreter(python: PythonVersion) -> str:
    """Where build images keep an interpreter: the manylinux layout, ``/opt/python/cp314-cp314t/bin/python``.

    manylinux images ship it; builders' images on a distribution base make it (venvs of the
    distribution's CPythons, see builders/resources/containers/install-build-deps.sh).
    """
    return f"/opt/python/{python.interpreter}-{python.abi}/bin/python"
