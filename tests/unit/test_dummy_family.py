"""Adding an accelerator family is one module plus its Containerfile.

A dummy family, NPU (``tests/dummy_family/npu.py`` and ``npu.Containerfile``, nothing else), is
passed to the loader (nothing is registered) and carried through everything that differs per family: the matrix (its name, its
arch grammar, its required arch list), build plans on the local and container engines (its
toolchain, its image and build arguments), device judgement and probing, smoke planning and
the smoke record, verify's driver libraries and the report. No builders module is edited for
it; and no builders module outside ``builders/families/`` names any family (last tests).
"""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from types import ModuleType

import pytest

from builders.base.errors import MatrixError, ToolchainError
from builders.base.process import Completed
from builders.engines import images
from builders.engines.container import ContainerEngine
from builders.engines.local import LocalEngine
from builders.families import accelerators, declared, device, families, family_for
from builders.families import loader as matrix
from builders.families.machine import Machine, Tool
from builders.families.registry import checked
from builders.matrix import schema
from builders.matrix.family import Accelerator, FamilyFacts
from builders.matrix.model import OS, Matrix
from builders.matrix.targets import Selection, Target, select
from builders.pipeline.compilercache import launchers
from builders.pipeline.host import Host, unbuildable
from builders.pipeline.plan import BuildPlan, Context
from builders.report import compatibility as report
from builders.wheel import smoke, verify

ROOT = Path(__file__).resolve().parents[2]
DUMMY = ROOT / "tests" / "dummy_family" / "npu.py"
NPU_FAMILY = """\
  npu:
    toolkit:
      requirements: ["npu-sdk==2.1.0"]
      root: npu/sdk
    smoke_runners:
      linux-x86_64: [self-hosted, linux, x64, npu]
    versions:
      "2.1":
        label: npu21
        arch_list: "npu3;npu4"
    variant_properties: ["npu :: npu_arch :: {arch}"]
"""
# Its wheel variants' provider: matrix data too, beside the other providers.
NPU_PROVIDER = """\
    npu:
      requires: ["npu-variant-provider>=1.0"]
      plugin_api: "npu_variant_provider.plugin:NpuVariantPlugin"
      optional: true
"""
ENV = {"PATH": "/usr/bin:/bin", "HOME": "/root"}
HOST = Host(os=OS.LINUX, arch="x86_64", cxx20="/usr/bin/c++", interpreters=(("cp312", "/py/3.12/bin/python3.12"),),
            tools=(("npucc", "/opt/npu/bin/npucc", "2.1.0"),))


def with_npu(text: str, family: str = NPU_FAMILY) -> str:
    """The shipped matrix with the npu family added, and its variant provider where the matrix has wheel variants."""
    text = text.replace("\naccelerators:\n", "\naccelerators:\n" + family, 1)
    if "\nwheel_variants:\n" in text:
        text = text.replace("\n  providers:\n", "\n  providers:\n" + NPU_PROVIDER, 1)
        text = re.sub(r"\n  priorities: \[([^]]*)\]", lambda m: f"\n  priorities: [{m.group(1)}, npu]", text, count=1)
    return text


@pytest.fixture(scope="module")
def npu() -> Iterator[ModuleType]:
    """The dummy family's module, imported from its file (its facts name it); forgotten afterwards."""
    spec = importlib.util.spec_from_file_location("dummy_family_npu", DUMMY)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    try:
        yield module
    finally:
        del sys.modules[spec.name]


@pytest.fixture(scope="module")
def nm(npu: ModuleType, shipped_text: str) -> Matrix:
    return matrix.loads(with_npu(shipped_text), families=accelerators((npu.FAMILY,)))


def npu_target(nm: Matrix) -> Target:
    (target,) = select(nm, Selection(targets=("npu21-cp312-linux-x86_64",)))
    return target


def test_the_family_is_passed_not_registered(npu: ModuleType, shipped_text: str) -> None:
    assert family_for(npu.ACCELERATOR) is npu.FAMILY and npu.FAMILY in families((npu.FAMILY,))
    assert "npu" not in declared() and npu.FAMILY not in families()
    with pytest.raises(MatrixError, match="'npu' is not allowed here"):
        matrix.loads(with_npu(shipped_text))  # builders' own families only: npu was not passed


