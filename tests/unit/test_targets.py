"""Expansion, ids, tags, filenames, requirements, env and selection."""

from __future__ import annotations

import json

import pytest
from packaging.requirements import Requirement
from packaging.tags import Tag
from packaging.utils import parse_wheel_filename
from packaging.version import Version

from builders.base.errors import DroppedError, SelectionError
from builders.ci import jobs as ci
from builders.matrix.targets import Selection, expand, select
from tests import expected

# The release policy of the 2.15 issue, as a floor: these variants ship on these platforms.
POLICY_VARIANTS = {
    "linux-x86_64": {"cpu", "cu132", "cu134", "rocm7.14", "rocm10.0", "xpu"},
    "linux-aarch64": {"cpu", "cu132", "cu134"},
    "windows-x86_64": {"cpu"},
    "macos-arm64": {"cpu"},
}


def test_count_is_what_axes_and_exclusions_imply(m, data) -> None:
    targets, excluded = expand(m)
    assert {t.id for t in targets} == expected.live_ids(data)
    assert len(targets) + len(excluded) == len(expected.candidates(data))
    assert all(e.reason for e in excluded)
    for plat, variants in POLICY_VARIANTS.items():
        shipped = {t.variant.label for t in targets if t.platform.name == plat}
        assert variants <= shipped, plat


def test_no_dropped_python_in_any_target(m) -> None:
    targets, _ = expand(m)
    assert not any("cp310" in t.id or "cp313t" in t.id for t in targets)


def test_free_threaded_target_tags_and_filename(m) -> None:
    (t,) = select(m, Selection(targets=("cu132-cp314t-linux-x86_64",)))
    assert t.tag == Tag("cp314", "cp314t", "manylinux_2_28_x86_64")
    name, version, build, tags = parse_wheel_filename(t.wheel_name)
    assert (name, version, build, tags) == ("minifw", Version("2.15.0+cu132"), (), frozenset({t.tag}))
    assert t.wheel_name == "minifw-2.15.0+cu132-cp314-cp314t-manylinux_2_28_x86_64.whl"


@pytest.mark.parametrize(
    ("tid", "platform_tag"),
    [("cpu-cp311-windows-x86_64", "win_amd64"), ("cpu-cp315-macos-arm64", "macosx_14_0_arm64"),
     ("cu134-cp313-linux-aarch64", "manylinux_2_28_aarch64"), ("cpu-cp314t-windows-x86_64", "win_amd64")],
)
def test_filenames_round_trip(m, tid: str, platform_tag: str) -> None:
    (t,) = select(m, Selection(targets=(tid,)))
    _, version, _, tags = parse_wheel_filename(t.wheel_name)
    assert version.local == tid.split("-")[0]
    assert {tag.platform for tag in tags} == {platform_tag}


def test_requirements_identical_within_a_labelled_channel(m, data) -> None:
    targets, _ = expand(m)
    for label in expected.labels(data):
        reqs = {tuple(map(str, t.requirements)) for t in targets if t.variant.label == label}
        assert len(reqs) <= 1, label
    cu132 = expected.label_of(data, "cuda", "13.2")
    (reqs,) = {tuple(map(str, t.requirements)) for t in targets if t.variant.label == cu132}
    project = data["project"]
    extras = [f'{r}; extra == "{x}"' for x, rs in project.get("optional_dependencies", {}).items() for r in rs]
    runtime = data["accelerators"]["cuda"]["versions"]["13.2"]["runtime_requirements"]
    assert reqs == tuple(str(Requirement(r)) for r in [*project.get("dependencies", []), *extras, *runtime])


def test_channels_pypi_default_per_platform(m) -> None:
    targets = {t.id: t for t in expand(m)[0]}
    assert targets["cu132-cp312-linux-x86_64"].channels == ("pypi", "whl/cu132/")
    assert targets["cu134-cp312-linux-x86_64"].channels == ("whl/cu134/",)
    assert targets["cpu-cp312-linux-x86_64"].channels == ("whl/cpu/",)
    assert targets["cpu-cp312-windows-x86_64"].channels == ("pypi", "whl/cpu/")


