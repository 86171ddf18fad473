"""Stand-ins for the GitHub-hosted actions of the release workflow, for runs under nektos/act.

The actions cannot be fetched here and most need Node 24, so each pinned ``uses:`` is mapped by
act's ``--local-repository`` onto a composite action in ``tests/act/actions/<name>/`` whose one
step runs ``standin.py <name>``. Each subcommand keeps the documented behaviour the workflow
relies on (see ``tests/act/README.md``), so a run under act fails where GitHub would.

Inputs arrive as ``INPUT_<NAME>`` variables (upper case, ``-`` as ``_``); outputs go to
``$GITHUB_OUTPUT``; all state lives under ``$STANDIN_STATE``. Each subcommand is a function of
an explicit environment mapping, so the unit tests call them without act.
"""

from __future__ import annotations

import base64
import fcntl
import fnmatch
import glob
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.request
import uuid
import zipfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

Env = Mapping[str, str]
Outputs = dict[str, str]


class StandinError(Exception):
    """A failure the real action would report: printed as ``::error::`` and the step fails."""


@dataclass(frozen=True, kw_only=True)
class Pin:
    """One pinned action of the workflow and the stand-in folder that replaces it."""

    repo: str
    sha: str
    tag: str
    folder: str


# The single table of pins: the workflow's ``uses:`` lines must name exactly these.
PINS: tuple[Pin, ...] = (
    Pin(repo="actions/checkout", sha="3d3c42e5aac5ba805825da76410c181273ba90b1", tag="v7.0.1", folder="checkout"),
    Pin(repo="actions/setup-python", sha="5fda3b95a4ea91299a34e894583c3862153e4b97", tag="v7.0.0",
        folder="setup-python"),
    Pin(repo="astral-sh/setup-uv", sha="20cfd1bf945f4377ade1205e4dbc17946fc9a30d", tag="v10.0.1", folder="setup-uv"),
    Pin(repo="actions/upload-artifact", sha="bbbca2ddaa5d8feaa63e36b76fdaad77386f024f", tag="v7.0.0",
        folder="upload-artifact"),
    Pin(repo="actions/download-artifact", sha="3e5f45b2cfb9172054b4087a40e8e0b5a5461e7c", tag="v8.0.1",
        folder="download-artifact"),
    Pin(repo="actions/cache", sha="55cc8345863c7cc4c66a329aec7e433d2d1c52a9", tag="v6.1.0", folder="cache"),
    Pin(repo="actions/attest", sha="1e69f48acb82d1966a394da916b4c1698aa569d6", tag="v4.2.2", folder="attest"),
    Pin(repo="pypa/gh-action-pypi-publish", sha="dc37677b2e1c63e2034f94d8a5b11f265b73ba33", tag="v1.14.2",
        folder="pypi-publish"),
)

ACTIONS_DIR = Path(__file__).resolve().parent


def standin_flags(state: Path, source: Path, *, pypi_url: str = "", python: str = sys.executable) -> list[str]:
    """The act flags that map every pin onto its stand-in and give the stand-ins their state.

    ``--no-skip-checkout``: without it act never runs ``actions/checkout`` (it copies the local
    tree itself). act copies an action's folder alone, so ``$GITHUB_ACTION_PATH/..`` does not
    hold this script: its path travels in ``STANDIN_SCRIPT``, run by ``STANDIN_PYTHON``.
    """
    flags = ["--action-offline-mode", "--no-skip-checkout"]
    for pin in PINS:
        flags += ["--local-repository", f"{pin.repo}@{pin.sha}={ACTIONS_DIR / pin.folder}"]
    env = {"STANDIN_STATE": str(state), "STANDIN_SOURCE": str(source), "STANDIN_SCRIPT": str(ACTIONS_DIR / "standin.py"),
           "STANDIN_PYTHON": python}
    if pypi_url:
        env["STANDIN_PYPI_URL"] = pypi_url
    for name, value in env.items():
        flags += ["--env", f"{name}={value}"]
    return flags


# ---------------------------------------------------------------------------------------------
# Shared helpers


def inp(env: Env, name: str, default: str = "") -> str:
    """An input as the action.yml passed it (``INPUT_IF_NO_FILES_FOUND`` for ``if-no-files-found``)."""
    value = env.get("INPUT_" + name.upper().replace("-", "_"), "").strip()
    return value or default


def inp_bool(env: Env, name: str, default: bool = False) -> bool:
    """A boolean input; like the toolkit's getBooleanInput, anything but true/false is an error."""
    value = inp(env, name).lower()
    if not value:
        return default
    if value not in ("true", "false"):
        raise StandinError(f"Input does not meet YAML 1.2 \"Core Schema\" specification: {name} (got {value!r})")
    return value == "true"


def inp_lines(env: Env, name: str) -> list[str]:
    """A multi-line input as its non-blank, stripped lines."""
    return [line.strip() for line in inp(env, name).splitlines() if line.strip()]


def need(env: Env, name: str, why: str) -> str:
    """A variable the stand-in cannot work without; its absence names who should set it."""
    value = env.get(name, "")
    if not value:
        raise StandinError(f"{name} is unset: {why}")
    return value


