"""A one-function C extension for the stable ABI from CPython 3.11: ``stableshape.abi3.so`` in a
``cp311-abi3`` wheel that every CPython from 3.11 on (GIL builds) imports.

The matrix's ``build.variables`` (as a test writes them) make the two mistakes verify must refuse while the
wheel keeps its ``abi3`` tag: ``STABLESHAPE_FULL_API=1`` builds for the building Python only
(``stableshape.cpython-311-x86_64-linux-gnu.so``, the full API); ``named-abi3`` names the file
``stableshape.abi3.so`` but compiles it with the full API (symbols outside the stable ABI).
"""

import os

from setuptools import Extension, setup

MODE = os.environ.get("STABLESHAPE_FULL_API", "0")
limited = [("Py_LIMITED_API", "0x030B0000")] if MODE == "0" else []
setup(ext_modules=[Extension("stableshape", ["stableshape.c"], define_macros=limited, py_limited_api=MODE != "1")],
      options={"bdist_wheel": {"py_limited_api": "cp311"}})
