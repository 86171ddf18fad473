"""The compatibility matrix: Python x variant per platform, as Markdown, JSON and HTML.

A pure function of the matrix and (optionally) build results (:class:`builders.pipeline.results.Result`
by target id, as :func:`builders.pipeline.results.load` reads them). Every cell that is not a
wheel says why: excluded (with the exclusion's reason) or dropped (since when and why). A
reason is written out once, as a numbered note, and every cell it applies to points at it.

The HTML page (``templates/compatibility.html.j2``, jinja2 with autoescape) is
self-contained: inline CSS, no script, no external asset. Its install selector is radio
buttons and CSS (``:has``): the one command matching the picked platform, package manager,
Python and compute platform stays visible. The tables show every combination's status and
command without it.
"""

from __future__ import annotations

import dataclasses
import html
import itertools
import os
import shlex
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any
from urllib.parse import quote, urlsplit

import jinja2
from markupsafe import Markup

from builders.base.console import markdown_table
from builders.matrix.model import OS, Dropped, Matrix, Platform, PythonVersion, Variant
from builders.matrix.policy import dropped_pythons
from builders.matrix.release_channels import ChannelName
from builders.matrix.targets import Target, expand, shared_id, target_id
from builders.pipeline.results import Result

MARK = {"planned": "planned", "built": "✅ built", "reused": "✅ reused", "failed": "❌ failed",
        "skipped": "⏭ skipped", "interrupted": "⚠ interrupted", "excluded": "—", "dropped": "dropped"}

# status: (symbol, word, what it means), in the order the legend lists them. The symbols are in
# every common text font (no emoji font needed); the word is always written next to them.
LEGEND: dict[str, tuple[str, str, str]] = {
    "planned": ("○", "planned", "in the release plan; no build result was given for it"),
    "built": ("✓", "built", "built, verified and smoke-tested in this run"),
    "reused": ("✓", "reused", "a verified wheel from an earlier run of the same build plan"),
    "failed": ("✗", "failed", "the build failed; its note names the stage and the reason"),
    "skipped": ("»", "skipped", "not built in this run; its note says why"),
    "interrupted": ("⚠", "interrupted", "the run was stopped before this build finished"),
    "excluded": ("—", "not available", "the matrix excludes this combination; its note says why"),
    "dropped": ("⊘", "dropped", "no longer supported; its note names the release that dropped it"),
}
NOTED = ("excluded", "dropped")  # statuses whose reason is what the cell means
NOTE_GROUPS = (("dropped", "Dropped in this release"), ("excluded", "Excluded combinations"),
               ("build", "Build results"))
OS_NAME = {OS.LINUX: "Linux", OS.WINDOWS: "Windows", OS.MACOS: "macOS"}
MANAGERS = ("pip", "uv")
SUMMARY_LIMIT = 1 << 20  # a GitHub job summary takes at most 1 MiB per step
NOTE_LIMIT = 1000  # characters of one reason in the Markdown report (the JSON keeps all of it)


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
    log: str = ""

    def to_json(self) -> dict[str, str]:
        return {k: v for k, v in self.__dict__.items() if v}


def cells(matrix: Matrix, results: Mapping[str, Result]) -> list[Cell]:
    """Every cell of the report, in platform, Python, variant order."""
    targets, excluded = expand(matrix)
    by_id = {t.id: t for t in targets} | shared_by_python(targets)
    why_excluded = {e.id: e.reason for e in excluded}
    out = []
    for platform in matrix.platforms:
        for python, dropped in _rows(matrix):
            for variant in matrix.variants:
                tid = target_id(variant.label, python, platform.name)
                common = {"platform": platform.name, "python": str(python), "variant": variant.label, "id": tid}
                if dropped:
                    out.append(Cell(**common, status="dropped", reason=dropped))
                elif tid in why_excluded or tid not in by_id:
                    whole = shared_id(variant.label, matrix.project.wheel_shape, platform.name)
                    out.append(Cell(**common, status="excluded", reason=why_excluded.get(tid, why_excluded.get(whole, ""))))
                else:
                    target = by_id[tid]  # a shared wheel's cell: its one target, its one wheel
                    common["id"] = target.id
                    out.append(_planned(common, results.get(target.id), target.wheel_name))
    return out


