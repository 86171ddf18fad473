"""The generic smoke test for real: fresh venvs on this host, the packaged probe, project scripts.

Marked slow: each test makes a venv and pip-installs into it. The wheels are a tiny package
written here (its behaviour chosen per test), MarkupSafe's published wheel with its C
extension, and NVIDIA's CUDA runtime wheel (``cuda-toolkit[cudart]``) from the package index,
whose ``cudaRuntimeGetVersion`` answers without a GPU. Expected numbers are written out here
(13020 for CUDA 13.2), not computed by the code under test. No free-threaded interpreter
exists on this host, so the GIL check is covered by unit tests only.

The venv is made and the wheel installed by uv (the binary of the ``uv`` package builders depends
on) unless a test asks for venv + pip; both run here side by side, with pip's configuration (a
``PIP_CONFIG_FILE`` written here) translated for uv, uv's cache reused offline, and the fallback
to pip where uv does not run or fails.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from packaging.version import Version

from builders.matrix.targets import Selection, select
from builders.wheel.smoke import SmokeOutcome, smoke
from builders.wheel.writer import write_wheel

pytestmark = pytest.mark.slow

ABI = f"cp{sys.version_info[0]}{sys.version_info[1]}"
ROOT = Path(__file__).resolve().parents[2]

GOOD_SCRIPT = """\
import json, sys
facts = json.load(sys.stdin)
import tiny_pkg
for i in range(200_000):
    print(f"stderr chatter {i}", file=sys.stderr)
print("a banner some library prints on stdout {not json}")
print(json.dumps({"checks": [{"name": "answer", "ok": tiny_pkg.ANSWER == 42, "detail": str(tiny_pkg.ANSWER)},
                             {"name": "facts arrived", "ok": facts["import_name"] == "tiny_pkg", "detail": ""}],
                  "facts": {"answer": tiny_pkg.ANSWER}}, indent=2))
"""

CRASHING_SCRIPT = """\
import sys
print("checking the widget", file=sys.stderr)
raise RuntimeError("widget exploded: kaboom-7731")
"""

SLOW_SCRIPT = "import time\ntime.sleep(60)\n"

CUDART_INIT = """\
import ctypes, glob, os, shutil, sys
ANSWER = 42
_lib = glob.glob(os.path.join(sys.prefix, "lib", "python*", "site-packages", "nvidia", "cu13", "lib", "libcudart.so.13"))[0]
ELSEWHERE = ""  # a folder outside the venv (written into the wheel: the smoke's environment is allowlisted)
if ELSEWHERE:  # a copy outside the venv, as a system install would be
    _lib = shutil.copy(_lib, ELSEWHERE)
