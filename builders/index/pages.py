"""A static package index per variant label: PEP 503 HTML, PEP 691 JSON, PEP 658/714 metadata.

Layout, for each label (``index_path`` comes from the matrix, ``whl/{label}/`` by default)::

    DIR/whl/<label>/index.html            PEP 503 root: one link per project
    DIR/whl/<label>/index.json            PEP 691 root
    DIR/whl/<label>/<project>/index.html  one link per wheel, #sha256=, data-requires-python,
                                          data-dist-info-metadata and data-core-metadata
    DIR/whl/<label>/<project>/index.json  PEP 691 v1.1 project detail
    DIR/whl/<label>/<project>/<wheel>     the wheel itself
    DIR/whl/<label>/<project>/<wheel>.metadata   its METADATA bytes (PEP 658)
    DIR/whl/<label>/<requirement>/...     with ``requirements``: the wheels the label's wheels
                                          need, mirrored (builders.index.mirror), laid out the same way

Any static file server (or a ``file://`` URL) serves it to ``pip install --index-url``. The
output is a function of the wheels alone: everything is sorted, nothing carries a time.

Every wheel is copied first into a private folder inside the output (``.index-staging-*``, mode
0700), and that copy is what is checked (by default its archive and RECORD; the ``index``
command verifies each against its target in the matrix), hashed, described in the pages and
then renamed into place: the bytes published are the bytes verified, whatever happens to the
input files meanwhile. Nothing is published unless every wheel passes, and every path written
is resolved and must lie inside the output folder.
"""

from __future__ import annotations

import contextlib
import hashlib
import html
import json
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import Version

from builders.base.errors import IndexBuildError, WheelError
from builders.base.safe_output import replace_into, write_whole
from builders.index.mirror import RECORD, MirrorError, pip_mirror
from builders.matrix.model import Matrix
from builders.wheel.archive import Wheel, file_sha256, header
from builders.wheel.pypi_form import PromoteError, target_of
from builders.wheel.variant import split_label
from builders.wheel.verify import Expectation, Finding, integrity, verify
from builders.wheel.writer import partial_path
from builders.wheel.zipcheck import printable

API_VERSION = "1.1"
PROVENANCE = ".provenance"  # PEP 740: a file's provenance object is served as ``<file>.provenance``


@dataclass(frozen=True, kw_only=True)
class IndexedFile:
    filename: str
    project: str
    label: str
    sha256: str
    size: int
    version: str
    requires_python: str | None
    metadata: bytes
    yanked: str | None = None  # PEP 592: None, or the reason ("" for none given); the bytes stay served
    provenance: str | None = None  # PEP 740: the URL of its provenance object (``<file>.provenance``), if any

    @property
    def metadata_sha256(self) -> str:
        return hashlib.sha256(self.metadata).hexdigest()

    @property
    def href(self) -> str:
        return quote(self.filename)


@dataclass(frozen=True, kw_only=True)
class IndexResult:
    root: Path
    files: tuple[IndexedFile, ...]
    skipped: tuple[Path, ...]
    mirrored: tuple[IndexedFile, ...] = ()  # requirement wheels added next to the labels' own

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(sorted({f.label for f in self.files}))


def default_layout(label: str) -> str:
    return f"whl/{label}/"


def find_wheels(wheelhouse: Path) -> list[Path]:
    """Hidden folders are skipped: ``.store/`` and ``.index-staging-*`` hold copies under the same names."""
    return sorted(p for p in wheelhouse.rglob("*.whl")
                  if p.is_file() and not any(part.startswith(".") for part in p.relative_to(wheelhouse).parts))


# What a wheel is checked with before it is indexed: findings, empty when it may be indexed.
Checker = Callable[[Wheel], Sequence[Finding]]

# What gives the requirement wheels of one label's wheels (a builders.index.mirror.Mirror): resolved
# for each wheel's target, hash-checked, so that the label's index installs with --index-url alone.
Requirements = Callable[[str, Sequence[Path]], Sequence[Path]]


def matrix_checker(matrix: Matrix) -> Checker:
    """Full verification of each wheel as the target its label and tags name in ``matrix``."""
    def check(wheel: Wheel) -> Sequence[Finding]:
        try:
            target = target_of(matrix, wheel)
        except PromoteError as exc:
            return [Finding(code="no-target", message=str(exc))]
        return verify(wheel, Expectation(target=target, dropped=matrix.dropped))
    return check


