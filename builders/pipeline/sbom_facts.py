"""The SBOM stage's effects: what the build ran with, asked where it ran, and the SBOM written into the wheel.

After repair (and the runtime RUNPATHs), the wheel's bytes are final but for its SBOM
(:mod:`builders.wheel.sbom`). The toolchain is asked where the build ran, with the build's own
environment, so the versions are those of the compilers that compiled (the pinned nvcc, never the
host's other one); the source's commit is read from its git checkout. A fact that cannot be read
is left out, never guessed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from builders.base.process import Log, ProcessError, Runner, run
from builders.families import toolchain_for
from builders.pipeline.plan import BuildPlan
from builders.wheel import sbom
from builders.wheel.archive import Wheel
from builders.wheel.writer import rewrite

VERSION_TIMEOUT = 60.0
# Where each tool's ``--version`` says its own release (others: the last version on its first line).
VERSION_PATTERNS = {"nvcc": r"release [\d.]+, V(\d+(?:\.\d+)+)", "hipcc": r"HIP version:\s*(\d+(?:\.\d+)+)"}


def tool_version(name: str, out: str) -> str:
    """The version ``name --version`` printed, or "" where it printed none."""
    pattern = VERSION_PATTERNS.get(name)
    if pattern:
        match = re.search(pattern, out)
        return match.group(1) if match else ""
    first = next((line for line in out.splitlines() if line.strip()), "")
    found = re.findall(r"\d+(?:\.\d+)+", first)
    return found[-1] if found else ""


def tool_argvs(plan: BuildPlan) -> list[tuple[str, str]]:
    """(name, executable) of the host compiler the build sees and the accelerator's compilers at the toolkit root
    (or on PATH, where the family installs none)."""
    env = dict(plan.build.env)
    family = toolchain_for(plan.target.variant.accelerator)
    root = plan.toolchain.root
    accel = [(name, f"{root}/bin/{name}" if root else name) for name in family.asks]
    if family.on_path:
        accel.append((family.on_path, family.on_path))
    host = env.get("CXX", "c++").split()[0]
    return [(Path(host).name, host), *accel]


def tools(plan: BuildPlan, runner: Runner) -> tuple[tuple[str, str], ...]:
    """Each compiler the build saw, with the version it reports where the build ran; an engine that builds by
    itself (cibuildwheel) is not asked here: its compilers are not this runner's."""
    if not plan.direct:
        return ()
    found = []
    for name, exe in tool_argvs(plan):
        try:
            out = runner.run([exe, "--version"], env=dict(plan.build.env), timeout=VERSION_TIMEOUT).stdout
        except (ProcessError, OSError):
            continue
        found.append((name, tool_version(name, out)))
    return tuple(sorted(set(found)))


def source_commit(source: Path, env: dict[str, str]) -> str:
    """The commit the source is checked out at (``git rev-parse HEAD``); "" where it is no git checkout."""
    try:
        done = run(["git", "-C", str(source), "rev-parse", "HEAD"], env=env, separate_stderr=True, check=False,
                   timeout=VERSION_TIMEOUT)
    except (ProcessError, OSError):
        return ""
    text = done.stdout.strip()
    return text if done.returncode == 0 and re.fullmatch(r"[0-9a-f]{40,64}", text) else ""


def build_facts(plan: BuildPlan, runner: Runner, env: dict[str, str]) -> sbom.BuildFacts:
    """The toolchain, the image (container builds: the image and its base's digest, where the matrix pins one)
    and the source commit."""
    image = str(plan.runner.to_json().get("image", "")) if plan.runner.kind == "container" else ""
    digest = plan.target.platform.image_digest or "" if image else ""
    return sbom.BuildFacts(tools=tools(plan, runner), image=image, image_digest=digest,
                           commit=source_commit(plan.target.project.source, env))


def wheel_facts(wheel: Wheel) -> sbom.WheelFacts:
    """The wheel's name, version, RECORD, Requires-Dist and auditwheel's SBOM (where it wrote one)."""
    with wheel.open() as reader:
        names = {i.filename for i in reader.infos}
        theirs = f"{reader.dist_info}/{sbom.AUDITWHEEL_SBOM}"
        auditwheel = _json(reader.read(theirs)) if theirs in names else None
        own = f"{reader.dist_info}/{sbom.SBOM_NAME}"
        record = tuple(e for e in reader.record() if e.path != own)
        return sbom.WheelFacts(name=wheel.name, version=str(wheel.version), record=record,
                               requires_dist=reader.requires_dist, auditwheel=auditwheel)


def _json(raw: bytes) -> dict[str, Any] | None:
    """auditwheel's SBOM as JSON; None where it is not a JSON object (then nothing of it is merged)."""
    try:
        doc = json.loads(raw)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def write(wheel: Path, plan: BuildPlan, facts: sbom.BuildFacts, log: Log) -> Path:
    """The wheel with its SBOM (RECORD regenerated), in the work folder's ``sbom/``, under the same name."""
    doc = sbom.document(wheel_facts(Wheel(wheel)), plan.target.project.sbom_components, facts, plan.builders_version)
    dest = Path(plan.work) / "sbom"
    dest.mkdir(parents=True, exist_ok=True)
    out = rewrite(Wheel(wheel), dest, added={sbom.SBOM_NAME: sbom.render(doc)}, epoch=plan.epoch)
    if out.name != wheel.name:  # the writer spells a one-tag name its own way: keep the name the plan expects
        out = out.replace(out.with_name(wheel.name))
    log.write(f"# sbom: {len(doc['components'])} components written to {sbom.SBOM_NAME} ({doc['serialNumber']})\n")
    return out