def shared_by_python(targets: Iterable[Target]) -> dict[str, Target]:
    """A shared wheel's target under each per-Python id it serves (``cpu-cp313-linux-x86_64`` -> ``cpu-abi3-...``):
    the report keeps a cell per Python, every one naming the same wheel."""
    return {target_id(t.variant.label, p, t.platform.name): t for t in targets if t.shape.shared for p in t.tested_pythons}


def _rows(matrix: Matrix) -> list[tuple[PythonVersion, str]]:
    rows = [(p, "") for p in matrix.pythons] + [(p, d.describe()) for p, d in dropped_pythons(matrix)]
    return sorted(rows, key=lambda r: (r[0].major, r[0].minor, r[0].free_threaded))


def _planned(common: dict[str, str], result: Result | None, wheel: str) -> Cell:
    if result is None:
        return Cell(**common, status="planned", wheel=wheel)
    reason = f"at {result.stage}: {result.reason}" if result.stage and result.status == "failed" else result.reason
    return Cell(**common, status=result.status, reason=reason, engine=result.engine, wheel=result.wheel or wheel,
                log=result.log)


# --- install commands ----------------------------------------------------------------------


def index_url(matrix: Matrix, label: str) -> str:
    """The variant's own index: ``channels.index.base_url`` + its layout."""
    return matrix.channels.index_base_url + matrix.channels.index_path(label)


def install_argv(matrix: Matrix, platform: Platform, variant: Variant, python: PythonVersion,
                 manager: str = "pip") -> list[str]:
    """The command that installs ``variant`` for ``python`` on ``platform``: from PyPI when the
    variant is the platform's PyPI default, else with ``--index-url`` of its own index."""
    spec = f"{matrix.project.name}=={matrix.project.version.public}"
    if manager == "uv":
        argv = ["uv", "pip", "install", "--python", str(python), spec]
    elif platform.os is OS.WINDOWS:
        argv = ["py", f"-{python}", "-m", "pip", "install", spec]
    else:
        argv = [f"python{python}", "-m", "pip", "install", spec]
    if matrix.channels.pypi_label(platform.name) != variant.label:
        argv += ["--index-url", index_url(matrix, variant.label)]
    return argv


def install_command(matrix: Matrix, platform: Platform, variant: Variant, python: PythonVersion,
                    manager: str = "pip") -> str:
    return shlex.join(install_argv(matrix, platform, variant, python, manager))


def install_commands(matrix: Matrix) -> dict[str, str]:
    """The pip command per variant, and per platform for the PyPI default."""
    p = matrix.project
    out = {f"pypi ({platform})": f"pip install {p.name}=={p.version}" for platform, _ in matrix.channels.pypi}
    for v in matrix.variants:
        out[v.label] = f"pip install {p.name}=={p.version} --index-url {index_url(matrix, v.label)}"
    return out


def channel_installs(matrix: Matrix) -> dict[str, dict[str, dict[str, str]]]:
    """Per channel, per variant label, the pip and uv commands that install from that channel's index
    (the release channel's PyPI default variants from PyPI, as :func:`install_commands` says)."""
    out: dict[str, dict[str, dict[str, str]]] = {}
    for channel in matrix.channels.lifecycle:
        version = None if channel.prerelease else channel.version(matrix.project.version)
        out[channel.name.value] = {
            v.label: {manager: channel.install_command(matrix.project.name, version,
                                                       matrix.channels.index_url(channel, v.label), manager)
                      for manager in ("pip", "uv")}
            for v in matrix.variants}
    return out


VARIANT_INSTALLERS = ("uv picks the variant itself with --preview-features wheel-variants (built-in NVIDIA detection; "
                      "the null variant where no provider matches); pip ignores variant wheels: use the per-index "
                      "commands with pip")


def variant_index_url(matrix: Matrix) -> str | None:
    """The variant-enabled index (PEP 825) beside the per-label ones, where the matrix declares wheel_variants."""
    wv = matrix.wheel_variants
    return matrix.channels.index_base_url + wv.layout if wv is not None else None


def variant_index_published(matrix: Matrix) -> bool:
    """Only a release-only lifecycle writes ``variants/``: promote-release copies the test channel's indexes."""
    return matrix.wheel_variants is not None and all(c.name is ChannelName.RELEASE for c in matrix.channels.lifecycle)