def describe(path: Path, label: str) -> IndexedFile:
    """A wheel as an index entry, its METADATA read through the capped reader; a wheel variant (PEP 825) is
    entered under its variant label, its name and version read from the name without it."""
    name, version, label = _identity(path.name, label)
    with Wheel(path).open() as reader:
        metadata = reader.read(f"{reader.dist_info}/METADATA")
        requires_python = header(reader.metadata, "Requires-Python")
    return IndexedFile(filename=path.name, project=canonicalize_name(name), label=label,
                       sha256=file_sha256(path), size=path.stat().st_size, version=str(version),
                       requires_python=requires_python.strip() if requires_python else None, metadata=metadata)


def _identity(filename: str, label: str) -> tuple[str, Version, str]:
    """Project, version and label of a wheel's file name: a plain wheel's as packaging reads it (with ``label``),
    else a variant's from the name without its variant label (packaging knows none), with that label."""
    base, variant = split_label(filename)
    try:
        name, version, _build, _tags = parse_wheel_filename(filename if variant is None else base)
    except InvalidWheelFilename as exc:
        raise WheelError(f"{printable(filename)}: {exc}") from exc
    return name, version, label if variant is None else variant


def build_index(wheels: Iterable[Path], output: Path, *, layout: Callable[[str], str] = default_layout,
                labels: Iterable[str] | None = None, check: Checker = integrity,
                requirements: Requirements | None = None) -> IndexResult:
    """One static index per local version label; unlabelled wheels are returned in ``skipped``.

    The copy is what is checked, so what ``check`` passed is what is served; nothing is published unless every
    wheel passes and no two different files share a name.
    """
    known = set(labels) if labels is not None else None
    labelled, skipped = _labelled(wheels, known)
    for label in sorted({label for _path, label in labelled}):  # every label's folder is checked before the first write
        _inside(output, output / layout(label))
    with _staging(output) as stage:
        copies = [(path, stage.copy(path, label), label) for path, label in labelled]
        _refuse_findings(copies, check)
        by_label, files = _chosen(copies)
        mirrored = _add_requirements(by_label, requirements, stage) if requirements is not None else ()
        for label, projects in sorted(by_label.items()):
            _write_label(output, layout(label), projects)
    return IndexResult(root=output, files=files, skipped=tuple(skipped), mirrored=mirrored)


def index_with_requirements(m: Matrix, wheels: list[Path], output: Path, env: Mapping[str, str], *,
                            mirror: bool, layout: Callable[[str], str] | None = None) -> IndexResult:
    """``build_index`` with every label's requirement wheels mirrored by pip (unless ``mirror`` is off), laid out
    as ``layout`` says (default: the release channel's ``channels.index.layout``)."""
    labels, check, where = [v.label for v in m.variants], matrix_checker(m), layout or m.channels.index_path
    if not mirror:
        return build_index(wheels, output, layout=where, labels=labels, check=check)
    with tempfile.TemporaryDirectory(prefix="builders-mirror-") as tmp:
        mirrored = pip_mirror(m, Path(tmp), python=sys.executable, env=dict(env))
        result = build_index(wheels, output, layout=where, labels=labels, check=check, requirements=mirrored)
        mirrored.write_records(output, where)
    return result


Projects = dict[str, list[tuple[Path, IndexedFile]]]  # project -> (staged copy, its description)


def _chosen(copies: Iterable[tuple[Path, Path, str]]) -> tuple[dict[str, Projects], tuple[IndexedFile, ...]]:
    """The copies by label and project, one per (label, file name); two different files of one name are an error."""
    chosen: dict[tuple[str, str], tuple[Path, Path, IndexedFile]] = {}
    for source, copy, label in copies:
        info = describe(copy, label)
        key = (label, copy.name)
        if key in chosen:
            if chosen[key][2].sha256 != info.sha256:
                raise IndexBuildError(f"{copy.name}: two different files with this name: {chosen[key][0]} and {source}")
            continue
        chosen[key] = (source, copy, info)
    by_label: dict[str, Projects] = {}
    for key in sorted(chosen):
        _source, copy, info = chosen[key]
        by_label.setdefault(info.label, {}).setdefault(info.project, []).append((copy, info))
    return by_label, tuple(chosen[key][2] for key in sorted(chosen))


