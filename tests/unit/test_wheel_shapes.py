"""``project.wheel_shape`` (issue 42): a py3-none or abi3 wheel is one target per (variant, platform), built
once, verified once, smoke-tested on every listed Python that installs it, and counted once by the plan, the
job matrix, the report, the manifest and the rehearsal.

Which Pythons install a shared wheel is computed here with ``packaging.tags`` (what pip matches), not with
builders' own rule; the counts come from the shipped matrix's own axes.
"""

from __future__ import annotations

import io
import zipfile
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
from packaging.tags import Tag, compatible_tags, cpython_tags
from packaging.utils import parse_wheel_filename

from builders.base.errors import MatrixError, SelectionError
from builders.channels import manifest
from builders.ci import jobs as ci
from builders.families import loader
from builders.matrix.model import Matrix, PythonVersion
from builders.matrix.targets import Selection, expand, select
from builders.pipeline.plan import BuildPlan
from builders.pipeline.results import Result
from builders.report import rehearsal
from builders.report.compatibility import cells
from builders.wheel.archive import Wheel
from builders.wheel.verify import Expectation, verify
from tests import expected
from tests import rehearsal_fixtures as fx
from tests.unit.test_buildplan import HOST, LOCAL, context

SHAPES = ("py3-none", "abi3", "cp312-abi3", "abi3.abi3t")


def shaped(text: str, shape: str) -> Matrix:
    """The shipped matrix with ``project.wheel_shape: shape``."""
    anchor = "  requires_python:"
    assert text.count(anchor) == 1
    return loader.loads(text.replace(anchor, f"  wheel_shape: {shape}\n{anchor}", 1))


def installs(wheel_tags: frozenset[Tag], python: PythonVersion) -> bool:
    """What pip decides: any of the wheel's tags among ``python``'s supported tags (packaging's lists)."""
    version = (python.major, python.minor)
    platforms = sorted({t.platform for t in wheel_tags})
    supported = {*cpython_tags(version, abis=[python.abi], platforms=platforms),
                 *compatible_tags(version, interpreter=f"cp{python.major}{python.minor}", platforms=platforms)}
    return bool(wheel_tags & supported)


@pytest.fixture(scope="module", params=SHAPES)
def shape_matrix(request: pytest.FixtureRequest, shipped_text: str) -> Matrix:
    return shaped(shipped_text, request.param)


# --- expansion ---------------------------------------------------------------------------------


def test_one_target_per_variant_and_platform(shape_matrix: Matrix, data: dict) -> None:
    targets, _ = expand(shape_matrix)
    live_pairs = {(i.split("-")[0], "-".join(i.split("-")[2:])) for i in expected.live_ids(data)}
    shared_pairs = Counter((t.variant.label, t.platform.name) for t in targets)
    assert set(shared_pairs) <= live_pairs and set(shared_pairs.values()) == {1}
    assert len({t.wheel_name for t in targets}) == len(targets)


def test_every_python_that_installs_the_wheel_smoke_tests_it(shape_matrix: Matrix, data: dict) -> None:
    """The smoke Pythons are exactly the listed, not excluded ones pip would install the wheel on (abi3 on no
    free-threaded build; py3-none on all); abi3.abi3t (no packaging rule yet) by PEP 803's text."""
    targets, excluded = expand(shape_matrix)
    live = expected.live_ids(data)
    for t in targets:
        listed = [p for p in shape_matrix.pythons if f"{t.variant.label}-{p.abi}-{t.platform.name}" in live]
        if t.shape.abi_text == "abi3.abi3t":
            want = [p for p in listed if (p.major, p.minor) >= (3, 15)]
        else:
            want = [p for p in listed if installs(t.tags, p)]
        assert list(t.tested_pythons) == want, t.id
        assert t.python == min(want, key=lambda p: (p.free_threaded, p)), "built on the lowest GIL Python"
    left_out = {e.id for e in excluded}
    for t in targets:
        for p in shape_matrix.pythons:
            per_python = f"{t.variant.label}-{p.abi}-{t.platform.name}"
            assert (p in t.tested_pythons) != (per_python in left_out), per_python


def test_names_and_tags_parse_back(shape_matrix: Matrix) -> None:
    for t in expand(shape_matrix)[0]:
        name, version, _, tags = parse_wheel_filename(t.wheel_name)
        assert name == shape_matrix.project.canonical_name and tags == t.tags and t.tag in tags and version == t.version
        assert t.id == f"{t.variant.label}-{t.shape.id_part}-{t.platform.name}"


