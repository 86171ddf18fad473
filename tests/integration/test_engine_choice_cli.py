"""The command line, run for real: a run that builds nothing fails with the reasons, an engine asked
for that cannot run here says what is missing (a PATH with no podman or docker, not a mock), cibw
plans macOS and Windows targets as their runners would, and ``smoke --require-device`` fails a GPU
job on a machine without its GPU.

Target ids are derived from the matrix's raw YAML and this machine's architecture.
"""

from __future__ import annotations

import json
import os
import platform
import stat
import subprocess
from pathlib import Path

import pytest

from builders.families.device import judge, probe
from builders.matrix.model import Accelerator
from tests import expected, helpers
from tests.helpers import accelerator

ARCH = {"amd64": "x86_64", "arm64": "aarch64"}.get(platform.machine().lower(), platform.machine().lower())
HERE = f"linux-{ARCH}"


def builders(*args: str, cwd: Path, path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **({"PATH": path} if path is not None else {})}
    return helpers.builders(*args, cwd=cwd, env=env, timeout=300)


def tools(folder: Path, **scripts: str) -> str:
    """A folder of executables named after ``scripts`` (each a shell body), and nothing else: a PATH."""
    folder.mkdir(exist_ok=True)
    for name, body in scripts.items():
        exe = folder / name
        exe.write_text(f"#!/bin/sh\n{body}\n")
        exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return str(folder)


@pytest.fixture(scope="module")
def live(data) -> set[str]:
    return expected.live_ids(data)


def first(live: set[str], prefix: str, platform_name: str) -> str:
    """The first live target of a variant label and platform, with a Python that is not free-threaded."""
    found = sorted(i for i in live if i.startswith(f"{prefix}-") and i.endswith(f"-{platform_name}")
                   and not i.split("-")[1].endswith("t"))
    if not found:
        pytest.skip(f"the matrix has no {prefix} target for {platform_name}")
    return found[0]


def platforms_of(data, os_name: str) -> list[str]:
    return sorted(p for p, v in data["platforms"].items() if v["os"] == os_name)


# -- nothing to build: non-zero with every reason, unless --allow-skip ---------------------------------

@pytest.fixture(scope="module")
def elsewhere(data, live: set[str]) -> str:
    """A cpu target of a Linux platform with another architecture than this machine's."""
    other = [p for p in platforms_of(data, "linux") if p != HERE]
    if not other:
        pytest.skip(f"the matrix has no Linux platform besides {HERE}")
    return first(live, "cpu", other[0])


@pytest.mark.parametrize("dry_run", [False, True])
def test_a_target_this_host_cannot_build_fails_with_its_reason(root: Path, tmp_path: Path, elsewhere: str,
                                                               dry_run: bool) -> None:
    args = ("build", "--target", elsewhere, "--output", str(tmp_path), *(["--dry-run"] if dry_run else []))
    proc = builders(*args, cwd=root)
    plat = elsewhere.split("-", 2)[2]
    assert proc.returncode == 22, proc.stderr
    assert "NothingToBuild" in proc.stderr and f"{elsewhere}: needs a {plat} host" in proc.stderr
    allowed = builders(*args, "--allow-skip", cwd=root)
    assert allowed.returncode == 0, allowed.stderr
    assert "--allow-skip" in allowed.stderr and f"{elsewhere}: needs a {plat} host" in allowed.stderr


def test_no_selection_that_leaves_nothing_here_fails_too(root: Path, tmp_path: Path, elsewhere: str) -> None:
    """cibuildwheel's rule holds without --target/--select: a run of only skips is an error."""
    proc = builders("build", "--dry-run", "--skip", f"*-{HERE}", "--output", str(tmp_path), cwd=root)
    assert proc.returncode == 22 and elsewhere in proc.stderr, proc.stderr


# -- an engine asked for that cannot run here is exit 9, naming what is missing -------------------------

def test_cibw_for_a_linux_target_without_a_container_engine_fails(root: Path, tmp_path: Path, live: set[str]) -> None:
    tid = first(live, "cpu", HERE)
    empty = tools(tmp_path / "bin")  # no podman, no docker: what builders' engine probe finds on PATH
    for dry_run in ([], ["--dry-run"]):
        proc = builders("build", "--engine", "cibw", "--target", tid, "--output", str(tmp_path), *dry_run, cwd=root,
                        path=empty)
        assert proc.returncode == 9, proc.stderr
        assert "EngineError: --engine cibw builds Linux targets" in proc.stderr
        assert "podman: not found on PATH; docker: not found on PATH" in proc.stderr


def test_a_container_engine_that_does_not_answer_is_named(root: Path, tmp_path: Path, live: set[str]) -> None:
    broken = tools(tmp_path / "bin", podman="echo 'cannot connect to the service' >&2; exit 125")
    proc = builders("build", "--engine", "container", "--target", first(live, "cpu", HERE), "--dry-run", "--output",
                    str(tmp_path), cwd=root, path=broken)
    assert proc.returncode == 9, proc.stderr
    assert f"podman: {broken}/podman is there, but `podman info` fails" in proc.stderr
    assert "docker: not found on PATH" in proc.stderr


def test_auto_says_which_engine_and_why(root: Path, tmp_path: Path, live: set[str]) -> None:
    proc = builders("build", "--engine", "auto", "--target", first(live, "cpu", HERE), "--dry-run", "--allow-skip",
                    "--output", str(tmp_path), cwd=root, path=tools(tmp_path / "bin"))
    assert proc.returncode == 0, proc.stderr
    assert "engine local (auto: no working container engine (podman: not found on PATH" in proc.stderr


# -- cibw plans macOS and Windows targets as their runners would, with no container engine -----------

