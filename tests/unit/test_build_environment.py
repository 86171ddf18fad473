"""Issue 42, item 7: per-variant build settings as data, placeholders that leave a shell's ``${VAR}`` alone,
and a build environment that starts clean (host variables reach a build only by name)."""

from __future__ import annotations

import pytest

from builders.base import placeholders
from builders.engines.local import kept
from builders.families import loader as matrix
from builders.pipeline.plan import HOST_BASE_VARS, PREFIX_MAP_TO, PREFIX_MAPPED, cmake_archs
from tests import helpers
from tests.unit.test_buildplan import ENV, built, context, plans

PASS_LINE = "    environment_pass: [MINIFW_CORE_WEIGHT]\n"
LEFTOVERS = {"CMAKE_ARGS": "-DFOO=on", "CFLAGS": "-DBROKEN", "CC": "clang", "LDFLAGS": "-lm",
             "CMAKE_GENERATOR": "Unix Makefiles", "PIP_CONSTRAINT": "/tmp/c.txt", "PYTHONPATH": "/elsewhere"}


def prefix_map(plan) -> str:
    """The flag every Linux build on this host gets, so its work folder is in no binary (plan.prefix_maps)."""
    return f"-ffile-prefix-map={plan.work}={PREFIX_MAP_TO}"


def with_build_keys(text: str, extra: str) -> str:
    assert text.count(PASS_LINE) == 1
    return text.replace(PASS_LINE, PASS_LINE + extra, 1)


def per_variant(text: str, label: str) -> str:
    return with_build_keys(text, "    variant_variables:\n"
                                 "      cpu: {CMAKE_ARGS: -DGGML_CUDA=off}\n"
                                 "      cuda: {CMAKE_ARGS: '-DGGML_CUDA=on -DCMAKE_CUDA_ARCHITECTURES={cmake_archs}',"
                                 " TOOLKIT: '{toolkit_root}', SHELL_VAR: '${HOME}/x {label}'}\n"
                                 f"      {label}: {{EXTRA: '{{accelerator}}-{{accelerator_version}}'}}\n")


# --- the clean environment --------------------------------------------------------------------------------------

def test_a_shells_leftovers_change_neither_the_build_nor_its_digest(m) -> None:
    clean, dirty = plans(m, ctx=context()), plans(m, ctx=context(env={**ENV, **LEFTOVERS}))
    for tid, plan in built(dirty).items():
        assert plan.digest == clean[tid].digest
        env = dict(plan.build.env)
        assert not (set(LEFTOVERS) - set(PREFIX_MAPPED)) & set(env) and not set(LEFTOVERS) & set(plan.host_vars)
        assert all(env[name] == prefix_map(plan) for name in PREFIX_MAPPED)  # builders' own flag, not the shell's
        assert plan.runner.keep == plan.host_vars == ("HOME", "PATH")


def test_a_host_variable_named_in_environment_pass_reaches_the_build_and_its_digest(shipped_text: str) -> None:
    named = matrix.loads(shipped_text.replace(PASS_LINE, "    environment_pass: [MINIFW_CORE_WEIGHT, CFLAGS]\n", 1))
    clean, dirty = plans(named, ctx=context()), plans(named, ctx=context(env={**ENV, **LEFTOVERS}))
    for tid, plan in built(dirty).items():
        assert dict(plan.build.env)["CFLAGS"] == "-DBROKEN" and "CMAKE_ARGS" not in dict(plan.build.env)
        assert plan.digest != clean[tid].digest and plan.host_named == ("CFLAGS",)
        assert plan.to_json()["host_variables"] == {"kept": ["HOME", "PATH"], "named": ["CFLAGS"]}
        assert ("host", plan.host_line()) in plan.steps() and "CFLAGS" in plan.host_line()


def test_the_runner_keeps_only_what_it_was_told() -> None:
    host = {**ENV, **LEFTOVERS, "LC_ALL": "C.UTF-8", "PIP_INDEX_URL": "http://mirror/simple", "X": "1"}
    assert kept(host, ("HOME", "LC_ALL", "PATH", "PIP_INDEX_URL"), ()) == {k: host[k] for k in
                                                                          ("PATH", "HOME", "LC_ALL", "PIP_INDEX_URL")}
    assert kept(host, None, ("X",)) == {k: v for k, v in host.items() if k != "X"}  # the smoke runner: all but unset