ctypes.CDLL(_lib)
"""


def tiny_wheel(dest: Path, version: str, init: str, requires: tuple[str, ...] = ()) -> Path:
    """A pure-Python wheel of ``Tiny_Pkg`` (mixed case: names are compared PEP 503-normalised)."""
    dist_info = f"tiny_pkg-{version}.dist-info"
    meta = "Metadata-Version: 2.1\nName: Tiny_Pkg\nVersion: " + version + "\n" + "".join(f"Requires-Dist: {r}\n" for r in requires)
    members = {"tiny_pkg/__init__.py": init.encode(), f"{dist_info}/METADATA": meta.encode(),
               f"{dist_info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    path = dest / f"tiny_pkg-{version}-py3-none-any.whl"
    write_wheel(path, members, dist_info, {}, 315532800)
    return path


def tiny_target(m, label: str, script: Path | None, *, timeout: float = 120.0, name: str = "Tiny_Pkg",
                import_name: str = "tiny_pkg", version: str = "1.0.0", extensions: tuple[str, ...] = ()):
    (target,) = select(m, Selection(targets=(f"{label}-{ABI}-linux-x86_64",)))
    project = replace(target.project, name=name, import_name=import_name, version=Version(version),
                      extension_modules=extensions, smoke_script=script, smoke_timeout=timeout)
    return replace(target, project=project)


def script_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "project_smoke_src.py"
    path.write_text(text)
    return path


def run(wheel: Path, target, env: dict[str, str] | None = None, dist_version: str | None = None,
        installer: str = "auto") -> SmokeOutcome:
    base = {"PATH": "/usr/bin:/bin", "HOME": str(Path.home())}
    return smoke(wheel, target, Path(sys.executable), {**base, **(env or {})}, None, dist_version=dist_version,
                 installer=installer)


def test_a_good_wheel_passes_and_its_scripts_json_is_read_whole(m, tmp_path: Path) -> None:
    init = "import os\nos.write(1, b'native code writing to fd 1 at import\\n')\nANSWER = 42\n"
    target = tiny_target(m, "cpu", script_file(tmp_path, GOOD_SCRIPT))
    out = run(tiny_wheel(tmp_path, "1.0.0+cpu", init), target)
    assert out.ok, out.problems
    names = {c["name"] for c in out.record["checks"]}
    assert {"python", "version", "import tiny_pkg", "project:answer", "project:facts arrived"} <= names
    assert out.record["facts"]["project"] == {"answer": 42} and out.record["facts"]["version"] == "1.0.0+cpu"
    assert out.summary["project_ok"] is True
    assert out.summary["installer"] == "uv" and out.summary["installer_note"] == ""


def test_a_crashing_project_script_reaches_the_problems_with_its_stderr(m, tmp_path: Path) -> None:
    target = tiny_target(m, "cpu", script_file(tmp_path, CRASHING_SCRIPT))
    out = run(tiny_wheel(tmp_path, "1.0.0+cpu", "ANSWER = 42\n"), target)
    (problem,) = out.problems
    assert "'project script' failed" in problem and "exit code 1" in problem
    assert "RuntimeError: widget exploded: kaboom-7731" in problem


def test_a_hanging_project_script_times_out(m, tmp_path: Path) -> None:
    target = tiny_target(m, "cpu", script_file(tmp_path, SLOW_SCRIPT), timeout=3)
    (problem,) = run(tiny_wheel(tmp_path, "1.0.0+cpu", "ANSWER = 42\n"), target).problems
    assert "timed out" in problem and "after 3.0s" in problem


def test_wrong_version_and_broken_import_are_named(m, tmp_path: Path) -> None:
    target = tiny_target(m, "cpu", None)
    out = run(tiny_wheel(tmp_path, "1.0.1+cpu", "raise ImportError('missing libwidget.so.3')\n"), target)
    assert any("'version' failed: Tiny_Pkg 1.0.1+cpu is installed, expected 1.0.0+cpu" in p for p in out.problems)
    assert any("'import tiny_pkg' failed: ImportError: missing libwidget.so.3" in p for p in out.problems)


def test_a_real_c_extension_loads_from_the_venv(m, tmp_path: Path) -> None:
    """MarkupSafe's published wheel, its ``_speedups`` module and its own smoke script."""
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "--dest",
                    str(tmp_path), "markupsafe==3.0.3"], check=True, capture_output=True, timeout=300)
    (wheel,) = tmp_path.glob("markupsafe-*.whl")
    target = tiny_target(m, "cpu", ROOT / "tests" / "projects" / "markupsafe" / "smoke.py", name="MarkupSafe",
                         import_name="markupsafe", version="3.0.3", extensions=("markupsafe._speedups",))
    out = run(wheel, target, dist_version="3.0.3")
    assert out.ok, out.problems
    (ext,) = [c for c in out.record["checks"] if c["name"] == "extension markupsafe._speedups"]
    assert "/venv/" in ext["detail"] and ext["detail"].endswith(".so")
    assert out.summary["extension_loaded"] is True


def test_cuda_runtime_version_from_the_runtime_wheel(m, tmp_path: Path) -> None:
    target = tiny_target(m, "cu132", None)
    wheel = tiny_wheel(tmp_path, "1.0.0+cu132", CUDART_INIT, ("cuda-toolkit[cudart]==13.2.2",))
    out = run(wheel, target)
    assert out.ok, out.problems
    assert out.summary["cuda_runtime_version"] == 13020
    assert out.summary["cudart_path"].endswith("site-packages/nvidia/cu13/lib/libcudart.so.13")
    assert "/venv/" in out.summary["cudart_path"]


def test_a_runtime_library_loaded_from_outside_the_venv_fails(m, tmp_path: Path) -> None:
    elsewhere = tmp_path / "system-lib"
    elsewhere.mkdir()
    target = tiny_target(m, "cu132", None)
    init = CUDART_INIT.replace('ELSEWHERE = ""', f"ELSEWHERE = {str(elsewhere)!r}")
    wheel = tiny_wheel(tmp_path, "1.0.0+cu132", init, ("cuda-toolkit[cudart]==13.2.2",))
    out = run(wheel, target)
    (problem,) = out.problems
    assert "'runtime library libcudart.so.13' failed" in problem and str(elsewhere) in problem


