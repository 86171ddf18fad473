"""``report``: write the compatibility matrix (Markdown, JSON, HTML)."""

from __future__ import annotations

import json
from pathlib import Path

from builders.base.console import Console
from builders.base.errors import PathError
from builders.base.safe_output import write_whole
from builders.cli import load, rehearse
from builders.cli.arguments import Options
from builders.matrix.model import Matrix
from builders.matrix.targets import expand
from builders.pipeline import results
from builders.report import compatibility as report
from builders.report import rehearsal_report

DEFAULT_RESULTS = Path("wheelhouse/results.json")


HELP = "write the compatibility matrix"
DESCRIPTION = ("Write the compatibility matrix (Python x variant per platform) as Markdown "
                "(each reason once, as footnotes; sized for a GitHub job summary), JSON and a "
                "self-contained HTML page with an install selector (OS, pip or uv, Python, "
                "compute platform) and the command of every combination. With build results, "
                "each built cell shows its real status and links its log. "
                "A results file that is malformed or names targets the matrix does not have "
                "is refused (exit 13).")


def execute(opts: Options, console: Console) -> int:
    m = load.matrix(opts)
    found = read_results(m, opts.matrix, opts.results or [DEFAULT_RESULTS], output=opts.output)
    md = report.to_markdown(m, found)
    written = {
        "compatibility.md": md,
        "compatibility.json": json.dumps(report.to_json(m, found), indent=2) + "\n",
        "compatibility.html": report.to_html(m, found),
    }
    if opts.cost:
        written["cost.md"] = cost_page(opts, m)
    write_all(opts.output, written, console)
    console.job_summary(md)
    return 0


def read_results(m: Matrix, matrix_path: Path, paths: list[Path], *, output: Path | None = None
                 ) -> dict[str, results.Result]:
    """Every results file merged (a later file wins for the same id), each checked against the matrix.

    With ``output`` (where the page goes), each result's log path is made relative to it, so
    the page links the log next to the results file it came from.
    """
    known = {t.id for t in expand(m)[0]}
    found: dict[str, results.Result] = {}
    for path in paths:
        these = {r.id: r for r in results.load(path)}
        results.check_known(path, these, known, matrix_path)
        if output is not None:
            these = report.rebase_logs(these, str(path.parent), str(output))
        found.update(these)
    return found


def write_all(folder: Path, files: dict[str, str], console: Console) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            write_whole(folder / name, text.encode(), root=folder)
            console.line(f"wrote {folder / name}")
    except OSError as exc:
        raise PathError(f"--output {folder}: cannot write: {exc.strerror or exc}") from None


def cost_page(opts: Options, m: Matrix) -> str:
    """``--cost PROFILE``: the release's cost at that scale, and what the matrix added (``--compare``, else git)."""
    done = rehearse.run(opts, m, expand(m)[0], opts.cost)
    earlier = ((str(opts.compare), rehearse.other(opts, opts.cost)) if opts.compare is not None
               else rehearse.before_last_change(opts, opts.cost))
    named = (earlier[0], earlier[1].rehearsal) if earlier is not None else None
    return rehearsal_report.cost_markdown(done.rehearsal, named, done.findings)
