"""Issue 29's contract for real projects: the private copy of the source, constant build
variables (and, as later items land, the rest of docs/projects.md)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from builders.matrix import loader as matrix
from builders.pipeline.private_source import COPY_SCRIPT, SKIPPED_DIRS, copy_command
from builders.pipeline.store import tree_digest
from tests import helpers
from tests.unit.test_buildplan import LOCAL, built, context, plans


def run_copy(argv: tuple[str, ...], monkeypatch: pytest.MonkeyPatch) -> None:
    """The copy script as its interpreter runs it (in this process: unit tests start no subprocess)."""
    assert argv[1:4] == ("-I", "-c", COPY_SCRIPT)
    monkeypatch.setattr(sys, "argv", ["-c", *argv[4:]])
    exec(compile(COPY_SCRIPT, "<copy>", "exec"), {"__name__": "__main__"})


def test_the_copy_holds_what_the_digest_covers_and_the_vcs_data(tmp_path: Path, monkeypatch) -> None:
    src = tmp_path / "src"
    for name in ("pkg/a.c", "pkg/build/stale.o", "build/temp.linux/x.o", "x.egg-info/PKG-INFO", ".git/HEAD",
                 "out/.work/t/raw/w.whl", "pkg/__pycache__/m.pyc"):
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(name)
    dest = tmp_path / "copy"
    dest.mkdir()
    (dest / "left-over").write_text("from an earlier build")
    run_copy(copy_command(sys.executable, str(src), str(dest), skip=(str(src / "out"),)).argv, monkeypatch)
    found = sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file())
    assert found == [".git/HEAD", "pkg/a.c"]
    shutil.rmtree(src / "out")
    assert tree_digest(dest) == tree_digest(src)  # the build sees what the digest covers (and the VCS data)
    assert "build" in SKIPPED_DIRS and ".git" not in SKIPPED_DIRS


def test_every_local_build_runs_in_its_own_copy(m) -> None:
    found = built(plans(m, LOCAL, context()))
    assert len({p.build.cwd for p in found.values()}) == len(found)
    assert all(p.build.cwd == f"{p.work}/src" for p in found.values())
    assert all(p.prepare[0].argv[5] == p.build.cwd for p in found.values())


def test_constant_build_variables_reach_every_build_and_the_digest(shipped_text: str) -> None:
    text = shipped_text.replace("    environment_pass: [MINIFW_CORE_WEIGHT]\n",
                                '    environment_pass: [MINIFW_CORE_WEIGHT]\n    variables: {CFLAGS: "-g0 -O2"}\n', 1)
    changed = matrix.loads(text)
    assert dict(changed.project.build_variables) == {"CFLAGS": "-g0 -O2"}
    plain, flagged = built(plans(matrix.loads(shipped_text))), built(plans(changed))
    for tid, plan in flagged.items():
        assert dict(plan.build.env)["CFLAGS"] == "-g0 -O2"
        assert plan.digest != plain[tid].digest
        assert "CFLAGS" in plan.smoke_runner.unset  # an installed wheel must not need them


def test_a_variable_builders_sets_itself_is_refused(shipped_text: str) -> None:
    text = shipped_text.replace("    environment_pass: [MINIFW_CORE_WEIGHT]\n",
                                '    environment_pass: [MINIFW_CORE_WEIGHT]\n'
                                '    variables: {MINIFW_ACCELERATOR: "cpu", SOURCE_DATE_EPOCH: "1"}\n', 1)
    found = helpers.problems_of(text)
    assert len(found) == 2 and all("set by builders itself" in str(p) for p in found)
