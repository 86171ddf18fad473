"""The share of released targets that ``rebuild`` reproduces byte for byte, and the cause of every difference.

Each case is released and rebuilt: the release is built from a clean clone of a git repository (the
demo: this checkout's HEAD; the others: a repository made here), its manifest written from the build's
results.json (``--local-only`` wheels, tagged at this host's level, which the ``manifest`` command
refuses; the records are the same), then ``builders rebuild`` checks the commit out into another folder
and builds the target again with an empty compiler cache (every file compiled again) and compares:

- the demo (examples/minifw): its Linux cpu and cu132 targets for one Python;
- tests/projects/cudakit: a CMake project whose CUDA kernel the pinned pip toolkit compiles (cu132);
- a third-party sdist fetched from the package index at run time (MarkupSafe, with
  tests/projects/markupsafe's matrix): its cpu target.

It prints one line per target (identical, or each difference's member, kind and detail), then the
share identical against the goal (95 %); exit 1 below it.

    python benchmarks/bench_rebuild.py [--only NAME ...] [--work DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from tests import helpers, rebuilds  # noqa: E402

GOAL = 0.95
PROJECTS = ROOT / "tests" / "projects"


@dataclass(frozen=True)
class Case:
    name: str
    target: str
    repo: Callable[[Path], tuple[Path, str]]  # a folder -> (the repository, its commit)


def demo(folder: Path) -> tuple[Path, str]:
    """This checkout's HEAD (its demo is committed; a dirty tree is not what a release builds)."""
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], check=True, capture_output=True, text=True)
    return ROOT, head.stdout.strip()


def project(name: str) -> Callable[[Path], tuple[Path, str]]:
    def make(folder: Path) -> tuple[Path, str]:
        repo = folder / "repo"
        return repo, rebuilds.committed(PROJECTS / name, repo)
    return make


def sdist(name: str) -> Callable[[Path], tuple[Path, str]]:
    """The sdist of the version ``tests/projects/NAME``'s matrix names, unpacked, with that matrix, committed."""
    def make(folder: Path) -> tuple[Path, str]:
        data = yaml.safe_load((PROJECTS / name / "matrix.yaml").read_text())["project"]
        source = helpers.fetch_sdist(data["name"], str(data["version"]), folder / "sdist")
        shutil.copytree(PROJECTS / name, source, dirs_exist_ok=True)
        repo = folder / "repo"
        return repo, rebuilds.committed(source, repo)
    return make


CASES = (
    Case("demo-cpu", "cpu-cp312-linux-x86_64", demo),
    Case("cudakit-cu132", "cu132-cp312-linux-x86_64", project("cudakit")),
    Case("markupsafe-sdist-cpu", "cpu-cp312-linux-x86_64", sdist("markupsafe")),
    Case("demo-cu132", "cu132-cp312-linux-x86_64", demo),
)


def released(repo: Path, commit: str, target: str, folder: Path) -> tuple[Path, Path]:
    """The release: built from a clean clone of ``commit`` (never from a working tree's edits)."""
    clean = folder / "release-src"
    subprocess.run(["git", "clone", "--quiet", "--shared", str(repo), str(clean)], check=True, capture_output=True)
    subprocess.run(["git", "-C", str(clean), "checkout", "--quiet", "--detach", commit], check=True,
                   capture_output=True)
    return rebuilds.release(clean, commit, target, folder / "release")


def run_case(case: Case, work: Path) -> dict:
    folder = work / case.name
    folder.mkdir(parents=True)
    start = time.monotonic()
    repo, commit = case.repo(folder)
    wheel, manifest = released(repo, commit, case.target, folder)
    proc = rebuilds.rebuild(repo, manifest, case.target, wheel, folder / "rebuild")
    if proc.returncode not in (0, 57):
        return {"case": case.name, "target": case.target, "identical": False, "error": proc.stderr.strip()[-600:]}
    outcome = json.loads(proc.stdout)
    return {"case": case.name, "target": case.target, "identical": outcome["identical"],
            "differences": outcome["differences"], "notes": outcome["notes"],
            "seconds": round(time.monotonic() - start, 1)}


def show(result: dict) -> None:
    head = f"{result['case']:<22} {result['target']:<26}"
    if result.get("error"):
        print(f"{head} not rebuilt: {result['error']}", flush=True)
    elif result["identical"]:
        print(f"{head} identical ({result['seconds']} s)", flush=True)
    else:
        print(f"{head} DIFFERENT ({result['seconds']} s)", flush=True)
        for d in result["differences"]:
            print(f"    {d['kind']:<13} {d['member']}  {d['detail']}", flush=True)
    for note in result.get("notes", ()):
        print(f"    input not the release's: {note}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", action="append", default=[], choices=[c.name for c in CASES])
    parser.add_argument("--work", type=Path, help="kept (default: a temporary folder, removed)")
    args = parser.parse_args(argv)
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-rebuild-"))
    results = []
    try:
        for case in [c for c in CASES if not args.only or c.name in args.only]:
            results.append(run_case(case, work))
            show(results[-1])
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    same = sum(r["identical"] for r in results)
    share = same / len(results) if results else 0.0
    print(f"identical: {same} of {len(results)} targets ({share:.0%}; goal {GOAL:.0%})", flush=True)
    return 0 if share >= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
