"""Build plans are pure: a host in one line, a matrix as a string, and every command is known.

Expectations come from the matrix's raw YAML (``tests/expected.py``), not from the code under
test; a grown matrix (``test_matrix_growth.py``) must pass as well.
"""

from __future__ import annotations

import copy
import re
import shlex
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from builders.engines import images
from builders.engines.cibw import CibwEngine
from builders.engines.container import ContainerEngine
from builders.engines.local import LocalEngine
from builders.families import loader as matrix
from builders.matrix.model import OS
from builders.matrix.targets import Selection, select
from builders.pipeline.host import Host
from builders.pipeline.plan import BuildPlan, Context, Skipped, labelled_name
from builders.wheel.repair import repair_command
from tests import expected

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "examples" / "minifw"  # read for its build requirements only
PYTHONS = ("3.11", "3.12", "3.13")
HOST = Host(os=OS.LINUX, arch="x86_64", cxx20="/usr/bin/c++",
            interpreters=tuple((expected.abi(p), f"/py/{p}/bin/python{p}") for p in PYTHONS))
ENV = {"PATH": "/usr/bin:/bin", "HOME": "/root"}


def context(**changes) -> Context:
    base = Context(host=HOST, env=ENV, source=SOURCE, source_digest="a" * 64, epoch=1_700_000_000,
                   output=Path("/out"), cache=Path("/cache"), tools_python="/tools/bin/python",
                   builders_version="0.1.0+test")
    return replace(base, **changes)


LOCAL = LocalEngine(cache=Path("/cache"), env=ENV)
CONTAINER = ContainerEngine(exe="podman", pythons=("3.13", "3.14"), cache=Path("/cache"), host_env=ENV,
                            base_image="localhost/base:1")


def plans(m, engine=LOCAL, ctx: Context | None = None, glob: str = "*-linux-x86_64") -> dict[str, BuildPlan | Skipped]:
    ctx = ctx or context()
    return {t.id: engine.plan(t, ctx) for t in select(m, Selection(select=(glob,)))}


def built(found: dict) -> dict[str, BuildPlan]:
    return {k: v for k, v in found.items() if isinstance(v, BuildPlan)}


def digests(found: dict) -> dict[str, str]:
    return {k: v.digest for k, v in built(found).items()}


def cuda_versions(data) -> list[tuple[str, dict]]:
    return list(data["accelerators"]["cuda"]["versions"].items())


def test_the_host_builds_what_it_has_interpreters_for(m, data) -> None:
    found = plans(m)
    host_abis = {expected.abi(p) for p in PYTHONS}
    want = {i for i in expected.live_ids(data) if i.endswith("-linux-x86_64") and i.split("-")[1] in host_abis
            and not i.startswith(("rocm", "xpu"))}
    assert set(built(found)) == want
    assert all(s.reason for s in found.values() if isinstance(s, Skipped))


def test_every_placeholder_is_filled(m) -> None:
    for plan in built(plans(m)).values():
        for _, command in plan.commands():
            assert not re.search(r"\{[a-z_]+\}", " ".join(command.argv)), command


def test_local_build_command_and_environment(m, data) -> None:
    (version, node), *_ = cuda_versions(data)
    label = node["label"]
    tid = f"{label}-cp312-linux-x86_64"
    plan = built(plans(m))[tid]
    work = f"/out/.work/{tid}"
    values = {"python": "/py/3.12/bin/python3.12", "source": f"{work}/src", "outdir": f"{work}/raw"}
    assert plan.build.argv == tuple(p.format(**values) for p in data["project"]["build"]["command"])
    assert plan.build.cwd == f"{work}/src"  # the target's own copy, never the shared tree
    (copy,) = plan.prepare
    assert copy.argv[4:6] == (str(SOURCE), f"{work}/src") and copy.argv[6] == "__pycache__"
    names = data["project"]["build"]["env"]
    pin = re.search(r"==([0-9.]+)", node["toolkit"]["requirements"][0]).group(1)
    env = dict(plan.build.env)
    assert env[names["accelerator_version"]] == version
    root = env[names["toolkit_root"]]
    assert re.fullmatch(rf"/cache/cuda-{re.escape(pin)}-[0-9a-f]{{12}}/{data['accelerators']['cuda']['toolkit']['root']}",
                        root)
    assert env["SOURCE_DATE_EPOCH"] == "1700000000"
    assert plan.toolchain.pins == tuple(node["toolkit"]["requirements"])


