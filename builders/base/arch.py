"""CPU architecture names: the one table of every spelling the pipeline meets.

``platform.machine()`` names one CPU differently per OS (``AMD64`` on Windows, ``arm64`` on
macOS), and the matrix spells an arch as that OS does; ELF files, auditwheel and :class:`Host`
know one name per CPU (:func:`canonical_arch`); a platform's name and its wheel tag each have
their own spelling (:data:`ARCHES`); setup-python's tool cache has another (:data:`TOOL_CACHE`).
"""

from __future__ import annotations

# Any spelling, lower-cased -> the canonical name (auditwheel's and ELF's); a name not listed is its own.
ALIASES = {"amd64": "x86_64", "arm64": "aarch64", "armv8l": "armv7l", "x86": "i686"}

# os -> the matrix's arch (as ``platform.machine()`` names it there) -> (arch in the platform's
# name, arch in the wheel's platform tag)
ARCHES: dict[str, dict[str, tuple[str, str]]] = {
    "linux": {"x86_64": ("x86_64", "x86_64"), "aarch64": ("aarch64", "aarch64")},
    "windows": {"AMD64": ("x86_64", "amd64"), "arm64": ("arm64", "arm64")},
    "macos": {"arm64": ("arm64", "arm64"), "x86_64": ("x86_64", "x86_64")},
}

# canonical arch -> the folder actions/setup-python's tool cache names it
# (%RUNNER_TOOL_CACHE%\Python\3.12.10\x64\python.exe); a name not listed is its own.
TOOL_CACHE = {"x86_64": "x64", "aarch64": "arm64"}


def canonical_arch(arch: str) -> str:
    """``AMD64`` -> ``x86_64``, ``arm64`` -> ``aarch64``: the one name of a CPU, whoever spelled it."""
    return ALIASES.get(arch.lower(), arch.lower())


def tool_cache_arch(arch: str) -> str:
    """The tool cache's folder for a CPU of any spelling: ``AMD64`` -> ``x64``."""
    canonical = canonical_arch(arch)
    return TOOL_CACHE.get(canonical, canonical)