def test_abi3_on_free_threaded_is_excluded_with_the_pep_reason(shipped_text: str) -> None:
    m = shaped(shipped_text, "abi3")
    _, excluded = expand(m)
    ft = [e for e in excluded if e.id.split("-")[1].endswith("t")]
    assert ft and all("free-threaded" in e.reason and "abi3t" in e.reason for e in ft)


def test_selectors_over_shared_ids(shipped_text: str) -> None:
    m = shaped(shipped_text, "cp312-abi3")
    targets = expand(m)[0]
    picked = select(m, Selection(select=("cu13*-abi3-linux-*",)))
    assert picked and {t.id for t in picked} == {t.id for t in targets if t.id.startswith("cu13") and "-linux-" in t.id}
    with pytest.raises(SelectionError, match=r"(?s)only matches excluded targets.*needs CPython 3\.12"):
        select(m, Selection(select=("*-cp311-*",)))
    with pytest.raises(SelectionError, match="one wheel per variant and platform"):
        select(m, Selection(select=("*-cp399-*",)))


def test_an_exclusion_may_name_a_shared_id(shipped_text: str) -> None:
    text = shipped_text.replace("\nexclude:\n", "\nexclude:\n  - targets: \"cpu-py3-macos-*\"\n    reason: test\n", 1)
    assert text != shipped_text
    m = shaped(text, "py3-none")
    targets, excluded = expand(m)
    assert not [t for t in targets if t.id.startswith("cpu-py3-macos-")]
    assert [e for e in excluded if e.id.startswith("cpu-py3-macos-") and e.reason == "test"]


@pytest.mark.parametrize(("shape", "message"), [("cp311-abi3.abi3t", "from CPython 3.15"), ("abi4", "wheel_shape")])
def test_shapes_no_cpython_has_are_refused(shipped_text: str, shape: str, message: str) -> None:
    with pytest.raises(MatrixError, match=message):
        shaped(shipped_text, shape)


# --- plan, job matrix, report, manifest, rehearsal: once each -------------------------------------


def test_plan_builds_once_and_smokes_on_each_python(shipped_text: str) -> None:
    m = shaped(shipped_text, "py3-none")
    ctx = context()
    targets = select(m, Selection(select=("*-linux-x86_64",)))
    plans = [LOCAL.plan(t, ctx) for t in targets]
    built = [p for p in plans if isinstance(p, BuildPlan)]
    assert built and len({p.id for p in plans}) == len(plans) == len(targets)
    host_pythons = {abi for abi, _ in HOST.interpreters}
    for plan in built:
        smoked = [s.release for s in plan.smokes]
        assert smoked[0] == str(plan.target.python), "first on the Python it is built on"
        assert sorted(smoked) == sorted(str(p) for p in plan.target.tested_pythons if p.abi in host_pythons)
        assert dict(plan.smoke_missing).keys() == {str(p) for p in plan.target.tested_pythons
                                                    if p.abi not in host_pythons}
        assert len({s.staged for s in plan.smokes}) == len(plan.smokes), "a probe folder per Python"
        assert [name for name, _ in plan.commands()].count("build") == 1


def test_a_free_threaded_first_python_is_smoke_tested_too(shipped_text: str) -> None:
    """Built on a GIL Python, the py3-none wheel is still smoke-tested on a free-threaded one listed before it."""
    text = shipped_text.replace('  - "3.11"\n', '  - "3.14t"\n  - "3.11"\n', 1).replace('  - "3.14t"\n  - "3.15"', '  - "3.15"', 1)
    m = shaped(text, "py3-none")
    (target,) = select(m, Selection(select=("cpu-*-linux-x86_64",)))
    assert not target.python.free_threaded and target.tested_pythons[0].free_threaded
    ctx = context(host=replace(HOST, interpreters=(*HOST.interpreters, ("cp314t", "/py/3.14t/bin/python3.14t"))))
    plan = LOCAL.plan(target, ctx)
    assert isinstance(plan, BuildPlan) and "3.14t" in [s.release for s in plan.smokes]


def test_job_matrix_counts_the_wheel_once(shape_matrix: Matrix) -> None:
    targets = expand(shape_matrix)[0]
    shards = ci.shards(targets)
    builds = [b for s in shards for b in s["builds"]]
    smoke = [e for s in shards for e in s["include"]]
    assert sum(b["count"] for b in builds) == len(targets) == len(smoke)
    assert len(builds) == len({(t.variant.label, t.platform.name) for t in targets})
    for entry, target in zip(smoke, (t for g in ci.build_groups(targets) for t in g)):
        assert entry["python"].split() == [str(p) for p in target.tested_pythons]


