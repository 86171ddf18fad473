"""The runtime requirements of a variant's wheels, mirrored into its own index.

A per-variant index that holds only the framework's wheels cannot be installed from with
``--index-url`` alone: ``cuda-toolkit[cudart]`` is not there. A framework's download host
mirrors what its wheels need (PyTorch's does), so that one index is enough and no dependency
can come from a look-alike project elsewhere.

For every wheel of a label, the requirements pip installs with it on its target (the
project's dependencies and the variant's runtime requirements, markers evaluated for the
target's platform and Python, not this host's; no extras) are

1. resolved by pip from its own configured package index (``PIP_INDEX_URL``, pip.conf; this
   module names no registry), plus the variant's runtime index where the matrix names one
   (``toolkit.index_url``: TheRock's for ``rocm[libraries]``, expanded from the environment),
   for the target's Python, ABI and platform, binary wheels only:
   ``pip install --dry-run --report`` gives every file with the sha256 the index declared;
2. downloaded by pip in hash-checking mode (``--require-hashes``) against those hashes;
3. hashed again here, each file compared with its declared sha256.

A file the index declares no hash for is refused, as is any mismatch. What was mirrored, with
its sha256 and the targets that need it, is recorded next to the label's index (:data:`RECORD`).
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

from packaging.utils import canonicalize_name

from builders.base.process import ProcessError, run
from builders.base.safe_output import write_whole
from builders.matrix.model import Matrix
from builders.matrix.targets import Target
from builders.wheel.archive import Wheel, file_sha256
from builders.wheel.pypi_form import target_of
from builders.wheel.smoke import pip_index_args
from builders.wheel.verify import installed_requirements
from builders.wheel.zipcheck import printable

RECORD = "mirror.json"
# manylinux's legacy aliases (PEP 599/571/513), for the architectures that had them.
LEGACY_MANYLINUX = {(2, 17): ("manylinux2014", ("x86_64", "i686", "aarch64", "armv7l", "ppc64", "ppc64le", "s390x")),
                    (2, 12): ("manylinux2010", ("x86_64", "i686")), (2, 5): ("manylinux1", ("x86_64", "i686"))}


class MirrorError(Exception):
    """A requirement cannot be resolved, downloaded or verified (the index command reports it)."""


@dataclass(frozen=True, kw_only=True)
class Tags:
    """The target a requirement is resolved for: pip's ``--python-version``, ``--abi``, ``--platform``."""

    python_version: str
    abi: str
    platforms: tuple[str, ...]

    def argv(self) -> list[str]:
        out = ["--only-binary=:all:", "--implementation", "cp", "--python-version", self.python_version,
               "--abi", self.abi]
        for p in self.platforms:
            out += ["--platform", p]
        return out


def tags_of(target: Target) -> Tags:
    return Tags(python_version=target.python.release, abi=target.python.abi,
                platforms=compatible_platforms(target.platform.wheel_platform))


def compatible_platforms(wheel_platform: str) -> tuple[str, ...]:
    """Every platform tag a wheel for ``wheel_platform`` may carry and still install there.

    pip expands ``--platform`` for macOS and the legacy manylinux aliases itself, but not a
    PEP 600 ``manylinux_2_28_x86_64``: the older glibc levels (and their aliases) are listed here.
    """
    match = re.fullmatch(r"manylinux_(\d+)_(\d+)_(\w+)", wheel_platform)
    if not match:
        return (wheel_platform,)
    major, minor, arch = int(match.group(1)), int(match.group(2)), match.group(3)
    out = []
    for m in range(minor, 4, -1):
        out.append(f"manylinux_{major}_{m}_{arch}")
        alias, arches = LEGACY_MANYLINUX.get((major, m), ("", ()))
        if arch in arches:
            out.append(f"{alias}_{arch}")
    return tuple(out)


@dataclass(frozen=True, kw_only=True)
class Pin:
    """One file pip resolved: its project, version, file name and the sha256 the index declared."""

    name: str
    version: str
    filename: str
    sha256: str


