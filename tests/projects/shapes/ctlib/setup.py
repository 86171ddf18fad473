"""A library loaded with ctypes (no Python API), shipped as a ``py3-none-<platform>`` wheel: one wheel for
every Python, as upstream GPU libraries that load their kernels with ctypes ship theirs."""

import os

from setuptools import Extension, setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build_ext import build_ext


class plain_library(build_ext):
    """``ctshape/libctshape.so``: a plain shared library, not a module CPython imports."""

    def get_ext_filename(self, fullname):
        *package, name = fullname.split(".")
        return os.path.join(*package, f"lib{name}.so")


class any_python(bdist_wheel):
    """Platform-specific, Python-independent: ``py3-none-linux_x86_64``."""

    def finalize_options(self):
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self):
        return "py3", "none", super().get_tag()[2]


VARIANT = os.environ.get("CTSHAPE_ACCELERATOR", "none")  # the matrix's build.env
setup(packages=["ctshape"],
      ext_modules=[Extension("ctshape.ctshape", ["ctshape.c"], define_macros=[("CTSHAPE_VARIANT", f'"{VARIANT}"')])],
      cmdclass={"build_ext": plain_library, "bdist_wheel": any_python})