def state_dir(env: Env) -> Path:
    """``$STANDIN_STATE``: the one folder where stand-ins keep artifacts, caches and records."""
    path = Path(need(env, "STANDIN_STATE", "the harness passes it with `act --env STANDIN_STATE=/abs/path`"))
    if not path.is_absolute():
        raise StandinError(f"STANDIN_STATE must be an absolute path, got {path}")
    path.mkdir(parents=True, exist_ok=True)
    return path


def workspace(env: Env) -> Path:
    """The job's workspace, against which the real actions resolve relative paths."""
    return Path(env.get("GITHUB_WORKSPACE") or os.getcwd())


def resolve(env: Env, path: str) -> Path:
    """A user path as the actions read it: ``~`` is the runner's home, relative is the workspace."""
    if path == "~" or path.startswith("~/"):
        path = env.get("HOME", str(Path.home())) + path[1:]
    return workspace(env) / path  # an absolute path stays as it is


def runner_temp(env: Env) -> Path:
    """``$RUNNER_TEMP`` (made if missing): where links and bundles go, like the real actions."""
    path = Path(env.get("RUNNER_TEMP") or state_dir(env) / "runner-temp")
    path.mkdir(parents=True, exist_ok=True)
    return path


def sha256_file(path: Path) -> str:
    """The hex sha256 of a file, read in blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def append_record(path: Path, record: Mapping[str, object]) -> int:
    """Append one JSON line under a lock (jobs run in parallel); returns its 1-based line number."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        handle.seek(0)
        number = sum(1 for _ in handle) + 1
        handle.write(json.dumps(record, sort_keys=True) + "\n")
    return number


def add_path(env: Env, folder: Path) -> None:
    """Put a folder on PATH for the following steps (``$GITHUB_PATH``), as core.addPath does."""
    target = env.get("GITHUB_PATH")
    if target:
        with open(target, "a", encoding="utf-8") as handle:
            handle.write(f"{folder}\n")


def link_into(folder: Path, name: str, target: Path) -> None:
    """A symlink ``folder/name`` to ``target``, replacing any older one."""
    folder.mkdir(parents=True, exist_ok=True)
    link = folder / name
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(target)


def replace_contents(source: Path, target: Path) -> None:
    """Make ``target`` hold exactly what ``source`` holds (symlinks kept), leaving nothing stale."""
    target.mkdir(parents=True, exist_ok=True)
    for entry in target.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    shutil.copytree(source, target, symlinks=True, dirs_exist_ok=True)


def log(message: str) -> None:
    """A line in the step's log (workflow commands such as ``::warning::`` included)."""
    sys.stdout.write(message + "\n")
    sys.stdout.flush()


# ---------------------------------------------------------------------------------------------
# actions/checkout


def checkout(env: Env) -> Outputs:
    """Replace the workspace with the harness's prepared tree (``$STANDIN_SOURCE``), ``.git`` too."""
    source = Path(need(env, "STANDIN_SOURCE", "the harness passes the tree to check out with --env STANDIN_SOURCE"))
    target = workspace(env)
    if inp(env, "repository"):
        raise StandinError(f"repository {inp(env, 'repository')!r}: the stand-in checks out the harness's tree only")
    if not source.is_dir():
        raise StandinError(f"STANDIN_SOURCE {source} is not a folder")
    if source.resolve() == target.resolve() or source.resolve() in target.resolve().parents:
        raise StandinError(f"STANDIN_SOURCE {source} holds the workspace {target}: refusing to empty it")
    replace_contents(source, target)
    log(f"checked out {source} into {target}")
    return {"ref": env.get("GITHUB_REF", ""), "commit": env.get("GITHUB_SHA", "")}


# ---------------------------------------------------------------------------------------------
# actions/setup-python


@dataclass(frozen=True, kw_only=True)
class Interpreter:
    """What a candidate interpreter says about itself when run."""

    version: tuple[int, int, int]
    releaselevel: str
    free_threaded: bool
    executable: str = ""  # sys.executable: the real file behind a pyenv shim or a link


@dataclass(frozen=True, kw_only=True)
class PythonSpec:
    """One line of ``python-version``: ``3.12``, ``3.12.4`` or ``3.14t`` (free-threaded)."""

    text: str
    parts: tuple[int, ...]
    free_threaded: bool

    @property
    def minor_name(self) -> str:
        """``python3.14`` or, free-threaded, ``python3.14t``: the executable's name."""
        return f"python{self.parts[0]}.{self.parts[1]}" + ("t" if self.free_threaded else "")

    def accepts(self, found: Interpreter, allow_prereleases: bool) -> bool:
        """Whether an interpreter is this version (free-threading and pre-release rules included)."""
        if found.version[: len(self.parts)] != self.parts or found.free_threaded != self.free_threaded:
            return False
        return found.releaselevel == "final" or allow_prereleases


PROBE = ("import json, sys, sysconfig; print(json.dumps([list(sys.version_info[:3]), sys.version_info.releaselevel,"
         " bool(sysconfig.get_config_var('Py_GIL_DISABLED')), sys.executable]))")

Probe = Callable[[Path], Interpreter | None]


def parse_python_spec(text: str) -> PythonSpec:
    """A version line; anything but CPython ``3.X[.Y][t]`` is outside what the stand-in finds."""
    match = re.fullmatch(r"(3)\.(\d+)(?:\.(\d+))?(t?)", text)
    if not match:
        raise StandinError(f"python-version {text!r}: the stand-in understands CPython 3.X, 3.X.Y and 3.Xt only")
    parts = tuple(int(part) for part in match.groups()[:3] if part is not None)
    return PythonSpec(text=text, parts=parts, free_threaded=bool(match.group(4)))


