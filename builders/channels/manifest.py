"""The release manifest: exactly the files one candidate run built, so that what is released can be proved.

A candidate run writes one manifest beside its wheels: every labelled wheel (what the test channel
serves) and every PyPI-form wheel (what PyPI will serve), each with its name, sha256, size and target,
and the run's identity (project, version, channel, commit, tag, run id). It is attested with the
wheels. Validation records name the manifest's digest and the sha256 each installer installed;
``promote-release`` releases the manifest's files that passed, and nothing else the test channel holds.

The manifest is canonical JSON (sorted keys, one layout), so its digest is a function of its content.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

from builders.base.errors import IndexBuildError, InputError, Problem, PromoteError
from builders.index.pages import find_wheels
from builders.matrix.model import Matrix
from builders.matrix.targets import Target
from builders.wheel.archive import Wheel, file_sha256
from builders.wheel.pypi_form import pypi_target as promoted_from
from builders.wheel.pypi_form import target_of
from builders.wheel.variant import split_label

MANIFEST_VERSION = 1
# Version 2 adds ``builds``: per target, what a rebuild needs besides the commit (builders.pipeline.buildrecord:
# engine, SOURCE_DATE_EPOCH, toolkit pins, compiler, image id). A manifest without them is still written as 1.
BUILDS_VERSION = 2
VERSIONS = (MANIFEST_VERSION, BUILDS_VERSION)
LABELLED, PYPI = "labelled", "pypi"
FORMS = (LABELLED, PYPI)


@dataclass(frozen=True, kw_only=True, order=True)
class ManifestFile:
    name: str
    sha256: str
    size: int
    target: str
    form: str  # LABELLED (a channel's index) or PYPI (the public version)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "sha256": self.sha256, "size": self.size, "target": self.target, "form": self.form}


@dataclass(frozen=True, kw_only=True)
class Manifest:
    project: str
    version: str
    channel: str
    commit: str
    tag: str
    run_id: str
    files: tuple[ManifestFile, ...]
    builds: tuple[tuple[str, str], ...] = ()  # (target, its build record as canonical JSON), sorted by target

    def to_json(self) -> dict[str, Any]:
        out = {"manifest_version": BUILDS_VERSION if self.builds else MANIFEST_VERSION, "project": self.project,
               "version": self.version, "channel": self.channel, "commit": self.commit, "tag": self.tag,
               "run_id": self.run_id, "files": [f.to_json() for f in self.files]}
        return out | ({"builds": {t: json.loads(r) for t, r in self.builds}} if self.builds else {})

    def build_of(self, target: str) -> dict[str, Any] | None:
        """The build record of ``target`` (what a rebuild needs), or None where the manifest has none."""
        return next((json.loads(r) for t, r in self.builds if t == target), None)

    def dumps(self) -> bytes:
        return (json.dumps(self.to_json(), indent=2, sort_keys=True) + "\n").encode()

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.dumps()).hexdigest()

    def of_form(self, form: str) -> tuple[ManifestFile, ...]:
        return tuple(f for f in self.files if f.form == form)

    def for_target(self, target: str, form: str) -> ManifestFile | None:
        return next((f for f in self.files if f.target == target and f.form == form), None)


# --- making one ---------------------------------------------------------------------------------


def labelled_wheels(wheelhouse: Path) -> list[Path]:
    """The labelled wheels under ``wheelhouse`` (wheel variants and the PyPI form are not a channel's)."""
    wheels = [w for w in find_wheels(wheelhouse) if split_label(w.name)[1] is None and Wheel(w).version.local]
    if not wheels:
        raise IndexBuildError(f"{wheelhouse}: no labelled wheel (such as 2.15.0+cu132) under this folder")
    return wheels


def public_wheels(folder: Path) -> list[Path]:
    """The PyPI-form wheels under ``folder``: no label, no variant."""
    return [w for w in find_wheels(folder) if split_label(w.name)[1] is None and not Wheel(w).version.local]


def pypi_target(m: Matrix, wheel: Wheel) -> Target:
    """The target a PyPI-form wheel (public version, no label) was promoted from: the PyPI default of its tags."""
    target = promoted_from(m, wheel)
    if target is None:
        raise PromoteError(f"{wheel.path.name}: the PyPI form of no PyPI default target of the matrix")
    return target


def entry(path: Path, target: Target, form: str) -> ManifestFile:
    return ManifestFile(name=path.name, sha256=file_sha256(path), size=path.stat().st_size, target=target.id,
                        form=form)


def make(m: Matrix, labelled: Iterable[Path], pypi: Iterable[Path], *, channel: str, commit: str, tag: str,
         run_id: str, builds: Mapping[str, Mapping[str, Any]] | None = None) -> Manifest:
    """The manifest of ``labelled`` (each verified to be a target of ``m`` by its label and tags) and ``pypi``,
    with ``builds`` (target -> its results.json ``rebuild`` record) for the targets it names."""
    files = [entry(p, target_of(m, Wheel(p)), LABELLED) for p in labelled]
    files += [entry(p, pypi_target(m, Wheel(p)), PYPI) for p in pypi]
    names = [f.name for f in files]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise PromoteError(f"two files named {', '.join(twice)}: a manifest names each file once")
    named = {f.target for f in files}
    records = tuple(sorted((t, _canonical(r)) for t, r in (builds or {}).items() if t in named and r))
    return Manifest(project=canonicalize_name(m.project.name), version=str(m.project.version.public),
                    channel=channel, commit=commit, tag=tag, run_id=run_id, files=tuple(sorted(files)), builds=records)


def _canonical(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


# --- reading one -------------------------------------------------------------------------------


def load(path: Path) -> Manifest:
    """The manifest at ``path``; :class:`InputError` naming the file and key when it is not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError([Problem(message=f"{path}: not a release manifest: {exc}")]) from None
    return parse(data, str(path))


def parse(data: Any, where: str) -> Manifest:
    def bad(key: str, why: str) -> InputError:
        return InputError([Problem(message=f"{where}: {key}: {why}")])

    if not isinstance(data, dict) or data.get("manifest_version") not in VERSIONS:
        raise bad("manifest_version", f"not a release manifest of version {' or '.join(map(str, VERSIONS))}")
    fields = {k: data.get(k) for k in ("project", "version", "channel", "commit", "tag", "run_id")}
    for key, value in fields.items():
        if not isinstance(value, str):
            raise bad(key, "missing or not a string")
    if not isinstance(data.get("files"), list):
        raise bad("files", "missing or not a list")
    files = tuple(_file(item, f"files[{i}]", bad) for i, item in enumerate(data["files"]))
    builds = data.get("builds", {})
    if not isinstance(builds, dict) or not all(isinstance(r, dict) for r in builds.values()):
        raise bad("builds", "not a mapping of target to its build record")
    records = tuple(sorted((str(t), _canonical(r)) for t, r in builds.items()))
    return Manifest(**fields, files=files, builds=records)  # type: ignore[arg-type]


def _file(item: Any, key: str, bad: Any) -> ManifestFile:
    if not isinstance(item, Mapping):
        raise bad(key, "not a mapping")
    name, sha, size, target, form = (item.get(k) for k in ("name", "sha256", "size", "target", "form"))
    if not isinstance(name, str) or "/" in name or not name.endswith(".whl"):
        raise bad(f"{key}.name", f"{name!r} is not a wheel's file name")
    if not isinstance(sha, str) or not re.fullmatch(r"[0-9a-f]{64}", sha):
        raise bad(f"{key}.sha256", f"{sha!r} is not a sha256")
    if not isinstance(size, int) or size < 0:
        raise bad(f"{key}.size", f"{size!r} is not a size")
    if not isinstance(target, str) or form not in FORMS:
        raise bad(f"{key}.form", f"{form!r} is not one of {', '.join(FORMS)}")
    return ManifestFile(name=name, sha256=sha, size=size, target=target, form=form)


def read_digest(path: Path) -> str:
    """The digest records name: the sha256 of the manifest's canonical form (whatever whitespace the file has)."""
    return load(path).digest


# --- what a candidate must be -------------------------------------------------------------------


def candidate_tag(version: str) -> re.Pattern[str]:
    """The tags of ``version``'s candidates: ``v2.15.0-rc1``, ``v2.15.0-rc2``..."""
    return re.compile(rf"v{re.escape(version)}-rc[0-9]+")


def identity_problems(manifest: Manifest, m: Matrix, expected: Mapping[str, str]) -> list[str]:
    """Why ``manifest`` is not a candidate of ``m``'s release, or not the run ``expected`` names (keys ``version``,
    ``commit``, ``tag``, ``run_id``, each checked where given: the dispatch inputs, the run GitHub reports)."""
    out = []
    if manifest.project != canonicalize_name(m.project.name):
        out.append(f"the manifest is of project {manifest.project}, the matrix's is {m.project.name}")
    version = str(m.project.version.public)
    if manifest.version != version:
        out.append(f"the manifest is of version {manifest.version}, the matrix ({m.path}) says {version}")
    if manifest.channel != "test":
        out.append(f"the manifest is of the {manifest.channel} channel, not a candidate's (test)")
    if not candidate_tag(manifest.version).fullmatch(manifest.tag):
        out.append(f"the manifest's tag {manifest.tag!r} is not a candidate tag v{manifest.version}-rcN")
    for key in ("version", "commit", "tag", "run_id"):
        want = expected.get(key)
        if want and getattr(manifest, key) != want:
            out.append(f"the manifest's {key} is {getattr(manifest, key)!r}, the run to release has {want!r}")
    return out
