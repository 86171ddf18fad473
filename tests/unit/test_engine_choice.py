"""Engines do what they are asked or say why not; a run that builds nothing fails; a GPU smoke
job needs its device.

Pure: hosts and machines are described in one line, expectations come from the matrix's raw
YAML (``tests/expected.py``), so a grown matrix (another platform, Python or variant) passes too.
"""

from __future__ import annotations

import io
import stat
from dataclasses import replace
from pathlib import Path

import pytest

from builders.base.arch import canonical_arch
from builders.base.console import Console
from builders.base.errors import EngineError, NothingToBuild
from builders.engines.cibw import CibwEngine
from builders.engines.container import missing_container_engine
from builders.engines.local import LocalEngine
from builders.families import loader as matrix
from builders.families.device import DeviceMissing, Machine, Tool, judge, needed, probe, require
from builders.matrix.model import OS, Accelerator
from builders.matrix.targets import Target, expand
from builders.pipeline.host import Host
from builders.pipeline.outcome import something_to_build
from builders.pipeline.plan import BuildPlan, Context, Skipped
from builders.pipeline.results import Result
from tests import expected
from tests.helpers import accelerator

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "examples" / "minifw"
ENV = {"PATH": "/usr/bin:/bin", "HOME": "/root"}
LINUX = Host(os=OS.LINUX, arch="x86_64", cxx20="/usr/bin/c++")
LOCAL = LocalEngine(cache=Path("/cache"), env=ENV)


def context(host: Host = LINUX) -> Context:
    return Context(host=host, env=ENV, source=SOURCE, source_digest="a" * 64, epoch=1_700_000_000,
                   output=Path("/out"), cache=Path("/cache"), tools_python="/tools/bin/python",
                   builders_version="0.1.0+test")


@pytest.fixture(scope="module")
def targets(shipped_text: str) -> dict[str, Target]:
    return {t.id: t for t in expand(matrix.loads(shipped_text))[0]}


def platform_os(data, target_id: str) -> str:
    return data["platforms"][target_id.split("-", 2)[2]]["os"]


def native_ids(data, targets: dict[str, Target]) -> list[str]:
    """Every target cibuildwheel builds natively (macOS, Windows), by the raw YAML."""
    return sorted(i for i in targets if platform_os(data, i) in ("macos", "windows"))


def family_of(data, label: str) -> str:
    return next(f for f in data["accelerators"] if label in expected.labels({"accelerators": {f: data["accelerators"][f]}}))


# -- cibw: natively on macOS and Windows, as their runners would in a dry run elsewhere ----------------

def test_a_dry_run_plans_macos_and_windows_targets_as_their_runners_would(data, targets) -> None:
    engine = CibwEngine(local=LOCAL, foreign=True)  # no container engine at all
    ids = native_ids(data, targets)
    assert ids
    for tid in ids:
        _, abi, plat = tid.split("-", 2)
        raw_plat, os_name = data["platforms"][plat], platform_os(data, tid)
        plan = engine.plan(targets[tid], context())
        assert isinstance(plan, BuildPlan), (tid, plan)
        env = dict(plan.build.env)
        assert env[f"CIBW_ARCHS_{os_name.upper()}"] == raw_plat["arch"]
        suffix = f"macosx_{raw_plat['arch']}" if os_name == "macos" else f"win_{raw_plat['arch'].lower()}"
        assert env["CIBW_BUILD"] == f"{abi}-{suffix}"
        assert not [k for k in env if "MANYLINUX" in k or k in ("CIBW_CONTAINER_ENGINE", "PATH")]
        assert plan.build.argv[:3] == ("python", "-m", "cibuildwheel")
        assert plan.build.argv[3:5] == ("--platform", os_name)
        assert plan.runner.kind == plan.smoke_runner.kind == "host" and plan.repair is None
        python = "python" + abi[2:3] + "." + abi[3:]
        assert plan.smoke.commands[0].argv[0] == python
        venv = "/Scripts/python.exe" if os_name == "windows" else "/bin/python"
        assert plan.smoke.commands[-1].argv[0].endswith(f"/smoke/venv{venv}")
        if os_name == "macos":
            assert f"MACOSX_DEPLOYMENT_TARGET={raw_plat['deployment_target']}" in env["CIBW_ENVIRONMENT"]
            assert env["CIBW_REPAIR_WHEEL_COMMAND"].startswith(f"delocate-wheel --require-archs {raw_plat['arch']}")
        else:
            assert env["CIBW_REPAIR_WHEEL_COMMAND"] == ""