def probe_interpreter(path: Path) -> Interpreter | None:
    """Run a candidate and ask it its version; a broken one (a pyenv shim with no version) is None."""
    try:
        done = subprocess.run([str(path), "-c", PROBE], capture_output=True, text=True, timeout=60, check=True)
        version, level, free, executable = json.loads(done.stdout)
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    return Interpreter(version=(version[0], version[1], version[2]), releaselevel=level, free_threaded=free,
                       executable=executable)


def pyenv_roots(env: Env) -> list[Path]:
    """Where pyenv installs may live: HOME can be the harness's, so the host's root is asked too."""
    roots = [env.get("STANDIN_PYENV_ROOT", ""), env.get("PYENV_ROOT", "")]
    roots += [str(Path(env["HOME"]) / ".pyenv") if env.get("HOME") else "", "/root/.pyenv"]
    unique: list[Path] = []
    for root in roots:
        if root and Path(root) not in unique:
            unique.append(Path(root))
    return unique


def python_candidates(spec: PythonSpec, env: Env) -> list[Path]:
    """Executables that could be this version, PATH first, then pyenv installs newest first."""
    found: list[Path] = []
    on_path = shutil.which(spec.minor_name, path=env.get("PATH", ""))
    if on_path:
        found.append(Path(on_path))
    prefix = ".".join(str(part) for part in spec.parts[:2])
    for root in pyenv_roots(env):
        suffix = "t" if spec.free_threaded else ""
        installs = sorted((root / "versions").glob(f"{prefix}.*{suffix}"), reverse=True)
        found += [folder / "bin" / spec.minor_name for folder in installs if (folder / "bin" / spec.minor_name).exists()]
    return found


def find_python(spec: PythonSpec, env: Env, allow_prereleases: bool, probe: Probe) -> tuple[Path, Interpreter]:
    """The first candidate that really is the version asked for, by its real file (never a pyenv shim,
    which picks a version by the caller's folder); none fails, naming where it looked."""
    candidates = python_candidates(spec, env)
    for path in candidates:
        found = probe(path)
        if found is not None and spec.accepts(found, allow_prereleases):
            return Path(found.executable or path), found
    looked = ", ".join(str(path) for path in candidates) or "none found"
    roots = ", ".join(f"{root}/versions/{'.'.join(map(str, spec.parts[:2]))}.*" for root in pyenv_roots(env))
    raise StandinError(f"Python {spec.text} was not found on this host (the stand-in downloads nothing): looked for "
                       f"{spec.minor_name} on PATH and in {roots}; candidates tried: {looked}")


def own_environment(folder: Path, interpreter: Path) -> Path:
    """A virtual environment of ``interpreter`` for this job: a hosted runner's Python is the job's
    own, so what the job pip-installs must not land in this host's shared interpreter.

    Copied from a template made once per interpreter (``python -m venv``, its bundled pip) under this
    HOME: a venv with pip costs 5 to 9 s to create, a copy well under one, and a run has dozens of jobs.
    The copy's own path replaces the template's wherever a file names it (scripts' ``#!``, ``activate``),
    so nothing in it runs the template's interpreter."""
    if not (folder / "bin" / "python").exists():
        template = environment_template(interpreter)
        shutil.copytree(template, folder, symlinks=True)
        relocate_scripts(folder / "bin", template, folder)
    return folder / "bin" / "python"


def relocate_scripts(bin_dir: Path, old: Path, new: Path) -> None:
    """Every script of a copied venv names the copy, not the venv it was copied from."""
    for script in bin_dir.iterdir():
        if script.is_file() and not script.is_symlink():
            data = script.read_bytes()
            if str(old).encode() in data:
                script.write_bytes(data.replace(str(old).encode(), str(new).encode()))


def environment_template(interpreter: Path) -> Path:
    """``~/.cache/standin-python/<digest of the interpreter's path>``: made once, atomically (parallel jobs)."""
    root = Path.home() / ".cache" / "standin-python"
    template = root / hashlib.sha256(str(interpreter).encode()).hexdigest()[:16]
    if not (template / "bin" / "python").exists():
        scratch = root / f".{template.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
        root.mkdir(parents=True, exist_ok=True)
        subprocess.run([str(interpreter), "-m", "venv", str(scratch)], check=True, timeout=300, capture_output=True)
        relocate_scripts(scratch / "bin", scratch, template)
        try:
            scratch.rename(template)
        except OSError:  # another job made it first
            shutil.rmtree(scratch, ignore_errors=True)
    return template


