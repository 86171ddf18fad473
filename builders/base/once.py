"""Run an action once per key across the build's threads (a toolkit, an image, a core)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from builders.base.errors import BuildersError


@dataclass
class _Entry:
    lock: threading.Lock = field(default_factory=threading.Lock)
    done: bool = False
    error: BuildersError | None = None


class Once:
    """Runs an action once per key, whichever thread asks first; the others wait and share its outcome.

    A failure is remembered too (nine targets do not download a broken toolkit nine times),
    except an interruption, which the next caller meets again anyway.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, _Entry] = {}

    def __call__(self, key: str, action: Callable[[], object]) -> None:
        with self._lock:
            entry = self._entries.setdefault(key, _Entry())
        with entry.lock:
            if entry.error is not None:
                raise entry.error
            if entry.done:
                return
            try:
                action()
            except BuildersError as exc:
                entry.error = exc
                raise
            entry.done = True
