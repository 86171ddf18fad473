"""The compiler cache (ccache) for C, C++ and the families' device languages (their ``cmake_languages``):
the variables that route compilers through it, and the hit rate of one target's compilations, read
from its own stats log.

One cache folder per toolchain or image (same compilers, same cache); CMake (>= 3.17) takes
the launchers from ``CMAKE_<LANG>_COMPILER_LAUNCHER``. Every target writes its own stats log
(``CCACHE_STATSLOG``), so a target's hit rate is its own even when targets build in parallel
against one cache.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from builders.families import families

STATS_LOG = "ccache-stats.log"
# The one note ``build`` prints when host builds would go through ccache and it is not installed.
MISSING = ("ccache is not installed: this host's C, C++ and CUDA compiles are not cached, so every rebuild "
           "compiles everything again. Install it (Debian/Ubuntu: apt-get install ccache; Fedora: dnf install "
           "ccache; macOS: brew install ccache); the next build goes through it, and results.json records each "
           "target's compiler_cache hits")
_HITS = frozenset({"direct_cache_hit", "preprocessed_cache_hit", "remote_storage_hit"})


def launchers() -> tuple[str, ...]:
    """``CMAKE_<LANG>_COMPILER_LAUNCHER`` for C, C++ and every family's own CMake languages."""
    languages = dict.fromkeys(["C", "CXX", *(lang for family in families() for lang in family.cmake_languages)])
    return tuple(f"CMAKE_{lang}_COMPILER_LAUNCHER" for lang in languages)


def cache_env(cache_dir: str, basedir: str, stats_log: str) -> dict[str, str]:
    """Paths below ``basedir`` made relative, the working directory unhashed: another target's scratch folder hits."""
    env = dict.fromkeys(launchers(), "ccache")
    return env | {"CCACHE_DIR": cache_dir, "CCACHE_BASEDIR": basedir, "CCACHE_NOHASHDIR": "1",
                  "CCACHE_STATSLOG": stats_log}


@dataclass(frozen=True)
class CacheStats:
    """The outcome of one target's compilations: cache hits, misses, and calls ccache could not cache."""

    hits: int = 0
    misses: int = 0
    uncacheable: int = 0
    # Why ccache could not cache the other calls, by ccache's counter name (``unsupported_compiler_option``
    # on every compile says the build's flags defeat the cache: C++20 module scanning, for one).
    reasons: tuple[tuple[str, int], ...] = ()
    missed: tuple[str, ...] = ()  # the sources that missed, for the log (a miss on a rebuild has a cause)

    @property
    def hit_rate(self) -> float | None:
        looked_up = self.hits + self.misses
        return round(self.hits / looked_up, 3) if looked_up else None

    def describe(self) -> str:
        """One line for the target's log: hits, misses, and why the rest could not be cached."""
        why = ", ".join(f"{name} {count}" for name, count in sorted(self.reasons, key=lambda r: -r[1]))
        line = f"{self.hits} hits, {self.misses} misses, {self.uncacheable} uncacheable" + (f" ({why})" if why else "")
        return line + (f"; missed: {', '.join(self.missed[:5])}{' ...' if len(self.missed) > 5 else ''}"
                       if self.missed else "")

    def to_json(self) -> dict[str, Any]:
        return {"hits": self.hits, "misses": self.misses, "uncacheable": self.uncacheable, "hit_rate": self.hit_rate,
                "uncacheable_reasons": dict(self.reasons)}


def parse_stats_log(text: str) -> CacheStats:
    """Count ccache's stats log (a ``# <source>`` line, then one counter per line, per compilation)."""
    entries: list[tuple[str, set[str]]] = []
    for line in text.splitlines():
        if line.startswith("# "):
            entries.append((line[2:].strip(), set()))
        elif entries:
            entries[-1][1].add(line.strip())
    hit = [source for source, e in entries if e & _HITS]
    missed = [source for source, e in entries if not e & _HITS and "cache_miss" in e]
    reasons = Counter(name for _, e in entries if not e & _HITS and "cache_miss" not in e for name in e)
    return CacheStats(hits=len(hit), misses=len(missed), uncacheable=len(entries) - len(hit) - len(missed),
                      reasons=tuple(sorted(reasons.items())), missed=tuple(missed))
