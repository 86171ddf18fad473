"""User-facing entry points. Each session is a thin call of ``python -m builders``.

Sessions forward their positional arguments: ``nox -s build -- --target cu132-cp312-linux-x86_64``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import nox

# virtualenv (a dependency of nox) seeds pip from its own wheel in about a second; the venv module's
# ensurepip takes 5 to 9 s, paid by every session of every release job.
nox.options.default_venv_backend = "virtualenv"
nox.options.reuse_existing_virtualenvs = True
nox.options.sessions = ["build"]

PYTHON = "3.11"
# Two pytest-xdist workers, as a 2-core CI machine has cores (one worker leaves a core idle much of
# the time: builds, containers and servers wait on each other). Each takes whole modules, so a
# module's builds run once; tests/conftest.py orders the modules longest first.
XDIST = ("--numprocesses", "2", "--dist", "loadscope", "--no-loadscope-reorder")


def _install(session: nox.Session, *extras: str) -> None:
    """builders into the session; with BUILDERS_LOCK (the release workflow sets it to
    ci/release-tools.txt), its dependencies exactly as locked, hashes checked, and nothing else.

    In the workflow's jobs uv is on PATH (setup-uv, the lock's version) and installs the lock: about
    4 s against pip's 30 s, paid by every session of every job. The venv keeps its pip (virtualenv's
    seed), which builders runs for toolchain and mirror downloads."""
    spec = f".[{','.join(extras)}]" if extras else "."
    lock = os.environ.get("BUILDERS_LOCK")
    if lock and not extras:
        uv = shutil.which("uv")
        if uv is None:
            session.install("--require-hashes", "--no-deps", "-r", lock)
            session.install("--no-deps", "-e", spec)
            return
        python = str(Path(session.bin) / ("python.exe" if os.name == "nt" else "python"))
        session.run(uv, "pip", "install", "--python", python, "--require-hashes", "--no-deps", "-r", lock, external=True)
        session.run(uv, "pip", "install", "--python", python, "--no-deps", "-e", spec, external=True)
        return
    session.install("-e", spec)


@nox.session(python=PYTHON)
def plan(session: nox.Session) -> None:
    """Expand matrix.yaml into targets; show what this host can build (--json, --format github)."""
    _install(session)
    session.run("python", "-m", "builders", "plan", *session.posargs)


@nox.session(python=PYTHON)
def build(session: nox.Session) -> None:
    """Build, repair, verify and smoke-test every target this host can (or --target/--select ones)."""
    _install(session)
    session.run("python", "-m", "builders", "build", *session.posargs)


@nox.session(python=PYTHON, default=False)
def variants(session: nox.Session) -> None:
    """After build: the wheel variants (PEP 825) of wheelhouse/'s wheels, verified and their twins smoke-tested, in
    wheelhouse/variants/ beside whl/<label>/ (arguments replace the default `wheelhouse --smoke`)."""
    _install(session)
    session.run("python", "-m", "builders", "variants", *(session.posargs or ["wheelhouse", "--smoke"]))


@nox.session(python=PYTHON, default=False)
def images(session: nox.Session) -> None:
    """Build the container images the selected targets need (content-addressed tags; --dry-run prints them)."""
    _install(session)
    session.run("python", "-m", "builders", "images", *session.posargs)


@nox.session(python=PYTHON)
def report(session: nox.Session) -> None:
    """Write the compatibility matrix (Markdown, JSON, HTML) to report/, with build results if any."""
    _install(session)
    session.run("python", "-m", "builders", "report", *session.posargs)


@nox.session(python=PYTHON)
def workflow(session: nox.Session) -> None:
    """Check the release workflow against the plan (`-- --check`); it consumes the plan, never hand-listed targets."""
    _install(session)
    session.run("python", "-m", "builders", "workflow", *session.posargs)


@nox.session(python=PYTHON, default=False)
def lint(session: nox.Session) -> None:
    """mypy and ruff with the project's config (the tests session runs them too, as tests)."""
    _install(session, "test")
    session.run("mypy")
    session.run("ruff", "check", "builders", "benchmarks")


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """Run the whole test suite, slow integration tests included (what CI runs), on two pytest-xdist workers:
    each test module is one unit of work, the longest first (tests/conftest.py); `-- -n 0` runs it in one."""
    _install(session, "test")
    session.run("bash", "scripts/setup-test-host.sh", external=True)
    # Where PYTHONDONTWRITEBYTECODE is set (as on the machine this was measured on), no import writes a .pyc,
    # and each of the suite's hundreds of `python -m builders` starts compiled builders' modules again: 0.3 s each.
    session.run("python", "-m", "compileall", "-q", "builders")
    # --durations: where the suite's time went, in CI's log too (the 50-minute budget is read from it).
    session.run("python", "-m", "pytest", "--run-slow", "--durations=40", *XDIST, *session.posargs)


@nox.session(python=PYTHON, default=False)
def unit(session: nox.Session) -> None:
    """Run the tests not marked slow (unit tests and quick integration checks; a minute or two)."""
    _install(session, "test")
    session.run("python", "-m", "pytest", *session.posargs)


@nox.session(python=PYTHON, default=False)
def bench(session: nox.Session) -> None:
    """Build cost side by side, one table and benchmarks/results/bench.json (`-- --only local|cibw|plan|smoke|verify`)."""
    _install(session)
    session.run("python", "benchmarks/bench.py", *session.posargs)
