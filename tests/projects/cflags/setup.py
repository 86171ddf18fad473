"""A one-file C extension whose objects show their flags: ``flagged.optimized()`` is 1 when
compiled with optimisation (``__OPTIMIZE__``), and ``-g3`` leaves DWARF sections in the .so."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("flagged", ["flagged.c"])])
