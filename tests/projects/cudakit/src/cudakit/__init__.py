"""A CUDA extension found by CMake the ordinary way (tests/projects/cudakit)."""

from cudakit._cudakit import compiled_runtime, cublas, runtime

__all__ = ["compiled_runtime", "cublas", "runtime"]
