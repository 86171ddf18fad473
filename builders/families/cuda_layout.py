"""The pinned CUDA toolkit laid out as CMake's ``find_package(CUDAToolkit)`` expects a toolkit.

The toolkit wheels ship only versioned sonames (``lib/libcudart.so.13``, ``libcublas.so.13``)
and no driver library, so CMake finds nvcc but not the libraries (``Could NOT find CUDAToolkit
(missing: CUDA_CUDART)``), and ``CUDA::cuda_driver`` has nothing to link against. A fresh
install gets, before it is published (:func:`builders.families.provision.pip_prefix`'s finish):

- ``lib/libX.so -> libX.so.N`` for each versioned library, as a toolkit's development files have;
- ``lib/stubs/libcuda.so``, the driver stub a CUDA installer ships: a shared library with soname
  ``libcuda.so.1`` that defines every ``CUresult cu*(...)`` function the toolkit's own ``cuda.h``
  declares, made with the host's C compiler. It is only ever linked against: nothing searches
  ``lib/stubs`` at run time, repair excludes the driver's libraries (``--exclude libcuda.so*``)
  and verify refuses a wheel that bundles one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from builders.base.errors import ToolchainError
from builders.base.process import LogLike, ProcessError, run

VERSIONED = re.compile(r"^(lib[\w.+-]+?\.so)((?:\.\d+)+)$")
DRIVER_FUNCTION = re.compile(r"\bCUresult\s+(cu[A-Za-z0-9_]+)\s*\(")
STUB_SONAME = "libcuda.so.1"


def lay_out(root: Path, env: Mapping[str, str], log: LogLike) -> None:
    """``root`` (the toolkit's ``nvidia/cu13``) as ``find_package(CUDAToolkit)`` finds it: dev links and the stub."""
    dev_links(root / "lib")
    driver_stub(root, env, log)


def dev_links(lib: Path) -> list[str]:
    """``libX.so -> libX.so.N`` beside every versioned library that has no unversioned name (the shortest
    version wins: ``libcudart.so.13`` over ``libcudart.so.13.2.86``); the names made."""
    made: dict[str, str] = {}
    for path in sorted(lib.iterdir(), key=lambda p: (len(p.name), p.name)) if lib.is_dir() else ():
        match = VERSIONED.match(path.name)
        if match and match.group(1) not in made and not (lib / match.group(1)).exists():
            made[match.group(1)] = path.name
    for link, target in made.items():
        (lib / link).symlink_to(target)
    return sorted(made)


def driver_functions(preprocessed: str) -> list[str]:
    """The driver API's function names in preprocessed ``cuda.h`` (its ``_v2`` names where it maps them)."""
    return sorted(set(DRIVER_FUNCTION.findall(preprocessed)))


def stub_source(functions: list[str]) -> str:
    """A C file defining each function: only its symbol matters, since the real driver is what loads."""
    return "".join(f"int {name}(void) {{ return 999; }}\n" for name in functions)  # 999: CUDA_ERROR_UNKNOWN


def driver_stub(root: Path, env: Mapping[str, str], log: LogLike) -> Path:
    """``lib/stubs/libcuda.so`` made from the toolkit's ``include/cuda.h`` with the host's C compiler."""
    header, stubs = root / "include" / "cuda.h", root / "lib" / "stubs"
    if not header.is_file():
        raise ToolchainError(f"{root} has no include/cuda.h to make the driver stub from: add the cudart component "
                             "to the toolkit's requirements (cuda-toolkit[cudart,...])")
    cc = env.get("CC") or "cc"
    stubs.mkdir(parents=True, exist_ok=True)
    try:
        run([cc, "-E", "-P", "-o", str(stubs / "cuda.i"), str(header)], env=env, log=log, timeout=120)
        (stubs / "libcuda.c").write_text(stub_source(driver_functions((stubs / "cuda.i").read_text())))
        run([cc, "-shared", "-fPIC", "-o", str(stubs / "libcuda.so"), f"-Wl,-soname,{STUB_SONAME}",
             str(stubs / "libcuda.c")], env=env, log=log, timeout=300)
    except ProcessError as exc:
        raise ToolchainError(f"the driver stub for {root} could not be made with {cc}: {exc.tail[-300:]}") from exc
    for scratch in ("cuda.i", "libcuda.c"):
        (stubs / scratch).unlink()
    return stubs / "libcuda.so"
