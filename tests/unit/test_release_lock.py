"""The release's tools, hash-locked (ci/release-tools.txt), stay in step with pyproject.toml and the workflow.

No index is asked: the lock is read as pip reads a requirements file, and every dependency
builders declares must be pinned there, with hashes, at a version its specifier admits."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

LOCK = Path("ci/release-tools.txt")
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)")


def locked(root: Path) -> dict[str, tuple[Version, list[str]]]:
    """{name: (version, hashes)} of every pin in the lock (continuation lines joined)."""
    text = (root / LOCK).read_text().replace("\\\n", " ")
    pins = {}
    for line in text.splitlines():
        if (match := PIN.match(line.strip())) is not None:
            pins[canonicalize_name(match.group(1))] = (Version(match.group(2)), re.findall(r"--hash=sha256:([0-9a-f]{64})", line))
    return pins


def test_every_dependency_is_locked_at_a_version_it_admits(root: Path) -> None:
    pins = locked(root)
    declared = [Requirement(r) for r in tomllib.loads((root / "pyproject.toml").read_text())["project"]["dependencies"]]
    assert declared
    for requirement in declared:
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement} is not in {LOCK}: regenerate it (see its header)"
        version = pins[name][0]
        assert requirement.specifier.contains(version, prereleases=True), f"{LOCK} pins {name}=={version}, outside {requirement}"


def test_every_pin_carries_hashes(root: Path) -> None:
    pins = locked(root)
    assert pins
    assert [name for name, (_version, hashes) in pins.items() if not hashes] == []


def test_setup_uv_installs_the_locked_uv(root: Path) -> None:
    """The smoke jobs' uv (setup-uv's `version`, never fetched from a manifest) is the lock's."""
    version, _ = locked(root)["uv"]
    shard = yaml.safe_load((root / ".github/workflows/release-shard.yml").read_text())
    steps = [s for job in shard["jobs"].values() for s in job.get("steps", []) if "setup-uv" in s.get("uses", "")]
    assert steps
    assert {str(s.get("with", {}).get("version")) for s in steps} == {str(version)}


def test_every_job_installs_the_locked_tools(root: Path) -> None:
    """No job resolves the release's tools from ranges: pip installs from the lock with hashes."""
    for name in ("release.yml", "release-shard.yml"):
        workflow = yaml.safe_load((root / ".github/workflows" / name).read_text())
        assert workflow["env"]["BUILDERS_LOCK"] == str(LOCK)
        for job_name, job in workflow["jobs"].items():
            for step in job.get("steps", []):
                run = step.get("run", "")
                if "pip install" in run:
                    assert "--require-hashes" in run or "--no-deps ." in run, f"{name}: {job_name}: {run}"
                    assert "pip install nox" not in run, f"{name}: {job_name} installs nox unlocked"