def test_a_cuda_build_sees_the_pinned_toolkit_first_and_by_name(m) -> None:
    """A host whose PATH has another nvcc (this one's /usr/local/bin) builds with the pinned one: its bin goes first
    on PATH and the variables CMake and setuptools-style scripts read name it; the dry run shows them."""
    for plan in (p for p in built(plans(m)).values() if p.target.variant.accelerator.value == "cuda"):
        env, root = dict(plan.build.env), plan.toolchain.root
        assert env["PATH"] == f"{root}/bin:{ENV['PATH']}"
        assert env["CUDACXX"] == env["CMAKE_CUDA_COMPILER"] == f"{root}/bin/nvcc"
        assert env["CUDA_HOME"] == env["CUDA_PATH"] == env["CUDAToolkit_ROOT"] == root
        assert f"CUDACXX={root}/bin/nvcc" in plan.build.shell()
    cpu = built(plans(m))["cpu-cp312-linux-x86_64"]
    assert "CUDACXX" not in dict(cpu.build.env) and "PATH" not in dict(cpu.build.env)


def test_the_toolkit_env_is_no_part_of_the_digest_but_where_the_toolkit_is_found(m) -> None:
    """PATH is where tools are found (never in a digest); the variables name the toolkit under the cache, which the
    digest sees as {cache}: another cache folder or host PATH gives the same wheel key."""
    tid = next(t for t in built(plans(m)) if t.startswith("cu"))
    here = built(plans(m))[tid]
    there = built(plans(m, ctx=context(cache=Path("/elsewhere"), env={**ENV, "PATH": "/opt/other/bin"})))[tid]
    assert dict(here.build.env)["PATH"] != dict(there.build.env)["PATH"]
    assert here.digest == there.digest


def test_two_toolkits_of_one_pin_with_other_components_get_two_folders(data) -> None:
    """The cache is keyed by everything installed: cuBLAS added to one version's requirements is another folder;
    the same requirements are the same folder whatever the label."""
    (version, node), *_ = cuda_versions(data)
    grown = copy.deepcopy(data)
    extra = grown["accelerators"]["cuda"]["versions"][version]["toolkit"]
    extra["requirements"] = [r.replace("[", "[cublas,", 1) for r in node["toolkit"]["requirements"]]
    roots = {}
    for name, d in (("shipped", data), ("cublas", grown)):
        mm = matrix.loads(yaml.safe_dump(d, sort_keys=False))
        plan = built(plans(mm))[f"{node['label']}-cp312-linux-x86_64"]
        roots[name] = plan.toolchain.root
    assert roots["shipped"] != roots["cublas"]
    assert roots["shipped"].split("/")[2].rsplit("-", 1)[0] == roots["cublas"].split("/")[2].rsplit("-", 1)[0]


def test_local_repair_and_smoke_commands(m) -> None:
    plan = built(plans(m))["cpu-cp313-linux-x86_64"]
    work = "/out/.work/cpu-cp313-linux-x86_64"
    assert plan.repair is not None
    assert plan.repair.argv[:4] == ("/tools/bin/python", "-m", "auditwheel", "repair")
    assert plan.repair.argv[-3:] == ("-w", f"{work}/repaired", f"{work}/labelled/{plan.outputs.labelled}")
    assert plan.outputs.labelled.endswith("-cp313-cp313-linux_x86_64.whl")
    assert dict(plan.repair.env)["SOURCE_DATE_EPOCH"] == "1700000000"
    install = plan.smoke.commands[2].argv
    assert plan.smoke.installer.kind == "uv"  # builders depends on the uv package
    assert install[1:] == ("pip", "install", "--no-config", "--index-strategy", "unsafe-best-match", "--python",
                           f"{work}/smoke/venv/bin/python", f"{work}/repaired/{plan.outputs.wheel}")
    assert plan.smoke.commands[-1].cwd == f"{work}/smoke/cwd"
    assert plan.outputs.destination == f"{plan.target.index_path.rstrip('/')}/{plan.outputs.wheel}"


def test_plans_are_pure_and_hashable(m) -> None:
    first, again = built(plans(m)), built(plans(m))
    assert first == again and {p.digest for p in first.values()} == {p.digest for p in again.values()}
    assert len(set(first.values())) == len(first)
    assert len(set(digests(plans(m)).values())) == len(first)


def test_the_digest_ignores_where_things_are(m) -> None:
    moved = context(output=Path("/elsewhere/out"), cache=Path("/other/cache"),
                    env={**ENV, "PATH": "/opt/bin:/usr/bin", "TERM": "dumb"}, tools_python="/venv2/bin/python")
    assert digests(plans(m, ctx=moved)) == digests(plans(m))