def test_the_matrix_takes_its_name_arch_grammar_and_required_arch_list(nm: Matrix, shipped_text: str,
                                                                       npu: ModuleType) -> None:
    given = accelerators((npu.FAMILY,))
    variant = next(v for v in nm.variants if v.label == "npu21")
    assert variant.accelerator.value == "npu" and variant.arch_list("linux-x86_64") == "npu3;npu4"
    assert npu_target(nm).containerfile == str(DUMMY.parent / "npu.Containerfile")
    with pytest.raises(MatrixError, match="'gfx90a' in arch list is not a npu architecture") as bad:
        matrix.loads(with_npu(shipped_text, NPU_FAMILY.replace("npu3;npu4", "npu3;gfx90a")), families=given)
    assert "NPU generations such as npu3;npu4" in str(bad.value)
    with pytest.raises(MatrixError, match="npu variant has no arch_list"):
        matrix.loads(with_npu(shipped_text, NPU_FAMILY.replace('        arch_list: "npu3;npu4"\n', "")), families=given)


def test_an_undeclared_family_is_still_refused_with_a_suggestion(npu: ModuleType, shipped_text: str) -> None:
    with pytest.raises(MatrixError, match="'npx' is not allowed here") as bad:
        matrix.loads(with_npu(shipped_text, NPU_FAMILY.replace("  npu:", "  npx:")), families=accelerators((npu.FAMILY,)))
    assert "npu" in str(bad.value)


def context() -> Context:
    return Context(host=HOST, env=ENV, source=ROOT / "examples" / "minifw", source_digest="a" * 64,
                   epoch=1_700_000_000, output=Path("/out"), cache=Path("/cache"), tools_python="/tools/bin/python",
                   builders_version="0.1.0+test")


def test_the_local_engine_plans_it_with_its_toolchain(nm: Matrix) -> None:
    target = npu_target(nm)
    assert unbuildable(target, HOST) is None
    assert "no npucc" in (unbuildable(target, replace(HOST, tools=())) or "")
    plan = LocalEngine(cache=Path("/cache"), env=ENV).plan(target, context())
    assert isinstance(plan, BuildPlan), plan
    assert plan.toolchain.accelerator == "npu" and plan.toolchain.root == "/opt/npu"
    assert plan.to_json()["id"] == target.id and plan.digest


def test_the_container_engine_plans_its_image_from_its_containerfile(nm: Matrix) -> None:
    target = npu_target(nm)
    engine = ContainerEngine(exe="podman", pythons=("3.12",), cache=Path("/cache"), host_env=ENV,
                             base_image="localhost/base:1")
    plan = engine.plan(target, replace(context(), host=replace(HOST, container_engines=("podman",))))
    assert isinstance(plan, BuildPlan), plan
    spec = images.image_spec(target, ("3.12",), ENV, "localhost/base:1")
    assert spec.containerfile == DUMMY.parent / "npu.Containerfile"
    assert dict(spec.args) == {"BASE_IMAGE": "localhost/base:1", "PYTHONS": "3.12", "NPU_SDK_REQUIREMENTS": "npu-sdk==2.1.0"}
    assert set(dict(spec.args)) <= images.declared_args(spec.containerfile)
    assert spec.tag.startswith("localhost/builders-npu:") and spec.tag in plan.toolchain.provider
    assert plan.toolchain.root == "/opt/toolkit/npu/sdk"
    argv = images.build_argv("podman", spec, None)
    assert argv[-1] == str(DUMMY.parent) and str(spec.containerfile) in argv


def test_its_toolchain_check_runs_where_the_build_runs(nm: Matrix) -> None:
    target = npu_target(nm)

    def answer(out: str):
        return lambda argv: Completed(argv=tuple(argv), returncode=0, stdout=out, duration=0.0)

    family_for(target.variant.accelerator).check(target, "/opt/npu", answer("NPU SDK 2.1.0"))
    with pytest.raises(ToolchainError, match=r"npucc is not NPU SDK 2\.1"):
        family_for(target.variant.accelerator).check(target, "/opt/npu", answer("NPU SDK 1.9.0"))


def test_its_smoke_job_needs_its_device_judged_by_its_own_rule(nm: Matrix, tmp_path: Path) -> None:
    target = npu_target(nm)
    npu_ = target.variant.accelerator
    assert device.needed(target) == npu_
    listing = Tool(name="npu-smi", output="npu0: NPU 4 (rev 2)\n")
    assert device.judge(npu_, Machine(files=frozenset({"/dev/npu0"}), tools=(listing,))).found == ("/dev/npu0", "npu0")
    empty = device.judge(npu_, Machine())
    assert not empty.ok and "/dev/npu0: absent" in empty.missing
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "npu0").touch()
    seen = device.probe(npu_, {"PATH": str(tmp_path)}, dev=tmp_path / "dev", sysfs=tmp_path / "sys")
    assert seen.files == frozenset({"/dev/npu0"}) and [t.name for t in seen.tools] == ["npu-smi"]


