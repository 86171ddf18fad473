"""Rebuild a released target from its manifest and compare the bytes: the release explains itself.

The manifest names the commit, the target's file (name, sha256) and its build record (engine,
SOURCE_DATE_EPOCH, toolkit pins, compiler, image id: :mod:`builders.pipeline.buildrecord`). A rebuild:

1. clones the repository holding the commit into a fresh folder (``git clone --shared``, nothing written
   to the repository itself; a commit it lacks is a :class:`RebuildError` saying so), checked out detached;
2. builds the one target there with ``builders build`` as the release did (its engine, ``--local-only``
   where the record says so, SOURCE_DATE_EPOCH from the record) through a compiler cache of its own,
   empty, beside a link to the shared toolchain cache: every file is compiled again, the pinned toolkit
   is not downloaded again;
3. compares the rebuilt wheel with the released file byte for byte (:mod:`builders.wheel.wheeldiff`), and
   the rebuild's record with the release's (another compiler, toolkit or image is said as a note).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

from builders.base.errors import RebuildError
from builders.base.process import ProcessError, run
from builders.channels.manifest import LABELLED, Manifest, ManifestFile
from builders.matrix.model import Matrix
from builders.wheel import wheeldiff

# The record's keys that must be the same for the rebuild to use the release's inputs.
COMPARED = ("engine", "epoch", "toolkit", "pins", "compiler", "image_id")
BUILD_TIMEOUT = 4 * 3600.0


@dataclass(frozen=True, kw_only=True)
class Outcome:
    target: str
    released: str  # the released file's name
    rebuilt: Path
    differences: tuple[wheeldiff.Difference, ...]
    notes: tuple[str, ...] = ()  # inputs that were not the release's (compiler, toolkit, image)

    @property
    def identical(self) -> bool:
        return not self.differences

    def to_json(self) -> dict[str, Any]:
        return {"target": self.target, "released": self.released, "rebuilt": str(self.rebuilt),
                "identical": self.identical, "differences": [d.to_json() for d in self.differences],
                "summary": wheeldiff.summary(self.differences), "notes": list(self.notes)}


def released_file(manifest: Manifest, target: str) -> ManifestFile:
    """The target's labelled file in ``manifest`` (the form a build makes)."""
    found = manifest.for_target(target, LABELLED)
    if found is None:
        have = sorted({f.target for f in manifest.of_form(LABELLED)})
        raise RebuildError(f"the manifest has no labelled file of {target} (it has {', '.join(have) or 'none'})")
    return found


def served_at(m: Matrix, channel: str, file: ManifestFile) -> str:
    """Where ``channel``'s index serves ``file``: the variant's index folder, the project's page, the file."""
    site = m.channels.index_base_url.rstrip("/") + "/"
    label = file.target.split("-", 1)[0]
    return f"{site}{m.declared_channel(channel).index_path(label)}{canonicalize_name(m.project.name)}/{file.name}"


def checked(data: bytes, file: ManifestFile, where: str) -> bytes:
    """``data`` when it is the manifest's file (its sha256), else a :class:`RebuildError` naming both digests."""
    got = hashlib.sha256(data).hexdigest()
    if got != file.sha256:
        raise RebuildError(f"{where}: sha256 {got}, the manifest's {file.name} is {file.sha256}")
    return data


def checkout(repo: Path, commit: str, dest: Path, env: Mapping[str, str]) -> Path:
    """``commit`` of ``repo`` checked out at ``dest`` (a shared clone: the repository is only read)."""
    found = run(["git", "-C", str(repo), "cat-file", "-e", f"{commit}^{{commit}}"], env=env, check=False,
                separate_stderr=True)
    if found.returncode != 0:
        raise RebuildError(f"commit {commit} is not in the repository at {repo} (fetch it: git fetch origin {commit})")
    run(["git", "clone", "--quiet", "--shared", "--no-checkout", str(repo), str(dest)], env=env, separate_stderr=True)
    run(["git", "-C", str(dest), "checkout", "--quiet", "--detach", commit], env=env, separate_stderr=True)
    return dest


def fresh_cache(toolchains: Path, work: Path) -> Path:
    """A toolchain cache folder holding a link to each toolkit of the shared one, beside a compiler cache of its
    own, new (builds put ccache beside the toolchain folder; its keys are relative to the build folder, so the
    release's objects would be hits and nothing compiled again)."""
    mine = work / "cache" / "toolchains"
    mine.mkdir(parents=True, exist_ok=True)
    for entry in sorted(toolchains.iterdir()) if toolchains.is_dir() else ():
        if not (mine / entry.name).exists():
            (mine / entry.name).symlink_to(entry.resolve(), target_is_directory=entry.is_dir())
    return mine


def build_argv(matrix: Path, target: str, output: Path, cache: Path, manifest: Manifest,
               record: Mapping[str, Any]) -> list[str]:
    """``builders build`` of the one target as the release built it (its record's engine and tagging)."""
    argv = [sys.executable, "-m", "builders", "build", "--matrix", str(matrix), "--target", target,
            "--output", str(output), "--cache", str(cache), "--no-smoke", "--jobs", "1",
            "--engine", str(record.get("engine") or "local")]
    argv += ["--local-only"] if record.get("local_only") else []
    if manifest.channel == "nightly" and "epoch" in record:
        day = datetime.datetime.fromtimestamp(int(record["epoch"]), datetime.UTC).date()
        argv += ["--channel", "nightly", "--commit-date", day.isoformat()]
    return argv


def build(argv: list[str], cwd: Path, record: Mapping[str, Any], env: Mapping[str, str], log: Path,
          target: str) -> tuple[Path, dict[str, Any]]:
    """Run the rebuild's build (its output in ``log``); the wheel it made and its results record."""
    epoch = {"SOURCE_DATE_EPOCH": str(record["epoch"])} if "epoch" in record else {}
    try:
        run(argv, env={**env, **epoch}, cwd=cwd, log=log, timeout=BUILD_TIMEOUT)
    except ProcessError as exc:
        reason = f"exit code {exc.returncode}" if exc.timeout is None else f"timed out after {exc.timeout:g} s"
        raise RebuildError(f"the rebuild of {target} failed ({reason}); its log: {log}") from None
    output = Path(argv[argv.index("--output") + 1])
    entry = json.loads((output / "results.json").read_text(encoding="utf-8"))["targets"]
    (mine,) = [e for e in entry if e["id"] == target]
    return output / mine["wheel"], mine


def notes(released: Mapping[str, Any], rebuilt: Mapping[str, Any]) -> tuple[str, ...]:
    """The build inputs that were not the release's, one line each (none recorded: one line saying so)."""
    if not released:
        return ("the manifest records no build for this target: the rebuild used the commit's matrix as it is",)
    return tuple(f"{key}: released {released.get(key)!r}, rebuilt {rebuilt.get(key)!r}" for key in COMPARED
                 if key in released and released.get(key) != rebuilt.get(key))


def compare(target: str, released: bytes, name: str, rebuilt: Path, inputs: tuple[str, ...]) -> Outcome:
    """The outcome of comparing the released bytes with the rebuilt wheel's."""
    found = wheeldiff.differences(released, rebuilt.read_bytes())
    return Outcome(target=target, released=name, rebuilt=rebuilt, differences=found, notes=inputs)