def setup_python(env: Env, probe: Probe = probe_interpreter,
                 environment: Callable[[Path, Path], Path] = own_environment) -> Outputs:
    """Put each listed version on PATH; the last is ``python``/``python3`` (setup-python's rule)."""
    specs = [parse_python_spec(line) for line in inp_lines(env, "python-version")]
    if not specs:
        raise StandinError("python-version is empty: the stand-in does not read python-version-file")
    allow = inp_bool(env, "allow-prereleases")
    found = [(spec, *find_python(spec, env, allow, probe)) for spec in specs]
    base = runner_temp(env) / "standin-python"
    for index, (spec, path, _) in enumerate(found[:-1]):
        link_into(base / f"{index}-{spec.text}" / "bin", spec.minor_name, path)
        add_path(env, base / f"{index}-{spec.text}" / "bin")
    spec, path, _ = found[-1]
    default = environment(base / f"venv-{spec.text}", path)
    for name in (spec.minor_name, "python", "python3"):
        if not (default.parent / name).exists():
            link_into(default.parent, name, default)
    add_path(env, default.parent)  # the venv's own bin: Python finds pyvenv.cfg beside the name it runs as
    spec, path, interpreter = found[-1]
    log(f"python is {path} ({'.'.join(map(str, interpreter.version))}, from python-version {spec.text})")
    version = ".".join(map(str, interpreter.version)) + ("t" if interpreter.free_threaded else "")
    return {"python-version": version, "python-path": str(path)}


# ---------------------------------------------------------------------------------------------
# astral-sh/setup-uv


Run = Callable[[list[str]], str | None]


def run_text(argv: list[str]) -> str | None:
    """A command's stdout, or None when it cannot run or fails."""
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None


def find_uv(env: Env, run: Run) -> Path:
    """``$STANDIN_UV``, else the uv wheel's binary for python3 or the stand-in's own interpreter,
    else ``uv`` on PATH."""
    if env.get("STANDIN_UV"):
        return Path(env["STANDIN_UV"])
    pythons = [shutil.which("python3", path=env.get("PATH", "")) or "", sys.executable]
    for python in filter(None, dict.fromkeys(pythons)):
        from_wheel = run([python, "-c", "import uv; print(uv.find_uv_bin())"])
        if from_wheel:
            return Path(from_wheel)
    on_path = shutil.which("uv", path=env.get("PATH", ""))
    if on_path:
        return Path(on_path)
    raise StandinError("no uv on this host: set STANDIN_UV, install the uv wheel for python3, or put uv on PATH")


def setup_uv(env: Env, run: Run = run_text) -> Outputs:
    """Put a uv of exactly the pinned version on PATH; an unpinned version is refused."""
    wanted = inp(env, "version").removeprefix("v")
    if not wanted or wanted == "latest":
        raise StandinError("setup-uv has no pinned `version`: the real action fetches uv's version manifest at run "
                           "time and installs whatever is latest then (an unpinned tool); pin `version:`")
    uv = find_uv(env, run)
    said = run([str(uv), "--version"]) or ""
    have = said.split()[1] if len(said.split()) > 1 else said
    if have != wanted:
        raise StandinError(f"setup-uv asked for uv {wanted}, but {uv} is uv {have or '(did not run)'}")
    folder = runner_temp(env) / "standin-uv" / "bin"
    link_into(folder, "uv", uv.resolve())
    if (uv.parent / "uvx").exists():
        link_into(folder, "uvx", (uv.parent / "uvx").resolve())
    add_path(env, folder)
    return {"uv-version": have, "uv-path": str(folder / "uv")}


# ---------------------------------------------------------------------------------------------
# actions/upload-artifact

CONFLICT = ("Failed to CreateArtifact: Received non-retryable error: Failed request: (409) Conflict: "
            "an artifact with this name already exists on the workflow run")
BAD_NAME_CHARS = '":<>|*?\r\n\\/'
GLOB_CHARS = re.compile(r"[*?\[]")


def is_hidden(path: Path, root: Path) -> bool:
    """Whether a file is hidden as the real action sees it: any part below the search root begins with a dot."""
    parts = path.relative_to(root).parts if path != root else (path.name,)
    return any(part.startswith(".") for part in parts)


def search_root(pattern: Path) -> Path:
    """The literal part of a pattern before its first glob segment (@actions/glob's search path)."""
    parts: list[str] = []
    for part in pattern.parts:
        if GLOB_CHARS.search(part):
            break
        parts.append(part)
    return Path(*parts)


def expand(pattern: Path, hidden: bool) -> set[Path]:
    """The files one pattern names: a matched folder brings every file below it."""
    files: set[Path] = set()
    root = search_root(pattern)
    for match in glob.glob(str(pattern), recursive=True, include_hidden=True):
        path = Path(match)
        below = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
        files.update(p for p in below if hidden or not is_hidden(p, root if root != path else path.parent))
    return files


def common_root(roots: list[Path]) -> Path:
    """The deepest folder above every search root (a lone file's root is its folder)."""
    folders = [root.parent if root.is_file() else root for root in roots]
    return Path(os.path.commonpath([str(folder) for folder in folders]))


def collect_upload(env: Env, lines: list[str], hidden: bool) -> tuple[Path, list[Path]]:
    """The files to upload and the artifact's root, as the real action's search does."""
    include = [resolve(env, line) for line in lines if not line.startswith("!")]
    exclude = [resolve(env, line[1:].strip()) for line in lines if line.startswith("!")]
    files: set[Path] = set()
    for pattern in include:
        files |= expand(pattern, hidden)
    for pattern in exclude:
        files -= expand(pattern, True)
    return common_root([search_root(pattern) for pattern in include]), sorted(files)


