"""Builds that cannot go stale (issue 29): every build compiles a private copy of the source.

setuptools keeps its objects in the tree's ``build/`` folder and reuses any that look newer than
their sources. A build in the shared tree therefore shipped objects compiled with the flags of an
earlier build (two byte-identical wheels for ``-g0 -O2`` and ``-g3 -O0``), and two Pythons built at
once (``--jobs 2``) shared ``build/bdist.*``; a cpu and a CUDA variant on one Python shared even
``build/temp.*``. The project here (``tests/projects/cflags``) reports how it was compiled:
``flagged.optimized()`` and DWARF sections tell the flags apart, ``flagged.python()`` the Python
and ``flagged.variant()`` the variant (its ``-D`` flags, from the matrix's ``build.env``) it was
compiled for.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest
import yaml
from elftools.elf.elffile import ELFFile

from builders.families import loader as matrix
from builders.wheel.smoke import expected_runtime_version
from tests import helpers

pytestmark = pytest.mark.slow

PROJECT = Path(__file__).resolve().parent.parent / "projects" / "cflags"
SHIPPED = Path(__file__).resolve().parent.parent.parent / "matrix.yaml"
OPTIMISED, DEBUG = "-g0 -O2", "-g3 -O0"


def project_tree(where: Path, cflags: str) -> Path:
    """A copy of the project whose matrix compiles with ``cflags`` (its ``build.variables``)."""
    tree = where / "src"
    shutil.copytree(PROJECT, tree, dirs_exist_ok=True)
    data = yaml.safe_load((PROJECT / "matrix.yaml").read_text())
    data["project"]["build"]["variables"]["CFLAGS"] = cflags
    (tree / "matrix.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return tree


def build(tree: Path, out: Path, *args: str) -> dict[str, dict]:
    proc = helpers.builders("build", "--matrix", str(tree / "matrix.yaml"), "--source", str(tree), "--output", str(out),
                            *args, cwd=out.parent)
    records = {r["id"]: r for r in json.loads((out / "results.json").read_text())["targets"]}
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-3000:])
    assert all(r["status"] == "built" for r in records.values()), records
    return records


def extension(out: Path, record: dict) -> bytes:
    with zipfile.ZipFile(out / record["wheel"]) as wheel:
        (name,) = [n for n in wheel.namelist() if n.startswith("flagged.") and n.endswith(".so")]
        return wheel.read(name)


def sections(so: bytes) -> set[str]:
    return {s.name for s in ELFFile(io.BytesIO(so)).iter_sections()}


def optimized(interpreter: str, so: bytes, where: Path) -> int:
    """What the object says of itself, loaded by ``interpreter``."""
    where.mkdir(parents=True, exist_ok=True)
    (where / "flagged.so").write_bytes(so)
    code = "import flagged; print(flagged.optimized())"
    return int(subprocess.run([interpreter, "-c", code], cwd=where, check=True, capture_output=True, text=True,
                              timeout=60).stdout)


def plan_of(tree: Path, out: Path, tid: str) -> dict:
    proc = helpers.builders("build", "--matrix", str(tree / "matrix.yaml"), "--source", str(tree), "--output", str(out),
                            "--target", tid, "--dry-run", "--json", cwd=out.parent)
    assert proc.returncode == 0, proc.stderr
    (plan,) = [p for p in json.loads(proc.stdout)["plans"] if p["id"] == tid]
    return plan


def interpreter_of(tree: Path, out: Path, tid: str) -> str:
    return str(plan_of(tree, out, tid)["interpreter"])


def plant_stale_objects(tree: Path, interpreter: str, cflags: str, where: Path) -> None:
    """A build in the tree itself, as a user runs one by hand: ``build/`` now holds objects with ``cflags``."""
    subprocess.run([interpreter, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", str(where), str(tree)], check=True,
                   capture_output=True, timeout=600, env={**os.environ, "CFLAGS": cflags})
    assert list((tree / "build").glob("temp.*/*.o")), "the tree's own build left its objects"


def test_two_flag_sets_give_two_correct_objects_and_a_fresh_tree_the_same(tmp_path: Path) -> None:
    tid = "cpu-cp312-linux-x86_64"
    tree = project_tree(tmp_path, OPTIMISED)
    first = build(tree, tmp_path / "out", "--target", tid)[tid]
    fast = extension(tmp_path / "out", first)
    python = interpreter_of(tree, tmp_path / "out", tid)
    plant_stale_objects(tree, python, OPTIMISED, tmp_path / "by-hand")
    tree = project_tree(tmp_path, DEBUG)  # the same tree, its build/ left as it was, the flags changed
    reused = extension(tmp_path / "out", build(tree, tmp_path / "out", "--target", tid)[tid])
    assert reused != fast and len(reused) > len(fast)
    assert ".debug_info" in sections(reused) and ".debug_info" not in sections(fast)
    assert optimized(python, reused, tmp_path / "load-debug") == 0
    assert optimized(python, fast, tmp_path / "load-fast") == 1
    shutil.rmtree(tree / "build")  # a fresh tree at the same place gives the very same object
    fresh = extension(tmp_path / "out", build(tree, tmp_path / "out", "--target", tid, "--force")[tid])
    assert fresh == reused


def test_two_pythons_at_once_each_get_their_own_objects(tmp_path: Path) -> None:
    tree = project_tree(tmp_path, DEBUG)
    ids = ["cpu-cp312-linux-x86_64", "cpu-cp313-linux-x86_64"]
    records = build(tree, tmp_path / "out", "--select", "cpu-cp31[23]-*", "--jobs", "2")
    assert sorted(records) == ids
    for tid in ids:  # smoke checked flagged.python() in each; the debug flags reached both
        assert ".debug_info" in sections(extension(tmp_path / "out", records[tid]))
        assert records[tid]["smoke"], records[tid]
    assert not (tree / "build").exists(), "no build wrote into the shared tree"


def with_cuda_variant(tree: Path) -> str:
    """The shipped matrix's CUDA family, its first version alone, added to the tree's matrix for the tree's platforms;
    that version's label. Its runtime folders are relative to site-packages, so flagged's module at the top of
    it gets the entry that reaches them from there (builders computes it per ELF at repair)."""
    cuda = yaml.safe_load(SHIPPED.read_text())["accelerators"]["cuda"]
    version, entry = next(iter(cuda.pop("versions").items()))
    data = yaml.safe_load((tree / "matrix.yaml").read_text())
    family, entry = ({key: ours(value, data["platforms"]) for key, value in d.items()} for d in (cuda, entry))
    data["accelerators"]["cuda"] = {**family, "versions": {version: entry}}
    (tree / "matrix.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return str(entry["label"])


def ours(value: object, platforms: dict) -> object:
    """A per-platform mapping (``arch_list``, ``smoke_runners``) less the platforms the tree's matrix lacks."""
    if isinstance(value, dict) and set(value) & set(platforms):
        return {name: v for name, v in value.items() if name in platforms}
    return value


