"""Where a plan's commands run, as a value that opens itself: the contract every engine's runner
spec keeps (this host, a fresh container of an image, whatever an engine adds).

It describes the runners of :mod:`builders.base.process` (``open`` makes one) and sits beside them,
below its implementers in :mod:`builders.engines` and below its readers: a plan
(:mod:`builders.pipeline.plan`) holds two, and the smoke test (:mod:`builders.wheel.smoke`, a floor
below the plans, which import it) reads one. Placing it with the engines would be an upward import
from both.

A plan holds two (its build runner and its smoke runner), prints them (``to_json``,
``describe``), hashes what of them decides a wheel's bytes (``key``) and the pipeline opens
them (``open``) to run the stages; the concrete specs live with their engines
(:mod:`builders.engines.local`, :mod:`builders.engines.container`).
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

from builders.base.process import Log, Runner

Pairs = tuple[tuple[str, str], ...]


class RunnerSpec(Protocol):
    """Where commands run, as a frozen, hashable value; ``open`` makes it a :class:`Runner`."""

    @property
    def kind(self) -> str:
        """Its name in a plan's JSON and digest: ``host``, ``container``."""
        ...

    @property
    def on_host(self) -> bool:
        """Its commands see this host's files where they are (False: a filesystem of their own)."""
        ...

    def to_json(self) -> dict[str, Any]:
        """Everything about it, for ``build --dry-run --json``."""
        ...

    def key(self) -> dict[str, Any]:
        """What of it decides a wheel's bytes: part of a plan's digest."""
        ...

    def describe(self) -> str:
        """One short line for the dry run's table."""
        ...

    def where(self, path: str) -> str:
        """Where ``path`` (an interpreter, a tool) is looked for, in words, for messages."""
        ...

    def sees(self, folder: Path) -> str | None:
        """Where its commands see this host's ``folder`` (None: they do not)."""
        ...

    def open(self, host_env: Mapping[str, str], log: Log) -> AbstractContextManager[Runner]:
        """A runner of this spec for the ``with`` block (a container is removed on exit, always)."""
        ...
