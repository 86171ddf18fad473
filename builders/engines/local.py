"""The local engine: build on this host with a discovered interpreter and provisioned toolchain."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ..errors import EngineError
from ..host import Host
from ..process import run
from ..repair import tool_env
from ..rpath import interpreter_rpaths, strip_rpaths
from ..smoke import SmokeOutcome, smoke
from ..targets import Target
from ..toolchains import toolchain_for
from ..wheels import source_date_epoch


class LocalEngine:
    name = "local"

    def __init__(self, host: Host, cache: Path) -> None:
        self.host = host
        self.cache = cache

    def provision(self, target: Target, env: Mapping[str, str], log: Path) -> dict[str, str]:
        """The variant's toolchain on this host (pinned toolkits cached under ``cache``)."""
        return toolchain_for(target.variant.accelerator).provision(target, self.cache, env, log)

    def interpreter(self, target: Target) -> Path:
        exe = self.host.interpreter(target.python.abi)
        if exe is None:
            raise EngineError(f"no interpreter for {target.python.abi} on this host")
        return exe

    def build(self, target: Target, source: Path, out_dir: Path, env: Mapping[str, str], log: Path) -> Path:
        """Run the project's build command (isolated build env) with the target's interpreter."""
        python = str(self.interpreter(target))
        values = {"python": python, "source": str(source), "outdir": str(out_dir)}
        argv = [part.format(**values) for part in target.project.build_command]
        run(argv, env=env, cwd=source, log=log, timeout=3600)
        wheels = sorted(out_dir.glob("*.whl"))
        if len(wheels) != 1:
            raise EngineError(f"build of {target.id} produced {len(wheels)} wheels in {out_dir}, expected one")
        tools = tool_env(env)
        strip_rpaths(wheels[0], interpreter_rpaths(python, tools, log), tools, log, source_date_epoch(env))
        return wheels[0]

    def smoke(self, wheel: Path, target: Target, env: Mapping[str, str], log: Path) -> SmokeOutcome:
        return smoke(wheel, target, self.interpreter(target), env, log)