def listing_digest(folder: Path) -> str:
    """A sha256 over the sorted ``path sha256`` lines of a folder: the same files, the same digest."""
    lines = [f"{p.relative_to(folder).as_posix()} {sha256_file(p)}\n" for p in sorted(folder.rglob("*")) if p.is_file()]
    return hashlib.sha256("".join(lines).encode()).hexdigest()


def check_artifact_name(name: str) -> None:
    """The real action refuses names with these characters (they break the zip's download)."""
    bad = sorted({char for char in name if char in BAD_NAME_CHARS})
    if bad:
        raise StandinError(f"The artifact name is not valid: {name}. Contains the following character: {' '.join(bad)}")


def store_artifact(env: Env, name: str, root: Path, files: list[Path], overwrite: bool) -> Path:
    """Copy the files under ``artifacts/<name>`` in one rename: a clash is the real 409 unless overwrite."""
    artifacts = state_dir(env) / "artifacts"
    staging = artifacts / f".staging-{uuid.uuid4().hex}"
    for path in files:
        target = staging / path.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    final = artifacts / name
    if overwrite and final.exists():
        shutil.rmtree(final)
    try:
        staging.rename(final)
    except OSError:
        shutil.rmtree(staging)
        raise StandinError(CONFLICT) from None
    return final


def upload_artifact(env: Env) -> Outputs:
    """Store the matched files as a named artifact of this run; a second upload of a name fails."""
    name = inp(env, "name", "artifact")
    check_artifact_name(name)
    lines = inp_lines(env, "path")
    if not lines:
        raise StandinError("Input required and not supplied: path")
    root, files = collect_upload(env, lines, inp_bool(env, "include-hidden-files"))
    if not files:
        return no_files(inp(env, "if-no-files-found", "warn"), lines)
    final = store_artifact(env, name, root, files, inp_bool(env, "overwrite"))
    digest = listing_digest(final)
    append_record(state_dir(env) / "uploads.jsonl", {"name": name, "job": env.get("GITHUB_JOB", ""),
                                                     "files": [p.relative_to(root).as_posix() for p in files]})
    log(f"Artifact {name} has been successfully uploaded: {len(files)} file(s) from {root}")
    return {"artifact-id": str(int(hashlib.sha256(name.encode()).hexdigest()[:8], 16)), "artifact-digest": digest,
            "artifact-url": ""}


def no_files(mode: str, lines: list[str]) -> Outputs:
    """``if-no-files-found``: warn (the default) and error say so; ignore stays quiet."""
    message = f"No files were found with the provided path: {' '.join(lines)}. No artifacts will be uploaded."
    if mode == "error":
        raise StandinError(message)
    if mode == "warn":
        log(f"::warning::{message}")
    elif mode != "ignore":
        raise StandinError(f"Unrecognized if-no-files-found input. Provided: {mode}. Available options: warn, error, ignore")
    return {}


# ---------------------------------------------------------------------------------------------
# actions/download-artifact


def artifacts_of(env: Env) -> Path:
    """The artifacts of the run named: this run's, or with ``run-id`` and ``github-token`` (the real action ignores
    ``run-id`` without a token) another run's. A run's id is its state folder's name, and the harness keeps the
    runs of one repository as sibling state folders; a run that is not there fails, as an unknown run does."""
    run_id = inp(env, "run-id")
    if not run_id or not inp(env, "github-token"):
        return state_dir(env) / "artifacts"
    other = state_dir(env).parent / run_id
    if "/" in run_id or run_id in (".", "..") or not other.is_dir():
        raise StandinError(f"Unable to download artifact(s): no workflow run {run_id!r} of this repository")
    return other / "artifacts"


def stored_artifacts(folder: Path) -> list[str]:
    """The names of a run's artifacts."""
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".staging-"))


def select_artifacts(folder: Path, name: str, pattern: str) -> list[str]:
    """By name (absent: the real error), else by glob over names (none: a notice, nothing fails)."""
    have = stored_artifacts(folder)
    if name:
        if name not in have:
            raise StandinError(f"Unable to download artifact(s): Artifact not found for name: {name}")
        return [name]
    chosen = [artifact for artifact in have if not pattern or fnmatch.fnmatchcase(artifact, pattern)]
    if not chosen:
        log(f"::notice::No artifacts found matching pattern {pattern!r}: nothing downloaded")
    return chosen


def download_artifact(env: Env) -> Outputs:
    """Copy artifacts into ``path``; a single one (by name or a one-match pattern) lands directly in it."""
    if inp(env, "artifact-ids"):
        raise StandinError("the stand-in downloads by name or pattern (no artifact-ids)")
    name, pattern = inp(env, "name"), inp(env, "pattern")
    target = resolve(env, inp(env, "path")) if inp(env, "path") else workspace(env)
    folder = artifacts_of(env)
    chosen = select_artifacts(folder, name, pattern)
    merge = inp_bool(env, "merge-multiple")
    for artifact in chosen:
        into = target if len(chosen) == 1 or merge else target / artifact
        shutil.copytree(folder / artifact, into, dirs_exist_ok=True)
        log(f"Artifact {artifact} was downloaded to {into}")
    return {"download-path": str(target)}


# ---------------------------------------------------------------------------------------------
# actions/cache


def cache_version(paths: list[str]) -> str:
    """The real action's cache version: entries saved for other paths never restore."""
    return hashlib.sha256("|".join([*paths, "standin"]).encode()).hexdigest()


