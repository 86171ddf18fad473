"""The pure parts of publish, validate and promote-release: no server, no subprocess (the servers are in
tests/integration/test_objectstore.py and test_channels_release.py)."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pytest
from packaging.version import Version

from builders import cli
from builders.base.errors import ObjectStoreError, PreflightRefused, PublishRefused, SelectionError
from builders.channels import promotion, validate
from builders.channels import publication as publish
from builders.channels.objectstore import BucketUrl, content_type
from builders.cli import arguments, channel_args, main
from builders.index import remote
from builders.index.pages import IndexedFile
from builders.matrix.model import Matrix
from builders.matrix.release_channels import ChannelName, ReleaseChannel, nightly_date
from builders.matrix.targets import expand
from builders.wheel import smoke


def info(filename: str, project: str = "minifw", sha: str = "0" * 64) -> IndexedFile:
    from packaging.utils import parse_wheel_filename

    return IndexedFile(filename=filename, project=project, label="cpu", sha256=sha, size=1,
                       version=str(parse_wheel_filename(filename)[1]), requires_python=None, metadata=b"m")


def entries(*names: str, project: str = "minifw") -> dict[str, publish.SiteEntry]:
    return {f"whl/nightly/cpu/{project}/{n}": publish.SiteEntry(info=info(n, project)) for n in names}


@pytest.mark.parametrize(("url", "bucket", "prefix"), [("s3://b/", "b", ""), ("s3://b", "b", ""),
                                                      ("s3://b/site", "b", "site/"), ("s3://b/a/b/", "b", "a/b/")])
def test_bucket_urls(url: str, bucket: str, prefix: str) -> None:
    parsed = BucketUrl.parse(url)
    assert (parsed.bucket, parsed.prefix) == (bucket, prefix)
    assert parsed.key("whl/cpu/index.html") == prefix + "whl/cpu/index.html"


@pytest.mark.parametrize("url", ["https://b/", "s3:///x/", "s3://b/a//c/", "s3://b/../x/", "s3://b/?x=1"])
def test_bad_bucket_urls_are_refused(url: str) -> None:
    with pytest.raises(ObjectStoreError):
        BucketUrl.parse(url)


@pytest.mark.parametrize(("key", "kind"), [("a/x.whl", "application/zip"), ("a/index.html", "text/html"),
                                           ("a/index.json", "application/vnd.pypi.simple.v1+json"),
                                           ("a/mirror.json", "application/json"), ("a/SHA256SUMS", "text/plain"),
                                           ("a/x.whl.metadata", "text/plain")])
def test_content_types(key: str, kind: str) -> None:
    assert content_type(key) == kind


def test_nightly_prunes_the_project_past_keep_and_never_a_requirement() -> None:
    channel = ReleaseChannel(name=ChannelName.NIGHTLY, layout="whl/nightly/{label}/", keep=2)
    names = [f"minifw-2.16.0.dev2026120{d}+cpu-cp312-cp312-manylinux_2_28_x86_64.whl" for d in (1, 2, 3)]
    found = {**entries(*names), **entries("numpy-2.1.0-cp312-cp312-manylinux_2_28_x86_64.whl", project="numpy")}
    gone = publish._prune(found, channel, "minifw")
    assert gone == {f"whl/nightly/cpu/minifw/{names[0]}"}
    assert publish._prune(found, ReleaseChannel(name=ChannelName.TEST, layout="t/{label}/"), "minifw") == set()


def test_sha256sums_lists_every_wheel_relative_to_its_index() -> None:
    found = entries("minifw-2.15.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl")
    text = publish.sha256sums(found, "whl/nightly/cpu/").decode()
    assert text == f"{'0' * 64}  minifw/minifw-2.15.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl\n"


def test_a_refused_publication_raises_before_anything() -> None:
    channel = ReleaseChannel(name=ChannelName.RELEASE, layout="whl/{label}/")
    plan = publish.Publication(channel=channel, files=(), pages=(), pruned=(),
                               refused=(publish.Change(key="whl/cpu/x.whl", old_sha256="a" * 64, new_sha256="b" * 64),))
    with pytest.raises(PublishRefused, match="would change, nothing was written"):
        publish.refuse(plan)


def test_clean_env_hides_the_machines_pip_and_uv_configuration() -> None:
    env = validate.clean_env({"PATH": "/bin", "PIP_INDEX_URL": "https://x/", "UV_INDEX": "https://y/",
                              "PYTHONPATH": "/src", "HOME": "/root"})
    assert env["PIP_CONFIG_FILE"] == "/dev/null" and env["PATH"] == "/bin" and env["HOME"] == "/root"
    assert not {"PIP_INDEX_URL", "UV_INDEX", "PYTHONPATH"} & set(env)


def test_install_commands_use_the_index_alone() -> None:
    source = validate.Source(index_url="http://127.0.0.1:1/whl/nightly/cpu/", requirement="minifw==2.16.0.dev1",
                             dist_version="2.16.0.dev1+cpu", pre=True)
    _venv, pip = validate.pip_steps("py", "v", "v/bin/python", source, "r.json")
    _venv, uv = validate.uv_steps("uv", "py", "v", "v/bin/python", source, Path("req.txt"))
    assert pip[pip.index("--index-url") + 1] == source.index_url and "--pre" in pip and "--extra-index-url" not in pip
    assert uv[uv.index("--default-index") + 1] == source.index_url and "--no-config" in uv and "--index" not in uv
    assert uv[uv.index("--prerelease") + 1] == "allow" and uv[-1] == source.requirement


def test_a_target_is_published_only_by_a_wheel_of_its_project_version_and_tag(m: Matrix) -> None:
    """What ``validate`` reads off the index before it makes a venv (a target no file serves is not published)."""
    target, other = expand(m.on_channel("test"))[0][:2]
    source = validate.Source(index_url="http://127.0.0.1:1/", requirement="x", dist_version=str(target.version))
    assert validate.serves(target.wheel_name, m.project.name, source, target)
    assert not validate.serves(other.wheel_name, m.project.name, source, target)
    assert not validate.serves(target.wheel_name.replace(str(target.version), f"{target.version}1"),
                               m.project.name, source, target)
    assert not validate.serves("other-" + target.wheel_name.split("-", 1)[1], m.project.name, source, target)
    assert not validate.serves("not-a-wheel.tar.gz", m.project.name, source, target)


def test_with_a_manifest_uv_installs_the_project_pinned_to_its_sha256(tmp_path: Path) -> None:
    """uv keeps no report of what it installed: the manifest's sha256 goes into the requirement, which uv checks
    against the bytes it downloads (a mismatch is uv's "Hash mismatch" error)."""
    from builders.channels.manifest import LABELLED, ManifestFile

    file = ManifestFile(name="minifw-2.15.0+cpu-py3-none-any.whl", sha256="ab" * 32, size=1, target="t", form=LABELLED)
    source = validate.Source(index_url="http://127.0.0.1:1/whl/test/cpu/", requirement="minifw==2.15.0",
                             dist_version="2.15.0+cpu", expected=file)
    pinned = validate.pinned_requirements(source, tmp_path / "req.txt")
    assert pinned.read_text() == f"minifw==2.15.0 --hash=sha256:{'ab' * 32}\n"
    _venv, uv = validate.uv_steps("uv", "py", "v", "v/bin/python", source, pinned)
    assert uv[-2:] == ["-r", str(pinned)] and "--verify-hashes" in uv


def test_the_installed_file_comes_from_pips_report(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"install": [
        {"metadata": {"name": "numpy"}, "download_info": {"url": "http://x/numpy-2.whl", "archive_info": {}}},
        {"metadata": {"name": "MiniFW"}, "download_info": {
            "url": "http://x/whl/cpu/minifw/minifw-2.15.0%2Bcpu-cp312-cp312-manylinux_2_28_x86_64.whl#sha256=ab",
            "archive_info": {"hashes": {"sha256": "ab" * 32}}}}]}))
    assert validate.installed_file(report, "minifw") == ("minifw-2.15.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl",
                                                         "ab" * 32)


