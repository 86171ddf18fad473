"""Where a plan's commands run, as a value: this host, or a fresh container of an image with its
mounts (kept below :mod:`builders.build.plan`, so the smoke test can read it without importing the
plans that import the smoke test)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Pairs = tuple[tuple[str, str], ...]


@dataclass(frozen=True, kw_only=True)
class Mount:
    source: str
    target: str
    writable: bool = False

    def argv(self) -> list[str]:
        return ["--volume", f"{self.source}:{self.target}:{'rw' if self.writable else 'ro'}"]


@dataclass(frozen=True, kw_only=True)
class RunnerSpec:
    """Where commands run: ``host``, or a fresh ``container`` of ``image``."""

    kind: str
    image: str = ""
    base: str = ""
    engine: str = ""
    mounts: tuple[Mount, ...] = ()
    network: bool = False
    env: Pairs = ()  # container: its whole environment; host: set on top of the host's
    unset: tuple[str, ...] = ()  # host: variables taken out of the host's environment
    inherits: Pairs = ()  # host: the build-relevant variables it inherits (buildplan.BUILD_INPUT_VARS)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        if self.kind == "container":
            out |= {"image": self.image, "base": self.base, "engine": self.engine, "network": self.network,
                    "mounts": [f"{m.source}:{m.target}:{'rw' if m.writable else 'ro'}" for m in self.mounts]}
        return out | {"env": dict(self.env), "unset": list(self.unset), "inherits": dict(self.inherits)}

    def describe(self) -> str:
        return f"{self.engine} {self.image}" if self.kind == "container" else "host"