def test_rehearsal_counts_the_wheel_once(tmp_path: Path, shipped_text: str) -> None:
    m = shaped(shipped_text, "cp312-abi3")
    targets = list(expand(m)[0])
    # Priced from the targets' own runners (a platform added to the matrix needs no price-table edit here).
    r = rehearsal.rehearse(targets, fx.write(tmp_path, fx.release_workflow()), fx.profile(),
                           fx.price_table(*sorted({t.runner for t in targets})))
    assert r.targets == len(targets)
    first = r.instances[0].run
    started = Counter(i.job.name for i in r.instances if i.run == first)
    assert started["build"] == len({(t.variant.label, t.platform.name) for t in targets})
    assert started["smoke"] == len(targets), "one smoke job per shared wheel (it loops over its Pythons)"
    assert r.wheel_gb == pytest.approx(sum(fx.profile().of(t).wheel_mb for t in targets) / 1000)
    lists = rehearsal.plan_lists(targets)
    assert len(lists["include"]) == len(targets) and sum(b["count"] for b in lists["builds"]) == len(targets)


def test_report_names_one_wheel_in_every_python_cell(shipped_text: str) -> None:
    m = shaped(shipped_text, "cp312-abi3")
    targets = expand(m)[0]
    results = {t.id: Result(id=t.id, status="built", wheel=t.wheel_name) for t in targets}
    found = cells(m, results)
    built = [c for c in found if c.status == "built"]
    assert {c.id for c in built} == set(results)
    per_wheel = Counter(c.wheel for c in built)
    assert all(per_wheel[t.wheel_name] == len(t.tested_pythons) for t in targets)


def test_manifest_lists_the_wheel_once(tmp_path: Path, shipped_text: str) -> None:
    m = shaped(shipped_text, "py3-none")
    targets = expand(m)[0]
    paths = []
    for t in targets:
        path = tmp_path / t.wheel_name
        path.write_bytes(b"wheel")
        paths.append(path)
    made = manifest.make(m, paths, [], channel="test", commit="c" * 40, tag="v1-rc1", run_id="1")
    assert sorted(f.target for f in made.files) == sorted(t.id for t in targets)


# --- verify: every extension against the tag --------------------------------------------------------


def wheel_of(tmp_path: Path, target, members: dict[str, bytes]) -> Wheel:
    """A wheel made by a script: the target's name, METADATA, WHEEL and RECORD, and ``members``."""
    from builders.wheel.archive import record_hash

    dist = f"{target.project.name}-{target.version}.dist-info"
    files = {**members,
             f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {target.project.name}\nVersion: {target.version}\n"
                                 f"Requires-Python: {target.project.requires_python}\n".encode(),
             f"{dist}/WHEEL": ("Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\n"
                               + "".join(f"Tag: {t}\n" for t in sorted(map(str, target.tags)))).encode()}
    record = "".join(f"{n},{record_hash(b)},{len(b)}\n" for n, b in files.items()) + f"{dist}/RECORD,,\n"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for name, data in {**files, f"{dist}/RECORD": record.encode()}.items():
            zf.writestr(name, data)
    path = tmp_path / target.wheel_name
    path.write_bytes(buffer.getvalue())
    return Wheel(path)


def codes(wheel: Wheel, target, m: Matrix) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for f in verify(wheel, Expectation(target=target, dropped=m.dropped)):
        out.setdefault(f.code, []).append(f.file)
    return out


ELF = b"\x7fELF" + b"\0" * 60  # an ELF header the reader cannot parse: still an ELF member by its magic


@pytest.mark.parametrize("shape", ["cp312-abi3", "py3-none"])
def test_a_python_specific_extension_in_a_shared_wheel_is_refused(tmp_path: Path, shipped_text: str, shape: str) -> None:
    m = shaped(shipped_text, shape)
    (target,) = select(m, Selection(select=("cpu-*-linux-x86_64",)))
    name = f"{m.project.import_name}/_x.cpython-312-x86_64-linux-gnu.so"
    found = codes(wheel_of(tmp_path, target, {name: ELF}), target, m)
    assert name in found.get("abi-python-specific", []), found


@pytest.mark.parametrize(("built", "hint"), [("ct-1.0+cpu-py3-none-linux_x86_64.whl", "wheel_shape: py3-none"),
                                             ("ct-1.0+cpu-cp312-abi3-linux_x86_64.whl", "wheel_shape: abi3"),
                                             ("ct-1.0+cpu-cp312-cp312-linux_x86_64.whl", None)])
def test_label_names_the_key_when_a_per_python_matrix_gets_a_shared_wheel(built: str, hint: str | None) -> None:
    from builders.pipeline.executor import _shape_hint

    assert (hint in _shape_hint(built)) if hint else _shape_hint(built) == ""