def variant_install_command(matrix: Matrix) -> str | None:
    """The one-line install that lets the installer pick the variant (uv only, as a preview feature), where the
    variant index is published (never a command that answers "not found")."""
    url = variant_index_url(matrix)
    if url is None or not variant_index_published(matrix):
        return None
    p = matrix.project
    return shlex.join(["uv", "pip", "install", "--preview-features", "wheel-variants",
                       f"{p.name}=={p.version.public}", "--index-url", url])


def variant_name(variant: Variant) -> str:
    """``CUDA 13.4``, ``CPU``."""
    family = variant.accelerator.facts.display
    return f"{family} {variant.version}" if variant.version else family


def platform_name(platform: Platform) -> str:
    """``Linux x86_64``."""
    return f"{OS_NAME[platform.os]} {platform.arch}"


# --- notes: each reason once ----------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Note:
    number: int
    kind: str
    text: str

    @property
    def anchor(self) -> str:
        return f"note-{self.number}"


@dataclass
class Notes:
    """Reasons numbered in order of first use; the same text is one note."""

    by_text: dict[str, Note] = field(default_factory=dict)

    def ref(self, kind: str, text: str) -> Note:
        return self.by_text.setdefault(text, Note(number=len(self.by_text) + 1, kind=kind, text=text))

    def __iter__(self) -> Iterator[Note]:
        return iter(self.by_text.values())

    def grouped(self) -> list[tuple[str, str, list[Note]]]:
        """(kind, heading, notes) for each kind that has notes, in :data:`NOTE_GROUPS` order."""
        groups = [(kind, title, [n for n in self if n.kind == kind]) for kind, title in NOTE_GROUPS]
        return [g for g in groups if g[2]]


def note_kind(status: str) -> str:
    return status if status in NOTED else "build"


# --- JSON ---------------------------------------------------------------------------------


def to_json(matrix: Matrix, results: Mapping[str, Result]) -> dict[str, Any]:
    return {
        "project": matrix.project.name,
        "version": str(matrix.project.version),
        "released": matrix.project.released,
        "cells": [c.to_json() for c in cells(matrix, results)],
        "install": install_commands(matrix),
        "channels": channel_installs(matrix),
        "variant_install": ({"command": variant_install_command(matrix), "installers": VARIANT_INSTALLERS}
                            if variant_index_published(matrix) else None),
        "pypi_default": dict(matrix.channels.pypi),
        "variants": [variant_json(matrix, v) for v in matrix.variants],
        "dropped": [{"what": d.value, "kind": d.kind.value, "since": d.since, "reason": d.reason,
                     "description": d.describe()} for d in matrix.dropped],
    }


def variant_json(matrix: Matrix, v: Variant) -> dict[str, Any]:
    return {"label": v.label, "name": variant_name(v), "accelerator": v.accelerator.value, "version": v.version,
            "toolkit": list(toolkit_of(v)), "runtime_requirements": list(v.runtime_requirements),
            "arch_lists": dict(v.arch_lists), "notes": v.notes, "index_url": index_url(matrix, v.label)}


def toolkit_of(v: Variant) -> tuple[str, ...]:
    """What builds the variant: pinned requirements, or system packages, or the host compiler."""
    return v.toolkit.requirements or v.toolkit.system_packages or ("the host's C++ compiler",)


# --- Markdown -------------------------------------------------------------------------------


def to_markdown(matrix: Matrix, results: Mapping[str, Result], *, limit: int = SUMMARY_LIMIT) -> str:
    """Tables per platform whose cells point at footnotes; each reason is written once, at the end.

    Dropped Pythons are listed once (not as rows), and a variant a platform excludes for one
    reason is named under the table instead of filling a column. The whole text stays under
    ``limit`` bytes (a GitHub job summary): long reasons are cut, then notes if need be.
    """
    by_key = {(c.platform, c.python, c.variant): c for c in cells(matrix, results)}
    notes = Notes()
    out = [f"# {matrix.project.name} {matrix.project.version} compatibility matrix", ""]
    for platform in matrix.platforms:
        out += _md_platform(matrix, platform, by_key, notes)
    out += _md_install(matrix) + _md_dropped(matrix)
    body = "\n".join(out)
    return _fit(body, [f"[^{n.number}]: {_md(_cut(n.text))}" for n in notes], limit)


