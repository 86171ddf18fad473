"""Issue 29's contract for real projects: the private copy of the source, constant build
variables (and, as later items land, the rest of docs/projects.md)."""

from __future__ import annotations

import shutil
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from builders.base.errors import ProcessError
from builders.ci import checks
from builders.families import loader as matrix
from builders.matrix.findings import DEFAULT_RUNNERS
from builders.matrix.targets import Selection, expand, select
from builders.pipeline import platform_policy, sourcetree
from builders.pipeline.plan import PREFIX_MAP_TO
from builders.pipeline.private_source import COPY_SCRIPT, SKIPPED_DIRS, copy_command
from builders.pipeline.store import tree_digest
from builders.wheel import pypi_form, repair
from tests import helpers
from tests.unit.test_buildplan import HOST, LOCAL, built, context, plans


def run_copy(argv: tuple[str, ...], monkeypatch: pytest.MonkeyPatch) -> None:
    """The copy script as its interpreter runs it (in this process: unit tests start no subprocess)."""
    assert argv[1:4] == ("-I", "-c", COPY_SCRIPT)
    monkeypatch.setattr(sys, "argv", ["-c", *argv[4:]])
    exec(compile(COPY_SCRIPT, "<copy>", "exec"), {"__name__": "__main__"})


def test_the_copy_holds_what_the_digest_covers_and_the_vcs_data(tmp_path: Path, monkeypatch) -> None:
    src = tmp_path / "src"
    for name in ("pkg/a.c", "pkg/build/b.py", "pkg/dist/c.py", "pkg/build/stale.o", "build/temp.linux/x.o",
                 "x.egg-info/PKG-INFO", ".git/HEAD", "out/.work/t/raw/w.whl", "pkg/__pycache__/m.pyc"):
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(name)
    dest = tmp_path / "copy"
    dest.mkdir()
    (dest / "left-over").write_text("from an earlier build")
    # not a VCS checkout: the default list, root-relative; the output folder by its path
    left_out = (*sourcetree.declared(src, sourcetree.DEFAULT_EXCLUDE), "out")
    assert left_out == ("build", "x.egg-info", "out")
    run_copy(copy_command(sys.executable, str(src), str(dest), skip=left_out).argv, monkeypatch)
    found = sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file())
    assert found == [".git/HEAD", "pkg/a.c", "pkg/build/b.py", "pkg/build/stale.o", "pkg/dist/c.py"]
    assert tree_digest(dest) == tree_digest(src, left_out)  # the build sees what the digest covers (and the VCS data)
    assert "build" not in SKIPPED_DIRS and ".git" not in SKIPPED_DIRS


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
        assert dict(plan.build.env)["CPPFLAGS"] == f"-ffile-prefix-map={plan.work}={PREFIX_MAP_TO}"
        assert plan.digest != plain[tid].digest
        assert "CFLAGS" in plan.smoke_runner.unset  # an installed wheel must not need them


def test_a_variable_builders_sets_itself_is_refused(shipped_text: str) -> None:
    text = shipped_text.replace("    environment_pass: [MINIFW_CORE_WEIGHT]\n",
                                '    environment_pass: [MINIFW_CORE_WEIGHT]\n'
                                '    variables: {MINIFW_ACCELERATOR: "cpu", SOURCE_DATE_EPOCH: "1"}\n', 1)
    found = helpers.problems_of(text)
    assert len(found) == 2 and all("set by builders itself" in str(p) for p in found)


# --- the platform policy before the compile -------------------------------------------------------


def policy_host(glibc: str, glibcxx: str | None = None):
    return replace(HOST, glibc=glibc, glibcxx=glibcxx)


def manylinux_target(m):
    return next(t for t in select(m, Selection(select=("cpu-*-linux-x86_64",))))


