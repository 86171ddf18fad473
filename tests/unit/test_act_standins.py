"""The act stand-ins keep the real actions' behaviours the release workflow relies on.

Each test calls a stand-in's function on tmp folders with an explicit environment, as act would
run it, and reads what it left on disk.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from builders.channels import provenance

ROOT = Path(__file__).resolve().parents[2]


def load_standin() -> ModuleType:
    """standin.py is a script act runs by path, not a package: load it the same way."""
    spec = importlib.util.spec_from_file_location("standin", ROOT / "tests/act/actions/standin.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["standin"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


standin = load_standin()


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """A job's environment: its own workspace, runner temp, state, PATH and output files."""
    for name in ("ws", "temp", "state", "bin", "home"):
        (tmp_path / name).mkdir()
    return {"GITHUB_WORKSPACE": str(tmp_path / "ws"), "RUNNER_TEMP": str(tmp_path / "temp"),
            "STANDIN_STATE": str(tmp_path / "state"), "PATH": str(tmp_path / "bin"), "HOME": str(tmp_path / "home"),
            "GITHUB_PATH": str(tmp_path / "path.txt"), "GITHUB_JOB": "job", "GITHUB_REPOSITORY": "o/fw",
            "GITHUB_REF": "refs/tags/v1.0.0", "GITHUB_WORKFLOW_REF": "o/fw/.github/workflows/release.yml@refs/tags/v1.0.0"}


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def tree(folder: Path) -> dict[str, str]:
    """Every file below a folder with its text, by relative path."""
    return {p.relative_to(folder).as_posix(): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file()}


def upload(env: dict[str, str], name: str, path: str, **inputs: str) -> dict[str, str]:
    extra = {"INPUT_" + k.upper(): v for k, v in inputs.items()}
    return standin.upload_artifact({**env, "INPUT_NAME": name, "INPUT_PATH": path, **extra})


def download(env: dict[str, str], **inputs: str) -> dict[str, str]:
    return standin.download_artifact({**env, **{"INPUT_" + k.upper(): v for k, v in inputs.items()}})


# upload-artifact


def test_upload_keeps_the_folder_contents_at_the_root_and_leaves_hidden_files_out(env: dict[str, str]) -> None:
    ws = Path(env["GITHUB_WORKSPACE"])
    write(ws / "wheelhouse/a.whl", "A")
    write(ws / "wheelhouse/sub/b.whl", "B")
    write(ws / "wheelhouse/.hidden", "H")
    outputs = upload(env, "build-x", "wheelhouse/")
    assert tree(Path(env["STANDIN_STATE"]) / "artifacts/build-x") == {"a.whl": "A", "sub/b.whl": "B"}
    assert re.fullmatch(r"[0-9a-f]{64}", outputs["artifact-digest"])
    assert outputs["artifact-id"].isdigit()


def test_upload_of_several_paths_is_rooted_at_their_common_ancestor(env: dict[str, str]) -> None:
    ws = Path(env["GITHUB_WORKSPACE"])
    write(ws / "release/wheels/w.whl", "W")
    write(ws / "release/dist/d.whl", "D")
    write(ws / "release/dist/notes.txt", "N")
    upload(env, "rel", "release/wheels/\nrelease/dist/*.whl")
    assert tree(Path(env["STANDIN_STATE"]) / "artifacts/rel") == {"wheels/w.whl": "W", "dist/d.whl": "D"}


def test_upload_twice_without_overwrite_fails_with_the_real_409(env: dict[str, str]) -> None:
    write(Path(env["GITHUB_WORKSPACE"]) / "plan.json", "first")
    upload(env, "plan", "plan.json")
    write(Path(env["GITHUB_WORKSPACE"]) / "plan.json", "second")
    with pytest.raises(standin.StandinError, match=r"\(409\) Conflict: an artifact with this name already exists"):
        upload(env, "plan", "plan.json")
    assert tree(Path(env["STANDIN_STATE"]) / "artifacts/plan") == {"plan.json": "first"}
    assert not [p for p in (Path(env["STANDIN_STATE"]) / "artifacts").iterdir() if p.name != "plan"]