def _md_platform(matrix: Matrix, platform: Platform, by_key: Mapping[tuple[str, str, str], Cell],
                 notes: Notes) -> list[str]:
    pythons = sorted(matrix.pythons)
    whole = whole_column_exclusions(matrix, platform, by_key)
    shown = [v for v in matrix.variants if v.label not in whole]
    default = matrix.channels.pypi_label(platform.name) or "none"
    out = [f"## {platform.name} ({platform.wheel_platform}; on PyPI: {default})", ""]
    rows = [[_md_python(py)] + [_md_cell(by_key[(platform.name, str(py), v.label)], notes) for v in shown]
            for py in pythons]
    out += [markdown_table(["Python"] + [v.label for v in shown], rows), ""]
    if whole:
        grouped: dict[str, list[str]] = {}
        for label, reason in whole.items():
            grouped.setdefault(reason, []).append(label)
        parts = [f"{', '.join(labels)} [^{notes.ref('excluded', reason).number}]" for reason, labels in grouped.items()]
        out += [f"Not available on {platform.name}: " + "; ".join(parts) + ".", ""]
    return out


def _md_python(python: PythonVersion) -> str:
    return f"{python} (free-threaded)" if python.free_threaded else str(python)


def _md_cell(cell: Cell, notes: Notes) -> str:
    engine = f" ({_md(cell.engine)})" if cell.engine else ""
    text = _md(MARK.get(cell.status, cell.status)) + engine
    if cell.reason:
        text += f" [^{notes.ref(note_kind(cell.status), cell.reason).number}]"
    return text


def _md_install(matrix: Matrix) -> list[str]:
    """PyPI once (with the default it installs per platform), then each variant's own index."""
    p = matrix.project
    defaults: dict[str, list[str]] = {}
    for platform, label in matrix.channels.pypi:
        defaults.setdefault(label, []).append(platform)
    where = "; ".join(f"{label} on {', '.join(platforms)}" for label, platforms in defaults.items())
    out = ["## Install", "", f"- PyPI: `pip install {p.name}=={p.version.public}` ({_md(where)})"]
    out += [f"- {_md(v.label)}: `pip install {p.name}=={p.version.public} --index-url {index_url(matrix, v.label)}`"
            for v in matrix.variants]
    variant = variant_install_command(matrix)
    if variant:
        out += [f"- Any variant, chosen by the installer (wheel variants, PEP 825): `{variant}` ({_md(VARIANT_INSTALLERS)})"]
    return out + ["", "The HTML page has the exact command per Python, operating system and package manager (pip, uv).",
                  "", *_md_channels(matrix)]


def _md_channels(matrix: Matrix) -> list[str]:
    """The pre-release channels' commands (the release channel's are the list above)."""
    out = []
    for name, by_label in channel_installs(matrix).items():
        if name == "release":
            continue
        out += [f"### The {name} channel", ""]
        out += [f"- {_md(label)}: `{commands['pip']}`" for label, commands in by_label.items()]
        out.append("")
    return out


def _md_dropped(matrix: Matrix) -> list[str]:
    if not matrix.dropped:
        return []
    return ["## Dropped in this release", ""] + [f"- {_md(d.describe())}" for d in matrix.dropped] + [""]


def _fit(body: str, notes: Sequence[str], limit: int) -> str:
    """``body`` and as many notes as fit in ``limit`` bytes (UTF-8)."""
    text = body + "\n## Notes\n\n"
    for i, note in enumerate(notes):
        if len((text + note + "\n\n").encode()) > limit - 200:
            return text + f"... {len(notes) - i} more notes: see compatibility.json or the HTML page.\n"
        text += note + "\n\n"
    return text


def _cut(text: str) -> str:
    return text if len(text) <= NOTE_LIMIT else text[:NOTE_LIMIT] + " … (cut; the JSON report has all of it)"


