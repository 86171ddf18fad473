"""The cibuildwheel engine: the Python x platform loop delegated to cibuildwheel.

Options are computed from the matrix for a group of targets that share a variant and a
platform: the build selector, the variant's image as the manylinux image, the variant's
environment, the repair command with the variant's excludes, and builders' smoke probe (with
the project's script, staged as test sources) as the test command. This is the route for macOS
and Windows runners in CI and an alternative on Linux; ``build --engine cibw --dry-run`` prints
the options without running anything.
"""

from __future__ import annotations

import shlex
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import EngineError
from ..model import OS
from ..process import run
from ..smoke import SmokeOutcome, probe_argv, stage
from ..targets import Target
from .container import CONTAINER_CA, ContainerEngine, container_env

SMOKE_DIR = "_builders_smoke"


def identifier(target: Target) -> str:
    """cibuildwheel's build identifier: ``cp314t-manylinux_x86_64``, ``cp312-macosx_arm64``."""
    plat = target.platform
    suffix = {OS.LINUX: f"manylinux_{plat.arch}", OS.MACOS: f"macosx_{plat.arch}", OS.WINDOWS: "win_amd64"}[plat.os]
    return f"{target.python.abi}-{suffix}"


def repair_command(target: Target) -> str:
    """The variant's repair, with cibuildwheel's ``{dest_dir}`` and ``{wheel}`` placeholders."""
    excludes = " ".join(f"--exclude {shlex.quote(lib)}" for lib in sorted(target.variant.exclude_libs))
    plat = target.platform
    if plat.os is OS.LINUX:
        return f"auditwheel repair --plat {plat.wheel_platform} --only-plat {excludes} -w {{dest_dir}} {{wheel}}".replace("  ", " ")
    if plat.os is OS.MACOS:
        return f"delocate-wheel --require-archs {plat.arch} {excludes} -w {{dest_dir}} {{wheel}}".replace("  ", " ")
    return ""


def cibw_options(targets: Sequence[Target], *, image: str | None, engine: str, env: Mapping[str, str],
                 ca_bundle: Path | None = None) -> dict[str, str]:
    """The ``CIBW_*`` environment for one (variant, platform) group of targets."""
    first = targets[0]
    if any((t.variant, t.platform) != (first.variant, first.platform) for t in targets):
        raise EngineError("a cibuildwheel group must share one variant and one platform")
    plat = first.platform
    settings = {**container_env(first, env), **dict(first.env)}
    options = {
        "CIBW_BUILD": " ".join(identifier(t) for t in targets),
        "CIBW_BUILD_FRONTEND": "pip",
        "CIBW_REPAIR_WHEEL_COMMAND": repair_command(first),
        "CIBW_TEST_SOURCES": SMOKE_DIR,
        "CIBW_TEST_COMMAND": shlex.join(probe_argv("python", SMOKE_DIR, strict=True)),
    }
    if plat.os is OS.LINUX:
        options |= {"CIBW_ARCHS_LINUX": plat.arch, f"CIBW_MANYLINUX_{plat.arch.upper()}_IMAGE": image or "",
                    "CIBW_CONTAINER_ENGINE": engine}
        if ca_bundle is not None:
            options["CIBW_CONTAINER_ENGINE"] += f"; create_args: --volume={ca_bundle}:{CONTAINER_CA}:ro"
            settings |= {"PIP_CERT": CONTAINER_CA, "SSL_CERT_FILE": CONTAINER_CA}
    options["CIBW_ENVIRONMENT"] = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(settings.items()))
    return options


@dataclass(frozen=True, kw_only=True)
class CibwEngine:
    """Runs cibuildwheel on this host; on Linux inside the variant's image (built by the container engine)."""

    container: ContainerEngine
    name: str = "cibw"

    def provision(self, target: Target, env: Mapping[str, str], log: Path) -> dict[str, str]:
        return self.container.provision(target, env, log)

    def options(self, target: Target, env: Mapping[str, str], log: Path | None, *, build_image: bool = True) -> dict[str, str]:
        """The CIBW_* options for ``target``; with ``build_image=False`` the image tag is only computed."""
        image = None
        if target.platform.os is OS.LINUX:
            image = self.container.image(target, log) if build_image else self.container.image_spec(target).tag
        return cibw_options([target], image=image, engine=self.container.exe, env=env, ca_bundle=self.container.ca_bundle)

    def build(self, target: Target, source: Path, out_dir: Path, env: Mapping[str, str], log: Path) -> Path:
        """Build from a staging copy of ``source`` that also holds the staged smoke probe (test-sources)."""
        staging = out_dir.parent / "cibw-project"
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(source, staging, ignore=shutil.ignore_patterns("build", "dist", ".git"))
        stage(staging / SMOKE_DIR, [target])
        tool_path = f"{Path(sys.executable).parent}:{self.container.host_env.get('PATH', '')}"
        cibw_env = {**self.container.host_env, **self.options(target, env, log), "PATH": tool_path}
        platform = {OS.LINUX: "linux", OS.MACOS: "macos", OS.WINDOWS: "windows"}[target.platform.os]
        run([sys.executable, "-m", "cibuildwheel", "--platform", platform, "--output-dir", str(out_dir), "."],
            env=cibw_env, cwd=staging, log=log, timeout=3600)
        built = sorted(out_dir.glob("*.whl"))
        if len(built) != 1:
            raise EngineError(f"cibuildwheel produced {len(built)} wheels for {target.id}, expected one")
        return built[0]

    def smoke(self, wheel: Path, target: Target, env: Mapping[str, str], log: Path) -> SmokeOutcome:
        return self.container.smoke(wheel, target, env, log)