class _Stage:
    """A private folder inside the output (mode 0700) holding the copies to be checked and published."""

    def __init__(self, folder: Path) -> None:
        self.folder, self._count = folder, 0

    def copy(self, path: Path, label: str) -> Path:
        """A copy of ``path`` under its own name, in a folder of its own."""
        self._count += 1
        folder = self.folder / f"{self._count}-{label}"
        folder.mkdir()
        dest = folder / path.name
        shutil.copyfile(path, dest)
        return dest


@contextlib.contextmanager
def _staging(output: Path) -> Iterator[_Stage]:
    """A :class:`_Stage` in ``output``, removed afterwards; the folders made for it go too if nothing was published."""
    made = [p for p in (output, *output.parents) if not p.exists()]
    output.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(dir=output, prefix=".index-staging-"))
    published = False
    try:
        yield _Stage(folder)
        published = True
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        for empty in made if not published else ():
            with contextlib.suppress(OSError):
                empty.rmdir()


def _add_requirements(by_label: dict[str, Projects], requirements: Requirements, stage: _Stage) -> tuple[IndexedFile, ...]:
    """Each label's requirement wheels (copied into the stage), added to its projects before anything is written."""
    added: list[IndexedFile] = []
    for label, projects in sorted(by_label.items()):
        own = [path for entries in projects.values() for path, _info in entries]
        try:
            extra = requirements(label, own)
        except MirrorError as exc:
            raise IndexBuildError(f"label {label}: cannot mirror its wheels' requirements, nothing was written: "
                                  f"{exc}") from None
        for path in sorted(extra):
            copy = stage.copy(path, label)
            info = describe(copy, label)
            entries = projects.setdefault(info.project, [])
            if not any(known.filename == info.filename for _path, known in entries):
                entries.append((copy, info))
                added.append(info)
    return tuple(added)


def _labelled(wheels: Iterable[Path], known: set[str] | None) -> tuple[list[tuple[Path, str]], list[Path]]:
    """(path, label) of each labelled wheel, and the unlabelled ones; a label outside ``known`` is an error."""
    labelled: list[tuple[Path, str]] = []
    skipped: list[Path] = []
    for path in sorted(wheels):
        label = None if split_label(path.name)[1] is not None else Wheel(path).version.local  # a wheel variant: skipped
        if not label:
            skipped.append(path)
        elif known is not None and label not in known:
            raise IndexBuildError(f"{path}: label {label!r} is not a variant of the matrix ({', '.join(sorted(known))})")
        else:
            labelled.append((path, label))
    return labelled, skipped


def _refuse_findings(copies: Iterable[tuple[Path, Path, str]], check: Checker) -> None:
    """Check the copy of every wheel; one error names each refused wheel (as given) with its findings."""
    refused = [(source, findings) for source, copy, _label in copies if (findings := check(Wheel(copy)))]
    if refused:
        lines = [f"{printable(str(path))}: " + "; ".join(map(str, findings)) for path, findings in refused]
        raise IndexBuildError(f"{len(refused)} wheel(s) refused, nothing was written:\n  " + "\n  ".join(lines))


def _write_label(output: Path, relative: str, projects: Projects) -> None:
    """One label's index: each project's folder, files (the checked copies, renamed into place) and pages, then the
    label's root pages."""
    base = _inside(output, output / relative)
    for project, entries in sorted(projects.items()):
        folder = _inside(output, base / project)
        folder.mkdir(parents=True, exist_ok=True)
        files = [info for _path, info in entries]
        for copy, info in entries:
            _move(copy, _inside(output, folder / info.filename), info.sha256)
            _write(_inside(output, folder / f"{info.filename}.metadata"), info.metadata)
        _write(_inside(output, folder / "index.html"), project_html(project, files).encode())
        _write(_inside(output, folder / "index.json"), _dumps(project_json(project, files)))
    _write(_inside(output, base / "index.html"), root_html(sorted(projects)).encode())
    _write(_inside(output, base / "index.json"), _dumps(root_json(sorted(projects))))


def _inside(output: Path, path: Path) -> Path:
    """``path``, refused unless it (and its temporary sibling), resolved, lies inside ``output``."""
    root = output.resolve()
    for candidate in (path, partial_path(path)):
        if not candidate.resolve().is_relative_to(root):
            raise IndexBuildError(f"{printable(str(path))}: resolves to {printable(str(candidate.resolve()))}, outside "
                                  f"--output {root}; refused (check the matrix's index layout and links in {output})")
    return path