def test_a_newer_host_is_named_with_both_ways_out(m) -> None:
    t = manylinux_target(m)
    major, minor, _arch = pypi_form.manylinux(t.platform.wheel_platform)
    newer = f"{major}.{minor + 8}"
    risk = platform_policy.repair_risk(t, policy_host(newer, "3.4.99"))
    assert f"host glibc {newer} > {major}.{minor}" in risk and "GLIBCXX_3.4.99" in risk
    assert "--engine container" in risk and "--local-only" in risk and t.platform.base_image in risk
    assert platform_policy.repair_risk(t, policy_host(f"{major}.{minor}")) is None
    assert platform_policy.repair_risk(t, replace(HOST, glibc=None)) is None  # not a glibc host: nothing claimed


def test_the_repair_warning_is_one_for_the_run_and_only_for_the_hosts_own_architecture(m) -> None:
    """A run on an x86_64 host newer than the policy warns once, about its x86_64 manylinux targets; the aarch64
    targets (built in their image or on their runner) and a host that meets the policy draw no warning."""
    targets, _ = expand(m)
    t = manylinux_target(m)
    major, minor, arch = pypi_form.manylinux(t.platform.wheel_platform)
    newer = policy_host(f"{major}.{minor + 8}")
    mine = [x.id for x in targets if (pypi_form.manylinux(x.platform.wheel_platform) or (0, 0, ""))[2] == arch]
    others = [x for x in targets if x.platform.os is t.platform.os and x.id not in mine]
    assert others, "the shipped matrix has Linux targets of another architecture"
    assert all(platform_policy.repair_risk(x, newer) is None for x in others)
    warning = platform_policy.repair_warning(targets, newer)
    assert warning is not None and warning.count("may be refused at repair") == 1
    assert f"{len(mine)} targets ({mine[0]}, ...)" in warning and not any(x.id in warning for x in others)
    assert platform_policy.repair_warning(targets, policy_host(f"{major}.{minor}")) is None
    assert platform_policy.repair_warning([], newer) is None


def test_local_only_tags_at_the_hosts_level_and_is_never_published(m) -> None:
    t = manylinux_target(m)
    major, minor, arch = pypi_form.manylinux(t.platform.wheel_platform)
    host = policy_host(f"{major}.{minor + 8}")
    local = platform_policy.local_only(m, host)
    (moved,) = [p for p in local.platforms if p.wheel_platform != m.platform(p.name).wheel_platform]
    assert moved.wheel_platform == f"manylinux_{major}_{minor + 8}_{arch}"
    (lt,) = select(local, Selection(targets=(t.id,)))
    assert pypi_form.local_only_problem(m, lt.tags) and pypi_form.local_only_problem(m, t.tags) is None
    assert "never published" in checks.local_only_note(lt.wheel_name, {t.wheel_name})
    assert checks.local_only_note(t.wheel_name, {lt.wheel_name.replace(t.project.name, "other")}) == ""


def test_a_repair_refusal_names_both_ways_out_and_its_first_line_ends_cleanly(m) -> None:
    t = manylinux_target(m)
    err = repair.failed(t, ProcessError(["auditwheel", "repair"], 1, "too-recent versioned symbols"),
                        None, lambda argv: None)
    first = str(err).splitlines()[0]
    assert "--engine container" in first and "--local-only" in first and not first.endswith(":")
    assert "too-recent versioned symbols" in str(err)



def test_a_repair_refusal_says_its_own_cause_and_blames_the_policy_only_for_a_policy_cause(m) -> None:
    t = manylinux_target(m)
    tail = 'ValueError: Cannot repair wheel, because required library "libx.so" could not be located'
    missing = str(repair.failed(t, ProcessError(["auditwheel", "repair"], 1, tail), None, lambda argv: None))
    assert "libx.so, which auditwheel could not locate" in missing.splitlines()[0]
    assert "--local-only" not in missing and "cannot reach" not in missing
    local = str(repair.failed(t, ProcessError(["auditwheel", "repair"], 1, "too-recent versioned symbols"), None,
                              lambda argv: None, local_only=True))
    assert "--engine container" in local and "--local-only" not in local
    other = str(repair.failed(t, ProcessError(["auditwheel", "repair"], 1, "something else"), None, lambda argv: None))
    assert "cannot reach" not in other and "something else" in other


# --- extension modules that need an extra, or exist only on some platforms or Pythons -------------