@dataclass(frozen=True, kw_only=True)
class Mirrored:
    path: Path
    pin: Pin
    targets: tuple[str, ...]

    def to_json(self) -> dict[str, object]:
        return {"filename": self.pin.filename, "project": self.pin.name, "version": self.pin.version,
                "sha256": self.pin.sha256, "size": self.path.stat().st_size, "targets": list(self.targets)}


def pins_from_report(report: Mapping[str, object]) -> list[Pin]:
    """Every file of a pip installation report (``--report``), each with its declared sha256."""
    install = report.get("install")
    if not isinstance(install, list):
        raise MirrorError("pip's installation report lists nothing to install")
    return [_pin(item) for item in install]


def _pin(item: object) -> Pin:
    item = item if isinstance(item, dict) else {}
    meta, info = _dict(item.get("metadata")), _dict(item.get("download_info"))
    url = str(info.get("url", ""))
    filename = unquote(urlsplit(url).path.rsplit("/", 1)[-1])
    archive = _dict(info.get("archive_info"))
    sha256 = _dict(archive.get("hashes")).get("sha256")
    if not sha256 and str(archive.get("hash", "")).startswith("sha256="):
        sha256 = str(archive["hash"]).removeprefix("sha256=")
    if not sha256 or not filename.endswith(".whl"):
        raise MirrorError(f"{printable(filename or url)}: the package index declared no sha256 for it (or it is "
                          "not a wheel); refusing to mirror a file that cannot be verified")
    return Pin(name=canonicalize_name(str(meta.get("name", ""))), version=str(meta.get("version", "")),
               filename=filename, sha256=str(sha256))


def _dict(value: object) -> dict[str, object]:
    return value if isinstance(value, dict) else {}


# What resolves requirements for some tags into pins, and what downloads pins into a folder; each is given
# the variant's extra indexes (:meth:`builders.matrix.model.Variant.runtime_indexes`).
Resolve = Callable[[Sequence[str], Tags, Sequence[str]], list[Pin]]
Download = Callable[[Sequence[Pin], Tags, Path, Sequence[str]], None]


def resolve_args(requirements: Sequence[str], tags: Tags, indexes: Sequence[str], *, report: str,
                 target: str) -> list[str]:
    """``pip install --dry-run --report``'s arguments: what pip would install for ``tags`` (into no environment)."""
    return ["install", "--dry-run", "--ignore-installed", "--target", target, "--report", report,
            *pip_index_args(indexes), *tags.argv(), *requirements]


def download_args(requirements_file: str, tags: Tags, indexes: Sequence[str], *, dest: str) -> list[str]:
    """``pip download``'s arguments: the pinned, hashed files only."""
    return ["download", "--no-deps", "--require-hashes", "--dest", dest, *pip_index_args(indexes), *tags.argv(),
            "-r", requirements_file]


@dataclass(frozen=True, kw_only=True)
class Pip:
    """pip (of ``python``) with an explicit environment: its own configuration picks the index."""

    python: str
    env: Mapping[str, str]
    log: Path | None = None
    timeout: float = 1800.0

    def resolve(self, requirements: Sequence[str], tags: Tags, indexes: Sequence[str]) -> list[Pin]:
        with tempfile.TemporaryDirectory(prefix="builders-mirror-") as tmp:
            report = Path(tmp) / "report.json"
            self._pip(resolve_args(requirements, tags, indexes, report=str(report), target=f"{tmp}/target"),
                      f"resolve {', '.join(requirements)}")
            return pins_from_report(json.loads(report.read_text(encoding="utf-8")))

    def download(self, pins: Sequence[Pin], tags: Tags, dest: Path, indexes: Sequence[str]) -> None:
        with tempfile.TemporaryDirectory(prefix="builders-mirror-") as tmp:
            hashed = Path(tmp) / "requirements.txt"
            hashed.write_text("".join(f"{p.name}=={p.version} --hash=sha256:{p.sha256}\n" for p in pins))
            self._pip(download_args(str(hashed), tags, indexes, dest=str(dest)),
                      f"download {', '.join(p.filename for p in pins)}")

    def _pip(self, args: list[str], what: str) -> None:
        argv = [self.python, "-m", "pip", *args[:1], "--no-input", "--disable-pip-version-check", "--quiet", *args[1:]]
        try:
            run(argv, env=self.env, log=self.log, timeout=self.timeout)
        except ProcessError as exc:
            raise MirrorError(f"pip could not {what}:\n{exc.tail}") from None