def test_a_changed_source_changes_every_digest(m) -> None:
    before, after = digests(plans(m)), digests(plans(m, ctx=context(source_digest="b" * 64)))
    assert before.keys() == after.keys() and all(before[k] != after[k] for k in before)


def test_builders_own_version_is_part_of_the_digest(m) -> None:
    before, after = digests(plans(m)), digests(plans(m, ctx=context(builders_version="0.1.0+other")))
    assert all(before[k] != after[k] for k in before)


def test_a_changed_toolkit_pin_changes_only_that_variant(m, data, shipped_text: str) -> None:
    _, node = cuda_versions(data)[-1]
    old = node["toolkit"]["requirements"][0]
    assert shipped_text.count(old) == 1
    grown = matrix.loads(shipped_text.replace(old, re.sub(r"==([0-9.]+)", r"==\1.post1", old)))
    before, after = digests(plans(m)), digests(plans(grown))
    changed = {k for k in before if before[k] != after[k]}
    assert changed == {k for k in before if k.startswith(node["label"] + "-")} and changed


def test_a_changed_matrix_value_changes_only_the_targets_it_touches(m, data, shipped_text: str) -> None:
    _, node = cuda_versions(data)[0]
    archs = node["arch_list"]["linux-x86_64"]
    assert shipped_text.count(f'linux-x86_64: "{archs}"') == 1
    edited = matrix.loads(shipped_text.replace(f'linux-x86_64: "{archs}"', f'linux-x86_64: "{archs.split(";")[0]}"'))
    before, after = digests(plans(m)), digests(plans(edited))
    assert {k for k in before if before[k] != after[k]} == {k for k in before if k.startswith(node["label"] + "-")}


def test_the_container_plan_runs_in_the_image(m) -> None:
    plan = CONTAINER.plan(select(m, Selection(targets=("cu132-cp314-linux-x86_64",)))[0],
                          context(host=replace(HOST, container_engines=("podman",))))
    assert isinstance(plan, BuildPlan)
    assert plan.runner.kind == "container" and plan.runner.image.startswith("localhost/builders-cuda:")
    assert not plan.runner.network and plan.smoke_runner.network
    assert plan.interpreter == "/opt/python/cp314-cp314/bin/python"
    mounts = {m.target: m for m in plan.runner.mounts}
    assert mounts["/src"].source == str(SOURCE) and not mounts["/src"].writable
    assert mounts["/work"].source == plan.work and mounts["/work"].writable
    # The read-only source is copied inside the container first (builds may write into their tree).
    (copy,) = plan.prepare
    assert copy.argv[4:6] == ("/src", "/tmp/src") and copy.argv[6] == "__pycache__"
    assert plan.build.argv[-1] == "/tmp/src" and dict(plan.build.env)["PIP_NO_INDEX"] == "1"
    assert plan.repair is not None and plan.repair.argv[:2] == ("auditwheel", "repair")  # the image's own
    assert plan.smoke.wheel == f"/tmp/{plan.outputs.wheel}" and "/work" not in {m.target for m in plan.smoke_runner.mounts}
    assert dict(plan.build.env)["MINIFW_TOOLKIT_ROOT"] == plan.toolchain.root == "/opt/toolkit/nvidia/cu13"
    # The image's toolkit, named for build systems; its Containerfile puts the same bin first on its own PATH.
    root = plan.toolchain.root
    assert dict(plan.build.env)["CUDACXX"] == f"{root}/bin/nvcc" and "PATH" not in dict(plan.build.env)
    assert dict(CONTAINER.image_spec(plan.target).args)["TOOLKIT_BIN"] == f"{root}/bin"