MODULES = """  extension_modules:
    - minifw._C
    - {module: minifw._numpy_bridge, extra: numpy}
    - {module: minifw._avx2, platforms: [linux-x86_64]}
    - {module: minifw._new_api, pythons: ">=3.13"}
"""


def with_modules(text: str, modules: str = MODULES) -> str:
    return helpers.edit(text, "  extension_modules: [minifw._C]\n", modules)


def test_conditional_modules_apply_where_they_say(shipped_text: str) -> None:
    m = matrix.loads(with_modules(shipped_text))
    by_id = {t.id: t for t in select(m, Selection(select=("cpu-*",)))}
    x86 = by_id["cpu-cp312-linux-x86_64"]
    assert x86.extension_modules == ("minifw._C", "minifw._numpy_bridge", "minifw._avx2")
    assert x86.bare_modules == ("minifw._C", "minifw._avx2")  # the extra's module is checked in the wheel only
    assert "minifw._avx2" not in by_id["cpu-cp312-linux-aarch64"].extension_modules
    assert "minifw._new_api" in by_id["cpu-cp313-linux-x86_64"].extension_modules
    assert "minifw._new_api" not in by_id["cpu-cp312-linux-x86_64"].extension_modules


@pytest.mark.parametrize("entry, phrase", [
    ("{module: minifw._x, extra: nosuch}", "optional_dependencies does not list"),
    ("{module: minifw._x, platforms: [linux-riscv64]}", "no platform linux-riscv64"),
    ("{module: minifw._x, pythons: 'three'}", "specifier"),
    ("{module: minifw._x}", "minifw._x"),
])
def test_a_conditional_module_names_what_exists(shipped_text: str, entry: str, phrase: str) -> None:
    helpers.only_problem(with_modules(shipped_text, f"  extension_modules:\n    - minifw._C\n    - {entry}\n"), phrase)


def test_dependencies_with_per_python_markers_reach_each_wheel(shipped_text: str) -> None:
    text = helpers.edit(shipped_text, "  dependencies: []\n", "  dependencies:\n"
                        "    - 'numpy>=2.1; python_version >= \"3.13\"'\n    - 'numpy>=1.26; python_version < \"3.13\"'\n")
    m = matrix.loads(text)
    t = next(iter(select(m, Selection(targets=("cpu-cp312-linux-x86_64",)))))
    reqs = [r for r in t.requirements if r.name == "numpy" and not str(r.marker).count("extra")]
    assert len(reqs) == 2
    assert [str(r.specifier) for r in reqs if r.marker.evaluate({"python_version": "3.12", "extra": ""})] == [">=1.26"]


# --- fewer invented values: runners and base images have defaults ----------------------------------


def test_a_platform_without_runner_or_base_image_gets_the_defaults(shipped_text: str) -> None:
    data = yaml.safe_load(shipped_text)
    text = shipped_text
    defaults = {n for n, pl in data["platforms"].items() if (pl["os"], pl["arch"]) in DEFAULT_RUNNERS}
    for platform in (data["platforms"][n] for n in sorted(defaults)):  # a grown matrix may add one without
        text = helpers.edit(text, f"    runner: {platform['runner']}\n", "")
        if "base_image" in platform:
            text = helpers.edit(text, f"    base_image: {platform['base_image']}\n", "")
    m = matrix.loads(text)
    for p in (p for p in m.platforms if p.name in defaults):
        assert p.runner == data["platforms"][p.name]["runner"]  # the shipped matrix names the defaults
        assert p.base_image == (f"quay.io/pypa/{p.wheel_platform}" if p.wheel_platform.startswith("manylinux_") else None)


def test_a_platform_with_no_default_runner_must_name_one(shipped_text: str) -> None:
    text = helpers.edit(shipped_text, "  macos-arm64:\n    os: macos\n    arch: arm64\n    wheel_platform: macosx_14_0_arm64\n",
                        "  macos-x86_64:\n    os: macos\n    arch: x86_64\n    wheel_platform: macosx_14_0_x86_64\n")
    text = helpers.edit(text, "    runner: macos-15\n", "")
    found = [p for p in helpers.problems_of(text) if "no default one" in str(p)]
    assert len(found) == 1