def reports(plan: dict, so: bytes, where: Path) -> list:
    """``flagged.variant()`` and ``flagged.runtime()`` of the object, loaded by the plan's interpreter with the
    plan's toolkit (a CUDA build's libcudart) on the library path."""
    where.mkdir(parents=True, exist_ok=True)
    (where / "flagged.so").write_bytes(so)
    code = "import flagged, json; print(json.dumps([flagged.variant(), flagged.runtime()]))"
    root = plan["toolchain"]["root"]
    env = {**os.environ, **({"LD_LIBRARY_PATH": f"{root}/lib"} if root else {})}
    out = subprocess.run([plan["interpreter"], "-c", code], cwd=where, check=True, capture_output=True, text=True,
                         timeout=60, env=env)
    return list(json.loads(out.stdout))


def needed(so: bytes) -> set[str]:
    """The object's DT_NEEDED libraries."""
    dynamic = ELFFile(io.BytesIO(so)).get_section_by_name(".dynamic")
    return {tag.needed for tag in dynamic.iter_tags() if tag.entry.d_tag == "DT_NEEDED"}


def test_two_variants_at_once_each_get_their_own_objects(tmp_path: Path) -> None:
    """A cpu and a CUDA build of one Python at once, from one tree: one source file, objects that differ in the
    variant's flags (its -D flags; the CUDA build's headers and runtime library). Sharing a build/ folder, one
    wheel would get the other's object."""
    tree = project_tree(tmp_path, DEBUG)
    label = with_cuda_variant(tree)
    ids = ["cpu-cp312-linux-x86_64", f"{label}-cp312-linux-x86_64"]
    out = tmp_path / "out"
    records = build(tree, out, *(a for tid in ids for a in ("--target", tid)), "--jobs", "2")
    assert sorted(records) == sorted(ids)
    m = matrix.load(tree / "matrix.yaml")
    objects = {tid: extension(out, records[tid]) for tid in ids}
    assert objects[ids[0]] != objects[ids[1]]
    for tid in ids:  # smoke ran flagged's own checks of variant() and runtime() in each wheel's venv too
        variant = helpers.one(m, tid).variant
        runtime = expected_runtime_version(variant)
        assert reports(plan_of(tree, out, tid), objects[tid], tmp_path / tid) == [
            [variant.accelerator.value, variant.version or ""], runtime]
        assert bool(needed(objects[tid]) & set(variant.exclude_libs)) is (runtime is not None)
        assert ".debug_info" in sections(objects[tid]) and records[tid]["smoke"]["project_ok"] is True, records[tid]
    assert not (tree / "build").exists(), "no build wrote into the shared tree"


def test_keep_failed_keeps_the_work_folder_and_says_where(tmp_path: Path) -> None:
    tree = project_tree(tmp_path, "-fthis-flag-does-not-exist")
    tid = "cpu-cp312-linux-x86_64"
    for keep in (False, True):
        out = tmp_path / f"out-{keep}"
        proc = helpers.builders("build", "--matrix", str(tree / "matrix.yaml"), "--source", str(tree), "--output",
                                str(out), "--target", tid, *(["--keep-failed"] if keep else []), cwd=tmp_path)
        (record,) = json.loads((out / "results.json").read_text())["targets"]
        assert proc.returncode == 1 and record["status"] == "failed" and record["stage"] == "build", record
        work = out / ".work" / tid
        assert ("work folder kept at" in record["reason"]) is keep and work.exists() is keep
    assert str(work) in record["reason"] and (work / "src" / "flagged.c").is_file()
    assert "--keep-failed" in (out / record["log"]).read_text()
