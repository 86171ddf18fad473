"""A one-file C extension whose objects show their flags: ``flagged.optimized()`` is 1 when
compiled with optimisation (``__OPTIMIZE__``), and ``-g3`` leaves DWARF sections in the .so.

``flagged.variant()`` is the variant it was compiled for: the build's ``FLAGGED_ACCELERATOR`` and
``FLAGGED_ACCELERATOR_VERSION`` (the matrix's ``build.env``) become ``-D`` flags. A CUDA build
also compiles against the toolkit's runtime API and links its ``libcudart.so.<major>``
(``FLAGGED_TOOLKIT_ROOT``), found at run time through ``FLAGGED_RPATH``, as a project that calls
the CUDA runtime from C does; ``flagged.runtime()`` is then the runtime's version.
"""

import os
from pathlib import Path

from setuptools import Extension, setup

VARIANT = ("FLAGGED_ACCELERATOR", "FLAGGED_ACCELERATOR_VERSION")


def cuda(env):
    """The CUDA build's flags: the runtime API's headers, its shared library, the rpath that finds it installed."""
    root = Path(env["FLAGGED_TOOLKIT_ROOT"])
    (cudart,) = sorted((root / "lib").glob("libcudart.so.*"))
    return {"define_macros": [("FLAGGED_CUDA", "1")], "include_dirs": [str(root / "include")],
            "extra_link_args": [str(cudart)], "runtime_library_dirs": env["FLAGGED_RPATH"].split(";")}


def extension(env):
    """flagged, with the variant's -D flags (none in a build by hand) and a CUDA build's own flags."""
    defines = [(name, f'"{env[name]}"') for name in VARIANT if name in env]
    flags = cuda(env) if env.get("FLAGGED_ACCELERATOR") == "cuda" else {}
    defines += flags.pop("define_macros", [])
    return Extension("flagged", ["flagged.c"], define_macros=defines, **flags)


setup(ext_modules=[extension(os.environ)])
