"""``index WHEELHOUSE --output DIR``: a static per-label package index of the wheels found."""

from __future__ import annotations

from pathlib import Path

from builders.base.console import Console
from builders.cli import load
from builders.cli.arguments import Options
from builders.index.mirror import RECORD
from builders.index.pages import (
    IndexBuildError,
    find_wheels,
    index_with_requirements,
)

HELP = "write a static package index of a wheelhouse"
DESCRIPTION = ("Lay out every *.whl under WHEELHOUSE as a static index per local version label "
                "(the matrix's index layout, whl/<label>/): PEP 503 HTML, PEP 691 JSON and "
                "PEP 658/714 .metadata files, served by any static file server or a file:// "
                "URL to pip --index-url. Unlabelled wheels are skipped; every labelled wheel is "
                "verified against its target first. Each label's index also gets the wheels its "
                "wheels require (dependencies and runtime requirements), resolved by pip from its "
                "configured index for each target's Python and platform, hash-checked and "
                f"recorded in whl/<label>/{RECORD}, so that pip --index-url alone installs from "
                "it. Exit 16 on a wheel that does not verify, clashing files, a label the matrix "
                "does not have, a requirement that cannot be mirrored, or no labelled wheel.")


def execute(opts: Options, console: Console) -> int:
    m = load.matrix(opts)
    wheels = find_wheels(opts.wheelhouse)
    if not wheels:
        raise IndexBuildError(f"{opts.wheelhouse}: no wheels (*.whl) under this folder, nothing to index")
    result = index_with_requirements(m, wheels, opts.output, opts.env, mirror=not opts.no_mirror)
    for path in result.skipped:
        console.warning(f"{path.name}: unlabelled, not indexed")
    if not result.files:
        raise IndexBuildError(f"{opts.wheelhouse}: none of its {len(wheels)} wheel(s) carries a variant label "
                              "(such as 2.15.0+cu132), nothing to index")
    for label in result.labels:
        count = sum(1 for f in result.files if f.label == label)
        needed = sorted({f.filename for f in result.mirrored if f.label == label})
        also = f", {len(needed)} requirement wheel(s) mirrored" if needed else ""
        console.line(f"{Path(opts.output) / m.channels.index_path(label)}: {count} wheel(s){also}")
    return 0