def whole_column_exclusions(matrix: Matrix, platform: Platform,
                            by_key: Mapping[tuple[str, str, str], Cell]) -> dict[str, str]:
    """label -> reason for every variant that ``platform`` excludes for all Pythons with one reason."""
    out = {}
    for v in matrix.variants:
        column = [by_key[(platform.name, str(py), v.label)] for py in matrix.pythons]
        reasons = {c.reason for c in column}
        if column and all(c.status == "excluded" for c in column) and len(reasons) == 1:
            out[v.label] = reasons.pop()
    return out


def _md(text: str) -> str:
    """``text`` safe in a Markdown table cell: no raw HTML (``<`` starts every tag), no line break."""
    return " ".join(str(text).replace("<", "&lt;").split())


# --- HTML -----------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class HtmlCell:
    status: str
    text: str
    symbol: str = ""
    note: Note | None = None
    command: str = ""
    engine: str = ""
    log: str = ""
    rowspan: int = 1
    colspan: int = 1

    @property
    def css(self) -> str:
        return f"st-{self.status}" if self.status in LEGEND else "st-unknown"


@dataclass(frozen=True, kw_only=True)
class Row:
    python: PythonVersion
    cells: tuple[HtmlCell, ...]
    dropped: bool = False


@dataclass(frozen=True, kw_only=True)
class Table:
    platform: Platform
    name: str
    default: str
    rows: tuple[Row, ...]


@dataclass(frozen=True, kw_only=True)
class Answer:
    """One combination of the install selector: its classes, and a command or why there is none."""

    classes: str
    title: str
    command: str = ""
    note: Note | None = None


def to_html(matrix: Matrix, results: Mapping[str, Result]) -> str:
    """Every value from the matrix or a results file is autoescaped (quotes too); only the template is raw."""
    by_key = {(c.platform, c.python, c.variant): c for c in cells(matrix, results)}
    notes = Notes()
    for d in matrix.dropped:  # every dropped item is a note, numbered first
        notes.ref("dropped", d.describe())
    tables = [html_table(matrix, p, by_key, notes) for p in matrix.platforms]
    page = {
        "matrix": matrix, "project": matrix.project, "tables": tables, "notes": notes,
        "legend": [(k, *v) for k, v in LEGEND.items()], "managers": MANAGERS,
        "pythons": [py for py, _ in _rows(matrix)], "variants": [(v, variant_name(v)) for v in matrix.variants],
        "platforms": [(p, platform_name(p)) for p in matrix.platforms],
        "answers": answers(matrix, by_key, notes), "defaults": selector_defaults(matrix),
        "toolkits": [toolkit_row(matrix, v) for v in matrix.variants], "note_groups": notes.grouped(),
        "has_results": bool(results), "variant_name": variant_name,
        "variant_install": variant_install_command(matrix), "variant_installers": VARIANT_INSTALLERS,
        "channels": {k: v for k, v in channel_installs(matrix).items() if k != "release"},
    }
    return template().render(**page)


def html_table(matrix: Matrix, platform: Platform, by_key: Mapping[tuple[str, str, str], Cell],
               notes: Notes) -> Table:
    pythons = sorted(matrix.pythons)
    whole = whole_column_exclusions(matrix, platform, by_key)
    rows = []
    for i, python in enumerate(pythons):
        row = []
        for v in matrix.variants:
            if v.label in whole and i > 0:
                continue  # covered by the first row's cell, which spans the column
            cell = html_cell(matrix, by_key[(platform.name, str(python), v.label)], notes)
            row.append(dataclasses.replace(cell, rowspan=len(pythons)) if v.label in whole else cell)
        rows.append(Row(python=python, cells=tuple(row)))
    for python, dropped in dropped_pythons(matrix):
        rows.append(dropped_row(matrix, python, dropped, notes))
    default = matrix.channels.pypi_label(platform.name)
    return Table(platform=platform, name=platform_name(platform), rows=tuple(rows),
                 default=variant_name(matrix.variant(default)) if default else "")


def html_cell(matrix: Matrix, cell: Cell, notes: Notes) -> HtmlCell:
    symbol, word, _ = LEGEND.get(cell.status, ("?", cell.status, ""))
    note = notes.ref(note_kind(cell.status), cell.reason) if cell.reason else None
    command = ""
    if cell.status not in (*NOTED, "failed", "interrupted"):
        python = PythonVersion.parse(cell.python)
        command = install_command(matrix, matrix.platform(cell.platform), matrix.variant(cell.variant), python)
    return HtmlCell(status=cell.status, text=word, symbol=symbol, note=note, command=command, engine=cell.engine,
                    log=safe_href(cell.log))


