"""Wheel variants in the matrix (PEP 825): properties per variant, providers, priorities, and their errors.

Expectations are computed from the matrix's own text (its arch lists and versions), not from the code
under test.
"""

from __future__ import annotations

import yaml
from packaging.version import Version

from builders.families import loader as matrix
from builders.matrix.model import NULL_VARIANT
from tests import expected
from tests.helpers import accelerator, edit, only_problem, problems_of


def line_of(text: str, needle: str) -> int:
    return next(i + 1 for i, line in enumerate(text.splitlines()) if needle in line)


def sm_values(entries: list[str]) -> set[str]:
    """nvidia's sm_arch values for CUDA arch-list entries, written out by hand: 9.0 -> 90_real, +PTX adds _virtual."""
    out = set()
    for entry in entries:
        digits = entry.split("+")[0].replace(".", "")
        out.add(f"{digits}_real")
        if entry.endswith("+PTX"):
            out.add(f"{digits}_virtual")
    return out


def test_shipped_cuda_variants_carry_the_lower_bound_and_every_arch_of_every_platform(shipped_text: str) -> None:
    m = matrix.loads(shipped_text)
    data = expected.raw(shipped_text)
    for version, raw in data["accelerators"]["cuda"]["versions"].items():
        variant = m.variant(raw["label"])
        entries = [e for text in raw["arch_list"].values() for e in text.split(";")]
        want = {f"nvidia :: cuda_version_lower_bound :: {version}"} | {f"nvidia :: sm_arch :: {v}" for v in sm_values(entries)}
        assert set(variant.properties) == want
        assert variant.variant_label == raw["label"]


def test_the_variant_without_properties_is_the_null_variant(shipped_text: str) -> None:
    m = matrix.loads(shipped_text)
    nulls = [v for v in m.variants if not v.properties]
    assert [v.accelerator for v in nulls] == [accelerator("cpu")]
    assert nulls[0].variant_label == NULL_VARIANT


def test_rocm_properties_name_the_release_and_each_gfx_arch(shipped_text: str) -> None:
    m = matrix.loads(shipped_text)
    data = expected.raw(shipped_text)
    for version, raw in data["accelerators"]["rocm"]["versions"].items():
        archs = raw["arch_list"].split(";")
        assert set(m.variant(raw["label"]).properties) == (
            {f"amd :: rocm_version :: {version}"} | {f"amd :: gfx_arch :: {a}" for a in archs})


def test_providers_come_in_priority_order(shipped_text: str) -> None:
    m = matrix.loads(shipped_text)
    data = expected.raw(shipped_text)["wheel_variants"]
    assert m.wheel_variants is not None
    assert [p.namespace for p in m.wheel_variants.providers] == data["priorities"]
    nvidia = m.wheel_variants.providers[data["priorities"].index("nvidia")]
    assert nvidia.requires == tuple(data["providers"]["nvidia"]["requires"])
    assert nvidia.plugin_api == data["providers"]["nvidia"]["plugin_api"]


def test_adding_a_cuda_version_needs_only_its_entry(shipped_text: str) -> None:
    versions = yaml.safe_load(shipped_text)["accelerators"]["cuda"]["versions"]
    newest = max(Version(v) for v in versions)
    added = f"{newest.major}.{newest.minor + 50}"  # a version no matrix (grown by a test or not) has yet
    first = next(iter(versions))
    text = edit(shipped_text, f'      "{first}":\n', f'      "{added}":\n        label: cu{added.replace(".", "")}\n'
                '        arch_list: "9.0;12.0"\n        toolkit:\n'
                f'          requirements: ["cuda-toolkit[nvcc]=={added}.0"]\n'
                f'        runtime_requirements: [\'cuda-toolkit[cudart]=={added}.0; platform_system == "Linux"\']\n'
                f'      "{first}":\n')
    m = matrix.loads(text)
    assert set(m.variant(f"cu{added.replace('.', '')}").properties) == {
        f"nvidia :: cuda_version_lower_bound :: {added}", "nvidia :: sm_arch :: 90_real", "nvidia :: sm_arch :: 120_real"}


def test_a_version_overrides_the_family_properties(shipped_text: str) -> None:
    text = edit(shipped_text, "        label: cu134\n",
                '        label: cu134\n        variant_properties: ["nvidia :: cuda_version_lower_bound :: {major}.0"]\n')
    assert matrix.loads(text).variant("cu134").properties == ("nvidia :: cuda_version_lower_bound :: 13.0",)


def test_a_bad_property_is_refused_where_it_is_written(shipped_text: str) -> None:
    text = edit(shipped_text, '      - "nvidia :: sm_arch :: {arch}"', '      - "nvidia::SM arch::{arch}"')
    problem = only_problem(text, "not a PEP 825 variant property")
    assert (problem.location.line, problem.location.file) == (line_of(text, "SM arch"), "m.yaml")


def test_an_unknown_placeholder_is_refused(shipped_text: str) -> None:
    text = edit(shipped_text, "sm_arch :: {arch}", "sm_arch :: {archs}")
    only_problem(text, "unknown placeholder {archs}")


def test_version_placeholder_needs_a_version(shipped_text: str) -> None:
    text = edit(shipped_text, "    label: xpu\n", '    label: xpu\n    variant_properties: ["intel :: release :: {version}"]\n')
    problems = problems_of(text)
    assert any("has none" in str(p) for p in problems), problems


def test_a_namespace_without_provider_is_refused(shipped_text: str) -> None:
    text = edit(shipped_text, '      - "intel :: device_ip :: 20.1.0"', '      - "acme :: device_ip :: 20.1.0"')
    only_problem(text, "namespace 'acme', which has no provider")


def test_two_null_variants_are_refused(shipped_text: str) -> None:
    text = edit(shipped_text, '    variant_properties:\n      - "intel :: device_ip :: 20.1.0"\n'
                '      - "intel :: device_ip :: 20.4.4"\n      - "intel :: device_ip :: 30.0.4"\n', "")
    only_problem(text, "both would be the null variant")


def test_priorities_list_every_provider(shipped_text: str) -> None:
    only_problem(edit(shipped_text, "priorities: [nvidia, amd, intel]", "priorities: [nvidia, amd]"),
                 "provider 'intel' is not in wheel_variants.priorities")
    only_problem(edit(shipped_text, "priorities: [nvidia, amd, intel]", "priorities: [nvidia, amd, intel, nvida]"),
                 "'nvida' has no provider")


def test_provider_keys_are_checked_by_the_schema(shipped_text: str) -> None:
    only_problem(edit(shipped_text, 'plugin_api: "nvidia_variant_provider.plugin:NvidiaVariantPlugin"',
                      'plugin_api: "nvidia variant provider"'), "does not match")
    only_problem(edit(shipped_text, 'requires: ["nvidia-variant-provider>=0.0.1,<1.0.0"]', 'requires: ["nvidia provider >>"]'),
                 "not a valid requirement")
    only_problem(edit(shipped_text, "  layout: variants/", "  layout: ../variants/"), "without '..'")


def test_without_wheel_variants_the_matrix_has_none(shipped_text: str) -> None:
    head, _sep, tail = shipped_text.partition("wheel_variants:\n")
    body_end = tail.index("\nexclude:")
    assert matrix.loads(head + tail[body_end + 1:]).wheel_variants is None