def test_a_real_build_of_another_os_target_is_skipped_with_its_reason(data, targets) -> None:
    for tid in native_ids(data, targets):
        found = CibwEngine(local=LOCAL).plan(targets[tid], context())
        plat = tid.split("-", 2)[2]
        assert isinstance(found, Skipped) and f"needs a {plat} host" in found.reason
        assert data["platforms"][plat]["runner"] in found.reason


def test_on_a_macos_host_cibw_needs_no_container_and_no_image(data, targets) -> None:
    tid = next((i for i in native_ids(data, targets) if platform_os(data, i) == "macos"), None)
    if tid is None:
        pytest.skip("the matrix has no macOS target")
    target = targets[tid]
    arch = data["platforms"][tid.split("-", 2)[2]]["arch"]
    mac = Host(os=OS.MACOS, arch=canonical_arch(arch), cxx20="/usr/bin/clang++",
               interpreters=((target.python.abi, "/Library/Frameworks/bin/python"),))
    plan = CibwEngine(local=LOCAL, foreign=True).plan(target, context(mac))
    assert isinstance(plan, BuildPlan), plan
    assert plan.smoke.python == "/Library/Frameworks/bin/python"
    assert dict(plan.build.env)["PATH"].startswith("/tools/bin:") and plan.build.argv[0] == "/tools/bin/python"
    assert "image" not in plan.toolchain.provider
    CibwEngine(local=LOCAL).provision(plan, None)  # the host's toolchain; no image is asked for


def test_a_linux_target_needs_the_container_engine(targets) -> None:
    tid = next(i for i in sorted(targets) if i.endswith(f"-{LINUX.platform}"))
    with pytest.raises(EngineError, match="no container engine"):
        CibwEngine(local=LOCAL).plan(targets[tid], context(replace(LINUX, container_engines=("podman",))))


def test_missing_container_engines_are_named_with_what_is_missing(tmp_path: Path) -> None:
    assert missing_container_engine({"PATH": str(tmp_path)}) == (
        "no working container engine (podman: not found on PATH; docker: not found on PATH)")
    docker = tmp_path / "docker"
    docker.write_text("#!/bin/sh\nexit 1\n")
    docker.chmod(docker.stat().st_mode | stat.S_IEXEC)
    said = missing_container_engine({"PATH": str(tmp_path)}, "docker")
    assert "podman" not in said and f"docker: {docker} is there, but `docker info` fails" in said


# -- a run that builds nothing fails (cibuildwheel's rule), unless --allow-skip --------------------------

def test_nothing_to_build_fails_with_every_reason_unless_allowed(targets) -> None:
    skipped = [Skipped(id=tid, reason=f"reason {n}") for n, tid in enumerate(sorted(targets)[:3])]
    with pytest.raises(NothingToBuild) as caught:
        something_to_build(skipped, False, Console(io.StringIO()))
    assert caught.value.exit_code == 22
    assert all(f"{s.id}: {s.reason}" in str(caught.value) for s in skipped)
    out = io.StringIO()
    assert something_to_build(skipped, True, Console(out)) == 0
    assert "--allow-skip" in out.getvalue() and all(s.reason in out.getvalue() for s in skipped)


def test_one_plan_left_to_build_is_enough(targets) -> None:
    tid = next(i for i in sorted(targets) if i.startswith("cpu-") and i.endswith(f"-{LINUX.platform}"))
    host = replace(LINUX, interpreters=((targets[tid].python.abi, "/usr/bin/python3"),))
    plan = LOCAL.plan(targets[tid], context(host))
    assert isinstance(plan, BuildPlan)
    assert something_to_build([plan, Skipped(id="x", reason="y")], False, Console(io.StringIO())) == 0


def planned(targets, count: int) -> list[BuildPlan]:
    """``count`` plans of Linux x86_64 cpu targets, on a host with each one's interpreter."""
    ids = [i for i in sorted(targets) if i.startswith("cpu-") and i.endswith(f"-{LINUX.platform}")][:count]
    host = replace(LINUX, interpreters=tuple((targets[i].python.abi, "/usr/bin/python3") for i in ids))
    plans = [LOCAL.plan(targets[i], context(host)) for i in ids]
    assert len(plans) == count and all(isinstance(p, BuildPlan) for p in plans)
    return plans