def test_upload_with_overwrite_replaces_the_old_artifact_wholly(env: dict[str, str]) -> None:
    ws = Path(env["GITHUB_WORKSPACE"])
    write(ws / "out/old.txt", "old")
    upload(env, "report", "out/")
    (ws / "out/old.txt").unlink()
    write(ws / "out/new.txt", "new")
    upload(env, "report", "out/", overwrite="true")
    assert tree(Path(env["STANDIN_STATE"]) / "artifacts/report") == {"new.txt": "new"}


def test_upload_with_no_files_warns_by_default_and_fails_on_error(env: dict[str, str]) -> None:
    assert upload(env, "none", "missing/") == {}
    assert not (Path(env["STANDIN_STATE"]) / "artifacts/none").exists()
    with pytest.raises(standin.StandinError, match="No files were found with the provided path: missing/"):
        upload(env, "none", "missing/", if_no_files_found="error")


# download-artifact


def seed(env: dict[str, str], artifacts: dict[str, dict[str, str]]) -> None:
    for name, files in artifacts.items():
        for rel, text in files.items():
            write(Path(env["STANDIN_STATE"]) / "artifacts" / name / rel, text)


def test_download_of_a_single_pattern_match_lands_directly_in_path(env: dict[str, str]) -> None:
    seed(env, {"build-cpu": {"a.whl": "A"}, "plan": {"plan.json": "{}"}})
    outputs = download(env, pattern="build-*", path="artifacts")
    target = Path(env["GITHUB_WORKSPACE"]) / "artifacts"
    assert tree(target) == {"a.whl": "A"}  # not artifacts/build-cpu/a.whl: v8's behaviour
    assert outputs["download-path"] == str(target)


def test_download_of_two_pattern_matches_lands_in_one_folder_each(env: dict[str, str]) -> None:
    seed(env, {"build-cpu": {"a.whl": "A"}, "build-cu132": {"b.whl": "B"}, "plan": {"plan.json": "{}"}})
    download(env, pattern="build-*", path="artifacts")
    assert tree(Path(env["GITHUB_WORKSPACE"]) / "artifacts") == {"build-cpu/a.whl": "A", "build-cu132/b.whl": "B"}


def test_download_with_merge_multiple_merges_into_path(env: dict[str, str]) -> None:
    seed(env, {"build-cpu": {"whl/a.whl": "A"}, "build-cu132": {"whl/b.whl": "B"}})
    download(env, pattern="build-*", path="artifacts", merge_multiple="true")
    assert tree(Path(env["GITHUB_WORKSPACE"]) / "artifacts") == {"whl/a.whl": "A", "whl/b.whl": "B"}


def test_download_by_name_lands_directly_in_the_workspace_by_default(env: dict[str, str]) -> None:
    seed(env, {"plan": {"plan.json": "{}"}, "other": {"x": "X"}})
    download(env, name="plan")
    assert tree(Path(env["GITHUB_WORKSPACE"])) == {"plan.json": "{}"}


def test_download_of_a_missing_name_fails(env: dict[str, str]) -> None:
    seed(env, {"plan": {"plan.json": "{}"}})
    with pytest.raises(standin.StandinError, match=r"Unable to download artifact\(s\): Artifact not found for name: nope"):
        download(env, name="nope", path="x")


def test_download_of_a_pattern_that_matches_nothing_succeeds_empty(env: dict[str, str]) -> None:
    seed(env, {"plan": {"plan.json": "{}"}})
    download(env, pattern="build-*", path="artifacts")
    assert not (Path(env["GITHUB_WORKSPACE"]) / "artifacts").exists()


