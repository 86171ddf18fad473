"""Fresh machines: the tools the suite calls are on this host, and the setup script that installs them works
on a clean Debian.

The proof on a clean Debian (``scripts/prove-setup.sh``: the setup script run in a fresh container of the
local debootstrap base, then its ``--check``, then every tool asked for its version; measured at 163 s,
mostly apt downloads, 2026-11-30) runs when ``BUILDERS_PROVE_SETUP=1``: it adds minutes of downloads to
every run of the suite otherwise.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers import SETUP_SCRIPT, require_tool

pytestmark = pytest.mark.slow


def test_this_host_has_every_tool_the_setup_script_installs() -> None:
    proc = subprocess.run([str(SETUP_SCRIPT), "--check"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, f"{proc.stdout}{proc.stderr}run scripts/setup-test-host.sh (as root)"


@pytest.mark.skipif(os.environ.get("BUILDERS_PROVE_SETUP") != "1",
                    reason="minutes of apt downloads: BUILDERS_PROVE_SETUP=1 runs it (scripts/prove-setup.sh)")
def test_the_setup_script_works_on_a_clean_debian(root: Path, base_image: str) -> None:
    require_tool("podman")
    started = time.monotonic()
    proc = subprocess.run([str(root / "scripts/prove-setup.sh"), base_image], capture_output=True, text=True,
                          timeout=1800)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "every tool is installed" in proc.stdout and "proven on a fresh" in proc.stdout
    print(f"\nsetup proven in a fresh {base_image} container in {time.monotonic() - started:.0f} s")
