"""A vendor's offline installer, for a toolkit no package registry ships (oneAPI DPC++ on Windows).

GitHub's windows-2025 runners reach vendor downloads, and PyTorch's Windows XPU builds install
Intel's oneAPI this way (``.ci/pytorch/windows/internal/xpu_install.bat``: the offline
installer, run ``--action=install --eula=accept --silent``). The URL and its sha256 are matrix
data (``toolkit.windows_installer``), pinned there or taken from the environment, like the
Linux image's system repository; the download is checked against the sha256 before it runs,
and an installed toolkit (its ``bin`` folder present) is not installed again. A plan shows the
steps (:func:`lines`); the provision stage runs them (:func:`install`), on Windows only.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from pathlib import Path

from builders.base.errors import ToolchainError
from builders.base.process import LogLike, run
from builders.matrix.findings import ENV_REF, expand_env
from builders.matrix.model import OS, ToolkitInstaller
from builders.matrix.targets import Target

INSTALLER_NAME = "toolkit-installer.exe"
SILENT = ("--action=install", "--eula=accept", "--silent")


def windows_installer(target: Target) -> ToolkitInstaller | None:
    """The installer that provisions ``target``'s toolkit: only for a Windows target whose variant has one."""
    return target.variant.toolkit.windows_installer if target.platform.os is OS.WINDOWS else None


def folder(target: Target, cache: Path) -> Path:
    """Where the installer is downloaded and logs (beside the cached toolkits, one folder per variant)."""
    return cache / "installers" / target.variant.label


def resolved(target: Target, installer: ToolkitInstaller, env: Mapping[str, str]) -> ToolkitInstaller:
    """``installer`` with its ``${VAR}`` references filled from ``env`` (an unset one is an error naming it)."""
    where = f"{target.variant.location}: {target.variant.location.key}.toolkit.windows_installer"
    return ToolkitInstaller(url=expand_env(installer.url, env, key=f"{where}.url"),
                     sha256=_digest(installer.sha256, env, key=f"{where}.sha256"), root=installer.root)


def _digest(value: str, env: Mapping[str, str], *, key: str) -> str:
    missing = [name for name in ENV_REF.findall(value) if not env.get(name)]
    if missing:
        raise ToolchainError(f"{key}: needs ${{{missing[0]}}} from the environment, and it is not set "
                             "(the installer's sha256: pin it in matrix.yaml for a release)")
    digest = ENV_REF.sub(lambda m: env[m.group(1)], value).strip().lower()
    if not re.fullmatch(r"[0-9a-f]{64}", digest):
        raise ToolchainError(f"{key}: {digest!r} is not a sha256 (64 hex digits)")
    return digest


def steps(installer: ToolkitInstaller, folder: str) -> tuple[tuple[str, ...], ...]:
    """The commands that install it: the download, then the installer run silently (its log in ``folder``)."""
    exe = f"{folder}/{INSTALLER_NAME}"
    return (("curl", "--fail", "--location", "--retry", "3", "--output", exe, installer.url),
            (exe, *SILENT, "--log-dir", f"{folder}/log"))


def lines(installer: ToolkitInstaller, folder: str) -> tuple[str, ...]:
    """What a plan shows for it, one line per step, with the check between download and run."""
    download, setup = steps(installer, folder)
    return (" ".join(download), f"sha256 of {download[-2]} is {installer.sha256}", " ".join(setup),
            f"toolkit at {installer.root} (skipped when {installer.root}/bin exists)")


def install(target: Target, installer: ToolkitInstaller, folder: Path, env: Mapping[str, str], log: LogLike) -> str:
    """Run the installer unless its toolkit is there already; the toolkit's root."""
    wanted = resolved(target, installer, env)
    if (Path(wanted.root) / "bin").is_dir():
        return wanted.root
    folder.mkdir(parents=True, exist_ok=True)
    download, setup = steps(wanted, str(folder))
    timeout = target.project.timeouts.provision
    run(download, env=env, log=log, timeout=timeout)
    found = hashlib.sha256(Path(download[-2]).read_bytes()).hexdigest()
    if found != wanted.sha256:
        Path(download[-2]).unlink(missing_ok=True)
        raise ToolchainError(f"{wanted.url}: sha256 {found}, but the matrix pins {wanted.sha256} "
                             f"({target.variant.location}); the download is not run")
    run(setup, env=env, log=log, timeout=timeout)
    if not (Path(wanted.root) / "bin").is_dir():
        raise ToolchainError(f"the installer from {wanted.url} left no {wanted.root}/bin "
                             f"(check {target.variant.label}'s toolkit.windows_installer.root)")
    return wanted.root