def test_download_with_run_id_and_a_token_reads_that_runs_artifacts(env: dict[str, str], tmp_path: Path) -> None:
    seed(env, {"release-wheels": {"a.whl": "this run"}})
    write(tmp_path / "101" / "artifacts" / "release-wheels" / "a.whl", "run 101")  # a sibling run's state
    download(env, name="release-wheels", path="other", run_id="101", github_token="token")
    assert tree(Path(env["GITHUB_WORKSPACE"]) / "other") == {"a.whl": "run 101"}
    download(env, name="release-wheels", path="this", run_id="101")  # no token: the real action ignores run-id
    assert tree(Path(env["GITHUB_WORKSPACE"]) / "this") == {"a.whl": "this run"}
    with pytest.raises(standin.StandinError, match="no workflow run '102'"):
        download(env, name="release-wheels", path="x", run_id="102", github_token="token")


def test_round_trip_keeps_every_byte(env: dict[str, str]) -> None:
    ws = Path(env["GITHUB_WORKSPACE"])
    (ws / "wh").mkdir()
    (ws / "wh/x.whl").write_bytes(bytes(range(256)) * 10)
    upload(env, "build-x", "wh/")
    download(env, name="build-x", path="back")
    assert (ws / "back/x.whl").read_bytes() == bytes(range(256)) * 10


# setup-python


def fake_pyenv(root: Path, installs: dict[str, tuple[tuple[int, int, int], bool]]) -> dict[Path, object]:
    """Empty executables under a pyenv root, and what each says it is when probed."""
    facts: dict[Path, object] = {}
    for folder, (version, free) in installs.items():
        exe = root / "versions" / folder / "bin" / f"python{version[0]}.{version[1]}{'t' if free else ''}"
        write(exe, "")
        facts[exe] = standin.Interpreter(version=version, releaselevel="final", free_threaded=free)
    return facts


def test_setup_python_makes_the_last_listed_version_the_default(env: dict[str, str], tmp_path: Path) -> None:
    facts = fake_pyenv(tmp_path / "pyenv", {"3.12.4": ((3, 12, 4), False), "3.11.7": ((3, 11, 7), False)})
    job = {**env, "STANDIN_PYENV_ROOT": str(tmp_path / "pyenv"), "INPUT_PYTHON_VERSION": "3.12\n3.11"}
    outputs = standin.setup_python(job, probe=facts.get, environment=lambda _venv, python: python)
    assert outputs == {"python-version": "3.11.7", "python-path": str(tmp_path / "pyenv/versions/3.11.7/bin/python3.11")}
    folders = [Path(line) for line in Path(env["GITHUB_PATH"]).read_text().splitlines()]
    assert len(folders) == 2
    defaults = [f for f in folders if (f / "python").exists()]
    assert [(f / "python").resolve().name for f in defaults] == ["python3.11"]
    assert (folders[0] / "python3.12").resolve() == tmp_path / "pyenv/versions/3.12.4/bin/python3.12"


def test_setup_python_checks_what_the_interpreter_really_is(env: dict[str, str], tmp_path: Path) -> None:
    facts = fake_pyenv(tmp_path / "pyenv", {"3.14.0": ((3, 14, 0), False)})
    (tmp_path / "pyenv/versions/3.14.0t/bin").mkdir(parents=True)
    liar = tmp_path / "pyenv/versions/3.14.0t/bin/python3.14t"
    liar.write_text("")
    facts[liar] = standin.Interpreter(version=(3, 14, 0), releaselevel="final", free_threaded=False)  # GIL on
    job = {**env, "STANDIN_PYENV_ROOT": str(tmp_path / "pyenv"), "INPUT_PYTHON_VERSION": "3.14t"}
    with pytest.raises(standin.StandinError, match=r"Python 3\.14t was not found.*python3\.14t"):
        standin.setup_python(job, probe=facts.get, environment=lambda _venv, python: python)