def cache_entries(state: Path) -> list[dict[str, object]]:
    """Every saved entry's manifest."""
    folder = state / "cache"
    if not folder.is_dir():
        return []
    return [json.loads(p.read_text()) for p in folder.glob("*/manifest.json")]


def save_cache(state: Path, key: str, paths: list[str], env: Env) -> Path:
    """Save ``paths`` under ``key`` (the step the real action runs at job end; the harness's to call)."""
    entry = state / "cache" / hashlib.sha256(key.encode()).hexdigest()
    if entry.exists():
        return entry  # a key is written once, as on GitHub
    for index, path in enumerate(paths):
        if resolve(env, path).exists():
            shutil.copytree(resolve(env, path), entry / str(index), symlinks=True)
    entry.mkdir(parents=True, exist_ok=True)
    manifest = {"key": key, "paths": paths, "version": cache_version(paths), "created": time.time_ns()}
    (entry / "manifest.json").write_text(json.dumps(manifest))
    return entry


def match_cache(state: Path, key: str, restore_keys: list[str], version: str) -> dict[str, object] | None:
    """The exact key, else per restore key in order the newest entry whose key starts with it."""
    entries = [e for e in cache_entries(state) if e["version"] == version]
    for prefix in [key, *restore_keys]:
        exact = prefix == key
        hits = [e for e in entries if (e["key"] == key if exact else str(e["key"]).startswith(prefix))]
        if hits:
            return max(hits, key=lambda e: int(str(e["created"])))
    return None


def cache(env: Env) -> Outputs:
    """Restore by key or restore-key; saving cannot run at job end (no post step): it is recorded."""
    key, paths, restore_keys = inp(env, "key"), inp_lines(env, "path"), inp_lines(env, "restore-keys")
    if not key or not paths:
        raise StandinError("Input required and not supplied: " + ("key" if not key else "path"))
    if "," in key or len(key) > 512:
        raise StandinError(f"Key Validation Error: {key} cannot contain commas or be longer than 512 characters.")
    state = state_dir(env)
    found = match_cache(state, key, restore_keys, cache_version(paths))
    hit = found is not None and found["key"] == key
    append_record(state / "cache-requests.jsonl", {"key": key, "paths": paths, "job": env.get("GITHUB_JOB", ""),
                                                   "restored": found["key"] if found else None, "would_save": not hit})
    if found is None:
        log(f"Cache not found for input keys: {', '.join([key, *restore_keys])}")
        return {}
    entry = state / "cache" / hashlib.sha256(str(found["key"]).encode()).hexdigest()
    for index, path in enumerate(paths):
        if (entry / str(index)).is_dir():
            shutil.copytree(entry / str(index), resolve(env, path), symlinks=True, dirs_exist_ok=True)
    log(f"Cache restored from key: {found['key']}")
    return {"cache-hit": "true" if hit else "false"}


# ---------------------------------------------------------------------------------------------
# actions/attest

MAX_SUBJECTS = 1024
CHECKSUM_LINE = re.compile(r"([0-9a-fA-F]{64}) [ *](.+)")


def subjects_from_checksums(path: Path) -> list[dict[str, str]]:
    """``<sha256>  <name>`` lines (``*`` for binary mode allowed); a malformed line fails."""
    if not path.is_file():
        raise StandinError(f"subject checksums file not found: {path}")
    subjects = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        match = CHECKSUM_LINE.fullmatch(line.strip())
        if not match:
            raise StandinError(f"{path}:{number}: not a `<sha256>  <name>` line: {line!r}")
        subjects.append({"name": match.group(2), "sha256": match.group(1).lower()})
    return subjects


def subjects_from_paths(env: Env, patterns: list[str]) -> list[dict[str, str]]:
    """Each matched file hashed; a pattern that matches no file fails, as the real action does."""
    subjects = []
    for pattern in patterns:
        files = sorted(Path(p) for p in glob.glob(str(resolve(env, pattern)), recursive=True) if Path(p).is_file())
        if not files:
            raise StandinError(f"Could not find subject at path {pattern}")
        subjects += [{"name": p.name, "sha256": sha256_file(p)} for p in files]
    return subjects


def attest_subjects(env: Env) -> list[dict[str, str]]:
    """Exactly one of subject-path, subject-digest or subject-checksums names the subjects."""
    given = [name for name in ("subject-path", "subject-digest", "subject-checksums") if inp(env, name)]
    if len(given) != 1:
        raise StandinError("One of subject-path, subject-digest, or subject-checksums must be provided (exactly one)")
    if given[0] == "subject-checksums":
        return subjects_from_checksums(resolve(env, inp(env, "subject-checksums")))
    if given[0] == "subject-path":
        return subjects_from_paths(env, [p.strip() for p in re.split(r"[,\n]", inp(env, "subject-path")) if p.strip()])
    digest, name = inp(env, "subject-digest"), inp(env, "subject-name")
    if not name or not re.fullmatch(r"sha256:[0-9a-f]{64}", digest):
        raise StandinError("subject-digest must be sha256:<64 hex> and needs subject-name")
    return [{"name": name, "sha256": digest.removeprefix("sha256:")}]