def test_a_target_skipped_during_the_build_counts_as_a_skip(targets) -> None:
    """The check stage found no CPython where the plan expected one: no wheel, so exit 22, as a plan-time skip."""
    (plan,) = planned(targets, 1)
    late = Result(id=plan.id, status="skipped", engine="container", stage="check", reason="no CPython 3.12 in image")
    with pytest.raises(NothingToBuild) as caught:
        something_to_build([plan], False, Console(io.StringIO()), [late])
    assert caught.value.exit_code == 22 and f"{plan.id}: no CPython 3.12 in image" in str(caught.value)
    early = Skipped(id="x-early", reason="needs another host")
    with pytest.raises(NothingToBuild, match="every selected target is skipped") as caught:
        something_to_build([plan, early], False, Console(io.StringIO()), [late, Result(id=early.id, status="skipped")])
    assert "x-early: needs another host" in str(caught.value)
    out = io.StringIO()
    assert something_to_build([plan], True, Console(out), [late]) == 0
    assert "--allow-skip" in out.getvalue() and "no CPython 3.12 in image" in out.getvalue()


def test_a_planned_target_skipped_during_the_build_fails_the_run_beside_built_ones(targets) -> None:
    built, skipped = planned(targets, 2)
    outcomes = [Result(id=built.id, status="built"), Result(id=skipped.id, status="skipped", reason="no CPython")]
    with pytest.raises(NothingToBuild, match="1 target\\(s\\) the plan could build were skipped") as caught:
        something_to_build([built, skipped], False, Console(io.StringIO()), outcomes)
    assert f"{skipped.id}: no CPython" in str(caught.value) and built.id not in str(caught.value)
    assert something_to_build([built, skipped], True, Console(io.StringIO()), outcomes) == 0
    reused = [Result(id=built.id, status="reused"), Result(id=skipped.id, status="built")]
    assert something_to_build([built, skipped, Skipped(id="x", reason="y")], False, Console(io.StringIO()), reused) == 0


# -- smoke --require-device: the matrix says which jobs are GPU jobs; the machine says if it has one ---

def test_gpu_jobs_are_gpu_variants_on_platforms_with_smoke_runners(data, targets) -> None:
    for tid, target in targets.items():
        label, _, plat = tid.split("-", 2)
        family = family_of(data, label)
        runners = data["accelerators"][family].get("smoke_runners", {})
        want = family if family != "cpu" and plat in runners else None
        got = needed(target)
        assert (got.value if got else None) == want, tid


CUDA_GPU = "GPU 0: NVIDIA H200 (UUID: GPU-0d9a5c1e-0000-0000-0000-000000000000)\n"
SYCL_GPU = "[level_zero:gpu][level_zero:0] Intel(R) oneAPI Unified Runtime over Level-Zero, Intel(R) Arc(TM) A770\n"
SYCL_CPU = "[opencl:cpu][opencl:0] Intel(R) OpenCL, Intel(R) Xeon(R) Platinum 8480+ OpenCL 3.0\n"
ROCMINFO = "Agent 1\n  Name:                    AMD EPYC 9654\nAgent 2\n  Name:                    gfx942\n"
ABSENT = "not on PATH"