def test_a_family_without_a_device_rule_is_refused_not_taken_for_needing_none(npu: ModuleType) -> None:
    class Forgetful:
        accelerator = Accelerator(FamilyFacts(name="forgetful", display="Forgetful"))

    missing = {name: getattr(npu.FAMILY, name) for name in ("judge_device", "needs_device", "device_help")}
    forgetful = Forgetful()
    for name in dir(npu.FAMILY):
        if not name.startswith("_") and name not in missing and name != "accelerator":
            setattr(forgetful, name, getattr(npu.FAMILY, name))
    with pytest.raises(TypeError, match="has no device_help, judge_device, needs_device"):
        checked(forgetful)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="has no device_help"):
        families((forgetful,))  # type: ignore[arg-type]


def test_smoke_planning_tells_the_probe_its_runtime(nm: Matrix, npu: ModuleType) -> None:
    target = npu_target(nm)
    facts = smoke.facts(target)
    assert facts["accelerator"] == "npu" and facts["expected_runtime_version"] == 201
    assert facts["runtime_probe"] == {"libraries": ["libnpurt.so*"], "symbol": "npuRuntimeGetVersion"}
    steps = smoke.planned_steps(python="/py", wheel="/w.whl", staged="/probe", scratch="/s", target=target)
    assert steps and steps[-1].record
    json.dumps(facts)
    record = {"facts": {"accelerator": "npu", "runtime_version": 201}, "checks": []}
    summary = smoke.summarize(record, (npu.FAMILY,))
    assert summary["npu_runtime_version"] == 201 and summary["cuda_runtime_version"] is None
    assert smoke.summarize({"facts": {"accelerator": "cpu"}}, (npu.FAMILY,))["npu_runtime_version"] is None


def test_verify_never_lets_its_driver_into_a_wheel(npu: ModuleType) -> None:
    assert "libnpu_driver.so*" in verify.driver_libs((npu.FAMILY,))
    assert "libnpu_driver.so*" not in verify.driver_libs()  # only where it is passed


def test_ccache_and_smoke_help_follow_the_registered_families(npu: ModuleType) -> None:
    from builders.cli.smoke import device_rules

    assert "npu: /dev/npu0 and an NPU in npu-smi list" in device_rules((npu.FAMILY,))
    assert launchers()[:2] == ("CMAKE_C_COMPILER_LAUNCHER", "CMAKE_CXX_COMPILER_LAUNCHER")


def test_the_report_names_it(nm: Matrix) -> None:
    variant = next(v for v in nm.variants if v.label == "npu21")
    assert report.variant_name(variant) == "NPU 2.1"
    assert "| npu21 |" in report.to_markdown(nm, {})
    assert any(v["name"] == "NPU 2.1" for v in report.to_json(nm, {})["variants"])
    assert "NPU 2.1" in report.to_html(nm, {})


# --- no family is named outside builders/families/ ---------------------------------------------------------

PACKAGE = ROOT / "builders"


def named_families(path: Path, family_names: set[str], root: Path = ROOT) -> list[str]:
    """Where ``path`` names a family: a string that is a family's name, or ``Accelerator.<NAME>``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in family_names:
            found.append(f"{path.relative_to(root)}:{node.lineno}: {node.value!r}")
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "Accelerator" \
                and node.attr.isupper():
            found.append(f"{path.relative_to(root)}:{node.lineno}: Accelerator.{node.attr}")
    return found


def test_no_module_outside_the_families_package_names_a_family() -> None:
    family_names = {f.accelerator.value for f in families()}
    outside = [p for p in sorted(PACKAGE.rglob("*.py")) if "families" not in p.relative_to(PACKAGE).parts]
    found = [hit for path in outside for hit in named_families(path, family_names)]
    assert not found, "family-specific code outside builders/families/:\n" + "\n".join(found)


def test_the_scan_finds_a_family_named_in_code(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text('if v.accelerator is Accelerator.CUDA or name == "rocm":\n    """about cuda, in prose"""\n')
    hits = named_families(sample, {"cuda", "rocm"}, root=tmp_path)
    assert sorted(hits) == ["sample.py:1: 'rocm'", "sample.py:1: Accelerator.CUDA"]


def test_the_schema_lists_no_family() -> None:
    """The loader admits exactly the families it is given; the shipped schema names none."""
    text = (PACKAGE / "schema" / "matrix.schema.json").read_text()
    assert not [name for name in declared() if f'"{name}"' in text]
    assert schema.schema(declared())["properties"]["accelerators"]["propertyNames"] == {"enum": list(declared())}


def test_every_family_is_found_from_its_accelerator() -> None:
    """What the matrix admits (the accelerators the loader is given) and what builds, smokes and reports (the
    family each accelerator's facts name) cannot drift."""
    assert declared() == tuple(a.value for a in accelerators())
    assert all(family_for(f.accelerator) is f for f in families())