def registry_credentials(env: Env, image: str) -> dict[str, str]:
    """What push-to-registry authenticates with, read as sigstore-js's OCI helper reads it
    (packages/oci/src/credentials.ts): ``~/.docker/config.json`` and nothing else (not podman's
    ``$XDG_RUNTIME_DIR/containers/auth.json``), the first ``auths`` key containing the image's
    registry, its base64 ``user:password``. No file or no entry fails, as the action does."""
    registry = image.split("/", 1)[0] if "/" in image else "docker.io"
    config = Path(env.get("HOME", str(Path.home()))) / ".docker" / "config.json"
    try:
        auths = json.loads(config.read_text()).get("auths") or {}
    except OSError:
        raise StandinError(f"No credential file found at {config}") from None
    key = next((k for k in auths if registry in k), registry)
    if key not in auths or not auths[key].get("auth"):
        raise StandinError(f"No credentials found for registry {registry}")
    user, _, password = base64.b64decode(auths[key]["auth"]).decode().partition(":")
    return {"registry": registry, "username": user, "password_sha256": hashlib.sha256(password.encode()).hexdigest()}


def builder_identity(env: Env) -> dict[str, str]:
    """The repository, workflow file and ref the run's token would name (``GITHUB_WORKFLOW_REF`` is
    ``owner/repo/.github/workflows/FILE@REF``), as Fulcio writes them into the signing certificate. act sets no
    ``GITHUB_WORKFLOW_REF``: the harness passes the workflow it runs (``-W``) as ``STANDIN_WORKFLOW``."""
    workflow_ref = env.get("GITHUB_WORKFLOW_REF") or env.get("STANDIN_WORKFLOW", "")
    path, _, ref = workflow_ref.partition("@")
    if not path.endswith((".yml", ".yaml")):
        raise StandinError(f"neither GITHUB_WORKFLOW_REF nor STANDIN_WORKFLOW names a workflow file "
                           f"({workflow_ref!r}): no builder identity to sign")
    return {"repository": env.get("GITHUB_REPOSITORY", ""), "workflow": path.rsplit("/", 1)[-1],
            "ref": ref or env.get("GITHUB_REF", "")}


def sigstore_like(subjects: list[dict[str, str]], signer: dict[str, str]) -> dict[str, object]:
    """The bundle ``bundle-path`` names: tests/attestations.py's offline Sigstore-like bundle (a self-signed
    certificate with Fulcio's builder extensions, a DSSE-signed in-toto statement of the subjects)."""
    root = Path(__file__).resolve().parents[3]
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))  # tests/attestations.py reads builders' provenance constants
    spec = importlib.util.spec_from_file_location("standin_attestations", root / "tests" / "attestations.py")
    assert spec is not None and spec.loader is not None
    maker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(maker)
    return maker.bundle({s["name"]: s["sha256"] for s in subjects}, **signer)


def attest(env: Env) -> Outputs:
    """Record a provenance attestation of 1..1024 subjects and write it as a Sigstore-like bundle signed by a
    self-made key (no OIDC, no Fulcio, no Rekor).
    With push-to-registry, the registry credentials must be where the real action reads them."""
    subjects = attest_subjects(env)
    if not subjects:
        raise StandinError("No subjects found: the checksums file names none")
    if len(subjects) > MAX_SUBJECTS:
        raise StandinError(f"Too many subjects specified ({len(subjects)}). The maximum number of subjects is {MAX_SUBJECTS}.")
    push = inp_bool(env, "push-to-registry")
    if push and not inp(env, "subject-name"):
        raise StandinError("push-to-registry needs subject-name (the image) and subject-digest")
    record = {"job": env.get("GITHUB_JOB", ""), "subjects": subjects, "signer": builder_identity(env),
              "predicate_type": "https://slsa.dev/provenance/v1", "push_to_registry": push}
    if push:
        record["registry_login"] = registry_credentials(env, inp(env, "subject-name"))
    number = append_record(state_dir(env) / "attestations.jsonl", record)
    bundle = runner_temp(env) / f"attestation-{number}.json"
    bundle.write_text(json.dumps(sigstore_like(subjects, record["signer"]), indent=1, sort_keys=True))
    log(f"attestation {number}: {len(subjects)} subject(s)")
    return {"bundle-path": str(bundle), "attestation-id": str(number), "attestation-url": ""}


# ---------------------------------------------------------------------------------------------
# pypa/gh-action-pypi-publish

IGNORED_IN_DIST = (".sigstore.json", ".publish.attestation")


def distributions(folder: Path) -> list[Path]:
    """The wheels and sdists the action would upload (``twine upload dir/*``): anything else fails."""
    if not folder.is_dir():
        raise StandinError(f"packages-dir {folder} does not exist")
    entries = sorted(p for p in folder.iterdir() if not p.name.endswith(IGNORED_IN_DIST))
    others = [p.name for p in entries if not (p.is_file() and p.name.endswith((".whl", ".tar.gz")))]
    if others:
        raise StandinError(f"packages-dir {folder} holds what twine cannot upload: {', '.join(others)}")
    if not entries:
        raise StandinError(f"Refusing to upload: no distributions in packages-dir {folder} (twine would fail)")
    return entries


