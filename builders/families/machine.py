"""What a machine shows of its accelerators, as plain facts a family's device rule reads.

:func:`builders.families.device.probe` gathers them (device files, render nodes' PCI vendors,
vendor tools' answers); each family's ``judge_device`` decides from them alone, so a test
describes any machine in one line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


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


def listed(machine: Machine, name: str, pattern: re.Pattern[str], what: str) -> tuple[list[str], str]:
    """The lines of ``name``'s output ``pattern`` finds, or why there are none."""
    tool = machine.tool(name)
    if tool is None or tool.problem:
        return [], f"{name}: {tool.problem if tool else 'not run'}"
    lines = [m.group(m.lastindex or 0).strip() for m in pattern.finditer(tool.output)]
    return lines, "" if lines else f"{name} lists no {what}"