def dropped_row(matrix: Matrix, python: PythonVersion, dropped: Dropped, notes: Notes) -> Row:
    cell = HtmlCell(status="dropped", text=f"dropped in {dropped.since}", symbol=LEGEND["dropped"][0],
                    note=notes.ref("dropped", dropped.describe()), colspan=len(matrix.variants))
    return Row(python=python, cells=(cell,), dropped=True)


def safe_href(path: str) -> str:
    """A relative link to a log, or ``""``: a results file is untrusted, so no scheme, host or
    absolute path gets through (``javascript:`` included)."""
    if not path:
        return ""
    parts = urlsplit(path)
    if parts.scheme or parts.netloc or path.startswith(("/", "\\")) or any(ord(c) < 32 for c in path):
        return ""
    return quote(path, safe="/._-~")


def answers(matrix: Matrix, by_key: Mapping[tuple[str, str, str], Cell], notes: Notes) -> list[Answer]:
    """Every (platform, manager, Python, variant) the selector can pick, in that order."""
    pythons = [py for py, _ in _rows(matrix)]
    out = []
    for (pi, platform), (mi, manager), (yi, python), (vi, variant) in itertools.product(
            enumerate(matrix.platforms), enumerate(MANAGERS), enumerate(pythons), enumerate(matrix.variants)):
        cell = by_key[(platform.name, str(python), variant.label)]
        note = notes.ref(cell.status, cell.reason) if cell.status in NOTED else None
        command = "" if note else install_command(matrix, platform, variant, python, manager)
        title = f"{platform_name(platform)}, {manager}, Python {_md_python(python)}, {variant_name(variant)}"
        out.append(Answer(classes=f"p{pi} m{mi} y{yi} v{vi}", title=title, command=command, note=note))
    return out


def selector_defaults(matrix: Matrix) -> dict[str, int]:
    """What the selector shows first: the first platform, pip, the newest GIL Python, the PyPI default."""
    pythons = [py for py, _ in _rows(matrix)]
    newest = max((py for py in matrix.pythons if not py.free_threaded), default=matrix.pythons[-1])
    default = matrix.channels.pypi_label(matrix.platforms[0].name)
    labels = [v.label for v in matrix.variants]
    return {"p": 0, "m": 0, "y": pythons.index(newest), "v": labels.index(default) if default in labels else 0}


def toolkit_row(matrix: Matrix, v: Variant) -> dict[str, Any]:
    arch = [(platform_name(matrix.platform(p)) if p != "*" else "all platforms", ", ".join(a.split(";")))
            for p, a in v.arch_lists]
    return {"name": variant_name(v), "label": v.label, "toolkit": toolkit_of(v), "runtime": v.runtime_requirements,
            "arch": arch, "notes": v.notes, "index": index_url(matrix, v.label)}


def _finalize(value: object) -> Markup:
    """Every ``{{ value }}`` escaped, quotes as ``&quot;``, before autoescape sees it."""
    if isinstance(value, Markup):
        return value
    return Markup(html.escape("" if value is None else str(value), quote=True))


@cache
def template() -> jinja2.Template:
    env = jinja2.Environment(loader=jinja2.PackageLoader("builders", "templates"), autoescape=True,
                             finalize=_finalize, undefined=jinja2.StrictUndefined, trim_blocks=True,
                             lstrip_blocks=True, keep_trailing_newline=True)
    return env.get_template("compatibility.html.j2")


def rebase_logs(results: Mapping[str, Result], results_dir: str, output_dir: str) -> dict[str, Result]:
    """Relative to the page, not the results file, so the page's links open the logs."""
    return {tid: _rebased(result, results_dir, output_dir) for tid, result in results.items()}


def _rebased(result: Result, results_dir: str, output_dir: str) -> Result:
    if not (result.log and safe_href(result.log)):
        return result
    return dataclasses.replace(result, log=os.path.relpath(os.path.join(results_dir, result.log), output_dir)
                               .replace(os.sep, "/"))