def test_env_carries_variant_settings(m) -> None:
    (t,) = select(m, Selection(targets=("cu134-cp312-linux-aarch64",)))
    env = dict(t.env)
    assert env["MINIFW_ACCELERATOR"] == "cuda" and env["MINIFW_ACCELERATOR_VERSION"] == "13.4"
    assert env["MINIFW_BUILD_VERSION"] == "2.15.0+cu134"
    assert env["MINIFW_GPU_ARCHS"] == "8.0;9.0;10.0;10.7;11.0;12.0+PTX"
    assert env["MINIFW_RPATH"] == "$ORIGIN/../nvidia/cu13/lib"
    (mac,) = select(m, Selection(targets=("cpu-cp312-macos-arm64",)))
    assert dict(mac.env)["MACOSX_DEPLOYMENT_TARGET"] == "14.0"


def test_runner_image_and_smoke_runner(m) -> None:
    (t,) = select(m, Selection(targets=("rocm10.0-cp313-linux-x86_64",)))
    assert t.runner == "ubuntu-24.04" and t.platform.base_image.split("@")[0].endswith("manylinux_2_28_x86_64")
    assert t.containerfile == "builders/resources/containers/rocm.Containerfile"
    assert "gpu-amd" in t.smoke_runner
    (w,) = select(m, Selection(targets=("cpu-cp313-windows-x86_64",)))
    assert w.containerfile is None and w.smoke_runner == ("windows-2025",)


def test_select_and_skip_globs(m, data) -> None:
    picked = select(m, Selection(select=("cu13*-cp31[45]*-linux-*",), skip=("*-linux-aarch64",)))
    live = expected.live_ids(data)
    assert {t.id for t in picked} == {i for i in live if i.startswith("cu13") and i.endswith("-linux-x86_64")
                                      and i.split("-")[1].startswith(("cp314", "cp315"))}
    assert len(select(m, Selection())) == len(live)


def test_exact_target_selects_exactly_one(m) -> None:
    assert [t.id for t in select(m, Selection(targets=("cu132-cp312-linux-x86_64",)))] == ["cu132-cp312-linux-x86_64"]


def test_selector_naming_only_dropped_targets_says_dropped(m) -> None:
    with pytest.raises(DroppedError, match="Python 3.10 was dropped in 2.15") as err:
        select(m, Selection(select=("*-cp310-*",)))
    assert err.value.exit_code == 4
    with pytest.raises(DroppedError, match="3.13t"):
        select(m, Selection(targets=("cpu-cp313t-linux-x86_64",)))


def test_glob_that_also_matches_live_targets_is_fine(m) -> None:
    assert {t.python.abi for t in select(m, Selection(select=("cpu-cp31[0-2]-linux-x86_64",)))} == {"cp311", "cp312"}


def test_selector_naming_excluded_target_gives_reason(m) -> None:
    with pytest.raises(SelectionError, match="CUDA does not support macOS"):
        select(m, Selection(targets=("cu132-cp312-macos-arm64",)))


def test_unknown_selector_suggests(m) -> None:
    with pytest.raises(SelectionError, match="did you mean cu132-cp312-linux-x86_64"):
        select(m, Selection(targets=("cu132-cp312-linux-x86-64",)))


def test_github_matrix_is_valid_json_with_id_and_runner(m, data) -> None:
    out = json.loads(json.dumps(ci.github_matrix(select(m, Selection(select=("*-linux-aarch64",))))))
    assert len(out["include"]) == len({i for i in expected.live_ids(data) if i.endswith("-linux-aarch64")})
    assert all(e["id"] and e["runner"] == "ubuntu-24.04-arm" for e in out["include"])


def test_target_takes_an_exact_id_not_a_glob(m) -> None:
    with pytest.raises(SelectionError, match="exact id"):
        select(m, Selection(targets=("cpu-*",)))


def test_selector_matching_excluded_and_dropped_ids_names_the_exclusion(m) -> None:
    excluded = next(e for e in expand(m)[1])
    variant, _python, platform = excluded.id.split("-", 2)
    with pytest.raises(SelectionError, match="only matches excluded targets"):
        select(m, Selection(select=(f"{variant}-*-{platform}",)))