def test_setup_python_fails_for_a_version_this_host_lacks(env: dict[str, str], tmp_path: Path) -> None:
    job = {**env, "STANDIN_PYENV_ROOT": str(tmp_path / "pyenv"), "INPUT_PYTHON_VERSION": "3.99"}
    with pytest.raises(standin.StandinError, match=r"Python 3\.99 was not found .*python3\.99 on PATH"):
        standin.setup_python(job, probe=lambda path: None)
    assert not Path(env["GITHUB_PATH"]).exists()


def test_setup_python_pre_releases_only_when_allowed(env: dict[str, str], tmp_path: Path) -> None:
    facts = fake_pyenv(tmp_path / "pyenv", {"3.15.0a2": ((3, 15, 0), False)})
    facts = {path: standin.Interpreter(version=(3, 15, 0), releaselevel="alpha", free_threaded=False) for path in facts}
    job = {**env, "STANDIN_PYENV_ROOT": str(tmp_path / "pyenv"), "INPUT_PYTHON_VERSION": "3.15"}
    with pytest.raises(standin.StandinError):
        standin.setup_python(job, probe=facts.get, environment=lambda _venv, python: python)
    assert standin.setup_python({**job, "INPUT_ALLOW_PRERELEASES": "true"}, probe=facts.get,
                               environment=lambda _venv, python: python)["python-version"] == "3.15.0"


# setup-uv


def test_setup_uv_without_a_version_fails_as_unpinned(env: dict[str, str]) -> None:
    with pytest.raises(standin.StandinError, match="version manifest at run time"):
        standin.setup_uv({**env, "INPUT_ENABLE_CACHE": "false"}, run=lambda argv: pytest.fail("nothing may run"))


def test_setup_uv_refuses_another_version(env: dict[str, str], tmp_path: Path) -> None:
    uv = write(tmp_path / "uvbin/uv", "")
    job = {**env, "STANDIN_UV": str(uv), "INPUT_VERSION": "0.13.9"}
    with pytest.raises(standin.StandinError, match=r"asked for uv 0\.13\.9, but .* is uv 0\.14\.0"):
        standin.setup_uv(job, run=lambda argv: "uv 0.14.0 (abc 2026-11-01)")
    assert standin.setup_uv(job, run=lambda argv: "uv 0.13.9 (abc 2026-10-01)")["uv-version"] == "0.13.9"
    linked = Path(Path(env["GITHUB_PATH"]).read_text().strip()) / "uv"
    assert linked.resolve() == uv


# cache


def test_cache_restores_exact_then_newest_prefix(env: dict[str, str]) -> None:
    state, home = Path(env["STANDIN_STATE"]), Path(env["HOME"])
    for key, text in (("ccache-x-1", "one"), ("ccache-x-2", "two")):
        write(home / ".cache/cc/f", text)
        standin.save_cache(state, key, ["~/.cache/cc"], env)
    (home / ".cache/cc/f").unlink()
    job = {**env, "INPUT_PATH": "~/.cache/cc", "INPUT_KEY": "ccache-x-3", "INPUT_RESTORE_KEYS": "ccache-x-"}
    assert standin.cache(job) == {"cache-hit": "false"}
    assert (home / ".cache/cc/f").read_text() == "two"
    assert standin.cache({**job, "INPUT_KEY": "ccache-x-1"}) == {"cache-hit": "true"}
    assert (home / ".cache/cc/f").read_text() == "one"
    assert standin.cache({**job, "INPUT_PATH": "~/.cache/other"}) == {}  # other paths: another version
    requests = [json.loads(line) for line in (state / "cache-requests.jsonl").read_text().splitlines()]
    assert [(r["key"], r["would_save"]) for r in requests] == [
        ("ccache-x-3", True), ("ccache-x-1", False), ("ccache-x-3", True)]


# attest


def test_attest_rejects_an_empty_checksums_file(env: dict[str, str]) -> None:
    write(Path(env["GITHUB_WORKSPACE"]) / "provenance/subjects-1.sha256", "\n")
    with pytest.raises(standin.StandinError, match="No subjects"):
        standin.attest({**env, "INPUT_SUBJECT_CHECKSUMS": "provenance/subjects-1.sha256"})
    assert not (Path(env["STANDIN_STATE"]) / "attestations.jsonl").exists()