DEP_SCRIPT = """\
import importlib.metadata, json
got = importlib.metadata.version("tiny_dep")
print(json.dumps({"checks": [{"name": "tiny_dep", "ok": got == "1.0", "detail": got}]}))
"""


def dep_wheel(dest: Path, version: str) -> Path:
    """``tiny_dep``: on no index, only in the find-links folder the pip configuration names."""
    dist_info = f"tiny_dep-{version}.dist-info"
    meta = f"Metadata-Version: 2.1\nName: tiny_dep\nVersion: {version}\n"
    members = {"tiny_dep/__init__.py": b"", f"{dist_info}/METADATA": meta.encode(),
               f"{dist_info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    path = dest / f"tiny_dep-{version}-py3-none-any.whl"
    write_wheel(path, members, dist_info, {}, 315532800)
    return path


@pytest.mark.parametrize("installer", ["uv", "pip"])
def test_pips_configuration_decides_what_either_installer_installs(m, tmp_path: Path, installer: str) -> None:
    """find-links, no-index and a constraint from a pip configuration file: uv gets them translated, so
    both install tiny_dep 1.0 (the constraint) from the folder (no index has it), not 2.0."""
    links = tmp_path / "links"
    links.mkdir()
    dep_wheel(links, "1.0"), dep_wheel(links, "2.0")
    (tmp_path / "constraints.txt").write_text("tiny_dep<2\n")
    conf = tmp_path / "pip.conf"
    conf.write_text(f"[global]\nno-index = true\nfind-links = {links}\nconstraint = {tmp_path / 'constraints.txt'}\n")
    target = tiny_target(m, "cpu", script_file(tmp_path, DEP_SCRIPT))
    wheel = tiny_wheel(tmp_path, "1.0.0+cpu", "ANSWER = 42\n", ("tiny_dep",))
    out = run(wheel, target, env={"PIP_CONFIG_FILE": str(conf)}, installer=installer)
    assert out.ok, out.problems
    assert (out.installer, out.note) == (installer, "")
    assert {c["name"]: c["detail"] for c in out.record["checks"]}["project:tiny_dep"] == "1.0"


def test_uv_and_pip_make_the_same_checks(m, tmp_path: Path) -> None:
    target = tiny_target(m, "cpu", script_file(tmp_path, DEP_SCRIPT.replace('"tiny_dep"', '"Tiny_Pkg"')
                                               .replace('"1.0"', '"1.0.0+cpu"')))
    wheel = tiny_wheel(tmp_path, "1.0.0+cpu", "ANSWER = 42\n")
    by_uv, by_pip = run(wheel, target, installer="uv"), run(wheel, target, installer="pip")
    assert by_uv.ok and by_pip.ok, (by_uv.problems, by_pip.problems)
    verdicts = [[(c["name"], c["ok"], c["skipped"]) for c in o.record["checks"]] for o in (by_uv, by_pip)]
    assert verdicts[0] == verdicts[1] and len(verdicts[0]) >= 4
    assert (by_uv.installer, by_pip.installer) == ("uv", "pip")


def test_uvs_cache_keeps_the_runtime_wheels_for_the_next_smoke(m, tmp_path: Path) -> None:
    """A second smoke of a CUDA wheel installs its runtime wheels with uv offline: from builders' uv cache.
    With an empty cache, offline uv fails and venv + pip runs instead, saying why."""
    target = tiny_target(m, "cu132", None)
    wheel = tiny_wheel(tmp_path, "1.0.0+cu132", CUDART_INIT, ("cuda-toolkit[cudart]==13.2.2",))
    warm = {"BUILDERS_CACHE": str(tmp_path / "warm")}
    first = run(wheel, target, env=warm)
    assert first.ok and first.installer == "uv", (first.problems, first.note)
    assert (tmp_path / "warm" / "uv").is_dir()  # builders' uv cache: BUILDERS_CACHE/uv
    again = run(wheel, target, env={**warm, "UV_OFFLINE": "1"})
    assert again.ok and (again.installer, again.note) == ("uv", "") and again.summary["cuda_runtime_version"] == 13020
    cold = run(wheel, target, env={"BUILDERS_CACHE": str(tmp_path / "cold"), "UV_OFFLINE": "1"})
    assert cold.ok and cold.installer == "pip", cold.problems
    assert cold.note.startswith("uv failed: exit code ") and cold.note.endswith("; venv + pip ran instead")
    assert cold.summary["cuda_runtime_version"] == 13020


def test_a_uv_that_does_not_run_gives_way_to_pip(m, tmp_path: Path) -> None:
    from builders.base.process import HostRunner
    from builders.wheel.smoke import Installer, ready, smoke_with, stage

    broken = tmp_path / "uv"
    broken.write_text("not a program\n")
    broken.chmod(0o755)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(Path.home())}
    runner = HostRunner(env)
    planned = Installer(kind="uv", uv=str(broken), source=str(broken))
    how = ready(planned, runner, python=sys.executable, key=("test", str(tmp_path)), cache={})
    assert how.kind == "pip" and how.note.startswith(f"uv ({broken}) does not run where the smoke runs: ")
    target = tiny_target(m, "cpu", None)
    out = smoke_with(runner, python=sys.executable, wheel=str(tiny_wheel(tmp_path, "1.0.0+cpu", "ANSWER = 42\n")),
                     staged=str(stage(tmp_path / "probe", [target])), scratch=str(tmp_path / "s"), target=target,
                     installer=how)
    assert out.ok and (out.installer, out.note) == ("pip", how.note)


