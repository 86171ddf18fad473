"""The release lifecycle's channels (nightly, test, release) in the matrix: model, rules, versions, install commands."""

from __future__ import annotations

import datetime
import json

import pytest
from packaging.version import Version

from builders.families import loader as matrix
from builders.matrix.model import Matrix
from builders.matrix.release_channels import ChannelName
from builders.matrix.targets import expand
from builders.report import compatibility as report
from tests import expected
from tests.helpers import edit, only_problem, problems_of


def channel_raw(text: str, name: str) -> dict:
    return expected.raw(text)["channels"][name]


def test_every_declared_channel_is_in_the_model(m: Matrix, shipped_text: str) -> None:
    raw = expected.raw(shipped_text)["channels"]
    declared = {"release"} | {n for n in ("test", "nightly") if n in raw}
    assert {c.name.value for c in m.channels.lifecycle} == declared
    assert m.channels.lifecycle[0].name is ChannelName.RELEASE
    assert m.channels.channel("release").layout == raw["index"]["layout"] == m.channels.index_layout
    for name in declared - {"release"}:
        assert m.channels.channel(name).layout == raw[name]["layout"]


def test_index_paths_follow_each_layout(m: Matrix, shipped_text: str) -> None:
    raw = expected.raw(shipped_text)["channels"]
    label = m.variants[0].label
    for channel in m.channels.lifecycle:
        layout = raw["index" if channel.name is ChannelName.RELEASE else channel.name.value]["layout"]
        assert m.channels.index_url(channel, label) == raw["index"]["base_url"] + layout.replace("{label}", label)


def test_targets_name_the_index_of_the_channel_they_are_built_for(m: Matrix, shipped_text: str) -> None:
    """``plan --channel nightly`` shows whl/nightly/<label>/, not the release's whl/<label>/ (and never PyPI)."""
    raw = expected.raw(shipped_text)["channels"]
    for name in {"test", "nightly"} & raw.keys():
        targets, _ = expand(m.on_channel(name, datetime.date(2026, 12, 1)))
        assert targets
        for t in targets:
            assert t.channels == (raw[name]["layout"].replace("{label}", t.variant.label),)
    released, _ = expand(m)
    for t in released:
        folder = raw["index"]["layout"].replace("{label}", t.variant.label)
        assert t.channels == (("pypi", folder) if raw["pypi"].get(t.platform.name) == t.variant.label else (folder,))


def with_base(text: str, base: str) -> str:
    keep = channel_raw(text, "nightly")["keep"]
    return edit(text, f"    keep: {keep}\n", f"    keep: {keep}\n    base_version: '{base}'\n")


def test_nightly_version_is_a_dev_release_of_the_next_minor_by_default(m: Matrix) -> None:
    release = m.project.version
    version = m.channels.channel("nightly").version(release, datetime.date(2026, 12, 1))
    assert version == Version(f"{release.major}.{release.minor + 1}.0.dev20261201")


def test_nightly_version_is_a_dev_release_of_the_declared_base(shipped_text: str) -> None:
    release = Version(expected.raw(shipped_text)["project"]["version"])
    base = f"{release.major + 1}.0.0"
    m = matrix.loads(with_base(shipped_text, base))
    day = datetime.date(2026, 12, 1)
    version = m.channels.channel("nightly").version(m.project.version, day)
    assert version == Version(f"{base}.dev20261201")
    assert version.is_devrelease and version.is_prerelease
    assert Version(str(m.project.version)) < version < Version(base)


def test_nightly_without_a_date_is_refused(m: Matrix) -> None:
    with pytest.raises(ValueError, match="commit date"):
        m.channels.channel("nightly").version(m.project.version)


@pytest.mark.parametrize("name", ["test", "release"])
def test_test_and_release_carry_the_matrix_version(m: Matrix, name: str) -> None:
    assert m.channels.channel(name).version(m.project.version, datetime.date(2026, 12, 1)) == m.project.version


def test_a_nightly_matrix_labels_its_wheels_with_the_dev_version(m: Matrix) -> None:
    nightly = m.on_channel("nightly", datetime.date(2026, 12, 1))
    target = expand(nightly)[0][0]
    dev = m.channels.channel("nightly").version(m.project.version, datetime.date(2026, 12, 1))
    assert target.version == Version(f"{dev}+{target.variant.label}")
    assert target.wheel_name.startswith(f"{m.project.name}-{dev}+{target.variant.label}-")


def test_retention_and_replacement(m: Matrix, shipped_text: str) -> None:
    assert m.channels.channel("nightly").keep == channel_raw(shipped_text, "nightly")["keep"]
    assert m.channels.channel("release").keep is None
    assert not m.channels.channel("release").replaces
    assert m.channels.channel("test").replaces and not m.channels.channel("nightly").replaces