def test_attest_records_every_subject_of_a_checksums_file(env: dict[str, str]) -> None:
    digests = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(3)]
    text = "".join(f"{d}  w{i}.whl\n" for i, d in enumerate(digests))
    write(Path(env["GITHUB_WORKSPACE"]) / "s.sha256", text)
    outputs = standin.attest({**env, "INPUT_SUBJECT_CHECKSUMS": "s.sha256"})
    record = json.loads((Path(env["STANDIN_STATE"]) / "attestations.jsonl").read_text())
    assert record["subjects"] == [{"name": f"w{i}.whl", "sha256": d} for i, d in enumerate(digests)]
    assert record["job"] == "job"
    assert record["signer"] == {"repository": "o/fw", "workflow": "release.yml", "ref": "refs/tags/v1.0.0"}
    found = provenance.read_bundles(Path(outputs["bundle-path"]).parent)
    assert [provenance.subjects(a) for a in found] == [[(f"w{i}.whl", d) for i, d in enumerate(digests)]]
    assert provenance.identity_of(found[0]) == provenance.Identity(repository="o/fw", workflow="release.yml",
                                                                   ref="refs/tags/v1.0.0")
    assert provenance.signature_verifies(found[0])


def test_attest_refuses_more_than_1024_subjects_and_a_path_matching_nothing(env: dict[str, str]) -> None:
    digest = "0" * 64
    write(Path(env["GITHUB_WORKSPACE"]) / "s.sha256", "".join(f"{digest}  w{i}.whl\n" for i in range(1025)))
    with pytest.raises(standin.StandinError, match="maximum number of subjects is 1024"):
        standin.attest({**env, "INPUT_SUBJECT_CHECKSUMS": "s.sha256"})
    with pytest.raises(standin.StandinError, match=r"Could not find subject at path dist/\*\.whl"):
        standin.attest({**env, "INPUT_SUBJECT_PATH": "dist/*.whl"})


def image_subject(env: dict[str, str]) -> dict[str, str]:
    return {**env, "INPUT_SUBJECT_NAME": "127.0.0.1:5000/builders/builders-cuda",
            "INPUT_SUBJECT_DIGEST": "sha256:" + "ab" * 32, "INPUT_PUSH_TO_REGISTRY": "true"}


def test_attest_push_to_registry_reads_credentials_where_the_action_does(env: dict[str, str], tmp_path: Path) -> None:
    """sigstore's OCI helper reads ~/.docker/config.json only: podman's default auth.json is not enough."""
    home = tmp_path / "home"
    podman_default = home / ".config/containers/auth.json"  # where a plain `podman login` may write
    auth = base64.b64encode(b"me:secret").decode()
    write(podman_default, json.dumps({"auths": {"127.0.0.1:5000": {"auth": auth}}}))
    with pytest.raises(standin.StandinError, match=r"No credential file found at .*/\.docker/config\.json"):
        standin.attest({**image_subject(env), "HOME": str(home)})
    write(home / ".docker/config.json", json.dumps({"auths": {"ghcr.io": {"auth": auth}}}))
    with pytest.raises(standin.StandinError, match=r"No credentials found for registry 127\.0\.0\.1:5000"):
        standin.attest({**image_subject(env), "HOME": str(home)})
    assert not (Path(env["STANDIN_STATE"]) / "attestations.jsonl").exists()
    write(home / ".docker/config.json", json.dumps({"auths": {"http://127.0.0.1:5000": {"auth": auth}}}))
    standin.attest({**image_subject(env), "HOME": str(home)})
    record = json.loads((Path(env["STANDIN_STATE"]) / "attestations.jsonl").read_text())
    assert record["push_to_registry"] is True
    assert record["registry_login"]["registry"] == "127.0.0.1:5000" and record["registry_login"]["username"] == "me"
    assert "secret" not in json.dumps(record)


