"""Image arguments, content-addressed tags and cibuildwheel options: pure functions of the matrix."""

from __future__ import annotations

import shlex

import pytest

from builders.base.arch import canonical_arch
from builders.base.errors import EngineError
from builders.engines import images
from builders.engines.cibw import cibw_options, identifier
from builders.engines.container import CONTAINER_CA, container_env
from builders.families import Family, families
from builders.families import loader as matrix
from builders.matrix import findings
from builders.matrix.model import OS
from builders.matrix.targets import Selection, expand, select
from builders.wheel.repair import repair_argv, repair_command
from tests.helpers import one, settled_env

ENV = settled_env({"THEROCK_INDEX_URL": "https://rocm.example/v2/gfx-all/",
                   "ONEAPI_REPOSITORY": "https://oneapi.example/deb", "ONEAPI_REPOSITORY_KEY": "https://oneapi.example/key.pub"})
PYTHONS = ("3.11", "3.12", "3.13", "3.14", "3.15")


@pytest.mark.parametrize("tid", ["cpu-cp312-linux-x86_64", "cu132-cp312-linux-x86_64", "rocm10.0-cp312-linux-x86_64",
                                 "xpu-cp312-linux-x86_64"])
def test_every_containerfile_arg_is_wired_from_the_matrix(m, tid: str) -> None:
    spec = images.image_spec(one(m, tid), PYTHONS, ENV)
    assert spec.containerfile.name == f"{spec.family.value}.Containerfile"
    assert images.declared_args(spec.containerfile) == set(dict(spec.args))
    assert all((spec.containerfile.parent / f).is_file() for f in images.copied_files(spec.containerfile))


def test_rocm_args_come_from_the_matrix_and_environment(m) -> None:
    args = dict(images.image_spec(one(m, "rocm10.0-cp313-linux-x86_64"), PYTHONS, ENV).args)
    assert args["TOOLKIT_REQUIREMENTS"] == "rocm[libraries,devel]==10.0.*"
    assert args["TOOLKIT_INDEX_URL"] == ENV["THEROCK_INDEX_URL"]
    assert args["BASE_IMAGE"] == m.platform("linux-x86_64").base_image
    xpu = dict(images.image_spec(one(m, "xpu-cp313-linux-x86_64"), PYTHONS, ENV).args)
    assert xpu["TOOLKIT_SYSTEM_PACKAGES"] == "intel-oneapi-compiler-dpcpp-cpp-2026.1"
    assert xpu["TOOLKIT_SYSTEM_REPOSITORY_KEY"] == ENV["ONEAPI_REPOSITORY_KEY"]


def test_registry_addresses_must_come_from_the_environment(m) -> None:
    with pytest.raises(EngineError, match=r"needs \$\{THEROCK_INDEX_URL\}"):
        images.image_spec(one(m, "rocm7.14-cp313-linux-x86_64"), PYTHONS, {})


def test_tags_are_content_addressed(m) -> None:
    cu132 = images.image_spec(one(m, "cu132-cp313-linux-x86_64"), PYTHONS, ENV)
    assert cu132.tag == images.image_spec(one(m, "cu132-cp314-linux-x86_64"), PYTHONS, ENV).tag
    assert cu132.tag != images.image_spec(one(m, "cu134-cp313-linux-x86_64"), PYTHONS, ENV).tag
    assert cu132.tag != images.image_spec(one(m, "cu132-cp313-linux-x86_64"), PYTHONS, ENV, "localhost/b:1").tag
    assert cu132.tag.startswith("localhost/builders-cuda:")
    assert dict(cu132.args)["MAX_GCC"] == "15"


@pytest.mark.parametrize("base", [None, "localhost/one-base:1"])
def test_each_platform_gets_its_own_tag_whatever_the_base(m, base: str | None) -> None:
    """One ``--base-image`` for x86_64 and aarch64 must still give two images (two tags)."""
    platforms = []
    for variant, python in {(t.variant.label, t.python.abi) for t in select(m, Selection(select=("*-linux-*",)))}:
        same = select(m, Selection(select=(f"{variant}-{python}-linux-*",)))
        specs = [images.image_spec(t, PYTHONS, ENV, base) for t in same]
        platforms.append(len({t.platform.name for t in same}))
        assert len({s.tag for s in specs}) == platforms[-1], (variant, python)
    assert max(platforms) > 1  # the matrix has a variant on two Linux platforms


