"""builders: one declarative matrix.yaml to every verified wheel of a framework release."""

__version__ = "0.1.0"