# pypi-publish


def test_pypi_publish_refuses_an_empty_folder(env: dict[str, str]) -> None:
    (Path(env["GITHUB_WORKSPACE"]) / "release/dist").mkdir(parents=True)
    job = {**env, "INPUT_PACKAGES_DIR": "release/dist/", "STANDIN_PYPI_URL": "http://127.0.0.1:9/"}
    with pytest.raises(standin.StandinError, match="Refusing to upload: no distributions"):
        standin.pypi_publish(job)
    assert not (Path(env["STANDIN_STATE"]) / "published.jsonl").exists()


def test_pypi_publish_refuses_what_twine_cannot_upload(env: dict[str, str]) -> None:
    write(Path(env["GITHUB_WORKSPACE"]) / "dist/SHA256SUMS", "x")
    with pytest.raises(standin.StandinError, match="SHA256SUMS"):
        standin.pypi_publish({**env, "STANDIN_PYPI_URL": "http://127.0.0.1:9/"})


# checkout and the flags


def test_checkout_replaces_the_workspace_and_keeps_nothing_stale(env: dict[str, str], tmp_path: Path) -> None:
    write(tmp_path / "src/.git/HEAD", "ref: refs/heads/main\n")
    write(tmp_path / "src/pkg/a.py", "a")
    write(Path(env["GITHUB_WORKSPACE"]) / "stale.txt", "old")
    standin.checkout({**env, "STANDIN_SOURCE": str(tmp_path / "src")})
    assert tree(Path(env["GITHUB_WORKSPACE"])) == {".git/HEAD": "ref: refs/heads/main\n", "pkg/a.py": "a"}


@pytest.mark.parametrize("name", sorted(standin.COMMANDS))
def test_a_missing_state_folder_is_named(name: str) -> None:
    with pytest.raises(standin.StandinError, match="STANDIN_STATE is unset"):
        standin.run_standin(name, {"INPUT_PATH": "x"})


def test_the_flags_map_exactly_the_workflows_pins(tmp_path: Path) -> None:
    text = "".join(p.read_text() for p in (ROOT / ".github/workflows").glob("*.yml"))
    used = set(re.findall(r"uses:\s*([\w.-]+/[\w.-]+@[0-9a-f]{40})", text))
    flags = standin.standin_flags(tmp_path / "state", tmp_path / "src")
    mapped = {flags[i + 1].split("=")[0] for i, flag in enumerate(flags) if flag == "--local-repository"}
    assert mapped == used
    for flag in flags:
        if flag.startswith(tuple(used)):
            assert (Path(flag.split("=", 1)[1]) / "action.yml").is_file()


@pytest.mark.slow  # two venvs and their interpreters run: 26 s on a loaded 2-core host (nox -s tests runs it)
def test_each_jobs_python_environment_is_its_own_copy_of_one_template(tmp_path: Path, monkeypatch) -> None:
    """setup-python's venv per job is copied from a template made once (creating one costs seconds per job):
    each copy runs as itself (its own prefix), and its scripts name it, never the template it came from."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    interpreter = Path(sys.base_prefix) / "bin" / Path(sys.executable).name
    first = standin.own_environment(tmp_path / "job-1" / "venv", interpreter)
    second = standin.own_environment(tmp_path / "job-2" / "venv", interpreter)
    (template,) = (tmp_path / "home" / ".cache" / "standin-python").iterdir()
    for python in (first, second):
        venv = python.parent.parent
        prefix = subprocess.run([str(python), "-c", "import sys; print(sys.prefix)"], capture_output=True, text=True,
                                check=True, timeout=60).stdout.strip()
        assert Path(prefix) == venv
        scripts = [p for p in (venv / "bin").iterdir() if p.is_file() and not p.is_symlink()]
        assert scripts and not any(str(template).encode() in p.read_bytes() for p in scripts)
        assert any(str(venv).encode() in p.read_bytes() for p in scripts)