@pytest.mark.parametrize("engine", ["podman", "docker"])
def test_build_argv_passes_every_arg_and_the_ca_bundle_as_a_secret(m, tmp_path, engine: str) -> None:
    spec = images.image_spec(one(m, "cu134-cp313-linux-x86_64"), PYTHONS, ENV)
    ca = tmp_path / "ca.crt"
    argv = images.build_argv(engine, spec, ca)
    assert argv[:2] == [engine, "build"] and argv[-1] == str(images.CONTAINERS_DIR)
    assert "TOOLKIT_REQUIREMENTS=cuda-toolkit[nvcc,cudart,cccl,crt,nvvm]==13.4.3" in argv
    assert argv[argv.index("--secret") + 1] == f"id={images.CA_SECRET},src={ca}"
    assert "--volume" not in argv  # docker build has no --volume; a secret stays out of every layer
    assert argv[argv.index("--tag") + 1] == spec.tag


def test_build_argv_without_a_ca_bundle_has_no_secret(m) -> None:
    spec = images.image_spec(one(m, "cpu-cp313-linux-x86_64"), PYTHONS, ENV)
    assert "--secret" not in images.build_argv("podman", spec, None)


def test_the_ca_bundle_does_not_change_the_tag(m, tmp_path) -> None:
    spec = images.image_spec(one(m, "cu132-cp313-linux-x86_64"), PYTHONS, ENV)
    argvs = [images.build_argv("docker", spec, ca) for ca in (None, tmp_path / "a.crt", tmp_path / "b.crt")]
    tags = {argv[argv.index("--tag") + 1] for argv in argvs}
    assert tags == {spec.tag}


def test_docker_builds_and_online_containers_use_the_host_network() -> None:
    """Docker without a bridge (or without iptables) reaches out only through the host's network."""
    docker, podman = images.Dialect(exe="docker"), images.Dialect(exe="/usr/bin/podman")
    assert docker.network(True) == ["--network", "host"] and podman.network(True) == []
    assert docker.network(False) == podman.network(False) == ["--network", "none"]
    assert images.Dialect(exe="/usr/local/bin/docker").docker and not podman.docker


def test_build_argv_network_per_engine(m) -> None:
    spec = images.image_spec(one(m, "cpu-cp313-linux-x86_64"), PYTHONS, ENV)
    docker = images.build_argv("docker", spec, None)
    assert docker[docker.index("--network") + 1] == "host"
    assert "--network" not in images.build_argv("podman", spec, None)


def test_remove_argv_per_engine() -> None:
    """podman waits --time for SIGTERM (ignored by sleep as PID 1) unless told 0; docker has no --time."""
    assert images.Dialect(exe="podman").remove("c") == ["podman", "rm", "--force", "--time", "0", "c"]
    assert images.Dialect(exe="docker").remove("c") == ["docker", "rm", "--force", "c"]


def test_build_environment_per_engine() -> None:
    assert images.Dialect(exe="docker").build_env() == {"DOCKER_BUILDKIT": "1"}
    assert images.Dialect(exe="podman").build_env() == {"BUILDAH_LAYERS": "true"}


@pytest.mark.parametrize("family", families(), ids=lambda f: f.accelerator.value)
def test_every_run_step_mounts_the_ca_secret_build_argv_passes(family: Family) -> None:
    """The Containerfiles and build_argv agree on the secret's id and where the scripts look for it."""
    text = family.containerfile.read_text()
    runs = [line for line in text.splitlines() if line.startswith("RUN ")]
    mount = f"--mount=type=secret,id={images.CA_SECRET},target={CONTAINER_CA},required=false"
    assert runs and all(line.split()[1] == mount for line in runs)


def test_toolkit_root_inside_the_image(m) -> None:
    assert images.toolkit_root(one(m, "cu132-cp313-linux-x86_64").variant.toolkit) == "/opt/toolkit/nvidia/cu13"
    assert images.toolkit_root(one(m, "xpu-cp313-linux-x86_64").variant.toolkit) == "/opt/intel/oneapi/compiler/2026.1"


def test_only_declared_settings_cross_into_containers(m) -> None:
    t = one(m, "cu132-cp313-linux-x86_64")
    env = {"HOME": "/root", "PATH": "/usr/bin", "MINIFW_ACCELERATOR": "cuda", "MINIFW_TOOLKIT_ROOT": "/opt/t",
           "SOURCE_DATE_EPOCH": "1", "AWS_SECRET_ACCESS_KEY": "x"}
    assert container_env(t, env) == {"MINIFW_ACCELERATOR": "cuda", "MINIFW_TOOLKIT_ROOT": "/opt/t", "SOURCE_DATE_EPOCH": "1"}