def verdict(tid: str, status: str, reason: str = "", filename: str = "", sha: str = "") -> dict:
    return {"target": tid, "status": status, "reason": reason, "filename": filename, "sha256": sha}


def test_a_preflight_with_reasons_refuses() -> None:
    plan = promotion.Promotion(version="2.15.0", copies=(), unchanged=(), pypi=(), refusals=("why",))
    with pytest.raises(PreflightRefused, match="nothing was copied or uploaded"):
        promotion.preflight(plan)


def test_server_file_names_are_matched_by_version() -> None:
    assert promotion._version_of("minifw-2.15.0-cp312-cp312-manylinux_2_28_x86_64.whl") == "2.15.0"
    assert promotion._version_of("minifw-2.15.0.tar.gz") == "2.15.0"
    assert promotion._version_of("README") is None


def test_nightly_dates_from_dev_versions() -> None:
    assert nightly_date(Version("2.16.0.dev20261201")) == datetime.date(2026, 12, 1)
    assert nightly_date(Version("2.16.0.dev3")) is None and nightly_date(Version("2.16.0")) is None


def build_options(*argv: str) -> arguments.Options:
    """``build``'s options as the command line gives them (the options table's rows)."""
    return arguments.parse(cli.parser(), ["build", *argv], {})


def test_build_for_a_channel_takes_its_version(m: Matrix) -> None:
    given = build_options("--channel", "nightly", "--commit-date", "2026-12-01")
    assert given.commit_date == datetime.date(2026, 12, 1)
    nightly = channel_args.on_channel(m, given.channel, given.commit_date)
    assert nightly.project.version == m.channels.channel("nightly").version(m.project.version, given.commit_date)
    test = build_options("--channel", "test")
    assert channel_args.on_channel(m, test.channel, test.commit_date).project.version == m.project.version
    plain = build_options()
    assert (plain.channel, plain.commit_date) == (None, None)
    assert channel_args.on_channel(m, plain.channel, plain.commit_date) is m
    with pytest.raises(SelectionError, match="--commit-date"):
        channel_args.on_channel(m, "nightly", None)