@dataclass
class Mirror:
    """Requirement wheels per label, resolved once per (requirements, tags) and downloaded once per file."""

    matrix: Matrix
    resolve: Resolve
    download: Download
    folder: Path
    env: Mapping[str, str] = field(default_factory=dict)  # fills a variant's ``${VAR}`` index address
    done: dict[str, dict[str, Mirrored]] = field(default_factory=dict)  # label -> filename -> file

    def __call__(self, label: str, wheels: Sequence[Path]) -> list[Path]:
        """The requirement wheels for ``wheels`` (all of label ``label``); what :func:`index.build_index` takes."""
        found: dict[str, Mirrored] = self.done.setdefault(label, {})
        for path in wheels:
            target = target_of(self.matrix, Wheel(path))
            for item in self.for_target(target):
                seen = found.get(item.pin.filename)
                targets = (seen.targets if seen else ()) + (target.id,)
                found[item.pin.filename] = Mirrored(path=item.path, pin=item.pin, targets=tuple(sorted(set(targets))))
        return [m.path for m in found.values()]

    def for_target(self, target: Target) -> list[Mirrored]:
        requirements = sorted({str(r) for r in installed_requirements(target.requirements, target)})
        if not requirements:
            return []
        tags, indexes = tags_of(target), target.variant.runtime_indexes(self.env)
        pins = self.resolve(requirements, tags, indexes)
        dest = self.folder  # a file name is one file: shared by every target that needs it
        dest.mkdir(parents=True, exist_ok=True)
        wanted = [p for p in pins if not _verified(dest / p.filename, p)]
        if wanted:
            self.download(wanted, tags, dest, indexes)
        return [Mirrored(path=check(dest / p.filename, p), pin=p, targets=(target.id,)) for p in pins]

    def record(self, label: str) -> dict[str, object]:
        files = sorted(self.done.get(label, {}).values(), key=lambda m: m.pin.filename)
        return {"schema": 1, "label": label, "files": [m.to_json() for m in files]}

    def write_records(self, output: Path, layout: Callable[[str], str]) -> None:
        """``mirror.json`` in each label's index folder: every mirrored file, its sha256, its targets."""
        for label in sorted(self.done):
            path = output / layout(label) / RECORD
            write_whole(path, (json.dumps(self.record(label), indent=2, sort_keys=True) + "\n").encode(), root=output)


def _verified(path: Path, pin: Pin) -> bool:
    return path.is_file() and file_sha256(path) == pin.sha256


def check(path: Path, pin: Pin) -> Path:
    """``path``, once its sha256 is the one the index declared."""
    if not path.is_file():
        raise MirrorError(f"{pin.filename}: pip reported it but did not download it")
    actual = file_sha256(path)
    if actual != pin.sha256:
        raise MirrorError(f"{pin.filename}: sha256 {actual} != {pin.sha256}, the one the package index declared")
    return path


def pip_mirror(matrix: Matrix, folder: Path, *, python: str, env: Mapping[str, str], log: Path | None = None) -> Mirror:
    """A :class:`Mirror` that asks pip (of ``python``, configured by ``env``)."""
    pip = Pip(python=python, env=env, log=log, timeout=matrix.project.timeouts.install)
    return Mirror(matrix=matrix, resolve=pip.resolve, download=pip.download, folder=folder, env=env)