@pytest.mark.parametrize("os_name", ["macos", "windows"])
def test_cibw_dry_run_of_another_os_prints_its_runners_commands(root: Path, tmp_path: Path, data, live: set[str],
                                                                os_name: str) -> None:
    plats = platforms_of(data, os_name)
    if not plats:
        pytest.skip(f"the matrix has no {os_name} platform")
    tid, raw = first(live, "cpu", plats[0]), data["platforms"][plats[0]]
    no_engine = tools(tmp_path / "bin")
    proc = builders("build", "--engine", "cibw", "--dry-run", "--target", tid, "--output", str(tmp_path), cwd=root,
                    path=no_engine)
    assert proc.returncode == 0, proc.stderr
    assert f"planned as the CI runner would run it: {plats[0]} on {raw['runner']}" in proc.stderr
    assert f"CIBW_ARCHS_{os_name.upper()}={raw['arch']}" in proc.stdout
    assert f"cibuildwheel --platform {os_name}" in proc.stdout
    as_json = builders("build", "--engine", "cibw", "--dry-run", "--json", "--target", tid, "--output", str(tmp_path),
                       cwd=root, path=no_engine)
    (plan,) = json.loads(as_json.stdout)["plans"]
    env = plan["build"]["env"]
    assert plan["runner"]["kind"] == "host" and not [k for k in env if "MANYLINUX" in k or "CONTAINER" in k]
    if os_name == "macos":
        assert f"MACOSX_DEPLOYMENT_TARGET={raw['deployment_target']}" in env["CIBW_ENVIRONMENT"]
        assert env["CIBW_REPAIR_WHEEL_COMMAND"].startswith(f"delocate-wheel --require-archs {raw['arch']}")
    venv = "Scripts/python.exe" if os_name == "windows" else "bin/python"
    assert any(c["argv"][0].endswith(f"/smoke/venv/{venv}") for c in plan["smoke"])
    real = builders("build", "--engine", "cibw", "--target", tid, "--output", str(tmp_path), cwd=root, path=no_engine)
    assert real.returncode == 22 and f"{tid}: needs a {plats[0]} host" in real.stderr, real.stderr


# -- smoke --require-device ------------------------------------------------------------------------------

def this_machine_shows(accelerator: Accelerator) -> bool:
    return judge(accelerator, probe(accelerator, dict(os.environ))).ok


def smoke(root: Path, tmp_path: Path, tid: str, path: str | None = None) -> subprocess.CompletedProcess[str]:
    wheel = tmp_path / "not-a-wheel.whl"
    wheel.write_bytes(b"not a zip")  # the device gate comes first; a cleared gate then meets this (exit 11)
    return builders("smoke", str(wheel), "--target", tid, "--require-device", cwd=root, path=path)


@pytest.mark.parametrize(("family", "says"), [("cuda", "nvidia-smi: not on PATH; /dev/nvidia0: absent"),
                                              ("rocm", "/dev/kfd: absent")])
def test_require_device_fails_a_gpu_job_on_a_machine_without_the_gpu(root: Path, tmp_path: Path, data,
                                                                     live: set[str], family: str, says: str) -> None:
    family_accelerator = accelerator(family)
    if this_machine_shows(family_accelerator):
        pytest.skip(f"this machine shows a {family} device: the no-device case cannot happen here")
    plat = sorted(data["accelerators"][family].get("smoke_runners", {}))[0]
    label = expected.labels({"accelerators": {family: data["accelerators"][family]}})[0]
    tid = first(live, label, plat)
    proc = smoke(root, tmp_path, tid, path=tools(tmp_path / "bin"))
    assert proc.returncode == 23, proc.stderr
    assert f"DeviceMissing: {tid} is smoke-tested on a {family} GPU runner" in proc.stderr and says in proc.stderr


def test_require_device_passes_where_the_gpu_is_shown_and_for_cpu_wheels(root: Path, tmp_path: Path, data,
                                                                        live: set[str]) -> None:
    plat = sorted(data["accelerators"]["cuda"]["smoke_runners"])[0]
    cuda = first(live, expected.labels({"accelerators": {"cuda": data["accelerators"]["cuda"]}})[0], plat)
    listing = "GPU 0: NVIDIA H200 (UUID: GPU-0d9a5c1e)"
    proc = smoke(root, tmp_path, cuda, path=tools(tmp_path / "bin", **{"nvidia-smi": f"echo '{listing}'"}))
    assert proc.returncode == 11, proc.stderr  # past the gate: the junk wheel is refused next
    assert f"{cuda}: cuda device: {listing}" in proc.stderr
    cpu = smoke(root, tmp_path, first(live, "cpu", plat), path=tools(tmp_path / "empty"))
    assert cpu.returncode == 11 and "no device needed (a cpu wheel)" in cpu.stderr, cpu.stderr


def test_probe_asks_the_vendor_tools_through_the_one_subprocess_helper(tmp_path: Path) -> None:
    path = tools(tmp_path / "bin", rocminfo="printf '  Name:                    gfx90a\\n'",
                 **{"amd-smi": "echo 'amdgpu driver not loaded' >&2; exit 9"})
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev/kfd").touch()
    machine = probe(accelerator("rocm"), {"PATH": path}, dev=tmp_path / "dev", sysfs=tmp_path / "sys")
    answers = {t.name: (t.output, t.problem) for t in machine.tools}
    assert answers["rocminfo"] == ("  Name:                    gfx90a\n", "")
    assert answers["amd-smi"] == ("", "exited 9: amdgpu driver not loaded")
    assert judge(accelerator("rocm"), machine).found == ("/dev/kfd", "gfx90a")