def test_smoke_of_a_nightly_checks_the_nightly_version(m: Matrix) -> None:
    """The shard's smoke job of a nightly passes --channel nightly --commit-date: the version the project's code
    must report is the nightly's (2.16.0.dev20261201+cpu), not the matrix's (the act nightly failed on this)."""
    given = arguments.parse(cli.parser(), ["smoke", "x.whl", "--target", "t", "--channel", "nightly",
                                           "--commit-date", "2026-12-01"], {})
    nightly = channel_args.on_channel(m, given.channel, given.commit_date)
    targets, _ = expand(nightly)
    expected = m.channels.channel("nightly").version(m.project.version, datetime.date(2026, 12, 1))
    assert {str(smoke.facts(t)["build_version"]).split("+")[0] for t in targets} == {str(expected)}


def test_the_commands_are_listed(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert all(name in out for name in ("publish", "validate", "promote-release"))


def test_simple_pages_give_each_file_its_declared_sha256() -> None:
    page = ('<a href="../../packages/minifw-2.15.0-cp312-cp312-manylinux_2_28_x86_64.whl#sha256=' + "ab" * 32 + '">x</a>'
            '<a href="minifw-2.14.0.tar.gz">y</a><a href="minifw-2.15.0%2Bcpu-cp312-cp312-linux_x86_64.whl">z</a>')
    links = {f.filename: f.sha256 or "" for f in remote.files_from_html(page, "https://i.invalid/simple/minifw/")}
    assert links["minifw-2.15.0-cp312-cp312-manylinux_2_28_x86_64.whl"] == "ab" * 32
    assert links["minifw-2.14.0.tar.gz"] == "" and "minifw-2.15.0+cpu-cp312-cp312-linux_x86_64.whl" in links


def test_yank_undo_needs_no_reason_and_a_yank_does(capsys: pytest.CaptureFixture[str]) -> None:
    """issue 43: ``yank --undo`` was refused by argparse without --reason; a yank without one is refused (exit 5)
    before the matrix or the bucket is read, naming --undo."""
    argv = ["yank", "2.15.0", "--channel", "release", "--bucket", "s3://downloads/"]
    undo = arguments.parse(cli.parser("yank"), [*argv, "--undo"], {})
    assert undo.undo and undo.reason is None
    assert main(argv) == SelectionError.exit_code
    assert "--reason" in capsys.readouterr().err