def core_metadata(dist: Path) -> dict[str, str]:
    """The first value of each core metadata field (METADATA of a wheel, PKG-INFO of an sdist)."""
    if dist.name.endswith(".whl"):
        with zipfile.ZipFile(dist) as archive:
            name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA") and n.count("/") == 1)
            text = archive.read(name).decode()
    else:
        with tarfile.open(dist) as archive:
            member = next(m for m in archive.getmembers() if m.name.count("/") == 1 and m.name.endswith("/PKG-INFO"))
            handle = archive.extractfile(member)
            text = handle.read().decode() if handle else ""
    fields: dict[str, str] = {}
    for line in text.split("\n\n", 1)[0].splitlines():
        key, _, value = line.partition(": ")
        fields.setdefault(key.lower(), value)
    return fields


def multipart(fields: Iterable[tuple[str, str]], file: Path) -> tuple[bytes, str]:
    """A multipart/form-data body for the legacy upload API and its content type."""
    boundary = uuid.uuid4().hex
    chunks = [f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode() for k, v in fields]
    chunks.append(f'--{boundary}\r\nContent-Disposition: form-data; name="content"; filename="{file.name}"\r\n'
                  "Content-Type: application/octet-stream\r\n\r\n".encode() + file.read_bytes() + b"\r\n")
    chunks.append(f"--{boundary}--\r\n".encode())
    return b"".join(chunks), f"multipart/form-data; boundary={boundary}"


def post_distribution(url: str, dist: Path, skip_existing: bool) -> None:
    """Upload one file with urllib (``:action=file_upload``); non-2xx fails, 409 only with skip-existing."""
    meta = core_metadata(dist)
    wheel = dist.name.endswith(".whl")
    fields = [(":action", "file_upload"), ("protocol_version", "1"), ("name", meta.get("name", "")),
              ("version", meta.get("version", "")), ("metadata_version", meta.get("metadata-version", "")),
              ("filetype", "bdist_wheel" if wheel else "sdist"),
              ("pyversion", dist.name.split("-")[-3] if wheel else "source"), ("sha256_digest", sha256_file(dist))]
    body, content_type = multipart(fields, dist)
    request = urllib.request.Request(url, data=body, headers={"Content-Type": content_type}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            response.read()
    except urllib.error.HTTPError as error:
        if error.code == 409 and skip_existing:
            log(f"{dist.name} already exists on {url}: skipped")
            return
        raise StandinError(f"upload of {dist.name} to {url} failed: HTTP {error.code} {error.reason}") from None
    except urllib.error.URLError as error:
        raise StandinError(f"upload of {dist.name} to {url} failed: {error.reason}") from None


def twine_upload(url: str, dists: list[Path], skip_existing: bool) -> None:
    """Upload with twine, as the real action does, when this interpreter has it."""
    argv = [sys.executable, "-m", "twine", "upload", "--non-interactive", "--disable-progress-bar", "--repository-url", url,
            "-u", "standin", "-p", "standin", *(["--skip-existing"] if skip_existing else []), *map(str, dists)]
    log("$ " + " ".join(argv))
    if subprocess.run(argv, check=False).returncode != 0:
        raise StandinError(f"twine upload to {url} failed (see above)")


def pypi_publish(env: Env) -> Outputs:
    """Upload every distribution in packages-dir to the harness's index; an empty folder is refused."""
    dists = distributions(resolve(env, inp(env, "packages-dir", "dist/")))
    url = need(env, "STANDIN_PYPI_URL", "the harness passes its local index's upload URL with --env")
    skip = inp_bool(env, "skip-existing")
    if importlib.util.find_spec("twine") is not None:
        twine_upload(url, dists, skip)
    else:
        for dist in dists:
            post_distribution(url, dist, skip)
    for dist in dists:
        append_record(state_dir(env) / "published.jsonl", {"file": dist.name, "sha256": sha256_file(dist), "url": url,
                                                           "repository-url": inp(env, "repository-url"),
                                                           "job": env.get("GITHUB_JOB", "")})
    return {}


# ---------------------------------------------------------------------------------------------
# Entry point

COMMANDS: dict[str, Callable[[Env], Outputs]] = {
    "checkout": checkout,
    "setup-python": setup_python,
    "setup-uv": setup_uv,
    "upload-artifact": upload_artifact,
    "download-artifact": download_artifact,
    "cache": cache,
    "attest": attest,
    "pypi-publish": pypi_publish,
}


def write_outputs(env: Env, outputs: Outputs) -> None:
    """Step outputs, one ``name=value`` line each, to ``$GITHUB_OUTPUT``."""
    target = env.get("GITHUB_OUTPUT")
    if target and outputs:
        with open(target, "a", encoding="utf-8") as handle:
            handle.writelines(f"{name}={value}\n" for name, value in outputs.items())


def run_standin(name: str, env: Env) -> Outputs:
    """One stand-in, after checking ``$STANDIN_STATE``: every stand-in fails clearly without it."""
    state_dir(env)
    return COMMANDS[name](env)


def main(argv: list[str]) -> int:
    """``standin.py <action>``: run one stand-in on the process environment; failures are ::error::."""
    if len(argv) != 1 or argv[0] not in COMMANDS:
        log(f"::error::usage: standin.py {{{','.join(COMMANDS)}}}")
        return 2
    try:
        write_outputs(os.environ, run_standin(argv[0], os.environ))
    except StandinError as error:
        log(f"::error::{argv[0]} stand-in: {error}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