def root_html(projects: Iterable[str]) -> str:
    links = "".join(f'    <a href="{quote(p)}/">{html.escape(p)}</a><br/>\n' for p in projects)
    return _page("Simple index", links)


def project_html(project: str, files: Iterable[IndexedFile]) -> str:
    links = []
    for f in sorted(files, key=lambda f: f.filename):
        attrs = [f'href="{html.escape(f.href)}#sha256={f.sha256}"']
        if f.requires_python:
            attrs.append(f'data-requires-python="{html.escape(f.requires_python)}"')
        attrs.append(f'data-dist-info-metadata="sha256={f.metadata_sha256}"')
        attrs.append(f'data-core-metadata="sha256={f.metadata_sha256}"')
        if f.yanked is not None:
            attrs.append(f'data-yanked="{html.escape(f.yanked)}"')
        if f.provenance is not None:
            attrs.append(f'data-provenance="{html.escape(f.provenance)}"')
        links.append(f'    <a {" ".join(attrs)}>{html.escape(f.filename)}</a><br/>\n')
    return _page(f"Links for {html.escape(project)}", "".join(links), heading=True)


def root_json(projects: Iterable[str]) -> dict[str, object]:
    return {"meta": {"api-version": API_VERSION}, "projects": [{"name": p} for p in projects]}


def project_json(project: str, files: Iterable[IndexedFile]) -> dict[str, object]:
    ordered = sorted(files, key=lambda f: f.filename)
    return {
        "meta": {"api-version": API_VERSION},
        "name": project,
        "versions": sorted({f.version for f in ordered}),
        "files": [
            {
                "filename": f.filename,
                "url": f.href,
                "hashes": {"sha256": f.sha256},
                **({"requires-python": f.requires_python} if f.requires_python else {}),
                "core-metadata": {"sha256": f.metadata_sha256},
                "dist-info-metadata": {"sha256": f.metadata_sha256},
                "size": f.size,
                **({"yanked": f.yanked or True} if f.yanked is not None else {}),
                **({"provenance": f.provenance} if f.provenance is not None else {}),
            }
            for f in ordered
        ],
    }


def _page(title: str, body: str, heading: bool = False) -> str:
    h1 = f"    <h1>{title}</h1>\n" if heading else ""
    return ("<!DOCTYPE html>\n<html>\n  <head>\n"
            f'    <meta name="pypi:repository-version" content="{API_VERSION}">\n'
            f"    <title>{title}</title>\n  </head>\n  <body>\n{h1}{body}  </body>\n</html>\n")


def _dumps(data: object) -> bytes:
    return (json.dumps(data, indent=2, sort_keys=True) + "\n").encode()


def _write(dest: Path, data: bytes) -> None:
    if dest.is_file() and not dest.is_symlink() and dest.read_bytes() == data:  # never read a FIFO or a device
        return
    write_whole(dest, data)


def _move(copy: Path, dest: Path, sha256: str) -> None:
    """The checked ``copy`` becomes ``dest`` (a rename: the same bytes), unless ``dest`` already holds them."""
    if dest.is_file() and not dest.is_symlink() and file_sha256(dest) == sha256:
        return
    replace_into(copy, dest)


def _copy(src: Path, dest: Path) -> None:
    if dest.exists() and (dest.resolve() == src.resolve() or file_sha256(dest) == file_sha256(src)):
        return
    tmp = partial_path(dest)
    shutil.copyfile(src, tmp)
    replace_into(tmp, dest)


# Files of a published index that are rewritten from the files it holds, never copied over.
DERIVED = frozenset({"index.html", "index.json", "SHA256SUMS", RECORD})


def merge_into(new: Path, published: Path) -> tuple[str, ...]:
    """A published file never changes: a name published with other bytes is refused before anything is written
    (a re-release needs a new version); the pages are rewritten from the wheels the merged folder holds."""
    copies = [(src, published / src.relative_to(new)) for src in sorted(new.rglob("*"))
              if src.is_file() and src.name not in DERIVED and not src.name.startswith(".")]
    clashes = [str(dest.relative_to(published)) for src, dest in copies
               if _inside(published, dest).is_file() and file_sha256(dest) != file_sha256(src)]
    if clashes:
        raise IndexBuildError(f"{len(clashes)} file(s) of {new} are published with other bytes, nothing was written: "
                              + ", ".join(clashes[:5]) + " (a published file never changes: release a new version)")
    added = []
    for src, dest in copies:
        if not dest.exists():
            added.append(str(dest.relative_to(published)))
        dest.parent.mkdir(parents=True, exist_ok=True)
        _copy(src, dest)
    for record in sorted(new.rglob(RECORD)):
        merge_record(record, _inside(published, published / record.relative_to(new)))
    refresh_pages(published)
    return tuple(added)