def test_cibw_identifiers(m) -> None:
    assert identifier(one(m, "cu132-cp314t-linux-x86_64")) == "cp314t-manylinux_x86_64"
    assert identifier(one(m, "cpu-cp312-macos-arm64")) == "cp312-macosx_arm64"
    windows = next(t for t in expand(m)[0] if t.platform.os is OS.WINDOWS and t.python.abi == "cp315"
                   and canonical_arch(t.platform.arch) == "x86_64")  # a grown matrix may add windows-arm64
    assert identifier(windows) == "cp315-win_amd64"


def test_cibw_options_for_a_group(m) -> None:
    group = select(m, Selection(select=("cu134-cp31[45]*-linux-x86_64",)))
    opts = cibw_options(group, image="localhost/builders-cuda:abc", engine="podman", env={})
    assert opts["CIBW_BUILD"].split() == ["cp314-manylinux_x86_64", "cp314t-manylinux_x86_64",
                                           "cp315-manylinux_x86_64", "cp315t-manylinux_x86_64"]
    assert opts["CIBW_MANYLINUX_X86_64_IMAGE"] == "localhost/builders-cuda:abc"
    assert "--exclude libcudart.so.13" in opts["CIBW_REPAIR_WHEEL_COMMAND"]
    assert "--plat manylinux_2_28_x86_64 --only-plat" in opts["CIBW_REPAIR_WHEEL_COMMAND"]
    assert "MINIFW_GPU_ARCHS='7.5;8.0;8.6;9.0;10.0;10.7;12.0+PTX'" in opts["CIBW_ENVIRONMENT"]
    # cibuildwheel builds and repairs; the pipeline verifies and smoke-tests (once each).
    assert not [k for k in opts if k.startswith("CIBW_TEST")]


def test_cibw_repairs_with_the_one_repair_command(m) -> None:
    t = one(m, "cu134-cp314-linux-x86_64")
    argv = repair_argv(t, "{wheel}", "{dest_dir}")
    assert argv is not None and shlex.split(repair_command(t)) == list(argv)
    assert argv[:2] == ("auditwheel", "repair") and argv[-3:] == ("-w", "{dest_dir}", "{wheel}")


def test_cibw_macos_uses_delocate_and_deployment_target(m) -> None:
    mac = one(m, "cpu-cp313-macos-arm64")
    assert repair_command(mac).startswith("delocate-wheel --require-archs arm64")
    opts = cibw_options([mac], image=None, engine="podman", env={})
    assert "MACOSX_DEPLOYMENT_TARGET=14.0" in opts["CIBW_ENVIRONMENT"]
    assert "CIBW_MANYLINUX_X86_64_IMAGE" not in opts


def test_cibw_group_must_share_variant_and_platform(m) -> None:
    with pytest.raises(EngineError, match="share one variant"):
        cibw_options(select(m, Selection(select=("cu13*-cp314-linux-x86_64",))), image="i", engine="podman", env={})


def test_families_have_containerfiles() -> None:
    for family in families():
        assert family.containerfile.is_file() and family.containerfile.parent == images.CONTAINERS_DIR


def test_images_dry_run_names_unset_variables_instead_of_failing(root, monkeypatch, capsys) -> None:
    """Every image's command is printed; the registry variables nobody set are named, not fatal."""
    from builders import cli

    wanted = {ref for v in matrix.load(root / "matrix.yaml").variants
              for name in ("index_url", "system_repository", "system_repository_key")
              for ref in findings.ENV_REF.findall(getattr(v.toolkit, name) or "")}
    assert wanted, "the shipped matrix takes some registry address from the environment"
    for name in wanted:
        monkeypatch.delenv(name, raising=False)
    assert cli.main(["images", "--matrix", str(root / "matrix.yaml"), "--dry-run"]) == 0
    out = capsys.readouterr()
    printed = out.out + out.err
    families = {v.accelerator for v in matrix.load(root / "matrix.yaml").variants}
    assert sum(f"{f.value}.Containerfile" in printed for f in families) == len(families)
    unset_line = next(line for line in printed.splitlines() if line.startswith("unset: "))
    assert set(unset_line.split(":")[1].strip().split(", ")) == wanted
    for name in wanted:
        assert f"${{{name}}}" in printed
