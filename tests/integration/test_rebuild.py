"""``rebuild`` reproduces a released wheel byte for byte, and names what differs when it does not.

Two small projects, each committed to a git repository of its own (tests/rebuilds.py), one target
each released and rebuilt from the manifest's commit in another folder with an empty compiler cache:
``tests/projects/cflags`` (one C file, its cpu target) and ``tests/projects/cudakit`` (a CUDA kernel
compiled by the pinned pip toolkit, reused from the shared toolchain cache). A released wheel edited by
script (one byte of its extension) must come out as a ``code`` difference of that member, its RECORD
as ``metadata``.
"""

from __future__ import annotations

import calendar
import json
import zipfile
from pathlib import Path

import pytest
import yaml

from builders.base.errors import NotReproduced, RebuildError
from builders.pipeline.platform_policy import host_glibc
from builders.wheel.archive import Wheel
from builders.wheel.writer import write_wheel
from tests import rebuilds

pytestmark = [pytest.mark.slow, pytest.mark.skipif(host_glibc() is None, reason="--local-only tags at this host's glibc")]

PROJECTS = Path(__file__).resolve().parent.parent / "projects"


def target_of(project: str) -> str:
    """The project's first target on Linux x86_64, from its matrix (the first Python, the first variant)."""
    data = yaml.safe_load((PROJECTS / project / "matrix.yaml").read_text())
    python = "cp" + data["pythons"][0].replace(".", "")
    node = next(iter(data["accelerators"].values()))
    label = node["label"] if "label" in node else next(iter(node["versions"].values()))["label"]
    return f"{label}-{python}-linux-x86_64"


def release_of(project: str, factory: pytest.TempPathFactory) -> tuple[Path, str, Path, Path]:
    repo = factory.mktemp(project) / "repo"
    commit = rebuilds.committed(PROJECTS / project, repo)
    target = target_of(project)
    wheel, manifest = rebuilds.release(repo, commit, target, repo.parent / "release")
    return repo, target, wheel, manifest


@pytest.fixture(scope="module")
def cpu(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, Path, Path]:
    return release_of("cflags", tmp_path_factory)


def test_a_released_cu132_target_rebuilt_from_its_commit_is_identical(tmp_path_factory: pytest.TempPathFactory,
                                                                      tmp_path: Path) -> None:
    repo, target, wheel, manifest = release_of("cudakit", tmp_path_factory)
    assert target.startswith("cu132-")
    proc = rebuilds.rebuild(repo, manifest, target, wheel, tmp_path / "work")
    assert proc.returncode == 0, (proc.stdout, proc.stderr[-3000:])
    outcome = json.loads(proc.stdout)
    assert outcome["identical"] and outcome["differences"] == [] and outcome["notes"] == []
    (rebuilt,) = json.loads((tmp_path / "work" / "out" / "results.json").read_text())["targets"]
    assert rebuilt["compiler_cache"]["misses"] > 0 and rebuilt["compiler_cache"]["hits"] == 0, rebuilt  # compiled again
    assert (tmp_path / "work" / "out" / rebuilt["wheel"]).read_bytes() == wheel.read_bytes()


def test_a_released_cpu_target_is_reproduced_and_an_edited_member_named_with_its_kind(
        cpu: tuple[Path, str, Path, Path], tmp_path: Path) -> None:
    """The released wheel with one byte of its extension flipped (RECORD made again): the rebuild, which is
    the original release byte for byte, names the extension as ``code`` and RECORD as ``metadata``."""
    repo, target, wheel, _ = cpu
    good = Wheel(wheel)
    with zipfile.ZipFile(wheel) as z:
        members = {n: z.read(n) for n in z.namelist() if not n.endswith("/RECORD")}
        stamp = z.infolist()[0].date_time
        modes = {i.filename: i.external_attr for i in z.infolist()}
    (so,) = [n for n in members if n.endswith(".so")]
    data = bytearray(members[so])
    data[len(data) // 2] ^= 0xFF
    members[so] = bytes(data)
    edited = tmp_path / "edited" / wheel.name
    edited.parent.mkdir()
    write_wheel(edited, members, good.dist_info, modes, int(calendar.timegm((*stamp, 0, 0, 0))))
    release = wheel.parent.parent.parent
    (record,) = json.loads((release / "results.json").read_text())["targets"]
    commit = json.loads((release / "manifest.json").read_text())["commit"]
    manifest = rebuilds.manifest_of(edited, record, commit, tmp_path / "manifest.json")
    proc = rebuilds.rebuild(repo, manifest, target, edited, tmp_path / "work")
    assert proc.returncode == NotReproduced.exit_code, (proc.stdout, proc.stderr[-3000:])
    outcome = json.loads(proc.stdout)
    assert {(d["member"], d["kind"]) for d in outcome["differences"]} == {(so, "code"),
                                                                          (f"{good.dist_info}/RECORD", "metadata")}
    assert Path(outcome["rebuilt"]).read_bytes() == wheel.read_bytes()  # the original release, reproduced


def test_a_commit_the_repository_lacks_is_a_clear_error(cpu: tuple[Path, str, Path, Path], tmp_path: Path) -> None:
    repo, target, wheel, manifest = cpu
    data = json.loads(manifest.read_text())
    (tmp_path / "m.json").write_text(json.dumps({**data, "commit": "0" * 40}))
    proc = rebuilds.rebuild(repo, tmp_path / "m.json", target, wheel, tmp_path / "work")
    assert proc.returncode == RebuildError.exit_code and f"commit {'0' * 40} is not in the repository" in proc.stderr
