"""What a rebuild needs to know about a build, besides the source commit: recorded per target in results.json.

``rebuild`` (builders.cli.rebuild) builds a released target again and compares the bytes; it can only use
the same inputs if the release recorded them: the engine, SOURCE_DATE_EPOCH, the toolkit's pins (the CUDA
toolkit's pip requirements), the compiler where the build ran (``cc --version``, asked there: the host's
or the image's), the image by tag and by id (a container build), and whether the wheel was tagged at
this host's own level (``--local-only``). The manifest carries these records per target
(:mod:`builders.channels.manifest`), versioned by :data:`RECORD_VERSION`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from builders.base.process import ProcessError, Runner, run
from builders.pipeline import platform_policy
from builders.pipeline.plan import BuildPlan

RECORD_VERSION = 1


def record(plan: BuildPlan, runner: Runner, env: Mapping[str, str]) -> dict[str, Any]:
    """The rebuild record of ``plan`` as it was built by ``runner`` (asked for its compiler)."""
    image = str(getattr(plan.runner, "image", "") or "")
    out = {"record_version": RECORD_VERSION, "engine": plan.engine, "epoch": plan.epoch,
           "accelerator": plan.toolchain.accelerator, "toolkit": plan.toolchain.version,
           "pins": list(plan.toolchain.pins), "compiler": compiler(runner, plan.build.env),
           "local_only": platform_policy.at_host_level(plan.target.platform.wheel_platform)}
    if image:
        out |= {"image": image, "image_id": image_id(str(getattr(plan.runner, "engine", "")), image, env)}
    return out


def compiler(runner: Runner, env: Any) -> str:
    """``cc --version``'s first line where the build ran ("" where there is no cc)."""
    try:
        done = runner.run(["cc", "--version"], env=dict(env), separate_stderr=True, timeout=60)
    except (ProcessError, OSError):
        return ""
    lines = done.stdout.strip().splitlines()
    return lines[0] if lines else ""


def image_id(engine: str, image: str, env: Mapping[str, str]) -> str:
    """The image's id (the sha256 of its config: what ``podman run`` pulls by digest), "" where not asked."""
    if not engine:
        return ""
    try:
        done = run([engine, "image", "inspect", "--format", "{{.Id}}", image], env=env, separate_stderr=True,
                   timeout=60)
    except (ProcessError, OSError):
        return ""
    found = done.stdout.strip()
    return found if found.startswith("sha256:") else f"sha256:{found}" if found else ""
