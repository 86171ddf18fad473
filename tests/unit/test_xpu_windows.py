"""XPU on Windows: planned again, its toolkit from Intel's offline installer (matrix data), its job
on a Windows runner. Nothing here runs the installer: that needs a Windows runner (CI only)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from builders.base.errors import BuildersError, ToolchainError
from builders.ci import jobs as ci
from builders.engines.local import host_provision, host_toolchain
from builders.families import installer
from builders.families.hostfacts import Host
from builders.families.xpu import XPU
from builders.matrix.model import OS, Matrix, ToolkitInstaller
from builders.matrix.targets import expand
from builders.pipeline.plan import Context

ENV = {"ONEAPI_WINDOWS_INSTALLER_URL": "https://downloads.example.invalid/oneapi/w_dpcpp_offline.exe",
       "ONEAPI_WINDOWS_INSTALLER_SHA256": "AB" * 32}


def windows_xpu(m: Matrix) -> list:
    targets, _ = expand(m)
    return [t for t in targets if t.variant.accelerator.value == "xpu" and t.platform.os is OS.WINDOWS]


def test_the_plan_lists_xpu_for_every_python_windows_builds(m: Matrix) -> None:
    targets, excluded = expand(m)
    windows = [t for t in targets if t.platform.os is OS.WINDOWS]
    pythons = {t.python for t in windows if t.variant.accelerator.value == "cpu"}
    assert {t.python for t in windows_xpu(m)} == pythons and pythons
    assert "xpu-cp313-windows-x86_64" in {t.id for t in windows_xpu(m)}
    # oneAPI's Windows installer is x86_64's: only a Windows x86_64 xpu target may never be excluded
    x86 = tuple(f"-{p.name}" for p in m.platforms if p.os is OS.WINDOWS and p.arch == "x86_64")
    assert not [e for e in excluded if e.id.startswith("xpu-") and e.id.endswith(x86)]


def test_the_installer_is_matrix_data_taken_from_the_environment_where_not_pinned(m: Matrix) -> None:
    target = windows_xpu(m)[0]
    found = installer.windows_installer(target)
    assert found is not None and found.url.startswith("${") and found.sha256.startswith("${")
    wanted = installer.resolved(target, found, ENV)
    assert wanted.url == ENV["ONEAPI_WINDOWS_INSTALLER_URL"] and wanted.sha256 == "ab" * 32
    with pytest.raises(BuildersError, match="ONEAPI_WINDOWS_INSTALLER_URL"):
        installer.resolved(target, found, {})
    with pytest.raises(ToolchainError, match="not a sha256"):
        installer.resolved(target, found, {**ENV, "ONEAPI_WINDOWS_INSTALLER_SHA256": "1234"})
    pinned = ToolkitInstaller(url="https://downloads.example.invalid/x.exe", sha256="cd" * 32, root="C:/oneapi")
    assert installer.resolved(target, pinned, {}) == pinned  # a pin needs nothing from the environment


def test_only_windows_targets_use_the_installer(m: Matrix) -> None:
    targets, _ = expand(m)
    linux = next(t for t in targets if t.variant.accelerator.value == "xpu" and t.platform.os is OS.LINUX)
    assert installer.windows_installer(linux) is None
    assert linux.variant.toolkit.windows_installer is not None  # same variant: the Linux image is unchanged


def test_the_provisioning_command_downloads_checks_then_runs_it_silently(m: Matrix, tmp_path: Path) -> None:
    found = installer.resolved(windows_xpu(m)[0], installer.windows_installer(windows_xpu(m)[0]), ENV)
    download, setup = installer.steps(found, str(tmp_path))
    exe = f"{tmp_path}/{installer.INSTALLER_NAME}"
    assert download == ("curl", "--fail", "--location", "--retry", "3", "--output", exe, ENV["ONEAPI_WINDOWS_INSTALLER_URL"])
    assert setup == (exe, "--action=install", "--eula=accept", "--silent", "--log-dir", f"{tmp_path}/log")
    lines = installer.lines(found, str(tmp_path))
    assert lines[0] == " ".join(download) and found.sha256 in lines[1] and lines[2] == " ".join(setup)
    assert found.root in lines[3]


def test_an_installed_toolkit_is_not_installed_again(m: Matrix, tmp_path: Path) -> None:
    target = windows_xpu(m)[0]
    root = tmp_path / "oneapi"
    (root / "bin").mkdir(parents=True)
    present = ToolkitInstaller(url="https://downloads.example.invalid/x.exe", sha256=hashlib.sha256(b"x").hexdigest(),
                        root=str(root))
    assert installer.install(target, present, tmp_path / "dl", {}, None) == str(root)
    assert not (tmp_path / "dl").exists()  # nothing downloaded


def test_the_plan_provisions_with_the_installer_and_builds_at_its_root(m: Matrix, tmp_path: Path) -> None:
    target = windows_xpu(m)[0]
    found = installer.windows_installer(target)
    runner = Host(os=OS.WINDOWS, arch="x86_64")
    assert XPU.toolkit_root(target, tmp_path, runner) == found.root
    provision = host_provision(target, host_toolchain_for(target, tmp_path, runner), tmp_path)
    assert provision.installer == installer.lines(found, str(tmp_path / "installers" / target.variant.label))
    assert provision.lines()[: len(provision.installer)] == provision.installer
    assert provision.to_json()["installer"] == list(provision.installer)


def host_toolchain_for(target, cache: Path, host: Host):
    """The toolchain the Windows runner plans with (a plan context of that host)."""
    ctx = Context(host=host, env={}, source=cache, source_digest="0" * 64, epoch=0, output=cache, cache=cache,
                  tools_python="python", builders_version="0")
    return host_toolchain(target, ctx)


def test_it_cannot_run_here_and_the_skip_reason_says_why(m: Matrix) -> None:
    target = windows_xpu(m)[0]
    reason = XPU.unavailable(target, Host(os=OS.LINUX, arch="x86_64"))
    assert reason is not None and "offline installer" in reason and target.platform.runner in reason
    assert "cannot run on this linux host" in reason
    from builders.pipeline.host import unbuildable

    reason = unbuildable(target, Host(os=OS.LINUX, arch="x86_64"))
    assert reason is not None and "offline installer" in reason and f"CI runner: {target.platform.runner}" in reason


def test_the_build_job_entry_runs_every_python_on_the_windows_runner(m: Matrix) -> None:
    targets = windows_xpu(m)
    (group,) = ci.build_groups(targets)
    entry = ci.build_entry(group)
    assert entry["id"] == "xpu-windows-x86_64" and entry["runner"] == targets[0].platform.runner
    assert entry["engine"] == "cibw" and entry["targets"].split() == [t.id for t in targets]
    assert entry["count"] == len(targets)
    plan = ci.github_plan(targets)
    assert {e["id"] for s in plan["shards"] for e in s["include"]} == {t.id for t in targets}