@pytest.mark.parametrize(("accelerator", "machine", "ok"), [
    (accelerator("cuda"), Machine(tools=(Tool(name="nvidia-smi", output=CUDA_GPU),)), True),
    (accelerator("cuda"), Machine(files=frozenset({"/dev/nvidia0"}), tools=(Tool(name="nvidia-smi", problem=ABSENT),)),
     True),
    (accelerator("cuda"), Machine(tools=(Tool(name="nvidia-smi", output="No devices were found\n"),)), False),
    (accelerator("cuda"), Machine(tools=(Tool(name="nvidia-smi", problem=ABSENT),)), False),
    (accelerator("rocm"), Machine(files=frozenset({"/dev/kfd"}), tools=(Tool(name="rocminfo", output=ROCMINFO),)), True),
    (accelerator("rocm"), Machine(files=frozenset({"/dev/kfd"}), tools=(
        Tool(name="rocminfo", problem=ABSENT), Tool(name="amd-smi", output="GPU: 0\n    BDF: 0000:c1:00.0\n"))), True),
    (accelerator("rocm"), Machine(tools=(Tool(name="rocminfo", output=ROCMINFO),)), False),  # no /dev/kfd
    (accelerator("rocm"), Machine(files=frozenset({"/dev/kfd"}), tools=(
        Tool(name="rocminfo", output="  Name:                    AMD EPYC 9654\n"), Tool(name="amd-smi", problem=ABSENT))),
     False),
    (accelerator("xpu"), Machine(render_vendors=(("/dev/dri/renderD128", "0x8086"),),
                              tools=(Tool(name="sycl-ls", problem=ABSENT),)), True),
    (accelerator("xpu"), Machine(render_vendors=(("/dev/dri/renderD128", "0x8086"),),
                              tools=(Tool(name="sycl-ls", output=SYCL_CPU + SYCL_GPU),)), True),
    (accelerator("xpu"), Machine(render_vendors=(("/dev/dri/renderD128", "0x8086"),),
                              tools=(Tool(name="sycl-ls", output=SYCL_CPU),)), False),
    (accelerator("xpu"), Machine(render_vendors=(("/dev/dri/renderD128", "0x10de"),),
                              tools=(Tool(name="sycl-ls", problem=ABSENT),)), False),
    (accelerator("xpu"), Machine(tools=(Tool(name="sycl-ls", output=SYCL_GPU),)), False),  # no render node
])
def test_what_counts_as_a_device(accelerator: Accelerator, machine: Machine, ok: bool) -> None:
    verdict = judge(accelerator, machine)
    assert verdict.ok is ok
    assert bool(verdict.missing) is not ok and bool(verdict.found) is ok


def test_what_is_missing_is_said(targets, data) -> None:
    missing = judge(accelerator("cuda"), Machine(tools=(Tool(name="nvidia-smi", problem=ABSENT),))).missing
    assert missing == ("nvidia-smi: not on PATH", "/dev/nvidia0: absent")
    xpu = judge(accelerator("xpu"), Machine(render_vendors=(("/dev/dri/renderD128", "0x10de"),))).missing
    assert xpu == ("/dev/dri/renderD*: none of Intel's (vendor 0x8086): /dev/dri/renderD128 (vendor 0x10de)",)


def test_require_fails_a_gpu_job_and_passes_the_others(data, targets) -> None:
    nothing = Machine(tools=tuple(Tool(name=n, problem=ABSENT) for n in ("nvidia-smi", "rocminfo", "amd-smi", "sycl-ls")))
    seen = set()
    for tid, target in sorted(targets.items()):
        accelerator = needed(target)
        if accelerator is None:
            assert require(target, {}, nothing) is None, tid
            continue
        seen.add(accelerator)
        with pytest.raises(DeviceMissing) as caught:
            require(target, {}, nothing)
        runners = data["accelerators"][accelerator.value]["smoke_runners"][tid.split("-", 2)[2]]
        assert caught.value.exit_code == 23 and tid in str(caught.value) and ", ".join(runners) in str(caught.value)
    assert seen  # the matrix has GPU smoke jobs


def test_probe_reads_device_files_and_render_vendors(tmp_path: Path) -> None:
    dev, sysfs = tmp_path / "dev", tmp_path / "sys"
    (dev / "dri").mkdir(parents=True)
    for node in ("nvidia0", "kfd", "dri/renderD128", "dri/renderD129"):
        (dev / node).touch()
    (sysfs / "class/drm/renderD128/device").mkdir(parents=True)
    (sysfs / "class/drm/renderD128/device/vendor").write_text("0x8086\n")
    empty = {"PATH": str(tmp_path / "no-tools")}  # every vendor tool is missing: recorded, never raised
    assert probe(accelerator("cuda"), empty, dev=dev, sysfs=sysfs).files == {"/dev/nvidia0"}
    rocm = probe(accelerator("rocm"), empty, dev=dev, sysfs=sysfs)
    assert rocm.files == {"/dev/kfd"} and {t.name: t.problem for t in rocm.tools} == {"rocminfo": ABSENT,
                                                                                      "amd-smi": ABSENT}
    xpu = probe(accelerator("xpu"), empty, dev=dev, sysfs=sysfs)
    assert xpu.render_vendors == (("/dev/dri/renderD128", "0x8086"), ("/dev/dri/renderD129", ""))
    assert judge(accelerator("xpu"), xpu).found == ("/dev/dri/renderD128", "/dev/dri/renderD129")
