"""builders: one declarative matrix.yaml to every verified wheel of a framework release.

The front door assembles the accelerator families (:mod:`builders.families`) before anything
else runs, so every module, the matrix loader included, sees every family declared
(:mod:`builders.matrix.family` explains why spec learns them this way).
"""

__version__ = "0.1.0"

import builders.families  # noqa: F401  (declares and registers every family module)