def test_the_container_engine_runs_the_same_probe(m, tmp_path: Path, base_image: str) -> None:
    """The staged probe folder mounted into a fresh container of the cpu image (Debian's CPython 3.13)."""
    from builders.base.process import Log
    from builders.engines.container import ContainerEngine
    from builders.engines.images import engine_env, image_pythons
    from builders.pipeline.interpreters import image_interpreter
    from builders.wheel.smoke import UV_CACHE_MOUNT, find_uv, planned_installer, ready, smoke_with, stage, uv_cache

    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "--python-version",
                    "3.13", "--platform", "manylinux_2_28_x86_64", "--dest", str(tmp_path), "markupsafe==3.0.3"],
                   check=True, capture_output=True, timeout=300)
    (wheel,) = tmp_path.glob("markupsafe-*.whl")
    (target,) = select(m, Selection(targets=("cpu-cp313-linux-x86_64",)))
    target = replace(target, project=replace(target.project, name="MarkupSafe", import_name="markupsafe",
                                             version=Version("3.0.3"), extension_modules=("markupsafe._speedups",),
                                             smoke_script=ROOT / "tests" / "projects" / "markupsafe" / "smoke.py"))
    host = engine_env(dict(os.environ))
    engine = ContainerEngine(exe="podman", pythons=image_pythons(m), cache=tmp_path / "cache", host_env=host,
                             base_image=base_image)
    log = Log(tmp_path / "smoke.log")
    engine.image(target, log)
    staged = stage(tmp_path / "probe", [target])
    # The engine's smoke runner carries builders' uv cache (beside its toolchain cache, here under tmp_path).
    spec = engine.smoke_runner(target)
    (cache,) = [Path(mount.source) for mount in spec.mounts if mount.target == UV_CACHE_MOUNT]
    assert tmp_path in cache.parents and not cache.exists()
    python = image_interpreter(target.python)
    uv_here = uv_cache(spec, cache)  # makes the folder: podman refuses to mount one that does not exist
    with spec.open(host, log) as runner:
        runner.copy_in(wheel, f"/tmp/{wheel.name}")
        runner.copy_in(staged, "/tmp/probe")
        how = ready(planned_installer("/tmp", find_uv()), runner, python=python, key=(spec, python), cache=uv_here)
        out = smoke_with(runner, python=python, wheel=f"/tmp/{wheel.name}", staged="/tmp/probe", scratch="/tmp/smoke",
                         target=target, installer=how)
    # This host's uv binary runs in the image (Debian's glibc): uv installed, with its cache on this host.
    assert (out.installer, out.note) == ("uv", "") and any(cache.iterdir())
    # The wheel says 3.0.3, the target 3.0.3+cpu: exactly one problem, the version, named as such.
    assert [p.split(":")[0] for p in out.problems] == ["smoke check 'version' failed"]
    (ext,) = [c for c in out.record["checks"] if c["name"] == "extension markupsafe._speedups"]
    assert ext["ok"] and ext["detail"].startswith("/tmp/smoke/venv/")
    assert {c["name"] for c in out.record["checks"] if c["ok"]} >= {"project:escape", "python", "import markupsafe"}
