"""A release made here and rebuilt: a project committed to a git repository of its own, one target built
(``--local-only``: tagged at this host's level), and its release manifest written from the build's
``results.json`` (the ``manifest`` command refuses ``--local-only`` wheels, which are never published; the
files and build records are the same). Used by tests/integration/test_rebuild.py and
benchmarks/bench_rebuild.py."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from builders.channels import manifest as mf

GIT_ENV = {"GIT_AUTHOR_NAME": "builders", "GIT_AUTHOR_EMAIL": "builders@example.invalid",
           "GIT_COMMITTER_NAME": "builders", "GIT_COMMITTER_EMAIL": "builders@example.invalid"}


def committed(project: Path, repo: Path) -> str:
    """``project``'s files copied into a new git repository at ``repo`` and committed; the commit."""
    shutil.copytree(project, repo, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__", "build"))
    env = {**os.environ, **GIT_ENV}
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "release"]):
        subprocess.run(["git", "-C", str(repo), *argv], check=True, env=env, capture_output=True, timeout=120)
    return subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], check=True, capture_output=True, text=True,
                          timeout=60).stdout.strip()


def builders(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "builders", *args], cwd=cwd, text=True, capture_output=True,
                          timeout=3600)


def release(repo: Path, commit: str, target: str, out: Path) -> tuple[Path, Path]:
    """``target`` built from ``repo``'s matrix.yaml into ``out``; its wheel and the manifest naming it."""
    proc = builders("build", "--matrix", str(repo / "matrix.yaml"), "--target", target, "--local-only", "--no-smoke",
                    "--jobs", "1", "--output", str(out), cwd=repo)
    records = {r["id"]: r for r in json.loads((out / "results.json").read_text())["targets"]}
    record = records[target]
    assert proc.returncode == 0 and record["status"] == "built", (record, proc.stderr[-3000:])
    wheel = out / record["wheel"]
    return wheel, manifest_of(wheel, record, commit, out / "manifest.json")


def manifest_of(wheel: Path, record: dict, commit: str, dest: Path) -> Path:
    """The release manifest naming ``wheel`` (its bytes as they are now) and ``record``'s build record."""
    name, version = wheel.name.split("-")[:2]
    file = mf.ManifestFile(name=wheel.name, sha256=hashlib.sha256(wheel.read_bytes()).hexdigest(),
                           size=wheel.stat().st_size, target=record["id"], form=mf.LABELLED)
    made = mf.Manifest(project=name, version=version.split("+")[0], channel="test", commit=commit,
                       tag=f"v{version.split('+')[0]}-rc1", run_id="1", files=(file,),
                       builds=((record["id"], json.dumps(record["rebuild"], sort_keys=True)),))
    dest.write_bytes(made.dumps())
    return dest


def rebuild(repo: Path, manifest: Path, target: str, wheel: Path, work: Path) -> subprocess.CompletedProcess[str]:
    return builders("rebuild", "--matrix", str(repo / "matrix.yaml"), "--manifest", str(manifest), "--target", target,
                    "--wheel", str(wheel), "--repo", str(repo), "--work", str(work), "--json", cwd=repo)
