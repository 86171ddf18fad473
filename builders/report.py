"""The compatibility matrix: Python x variant per platform, as Markdown, JSON and HTML.

A pure function of the matrix and (optionally) build results. Every cell that is not a
wheel says why: excluded (with the exclusion's reason) or dropped (since when and why).
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .console import markdown_table
from .model import Matrix, PythonVersion
from .policy import dropped_pythons
from .targets import expand, target_id

MARK = {"planned": "planned", "built": "✅ built", "failed": "❌ failed", "skipped": "⏭ skipped",
        "interrupted": "⚠ interrupted"}


@dataclass(frozen=True, kw_only=True)
class Cell:
    platform: str
    python: str
    variant: str
    id: str
    status: str
    reason: str = ""
    engine: str = ""
    wheel: str = ""

    def to_json(self) -> dict[str, str]:
        return {k: v for k, v in self.__dict__.items() if v}


def cells(matrix: Matrix, results: Mapping[str, Mapping[str, Any]]) -> list[Cell]:
    """Every cell of the report, in platform, Python, variant order."""
    targets, excluded = expand(matrix)
    by_id = {t.id: t for t in targets}
    why_excluded = {e.id: e.reason for e in excluded}
    out = []
    for platform in matrix.platforms:
        for python, dropped in _rows(matrix):
            for variant in matrix.variants:
                tid = target_id(variant.label, python, platform.name)
                common = {"platform": platform.name, "python": str(python), "variant": variant.label, "id": tid}
                if dropped:
                    out.append(Cell(**common, status="dropped", reason=dropped))
                elif tid in why_excluded:
                    out.append(Cell(**common, status="excluded", reason=why_excluded[tid]))
                else:
                    out.append(_planned(common, results.get(tid), by_id[tid].wheel_name))
    return out


def _rows(matrix: Matrix) -> list[tuple[PythonVersion, str]]:
    rows = [(p, "") for p in matrix.pythons] + [(p, d.describe()) for p, d in dropped_pythons(matrix)]
    return sorted(rows, key=lambda r: (r[0].major, r[0].minor, r[0].free_threaded))


def _planned(common: dict[str, str], result: Mapping[str, Any] | None, wheel: str) -> Cell:
    if result is None:
        return Cell(**common, status="planned", wheel=wheel)
    reason = result.get("reason", "")
    if result.get("stage") and result["status"] == "failed":
        reason = f"at {result['stage']}: {reason}"
    return Cell(**common, status=result["status"], reason=reason, engine=result.get("engine", ""),
                wheel=result.get("wheel", wheel))


def install_commands(matrix: Matrix) -> dict[str, str]:
    """The pip command per variant, and per platform for the PyPI default."""
    p = matrix.project
    out = {f"pypi ({platform})": f"pip install {p.name}=={p.version}" for platform, _ in matrix.channels.pypi}
    for v in matrix.variants:
        url = matrix.channels.index_base_url + matrix.channels.index_path(v.label)
        out[v.label] = f"pip install {p.name}=={p.version} --index-url {url}"
    return out


def to_json(matrix: Matrix, results: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    return {
        "project": matrix.project.name,
        "version": str(matrix.project.version),
        "released": matrix.project.released,
        "cells": [c.to_json() for c in cells(matrix, results)],
        "install": install_commands(matrix),
        "pypi_default": dict(matrix.channels.pypi),
        "dropped": [{"what": d.value, "kind": d.kind.value, "since": d.since, "reason": d.reason} for d in matrix.dropped],
    }


def to_markdown(matrix: Matrix, results: Mapping[str, Mapping[str, Any]]) -> str:
    all_cells = cells(matrix, results)
    notes: dict[str, int] = {}
    out = [f"# {matrix.project.name} {matrix.project.version} compatibility matrix", ""]
    for platform in matrix.platforms:
        out += [f"## {platform.name} ({platform.wheel_platform}, PyPI default: "
                f"{matrix.channels.pypi_label(platform.name) or 'none'})", ""]
        mine = [c for c in all_cells if c.platform == platform.name]
        rows = []
        for python, _ in _rows(matrix):
            row = [c for c in mine if c.python == str(python)]
            rows.append([str(python)] + [_md_cell(c, notes) for c in row])
        out += [markdown_table(["Python"] + [v.label for v in matrix.variants], rows), ""]
    out += ["## Notes", ""] + [f"{n}. {_md(text)}" for text, n in notes.items()] + [""]
    out += ["## Install", ""] + [f"- {k}: `{cmd}`" for k, cmd in install_commands(matrix).items()] + [""]
    return "\n".join(out)


def _md_cell(cell: Cell, notes: dict[str, int]) -> str:
    if cell.status in ("excluded", "dropped") or cell.reason:
        n = notes.setdefault(cell.reason, len(notes) + 1)
        label = {"excluded": "—", "dropped": "dropped"}.get(cell.status, MARK.get(cell.status, cell.status))
        return f"{_md(label)} [{n}]"
    engine = f" ({cell.engine})" if cell.engine else ""
    return _md(MARK.get(cell.status, cell.status) + engine)


def to_html(matrix: Matrix, results: Mapping[str, Mapping[str, Any]]) -> str:
    """A standalone page: one table per platform, reasons as tooltips.

    Every value that comes from the matrix or a results file is escaped (``_e``); only the
    page's own markup is written raw.
    """
    all_cells = cells(matrix, results)
    title = f"{_e(matrix.project.name)} {_e(matrix.project.version)}"
    parts = [f"<!doctype html><meta charset=utf-8><title>{title}</title><h1>{title}</h1>"]
    for platform in matrix.platforms:
        parts.append(f"<h2>{_e(platform.name)}</h2><table border=1><tr><th>Python</th>"
                     + "".join(f"<th>{_e(v.label)}</th>" for v in matrix.variants) + "</tr>")
        for python, _ in _rows(matrix):
            row = [c for c in all_cells if c.platform == platform.name and c.python == str(python)]
            parts.append(f"<tr><th>{_e(python)}</th>" + "".join(map(_html_cell, row)) + "</tr>")
        parts.append("</table>")
    return "\n".join(parts) + "\n"


def _html_cell(cell: Cell) -> str:
    return f'<td class="{_e(cell.status)}" title="{_e(cell.reason)}">{_e(MARK.get(cell.status, cell.status))}</td>'


def _e(value: object) -> str:
    """``value`` as HTML text or attribute value (quotes escaped too)."""
    return html.escape(str(value), quote=True)


def _md(text: str) -> str:
    """``text`` safe in a Markdown table cell: no raw HTML (``<`` starts every tag), no line break."""
    return " ".join(str(text).replace("<", "&lt;").split())
