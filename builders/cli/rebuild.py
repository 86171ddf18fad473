"""``rebuild --manifest M --target T``: build a released target again from its commit and compare the bytes."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from builders.base.console import Console, render_table
from builders.base.errors import NotReproduced, RebuildError
from builders.base.process import ProcessError, run
from builders.channels import manifest, rebuilding
from builders.cli import load
from builders.cli.arguments import Options
from builders.index.remote import Client

HELP = "rebuild a released target from its manifest's commit and compare it byte for byte"
DESCRIPTION = ("Check out the manifest's commit (a shared clone of --repo), build the target there as the release "
               "did (the engine, SOURCE_DATE_EPOCH and tagging its build record names; the toolkit the commit's "
               "matrix pins; a compiler cache of its own, empty) and compare the wheel with the released file: "
               "--wheel, or downloaded from --channel, either checked against the manifest's sha256. Identical: "
               "exit 0. Different: exit 57, naming each differing member and the kind of difference (timestamps, "
               "paths, ordering, metadata, code, only on one side); a build input that was not the release's "
               "(compiler, toolkit, image id) is said too.")


def execute(opts: Options, console: Console) -> int:
    made = manifest.load(opts.manifest)
    file = rebuilding.released_file(made, opts.target)
    released = rebuilding.checked(released_bytes(opts, file), file, str(opts.wheel or file.name))
    env = dict(opts.env)
    repo = Path(top_level(opts.repo, env))
    try:
        at = opts.matrix.resolve().relative_to(repo)
    except ValueError:
        raise RebuildError(f"--matrix {opts.matrix} is not inside the repository {repo}") from None
    record = made.build_of(opts.target) or {}
    with work_folder(opts.work) as work:
        src = rebuilding.checkout(repo, made.commit, work / "src", env)
        argv = rebuilding.build_argv(src / at, opts.target, work / "out", rebuilding.fresh_cache(opts.cache, work),
                                     made, record)
        console.line(f"rebuilding {opts.target} at {made.commit[:12]} in {work}")
        wheel, entry = rebuilding.build(argv, (src / at).parent, record, env, work / "rebuild.log", opts.target)
        outcome = rebuilding.compare(opts.target, released, file.name, wheel,
                                     rebuilding.notes(record, entry.get("rebuild", {})))
        show(outcome, console, as_json=opts.json)
    if not outcome.identical:
        raise NotReproduced(f"{opts.target}: {len(outcome.differences)} difference(s) from the released {file.name}")
    return 0


def released_bytes(opts: Options, file: manifest.ManifestFile) -> bytes:
    """``--wheel``'s bytes, else the file as the channel's index serves it."""
    if opts.wheel:
        return bytes(opts.wheel.read_bytes())
    url = rebuilding.served_at(load.matrix(opts), opts.channel, file)
    got = Client().get(url, limit=file.size + 1, kind="ranges")
    if got is None:
        raise RebuildError(f"{url}: not served (404)")
    return got[1]


def top_level(repo: Path, env: dict[str, str]) -> str:
    try:
        return run(["git", "-C", str(repo), "rev-parse", "--show-toplevel"], env=env, separate_stderr=True).stdout.strip()
    except ProcessError:
        raise RebuildError(f"--repo {repo} is not a git repository") from None


@contextmanager
def work_folder(kept: Path | None) -> Iterator[Path]:
    """``--work`` (kept), else a temporary folder removed afterwards."""
    if kept is not None:
        if kept.exists() and any(kept.iterdir()):
            raise RebuildError(f"--work {kept} is not empty: a rebuild starts from a fresh folder")
        kept.mkdir(parents=True, exist_ok=True)
        yield kept.resolve()
        return
    folder = Path(tempfile.mkdtemp(prefix="builders-rebuild-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def show(outcome: rebuilding.Outcome, console: Console, *, as_json: bool) -> None:
    if as_json:
        console.out(json.dumps(outcome.to_json(), indent=2))
        return
    for note in outcome.notes:
        console.warning(f"build input not the release's: {note}")
    if outcome.identical:
        console.out(f"identical: {outcome.target} {outcome.released}")
        return
    rows = [(d.member, d.kind, d.detail) for d in outcome.differences]
    console.out(render_table(("member", "kind", "detail"), rows))
    console.out(f"different: {outcome.target} {outcome.released}: "
                + ", ".join(f"{n} {k}" for k, n in rebuilding.wheeldiff.summary(outcome.differences).items()))
