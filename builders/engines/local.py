"""The local engine: build on this host with a discovered interpreter and provisioned toolchain."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ..errors import EngineError
from ..host import Host
from ..process import run
from ..targets import Target


class LocalEngine:
    name = "local"

    def __init__(self, host: Host) -> None:
        self.host = host

    def interpreter(self, target: Target) -> Path:
        exe = self.host.interpreter(target.python.abi)
        if exe is None:
            raise EngineError(f"no interpreter for {target.python.abi} on this host")
        return exe

    def build(self, target: Target, source: Path, out_dir: Path, env: Mapping[str, str], log: Path) -> Path:
        """Run the project's build command (isolated build env) with the target's interpreter."""
        values = {"python": str(self.interpreter(target)), "source": str(source), "outdir": str(out_dir)}
        argv = [part.format(**values) for part in target.project.build_command]
        run(argv, env=env, cwd=source, log=log, timeout=3600)
        wheels = sorted(out_dir.glob("*.whl"))
        if len(wheels) != 1:
            raise EngineError(f"build of {target.id} produced {len(wheels)} wheels in {out_dir}, expected one")
        return wheels[0]
