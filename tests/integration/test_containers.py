"""Container and cibuildwheel engines for real, with podman, on a local Debian unstable base.

The base image is made by scripts/podman-base.sh (debootstrap; nothing is pulled). Debian
unstable packages CPython 3.13, 3.14 and 3.15, so these tests cover cp314 and cp315, which
the host lacks. Free-threaded builds are not packaged there: those targets are skipped with
that reason (their tags and ABI logic are unit-tested).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from builders.engines import images
from builders.engines.container import OWNER_LABEL
from builders.engines.images import engine_env
from builders.families import families
from builders.wheel.archive import Wheel
from tests import helpers

pytestmark = pytest.mark.slow

IN_IMAGE = ("cp313", "cp314", "cp315")


def builders(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return helpers.builders(*args, cwd=cwd, env=env())


def env() -> dict[str, str]:
    return engine_env(os.environ)


def podman(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["podman", *args], env=env(), text=True, capture_output=True, timeout=600)


def owned_by(pid: int, *, stopped_too: bool = True) -> list[str]:
    """The names of the build containers that process ``pid`` started (its owner label): the suite runs on two
    workers, and another module's build may have containers of its own running now."""
    return podman("ps", *(["--all"] if stopped_too else []), "--filter", f"label={OWNER_LABEL}={pid}", "--format",
                  "{{.Names}}").stdout.split()