def test_a_matrix_without_pre_release_channels_loads(shipped_text: str) -> None:
    raw = expected.raw(shipped_text)["channels"]
    text = shipped_text
    for name in ("test", "nightly"):
        block = f"  {name}:\n    layout: \"{raw[name]['layout']}\"\n"
        text = edit(text, block, "")
    text = edit(text, f"    keep: {raw['nightly']['keep']}\n", "")
    loaded = matrix.loads(text)
    assert [c.name for c in loaded.channels.lifecycle] == [ChannelName.RELEASE]
    with pytest.raises(KeyError, match="no nightly channel"):
        loaded.channels.channel("nightly")


@pytest.mark.parametrize(("base", "phrase"), [("{release}", "not after project.version"), ("{major}.0", "not after"),
                                              ("{next}rc1", "plain release"), ("{next}+cu1", "plain release"),
                                              ("two", "not a PEP 440 version")])
def test_base_version_rule(shipped_text: str, base: str, phrase: str) -> None:
    release = Version(expected.raw(shipped_text)["project"]["version"])
    base = base.format(release=release, major=release.major, next=f"{release.major}.{release.minor + 1}.0")
    problem = only_problem(with_base(shipped_text, base), phrase)
    assert problem.location.key == "channels.nightly.base_version"
    assert problem.location.line > 0 and problem.location.column > 0


@pytest.mark.parametrize("name", ["test", "nightly"])
def test_pre_release_layouts_follow_the_layout_rule(shipped_text: str, name: str) -> None:
    old = channel_raw(shipped_text, name)["layout"]
    problem = only_problem(edit(shipped_text, f'layout: "{old}"', "layout: '../{label}/'"), "'..' segment")
    assert problem.location.key == f"channels.{name}.layout"


def test_channels_that_share_a_folder_are_refused(shipped_text: str) -> None:
    release = expected.raw(shipped_text)["channels"]["index"]["layout"]
    old = channel_raw(shipped_text, "test")["layout"]
    problem = only_problem(edit(shipped_text, f'layout: "{old}"', f'layout: "{release}"'), "overlap")
    assert "release" in problem.message and "test" in problem.message


def test_a_label_that_names_another_channels_folder_is_refused(shipped_text: str) -> None:
    """whl/{label}/ with a variant labelled like the test channel's folder would put the release index inside it."""
    release = expected.raw(shipped_text)["channels"]["index"]["layout"]
    old = channel_raw(shipped_text, "test")["layout"]
    label = expected.labels(expected.raw(shipped_text))[0]
    nested = release.replace("{label}", label) + "{label}/"
    problems = problems_of(edit(shipped_text, f'layout: "{old}"', f'layout: "{nested}"'))
    assert any("overlap" in str(p) for p in problems), problems


@pytest.mark.parametrize(("snippet", "phrase"), [("keep: 0", "minimum"), ("keep: many", "integer")])
def test_keep_is_a_positive_count(shipped_text: str, snippet: str, phrase: str) -> None:
    keep = channel_raw(shipped_text, "nightly")["keep"]
    problem = only_problem(edit(shipped_text, f"keep: {keep}", snippet), phrase)
    assert problem.location.key == "channels.nightly.keep"


def test_install_commands_per_channel(m: Matrix) -> None:
    commands = report.channel_installs(m)
    assert set(commands) == {c.name.value for c in m.channels.lifecycle}
    name, version = m.project.name, m.project.version.public
    for v in m.variants:
        nightly, test = commands["nightly"][v.label], commands["test"][v.label]
        assert nightly["pip"] == (f"pip install --pre {name} --index-url "
                                  f"{m.channels.index_url(m.channels.channel('nightly'), v.label)}")
        assert "--prerelease allow" in nightly["uv"] and nightly["uv"].startswith("uv pip install")
        assert test["pip"] == f"pip install {name}=={version} --index-url " \
                              f"{m.channels.index_url(m.channels.channel('test'), v.label)}"
        assert "--pre" not in test["pip"]


def test_the_report_shows_each_channels_commands(m: Matrix) -> None:
    md = report.to_markdown(m, {})
    page = report.to_html(m, {})
    data = json.loads(json.dumps(report.to_json(m, {})))
    for name in ("test", "nightly"):
        for label, commands in report.channel_installs(m)[name].items():
            assert commands["pip"] in md, label
            assert commands["pip"] in page.replace("&#34;", '"')
            assert data["channels"][name][label] == commands
