"""builders: one declarative matrix.yaml to every verified wheel of a framework release.

Importing the package imports nothing else: the accelerator families are imported by their
registry the first time one is asked for (:mod:`builders.families.registry`), the engines by
theirs (:mod:`builders.engines`).
"""

__version__ = "0.1.0"