@pytest.fixture(scope="session")
def container_house(root: Path, base_image: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("container-house")
    args = ("build", "--engine", "container", "--base-image", base_image, "--select", "cpu-*", "--select", "cu132-*",
            "--output", str(out))
    # The local base has no free-threaded CPython: those targets are skipped at the check stage, which
    # fails the run (exit 22) unless --allow-skip accepts it.
    proc = builders(*args, "--allow-skip", cwd=root)
    assert proc.returncode == 0, proc.stderr[-5000:]
    assert "skipped during the build (--allow-skip)" in proc.stdout + proc.stderr
    return out


def results(house: Path) -> dict[str, dict]:
    return {r["id"]: r for r in json.loads((house / "results.json").read_text())["targets"]}


def test_container_builds_cp314_and_cp315(container_house: Path) -> None:
    found = results(container_house)
    built = {tid for tid, r in found.items() if r["status"] == "built"}
    assert built == {f"{v}-{py}-linux-x86_64" for v in ("cpu", "cu132") for py in IN_IMAGE}
    assert all(found[t]["engine"] == "container" and found[t]["policy"] == "manylinux_2_28_x86_64" for t in built)
    for py in IN_IMAGE:
        smoke = found[f"cu132-{py}-linux-x86_64"]["smoke"]
        assert smoke["cuda_runtime_version"] == 13020 and smoke["cudart_path"].startswith("/tmp/smoke/venv/")
    ft = found["cpu-cp314t-linux-x86_64"]
    assert ft["status"] == "skipped" and "no free-threaded CPython 3.14t in image" in ft["reason"]
    assert "cp311" in found["cpu-cp311-linux-x86_64"]["id"] and found["cpu-cp311-linux-x86_64"]["status"] == "skipped"


def test_no_container_is_left_behind(container_house: Path) -> None:
    """No container of this module's builds is left. Only those count whose mounts come from its output: the
    suite runs on two workers, and another module's build (an act run's) may have a container running now."""
    ids = podman("ps", "--all", "--quiet", "--filter", "name=builders-").stdout.split()
    mounts = {i: podman("inspect", "--format", "{{range .Mounts}}{{.Source}} {{end}}", i).stdout for i in ids}
    assert [i for i, sources in mounts.items() if str(container_house) in sources] == []


def test_local_and_container_wheels_agree(container_house: Path, root: Path, tmp_path: Path) -> None:
    tid = "cu132-cp313-linux-x86_64"
    proc = builders("build", "--target", tid, "--output", str(tmp_path), cwd=root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    local = Wheel(tmp_path / results(tmp_path)[tid]["wheel"])
    container = Wheel(container_house / results(container_house)[tid]["wheel"])
    assert local.path.name == container.path.name
    assert (local.tags, local.version, local.wheel_tags) == (container.tags, container.version, container.wheel_tags)
    assert sorted(map(str, local.requires_dist)) == sorted(map(str, container.requires_dist))
    assert results(tmp_path)[tid]["engine"] == "local"


def test_the_image_compiler_cache_hits_on_a_forced_rebuild(container_house: Path, root: Path, base_image: str,
                                                           tmp_path: Path) -> None:
    """The image's ccache (kept per image) caches the core and the extension in the container: the image's
    CMake is new enough to scan C++20 sources for modules, which would make every compile uncacheable."""
    out = tmp_path / "house"
    shutil.copytree(container_house, out)
    tid = "cpu-cp314-linux-x86_64"
    proc = builders("build", "--engine", "container", "--base-image", base_image, "--target", tid, "--force",
                    "--no-smoke", "--output", str(out), cwd=root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    r = results(out)[tid]
    stats = r["compiler_cache"]
    assert r["core"]["status"] == "built" and stats["hits"] >= 10, stats
    assert "unsupported_compiler_option" not in stats["uncacheable_reasons"], stats
    # The only misses: CMake's own compiler probes (try_compile, in a folder of a random name).
    missed = helpers.missed_sources(out / r["log"])
    assert len(missed) == stats["misses"] and all("/CMakeScratch/TryCompile-" in m for m in missed), missed


def test_report_names_the_engine(container_house: Path, root: Path, tmp_path: Path) -> None:
    proc = builders("report", "--results", str(container_house / "results.json"), "--output", str(tmp_path), cwd=root)
    assert proc.returncode == 0, proc.stderr
    cells = {c["id"]: c for c in json.loads((tmp_path / "compatibility.json").read_text())["cells"]}
    assert cells["cu132-cp315-linux-x86_64"]["engine"] == "container"
    assert "✅ built (container)" in (tmp_path / "compatibility.md").read_text()


def test_cibuildwheel_builds_a_linux_target(container_house: Path, root: Path, base_image: str, tmp_path: Path) -> None:
    tid = "cpu-cp315-linux-x86_64"
    proc = builders("build", "--engine", "cibw", "--base-image", base_image, "--target", tid, "--output", str(tmp_path),
                    cwd=root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    r = results(tmp_path)[tid]
    assert (r["status"], r["engine"]) == ("built", "cibw")
    assert r["smoke"]["version"] == "2.15.0+cpu" and r["smoke"]["op_ok"] is True
    log = (tmp_path / r["log"]).read_text()
    assert "1 wheel produced" in log


def test_interrupted_container_build_leaves_nothing(container_house: Path, root: Path, base_image: str,
                                                     tmp_path: Path) -> None:
    """SIGTERM mid-build: no container, no wheel, an 'interrupted' result, exit 130."""
    tid = "cu132-cp314-linux-x86_64"
    proc = subprocess.Popen([sys.executable, "-m", "builders", "build", "--engine", "container", "--base-image",
                             base_image, "--target", tid, "--output", str(tmp_path)], cwd=root, env=env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        names = owned_by(proc.pid, stopped_too=False)
        if names:
            break
        time.sleep(0.2)
    assert names, "the build container never started"
    time.sleep(2)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, err[-3000:]
    assert owned_by(proc.pid) == []
    assert not list(tmp_path.rglob("*.whl"))
    r = results(tmp_path)[tid]
    assert r["status"] == "interrupted"


def test_sigterm_during_parallel_builds_stops_every_target(container_house: Path, root: Path, base_image: str,
                                                           tmp_path: Path) -> None:
    """--jobs 2, SIGTERM while both build containers run: both stop, nothing is left, both are 'interrupted'."""
    tids = ["cpu-cp314-linux-x86_64", "cu132-cp315-linux-x86_64"]
    argv = [sys.executable, "-m", "builders", "build", "--engine", "container", "--base-image", base_image,
            "--jobs", "2", "--output", str(tmp_path), *(a for t in tids for a in ("--target", t))]
    proc = subprocess.Popen(argv, cwd=root, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    names: list[str] = []
    while time.monotonic() < deadline and len(names) < 2:
        names = owned_by(proc.pid, stopped_too=False)
        time.sleep(0.2)
    assert len(names) == 2, "the two build containers never ran at once"
    time.sleep(2)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, err[-3000:]
    assert owned_by(proc.pid) == []
    assert not list(tmp_path.rglob("*.whl")) and not list(tmp_path.rglob("*.partial"))
    assert not list((tmp_path / ".work").glob("*"))
    found = results(tmp_path)
    assert {t: found[t]["status"] for t in tids} == dict.fromkeys(tids, "interrupted")
    assert all((tmp_path / found[t]["log"]).is_file() for t in tids)


def test_containerfiles_and_scripts_lint_clean(root: Path) -> None:
    bindir = Path(sys.executable).parent
    folder = images.CONTAINERS_DIR
    files = sorted(str(p) for p in folder.glob("*.Containerfile"))
    assert files == sorted(str(f.containerfile) for f in families()), files
    lint = subprocess.run([str(bindir / "hadolint"), "--config", str(folder / ".hadolint.yaml"), *files],
                          text=True, capture_output=True, timeout=120)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    scripts = [str(p) for p in [*folder.glob("*.sh"), *(root / "ci").glob("*.sh")]]
    scripts += [str(root / "scripts/podman-base.sh"), str(root / "scripts/setup-test-host.sh"), str(root / ".ci/run")]
    check = subprocess.run([str(bindir / "shellcheck"), *scripts], text=True, capture_output=True, timeout=120)
    assert check.returncode == 0, check.stdout


def test_sigkilled_build_is_reaped_by_the_next_run(container_house: Path, root: Path, base_image: str,
                                                    tmp_path: Path) -> None:
    """SIGKILL cannot clean up; the container is labelled with its owner and the next run removes it."""
    argv = [sys.executable, "-m", "builders", "build", "--engine", "container", "--base-image", base_image,
            "--target", "cpu-cp313-linux-x86_64", "--output", str(tmp_path)]
    proc = subprocess.Popen(argv, cwd=root, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    names: list[str] = []
    while time.monotonic() < deadline and not names:
        names = owned_by(proc.pid, stopped_too=False)
        time.sleep(0.2)
    assert names, "the build container never started"
    proc.kill()
    proc.wait(timeout=60)
    assert owned_by(proc.pid) == names
    assert builders(*argv[3:], "--dry-run", cwd=root).returncode == 0
    assert owned_by(proc.pid) == []
    assert not list(tmp_path.glob("whl/*/*.whl"))
