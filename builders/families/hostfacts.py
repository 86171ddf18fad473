"""The facts about a build host, as one frozen value: what every toolchain (a family's
``unavailable``, ``toolkit_root``, ...) and every engine judges a host by.

It lives with the toolchains it is the input of, as :mod:`builders.families.machine` (what a smoke
runner shows of its devices) does with the device rules; :mod:`builders.pipeline.host` probes it
from above, since probing asks every family (``probe_compilers``). A family's own compilers are
``tools``, by name, as its ``probe_host`` found them: no field here names a family."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from builders.matrix.model import OS


@dataclass(frozen=True, kw_only=True)
class Host:
    """Facts about a build host, probed once."""

    os: OS
    arch: str
    interpreters: tuple[tuple[str, str], ...] = ()
    container_engines: tuple[str, ...] = ()
    cxx20: str | None = None
    cxx20_problem: str = "no C++ compiler probed"
    # the families' own compilers found here: (name, resolved path, version or "" where not asked)
    tools: tuple[tuple[str, str, str], ...] = ()
    ccache: str | None = None  # the compiler cache builds on this host go through, if installed
    glibc: str | None = None  # this host's C library level (``2.36``); None elsewhere (the platform policy's check)
    glibcxx: str | None = None  # the newest GLIBCXX symbol version of its libstdc++ (``3.4.30``)

    @property
    def platform(self) -> str:
        return f"{self.os.value}-{self.arch}"

    def tool(self, name: str) -> str | None:
        """Where the family compiler ``name`` (``hipcc``) is on this host, if found."""
        return next((path for tool, path, _ in self.tools if tool == name), None)

    def tool_version(self, name: str) -> str | None:
        """The version ``name`` reports, if it was found and asked."""
        return next((version or None for tool, _, version in self.tools if tool == name), None)

    def interpreter(self, abi: str) -> Path | None:
        found = dict(self.interpreters).get(abi)
        return Path(found) if found else None
