"""``build.core``: the Python-independent part of a project, built once per (variant, platform).

The first target of a variant that needs the core builds it in its own runner (the same host
or image its wheel builds in) and stores the installed folder under the core's digest
(``<output>/.store/core/<digest>``, all or nothing); every target, that one included, gets a
copy in its work folder, where its build finds it through ``build.env.core_dir``. The other
targets wait for the first and reuse what it stored, in this run and in later ones, until
something the digest covers changes (a core source, the toolchain, the variant's settings).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from builders.base.errors import CoreError
from builders.base.once import Once
from builders.base.process import Log, Runner
from builders.pipeline.plan import CorePlan
from builders.pipeline.store import temp_prefix


@dataclass(frozen=True)
class CoreStore:
    root: Path  # <output>/.store/core

    def folder(self, digest: str) -> Path:
        return self.root / digest

    def has(self, digest: str) -> bool:
        return (self.root / digest).is_dir()

    def put(self, digest: str, installed: Path) -> Path:
        """Store ``installed`` under ``digest`` at once (a copy, renamed into place)."""
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=self.root, prefix=temp_prefix(digest)))
        try:
            shutil.copytree(installed, tmp / "core", symlinks=True)
            shutil.rmtree(self.root / digest, ignore_errors=True)
            (tmp / "core").rename(self.root / digest)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return self.root / digest


def ensure_core(core: CorePlan, runner: Runner, store: CoreStore, once: Once, log: Log, *,
                force: bool = False) -> dict[str, Any]:
    """The core in the target's work folder: built here (once per run and digest) or copied from the store."""
    start, built = time.monotonic(), []

    def make() -> None:
        if store.has(core.digest) and not force:
            return
        log.write(f"# core {core.name} {core.digest[:12]}: building once for every Python of {core.name}\n")
        try:
            build_core(core, runner)
            store.put(core.digest, Path(core.scratch) / "install")
        finally:
            shutil.rmtree(core.scratch, ignore_errors=True)
        built.append(True)

    once(f"core:{core.digest}", make)
    if not built:
        os.utime(store.folder(core.digest))  # used now: a trimmed store keeps what is used
        log.write(f"# core {core.name} {core.digest[:12]}: reused from {store.folder(core.digest)}\n")
    dest = Path(core.installed)
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(store.folder(core.digest), dest, symlinks=True)
    return {"name": core.name, "digest": core.digest, "status": "built" if built else "reused",
            "seconds": round(time.monotonic() - start, 2)}


def build_core(core: CorePlan, runner: Runner) -> None:
    """The core's commands in a fresh scratch folder; they must install something."""
    scratch = Path(core.scratch)
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    for command in core.steps:
        runner.run(command.argv, env=dict(command.env), cwd=command.cwd, timeout=command.timeout)
    installed = scratch / "install"
    if not installed.is_dir() or not any(installed.iterdir()):
        raise CoreError(f"build.core of {core.name} ran, and installed nothing into {{coredir}} ({installed})")