def merge_record(new: Path, published: Path) -> None:
    """``mirror.json``: every file either release mirrored, with the targets of both."""
    files: dict[str, dict[str, Any]] = {}
    for path in (published, new):
        if path.is_file():
            for entry in json.loads(path.read_text(encoding="utf-8")).get("files", []):
                known = files.setdefault(entry["filename"], dict(entry))
                known["targets"] = sorted({*known.get("targets", []), *entry.get("targets", [])})
    data = json.loads(new.read_text(encoding="utf-8"))
    data["files"] = [files[name] for name in sorted(files)]
    _write(published, _dumps(data))


def refresh_pages(root: Path) -> None:
    """Every project's and label's pages under ``root``, rewritten from the wheels there."""
    projects: dict[Path, list[Path]] = {}
    for wheel in find_wheels(root):
        projects.setdefault(wheel.parent, []).append(wheel)
    labels: dict[Path, list[str]] = {}
    for folder, wheels in sorted(projects.items()):
        if any(split_label(w.name)[1] is not None for w in wheels):  # a wheel-variant index's project
            refresh_variant_project(root, folder, wheels)
            labels.setdefault(folder.parent, []).append(folder.name)
            continue
        files = [describe(w, folder.parent.name) for w in wheels]
        _write(_inside(root, folder / "index.html"), project_html(folder.name, files).encode())
        _write(_inside(root, folder / "index.json"), _dumps(project_json(folder.name, files)))
        labels.setdefault(folder.parent, []).append(folder.name)
    for base, names in labels.items():
        _write(_inside(root, base / "index.html"), root_html(sorted(names)).encode())
        _write(_inside(root, base / "index.json"), _dumps(root_json(sorted(names))))


# --- one project's folder from given entries (the variant index of builders.index.variants) ------------


def write_project(output: Path, folder: Path, entries: Sequence[tuple[Path, IndexedFile]],
                  extra: Sequence[tuple[str, str]] = ()) -> None:
    """``folder`` (inside ``output``) with each entry's file (copied under ``info.filename``), its ``.metadata`` and
    the project's PEP 503/691 pages; ``extra`` are (file name, sha256) of other files already in the folder
    (a ``{name}-{version}-variants.json``), linked from both pages with their hash."""
    _inside(output, folder).mkdir(parents=True, exist_ok=True)
    for path, info in entries:
        _copy(path, _inside(output, folder / info.filename))
        _write(_inside(output, folder / f"{info.filename}.metadata"), info.metadata)
    files = [info for _path, info in entries]
    page = project_html(folder.name, files)
    links = "".join(f'    <a href="{html.escape(quote(name))}#sha256={sha}">{html.escape(name)}</a><br/>\n'
                    for name, sha in sorted(extra))
    page = page.replace("  </body>\n", links + "  </body>\n", 1)
    data = project_json(folder.name, files)
    data["files"] = [*data["files"], *({"filename": name, "url": quote(name), "hashes": {"sha256": sha}}  # type: ignore[misc]
                                       for name, sha in sorted(extra))]
    _write(_inside(output, folder / "index.html"), page.encode())
    _write(_inside(output, folder / "index.json"), _dumps(data))


def write_root(output: Path, base: Path, projects: Iterable[str]) -> None:
    """The PEP 503/691 root pages of ``base`` (inside ``output``), one link per project."""
    names = sorted(projects)
    _write(_inside(output, base / "index.html"), root_html(names).encode())
    _write(_inside(output, base / "index.json"), _dumps(root_json(names)))


def refresh_variant_project(root: Path, folder: Path, wheels: Sequence[Path]) -> None:
    """A wheel-variant index's project pages rewritten from its files: the wheels (variant or not) and every
    ``*-variants.json``, linked with its hash."""
    entries = [(w, describe(w, "")) for w in wheels]
    extra = [(p.name, file_sha256(p)) for p in sorted(folder.glob("*-variants.json"))]
    write_project(root, folder, entries, extra)
