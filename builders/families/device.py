"""Does this machine show the accelerator its smoke job is meant to exercise?

A GPU smoke job on a runner without a GPU passes with nothing exercised (the runtime
libraries load and report their version without a device). ``smoke --require-device`` fails
such a job first. Which jobs are GPU jobs is the matrix's to say: a GPU variant whose
platform has ``smoke_runners`` (:func:`needed`); a cpu wheel never needs a device.

Probing is kept apart from deciding: :func:`probe` runs the vendor tools (through
:func:`builders.base.process.run`) and looks at device files, returning plain facts
(:class:`Machine`); :func:`judge` decides from those facts alone, so a test describes any
machine in one line. What counts as a device:

- CUDA: ``nvidia-smi -L`` lists a GPU, or ``/dev/nvidia0`` exists;
- ROCm: ``/dev/kfd`` exists and ``rocminfo`` lists a gfx agent or ``amd-smi list`` a GPU;
- XPU: a ``/dev/dri/renderD*`` node (of Intel's PCI vendor, where sysfs says) and, where
  ``sycl-ls`` is installed, a Level Zero or OpenCL GPU in its list.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from builders.base.errors import DeviceMissing
from builders.base.process import ProcessError, run
from builders.spec.model import Accelerator
from builders.spec.targets import Target

INTEL_VENDOR = "0x8086"
PROBE_TIMEOUT = 60.0  # seconds; nvidia-smi can hang on a wedged driver
# The tools asked per accelerator, in order (each optional: a missing one is a fact, not an error).
TOOLS: dict[Accelerator, tuple[tuple[str, ...], ...]] = {
    Accelerator.CUDA: (("nvidia-smi", "-L"),),
    Accelerator.ROCM: (("rocminfo",), ("amd-smi", "list")),
    Accelerator.XPU: (("sycl-ls",),),
}
NVIDIA_GPU = re.compile(r"^GPU \d+: .+$", re.M)
ROCM_AGENT = re.compile(r"^\s*Name:\s+(gfx[0-9a-f]+)\s*$", re.M)
AMD_SMI_GPU = re.compile(r"^GPU: \d+\s*$", re.M)
SYCL_GPU = re.compile(r"^.*(?:level_zero|opencl):gpu.*$", re.M)


@dataclass(frozen=True, kw_only=True)
class Tool:
    """What one vendor tool printed, or why it said nothing (``problem``: not on PATH, failed)."""

    name: str
    output: str = ""
    problem: str = ""


@dataclass(frozen=True, kw_only=True)
class Machine:
    """What a machine shows: device files that exist, render nodes' PCI vendors, vendor tools' answers."""

    files: frozenset[str] = frozenset()
    render_vendors: tuple[tuple[str, str], ...] = ()  # (render node, vendor id or "" where sysfs says nothing)
    tools: tuple[Tool, ...] = ()

    def tool(self, name: str) -> Tool | None:
        return next((t for t in self.tools if t.name == name), None)


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
    """The accelerator whose device ``target``'s smoke job needs: a GPU variant on a platform the
    matrix gives GPU smoke runners; None for cpu wheels and for platforms without such runners."""
    accelerator = target.variant.accelerator
    if accelerator is Accelerator.CPU or target.variant.smoke_runner(target.platform.name) is None:
        return None
    return accelerator


def judge(accelerator: Accelerator, machine: Machine) -> Verdict:
    """Whether ``machine`` shows a device of ``accelerator`` (pure)."""
    rule = {Accelerator.CUDA: _cuda, Accelerator.ROCM: _rocm, Accelerator.XPU: _xpu}.get(accelerator)
    if rule is None:
        return Verdict(accelerator=accelerator, found=("no device needed",))
    found, missing = rule(machine)
    return Verdict(accelerator=accelerator, found=tuple(found) if not missing else (), missing=tuple(missing))


def _listed(machine: Machine, name: str, pattern: re.Pattern[str], what: str) -> tuple[list[str], str]:
    """The lines of ``name``'s output ``pattern`` finds, or why there are none."""
    tool = machine.tool(name)
    if tool is None or tool.problem:
        return [], f"{name}: {tool.problem if tool else 'not run'}"
    lines = [m.group(m.lastindex or 0).strip() for m in pattern.finditer(tool.output)]
    return lines, "" if lines else f"{name} lists no {what}"


def _cuda(machine: Machine) -> tuple[list[str], list[str]]:
    gpus, why = _listed(machine, "nvidia-smi", NVIDIA_GPU, "GPU")
    node = ["/dev/nvidia0"] if "/dev/nvidia0" in machine.files else []
    found = gpus + node
    return found, [] if found else [why, "/dev/nvidia0: absent"]


def _rocm(machine: Machine) -> tuple[list[str], list[str]]:
    agents, rocminfo = _listed(machine, "rocminfo", ROCM_AGENT, "gfx agent")
    gpus, amd_smi = _listed(machine, "amd-smi", AMD_SMI_GPU, "GPU")
    missing = [] if "/dev/kfd" in machine.files else ["/dev/kfd: absent (no amdgpu kernel driver)"]
    if not agents and not gpus:
        missing.append(f"{rocminfo}; {amd_smi}")
    return ["/dev/kfd", *agents, *gpus], missing


def _xpu(machine: Machine) -> tuple[list[str], list[str]]:
    nodes = [node for node, vendor in machine.render_vendors if vendor in ("", INTEL_VENDOR)]
    missing = [] if nodes else [_render_problem(machine)]
    sycl = machine.tool("sycl-ls")
    gpus: list[str] = []
    if sycl is not None and sycl.problem != "not on PATH":  # sycl-ls counts only where it is installed
        gpus, why = _listed(machine, "sycl-ls", SYCL_GPU, "Level Zero or OpenCL GPU")
        missing += [why] if why else []
    return [*nodes, *gpus], missing


def _render_problem(machine: Machine) -> str:
    if not machine.render_vendors:
        return "/dev/dri/renderD*: none"
    others = ", ".join(f"{node} (vendor {vendor})" for node, vendor in machine.render_vendors)
    return f"/dev/dri/renderD*: none of Intel's (vendor {INTEL_VENDOR}): {others}"


def probe(accelerator: Accelerator, env: Mapping[str, str], *, dev: Path = Path("/dev"),
          sysfs: Path = Path("/sys")) -> Machine:
    """What this machine shows for ``accelerator``: its device files and its vendor tools' answers."""
    files = frozenset(str(Path("/dev") / p.relative_to(dev)) for p in _device_files(accelerator, dev))
    nodes = sorted(dev.glob("dri/renderD*")) if accelerator is Accelerator.XPU else []
    vendors = tuple((f"/dev/dri/{n.name}", _vendor(sysfs, n.name)) for n in nodes)
    tools = tuple(ask(argv, env) for argv in TOOLS.get(accelerator, ()))
    return Machine(files=files, render_vendors=vendors, tools=tools)


def _device_files(accelerator: Accelerator, dev: Path) -> list[Path]:
    wanted = {Accelerator.CUDA: ["nvidia0"], Accelerator.ROCM: ["kfd"]}.get(accelerator, [])
    return [dev / name for name in wanted if (dev / name).exists()]


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
