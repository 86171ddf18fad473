"""Does this machine show the accelerator its smoke job is meant to exercise?

A GPU smoke job on a runner without a GPU passes with nothing exercised (the runtime
libraries load and report their version without a device). ``smoke --require-device`` fails
such a job first. Which jobs are GPU jobs is the matrix's to say: a variant of a family that
needs a device whose platform has ``smoke_runners`` (:func:`needed`); a family says it needs
none explicitly (cpu), never by leaving its rule out.

Probing is kept apart from deciding: :func:`probe` runs the family's vendor tools (through
:func:`builders.base.process.run`) and looks at its device files, returning plain facts
(:class:`Machine`); :func:`judge` decides from those facts alone through the family's own
rule (``judge_device`` in its module of builders/families/), so a test describes any machine
in one line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from builders.base.errors import DeviceMissing
from builders.base.process import ProcessError, run
from builders.families.machine import Machine, Tool
from builders.families.registry import family_for
from builders.matrix.model import Accelerator
from builders.matrix.targets import Target

__all__ = ["Machine", "Tool", "Verdict", "ask", "judge", "needed", "probe", "require"]

PROBE_TIMEOUT = 60.0  # seconds; nvidia-smi can hang on a wedged driver


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """The devices found, and what was looked for in vain (said when nothing was found)."""

    accelerator: Accelerator
    found: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return bool(self.found)


def needed(target: Target) -> Accelerator | None:
    """The accelerator whose device ``target``'s smoke job needs: a family that needs a device, on a
    platform the matrix gives GPU smoke runners; None otherwise (cpu wheels, platforms without such runners)."""
    accelerator = target.variant.accelerator
    if not family_for(accelerator).needs_device or target.variant.smoke_runner(target.platform.name) is None:
        return None
    return accelerator


def judge(accelerator: Accelerator, machine: Machine) -> Verdict:
    """Whether ``machine`` shows a device of ``accelerator`` (pure): the family's own rule decides."""
    family = family_for(accelerator)
    if not family.needs_device:
        return Verdict(accelerator=accelerator, found=("no device needed",))
    found, missing = family.judge_device(machine)
    return Verdict(accelerator=accelerator, found=tuple(found) if not missing else (), missing=tuple(missing))


def probe(accelerator: Accelerator, env: Mapping[str, str], *, dev: Path = Path("/dev"),
          sysfs: Path = Path("/sys")) -> Machine:
    """What this machine shows for ``accelerator``: its device files and its vendor tools' answers."""
    family = family_for(accelerator)
    files = frozenset(f"/dev/{name}" for name in family.device_files if (dev / name).exists())
    nodes = sorted(dev.glob("dri/renderD*")) if family.render_nodes else []
    vendors = tuple((f"/dev/dri/{n.name}", _vendor(sysfs, n.name)) for n in nodes)
    tools = tuple(ask(argv, env) for argv in family.device_tools)
    return Machine(files=files, render_vendors=vendors, tools=tools)


def _vendor(sysfs: Path, node: str) -> str:
    """The PCI vendor of a render node (``0x8086``), or "" where sysfs does not say."""
    try:
        return (sysfs / "class/drm" / node / "device/vendor").read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return ""


def ask(argv: tuple[str, ...], env: Mapping[str, str]) -> Tool:
    """One vendor tool's answer; a tool that is missing or fails is recorded, not raised."""
    try:
        out = run(list(argv), env=env, timeout=PROBE_TIMEOUT, separate_stderr=True).stdout
    except ProcessError as exc:
        missing = exc.returncode == 127 and "not found on PATH" in exc.tail
        last = exc.tail.strip().splitlines()[-1:] or [""]
        return Tool(name=argv[0], problem="not on PATH" if missing else f"exited {exc.returncode}: {last[0]}")
    return Tool(name=argv[0], output=out)


def require(target: Target, env: Mapping[str, str], machine: Machine | None = None) -> Verdict | None:
    """Fail with :class:`DeviceMissing` when ``target``'s smoke job needs a device this machine does not
    show; the verdict when it does, None when the target needs no device."""
    accelerator = needed(target)
    if accelerator is None:
        return None
    verdict = judge(accelerator, machine or probe(accelerator, env))
    if not verdict.ok:
        runner = ", ".join(target.variant.smoke_runner(target.platform.name) or ())
        raise DeviceMissing(f"{target.id} is smoke-tested on a {accelerator.value} GPU runner ({runner}), but this "
                            f"machine shows no {accelerator.value} device: " + "; ".join(verdict.missing))
    return verdict
