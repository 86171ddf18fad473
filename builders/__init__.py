"""builders: one declarative matrix.yaml to every verified wheel of a framework release.

Importing the package imports nothing else, and importing any module registers nothing: the
accelerator families are a tuple of modules (:mod:`builders.families.registry`) handed to the
matrix loader (:mod:`builders.families.loader`); the engines are found by name (:mod:`builders.engines`).
"""

__version__ = "0.1.0"