def test_the_image_spec_is_computed_once_per_target(m, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its tag hashes the Containerfile and its scripts: a plan, the cibw plan and provisioning share one."""
    calls: list[str] = []
    real = images.image_spec
    monkeypatch.setattr(images, "image_spec", lambda target, *a, **k: calls.append(target.id) or real(target, *a, **k))
    engine = replace(CONTAINER)
    target = select(m, Selection(targets=("cu132-cp314-linux-x86_64",)))[0]
    ctx = context(host=replace(HOST, container_engines=("podman",)))
    first, again = engine.plan(target, ctx), CibwEngine(container=engine).plan(target, ctx)
    assert isinstance(first, BuildPlan) and isinstance(again, BuildPlan)
    assert first.runner.image == again.smoke_runner.image
    assert engine.compiler_cache(target).name == first.runner.image.rsplit(":", 1)[-1]
    assert calls == [target.id]


def test_the_cibw_plan_repairs_inside_cibuildwheel_and_smokes_once(m) -> None:
    target = select(m, Selection(targets=("cpu-cp315-linux-x86_64",)))[0]
    plan = CibwEngine(container=CONTAINER).plan(target, context(host=replace(HOST, container_engines=("podman",))))
    assert isinstance(plan, BuildPlan)
    assert plan.build.argv[1:3] == ("-m", "cibuildwheel") and plan.repair is None and not plan.direct
    env = dict(plan.build.env)
    assert env["CIBW_REPAIR_WHEEL_COMMAND"] == repair_command(target)
    assert not [k for k in env if k.startswith("CIBW_TEST")]
    assert plan.outputs.labelled == plan.outputs.wheel == target.wheel_name
    assert plan.smoke_runner.kind == "container" and plan.smoke.commands[0].argv[0].startswith("/opt/python/")


def test_labelled_name_before_repair(m) -> None:
    t = select(m, Selection(targets=("cu132-cp313-linux-x86_64",)))[0]
    assert labelled_name(t, True) == t.wheel_name.replace(t.platform.wheel_platform, "linux_x86_64")
    assert labelled_name(t, False) == t.wheel_name


def test_shell_line_of_a_command(m) -> None:
    plan = built(plans(m))["cpu-cp312-linux-x86_64"]
    line = plan.build.shell()
    assert line.startswith(f"cd {plan.work}/src && ") and shlex.split(line.split(" && ", 1)[1])[-len(plan.build.argv):] == list(plan.build.argv)


def test_the_longest_builds_start_first(m) -> None:
    from builders.pipeline.executor import longest_first

    found = list(built(plans(m)).values())
    order = [p.id for p in longest_first(found, {})]
    accelerated = [p.id for p in found if p.toolchain.accelerator != "cpu"]
    assert order[:len(accelerated)] == accelerated  # no history: device code first, matrix order kept
    cpu = next(p.id for p in found if p.toolchain.accelerator == "cpu")
    assert longest_first(found, {cpu: {"durations": {"build": 500.0, "smoke": 10.0}}})[0].id == cpu


# ---- provision and check are plan steps: what they make ready and verify, shown by the dry run ----


def test_local_provision_and_check_steps(m, data) -> None:
    found = built(plans(m))
    cuda = next(p for tid, p in found.items() if tid.startswith("cu") and "-cp313-" in tid)
    assert cuda.provision.pins == cuda.toolchain.pins and cuda.provision.into == cuda.toolchain.root
    assert cuda.provision.index_url == cuda.toolchain.index_url and cuda.provision.image is None
    assert cuda.check is not None and cuda.check.asks == ("nvcc",) and cuda.check.root == cuda.toolchain.root
    assert cuda.check.arch_list == cuda.target.arch_list and cuda.check.version == cuda.target.variant.version
    cpu = found["cpu-cp313-linux-x86_64"]
    assert cpu.provision.lines() == () and cpu.check is not None and cpu.check.asks == ()
    assert (cpu.check.python, cpu.check.abi, cpu.check.interpreter) == ("3.13", "cp313", "/py/3.13/bin/python3.13")
    assert cpu.check.probe.argv[:2] == ("/py/3.13/bin/python3.13", "-c")
    assert cpu.check.lines() == ("/py/3.13/bin/python3.13 is CPython 3.13 (cp313)",)


def test_every_step_in_order_check_and_provision_first(m) -> None:
    plan = next(p for tid, p in built(plans(m)).items() if tid.startswith("cu") and "-cp312-" in tid)
    stages = [name for name, _ in plan.steps()]
    assert stages == sorted(stages, key=["provision", "check", "prepare", "requirements", "core", "host", "build",
                                         "repair", "smoke"].index)
    assert stages[:3] == ["provision", "check", "check"] and plan.commands()[0] == ("check", plan.check.probe)
    assert [line for name, line in plan.steps() if name == "provision"] == list(plan.provision.lines())
    as_json = plan.to_json()
    assert as_json["provision"]["steps"] == list(plan.provision.lines())
    assert as_json["check"]["probe"] == plan.check.probe.to_json()


def test_provision_and_check_are_not_part_of_the_digest(m) -> None:
    plan = built(plans(m))["cpu-cp313-linux-x86_64"]
    assert replace(plan, check=None, provision=replace(plan.provision, folders=("/x",))).digest == plan.digest


def test_the_container_provisions_its_image_wheelhouse_and_cache(m) -> None:
    plan = CONTAINER.plan(select(m, Selection(targets=("cu132-cp314-linux-x86_64",)))[0],
                          context(host=replace(HOST, container_engines=("podman",))))
    assert isinstance(plan, BuildPlan) and plan.check is not None
    assert plan.provision.image == plan.runner.image and plan.provision.pins == ()
    mounts = {m.target: m.source for m in plan.runner.mounts}
    assert plan.provision.wheelhouse == mounts["/wheels"] and plan.provision.folders == (mounts["/ccache"],)
    assert plan.check.interpreter == plan.interpreter and plan.check.root == "/opt/toolkit/nvidia/cu13"


def test_cibuildwheel_checks_its_own_build(m) -> None:
    target = select(m, Selection(targets=("cpu-cp315-linux-x86_64",)))[0]
    plan = CibwEngine(container=CONTAINER).plan(target, context(host=replace(HOST, container_engines=("podman",))))
    assert isinstance(plan, BuildPlan) and plan.check is None
    assert plan.provision.image == CONTAINER.image_spec(target).tag and plan.to_json()["check"] is None


def test_the_smoke_runs_the_planned_steps_filled_in_where_it_runs(m) -> None:
    from builders.wheel import smoke

    plan = built(plans(m))["cpu-cp313-linux-x86_64"]
    assert plan.smoke.installer.kind == "uv" and [s.at_run for s in plan.smoke.steps] == ["", "uv", "uv-install", ""]
    assert all(s.env == () for s in plan.smoke.steps)  # uv's settings are read where the smoke runs
    assert [s.at_run for s in plan.smoke.fallback] == ["", "", "pip-install", ""]
    assert plan.smoke.fallback[1].argv[-1] == f"{plan.smoke.scratch}/pip/venv"
    ready = replace(plan.smoke.installer, env=(("UV_CACHE_DIR", "/c"),), indexes=("https://extra.invalid/",))
    filled = [smoke.at_run(s, ready) for s in plan.smoke.steps]
    assert filled == list(smoke.smoke_steps(python=plan.smoke.python, wheel=plan.smoke.wheel, staged=plan.smoke.staged,
                                            scratch=plan.smoke.scratch, target=plan.target, installer=ready))
    assert dict(filled[2].env) == {"UV_CACHE_DIR": "/c", "UV_INDEX": "https://extra.invalid/"}
    assert plan.to_json()["smoke"][2]["at_run"] == "uv-install"


PER_VARIANT = "  timeouts: {provision: 3600, build: {default: 600, cuda: 7200, LABEL: 9000}, repair: 1800, install: 1800}"


def _per_variant(shipped_text: str, label: str) -> str:
    (line,) = [x for x in shipped_text.splitlines() if x.startswith("  timeouts:")]
    return shipped_text.replace(line, PER_VARIANT.replace("LABEL", label), 1)


def test_a_build_timeout_per_family_and_variant(m, shipped_text: str) -> None:
    """The variant's label wins over its family, the family over the default; the plan's commands carry it and a
    stopped command names the key (the error is built here; tests/integration/test_process.py stops a real one)."""
    from builders.base.errors import ProcessError
    from builders.pipeline.executor import named_limit
    cuda = sorted({t.variant.label for t in select(m, Selection(select=("*",))) if t.variant.accelerator.value == "cuda"})
    grown = matrix.loads(_per_variant(shipped_text, cuda[0]))
    found = built(plans(grown))
    limits = {p.target.variant.label: p.build.timeout for p in found.values()}
    assert limits[cuda[0]] == 9000 and limits[cuda[-1]] == (7200 if len(cuda) > 1 else 9000)
    assert limits["cpu"] == 600
    plan = next(p for p in found.values() if p.target.variant.label == cuda[-1])

    def stopped() -> None:
        raise ProcessError(["make"], 124, "[timed out after 7200s]", timeout=plan.build.timeout)

    with pytest.raises(ProcessError) as caught:
        named_limit(plan, "build", stopped)
    key = "cuda" if len(cuda) > 1 else cuda[0]
    assert str(caught.value).startswith(f"timed out after {plan.build.timeout:g} s (project.timeouts.build[{key}])")
    assert "exit code 124" not in str(caught.value)


def test_a_timeout_for_no_family_or_variant_is_refused(shipped_text: str) -> None:
    from tests.helpers import problems_of
    found = problems_of(_per_variant(shipped_text, "cu999"))
    assert any("'cu999'" in str(p) and "no family or variant label" in str(p) for p in found), found
