"""``manifest WHEELHOUSE --output PATH``: the release manifest of a candidate run (every file it built)."""

from __future__ import annotations

from builders.base.console import Console
from builders.base.errors import SelectionError
from builders.base.safe_output import write_whole
from builders.channels import manifest
from builders.cli import load
from builders.cli.arguments import Options
from builders.pipeline import results

HELP = "write the release manifest of a candidate's files (name, sha256, size, target; tag, commit, run)"
DESCRIPTION = ("List exactly the files a candidate run built, the labelled wheels under WHEELHOUSE (each verified "
               "to be a target of the matrix by its label and tags) and the PyPI-form wheels under --pypi-wheels, "
               "with the run's identity: project, version, channel, commit, tag and run id (in GitHub Actions from "
               "$GITHUB_SHA, $GITHUB_REF_NAME and $GITHUB_RUN_ID). Validation records name the manifest's digest, "
               "and promote-release releases exactly the manifest's files that passed. Where WHEELHOUSE holds the run's "
               "results.json, each target's build record (engine, SOURCE_DATE_EPOCH, toolkit pins, compiler, image id) "
               "goes in too: what `rebuild` needs.")


def execute(opts: Options, console: Console) -> int:
    m = load.matrix(opts)
    missing = [flag for flag, value in (("--tag", opts.tag), ("--commit", opts.commit), ("--run-id", opts.run_id))
               if not value]
    if missing:
        raise SelectionError(f"manifest needs {', '.join(missing)} (or $GITHUB_REF_NAME, $GITHUB_SHA, $GITHUB_RUN_ID)")
    pypi = manifest.public_wheels(opts.pypi_wheels) if opts.pypi_wheels else []
    builds = {tid: r.get("rebuild", {}) for tid, r in results.read(opts.wheelhouse / "results.json").items()}
    made = manifest.make(m, manifest.labelled_wheels(opts.wheelhouse), pypi, channel=opts.channel,
                         commit=opts.commit, tag=opts.tag, run_id=opts.run_id, builds=builds)
    write_whole(opts.output, made.dumps())
    console.line(f"{opts.output}: {len(made.of_form(manifest.LABELLED))} labelled and {len(made.of_form(manifest.PYPI))} "
                 f"PyPI file(s) of {made.project} {made.version} ({made.tag}, run {made.run_id}); sha256 {made.digest}")
    return 0