def test_pip_index_configuration_still_reaches_an_isolated_build(m) -> None:
    env = {**ENV, "PIP_INDEX_URL": "http://mirror/simple", "https_proxy": "http://proxy:3128", "LC_ALL": "C.UTF-8",
           "SSL_CERT_FILE": "/etc/ca.pem", **LEFTOVERS}
    for plan in built(plans(m, ctx=context(env=env))).values():
        assert set(plan.host_vars) == {"HOME", "PATH", "PIP_INDEX_URL", "https_proxy", "LC_ALL", "SSL_CERT_FILE"}
        assert dict(plan.runner.inherits) == {"PIP_INDEX_URL": "http://mirror/simple"}  # in the digest, as before
    assert not {"CC", "CFLAGS", "CMAKE_ARGS", "PIP_CONSTRAINT", "PYTHONPATH"} & HOST_BASE_VARS


# --- per-variant variables ---------------------------------------------------------------------------------------

def test_variables_per_family_and_label_with_the_variants_facts(m, shipped_text: str) -> None:
    label = next(v.label for v in m.variants if v.accelerator.value == "cuda")
    changed = matrix.loads(per_variant(shipped_text, label))
    before, after = plans(m), built(plans(changed))
    assert after
    for tid, plan in after.items():
        env, variant = dict(plan.build.env), plan.target.variant
        if variant.accelerator.value == "cpu":
            assert env["CMAKE_ARGS"] == "-DGGML_CUDA=off" and "TOOLKIT" not in env
        else:
            archs = cmake_archs(plan.target.arch_list or "")
            assert env["CMAKE_ARGS"] == f"-DGGML_CUDA=on -DCMAKE_CUDA_ARCHITECTURES={archs}" and "-real" in archs
            assert env["TOOLKIT"] == plan.toolchain.root and env["SHELL_VAR"] == f"${{HOME}}/x {variant.label}"
            assert ("EXTRA" in env) == (variant.label == label)
        if variant.label == label:
            assert env["EXTRA"] == f"cuda-{variant.version}"
        assert plan.digest != before[tid].digest and "CMAKE_ARGS" in plan.smoke_runner.unset


def test_cmake_archs_are_real_with_ptx_only_where_asked() -> None:
    assert cmake_archs("7.5;8.0;12.0+PTX") == "75-real;80-real;120"
    assert cmake_archs("gfx942;gfx1100") == "gfx942;gfx1100" and cmake_archs("") == ""


def test_an_unknown_family_label_or_placeholder_is_refused_at_load(shipped_text: str) -> None:
    text = with_build_keys(shipped_text, "    variant_variables:\n      cu999: {A: x}\n      cpu: {B: '{archs}'}\n")
    found = [str(p) for p in helpers.problems_of(text)]
    assert len(found) == 2 and any("cu999" in p for p in found) and any("{archs}" in p for p in found)


# --- placeholders ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "want"), [
    ("{python} -m build", "/py -m build"),
    ("${CMAKE_ARGS} ${python}", "${CMAKE_ARGS} ${python}"),  # the shell's, whatever is inside
    ("${{VAR}} {{python}}", "${VAR} {python}"),  # a matrix written for str.format keeps its meaning
    ("awk '{print $1}' {unknown} {A}", "awk '{print $1}' {unknown} {A}"),
])
def test_only_known_placeholders_are_filled(text: str, want: str) -> None:
    assert placeholders.fill(text, {"python": "/py"}) == want


def test_a_build_command_may_use_a_shells_variables_as_written(shipped_text: str) -> None:
    old = '["{python}", "-m", "pip", "wheel", "--no-deps", "--wheel-dir", "{outdir}", "{source}"]'
    assert shipped_text.count(old) == 1
    command = '["bash", "-c", "CMAKE_ARGS=\\"${CMAKE_ARGS} -DX={label}\\" {python} -m pip wheel -w {outdir} {source}"]'
    m = matrix.loads(shipped_text.replace(old, command, 1))
    for plan in built(plans(m)).values():
        assert plan.build.argv[2] == (f'CMAKE_ARGS="${{CMAKE_ARGS}} -DX={plan.target.variant.label}" '
                                      f"{plan.interpreter} -m pip wheel -w {plan.work}/raw {plan.work}/src")
