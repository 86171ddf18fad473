"""``validate`` reads the channel's index before it makes a venv, and ``--index-url`` means what it means to pip.

Over whatever the channel holds (no ``--target``, ``--select`` or ``--manifest``), a target its index does not list
is *not published*, never a venv and a "failed: No matching distribution"; what the index lists is validated with
a line of progress per target and per installer. ``--index-url`` is one simple index (pip's meaning), ``--site-url``
the channels' site root under which each variant's index is the channel's layout.
"""

from __future__ import annotations

import http.server
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from builders.channels import validate
from builders.families import loader as matrix
from builders.index.staging import serving_folder
from builders.matrix.model import Matrix
from builders.matrix.targets import Target, expand
from builders.pipeline.host import detect
from tests.helpers import builders

ROOT = Path(__file__).resolve().parents[2]
MATRIX = ROOT / "matrix.yaml"


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        """pytest shows the command's output, not the server's."""


@pytest.fixture(scope="module")
def test_channel() -> Matrix:
    return matrix.load(MATRIX, builds=False).on_channel("test")


def runnable_here(m: Matrix, target: Target) -> bool:
    host = detect(m.pythons, dict(os.environ), engines=False)
    return validate.not_runnable(target, host, os.environ, require_device=False) is None


def one_label(m: Matrix) -> tuple[str, list[Target]]:
    """The variant with a target this host runs and one it cannot (another platform), and its targets."""
    targets, _ = expand(m)
    for variant in m.variants:
        mine = [t for t in targets if t.variant.label == variant.label]
        if any(runnable_here(m, t) for t in mine) and not all(runnable_here(m, t) for t in mine):
            return variant.label, mine
    pytest.skip("no variant has both a target this host runs and one it cannot")


@pytest.fixture()
def site(tmp_path: Path, test_channel: Matrix) -> Iterator[tuple[str, list[Target], Target, Target]]:
    """The test channel's site on loopback, listing two wheels of one variant: one for this host (an empty file, so
    the installers fail fast) and one for another platform; every other target of the variant is unlisted."""
    label, targets = one_label(test_channel)
    here = next(t for t in targets if runnable_here(test_channel, t))
    foreign = next(t for t in targets if not runnable_here(test_channel, t))
    project = tmp_path / test_channel.channels.channel("test").index_path(label) / test_channel.project.canonical_name
    project.mkdir(parents=True)
    for t in (here, foreign):
        (project / t.wheel_name).write_bytes(b"")
    with serving_folder(tmp_path, _Quiet) as url:
        yield url, targets, here, foreign


def others(m: Matrix, label: str) -> list[str]:
    return [a for v in m.variants if v.label != label for a in ("--skip", f"{v.label}-*")]


def test_without_a_selection_only_what_the_index_lists_is_validated(site, test_channel: Matrix, tmp_path: Path) -> None:
    url, targets, here, foreign = site
    record = tmp_path / "v.json"
    proc = builders("validate", "--matrix", str(MATRIX), "--channel", "test", "--site-url", url,
                    *others(test_channel, here.variant.label), "--record", str(record), cwd=ROOT, timeout=600)
    assert proc.returncode == 42, proc.stdout + proc.stderr  # the listed file is empty: it fails
    data = json.loads(record.read_text())
    status = {t["target"]: t["status"] for t in data["targets"]}
    unlisted = {t.id for t in targets} - {here.id, foreign.id}
    assert status == {here.id: "failed", foreign.id: "not-runnable", **dict.fromkeys(unlisted, "not-published")}
    assert (data["failed"], data["not-runnable"], data["not-published"]) == (1, 1, len(unlisted))
    assert "No matching distribution" not in proc.stdout + proc.stderr
    position = sorted([here.id, foreign.id], key=[t.id for t in targets].index).index(here.id) + 1
    for installer in validate.INSTALLERS:  # progress as each installer's step starts, and its verdict
        for step in ("a fresh venv", "installing minifw"):
            assert f"[{position}/2] {here.id}: {installer}: {step}" in proc.stderr, proc.stderr
        assert f"[{position}/2] {here.id}: {installer}: failed (" in proc.stderr, proc.stderr


def test_index_url_is_one_simple_index_and_site_url_the_channels_site(test_channel: Matrix, tmp_path: Path) -> None:
    targets, _ = expand(test_channel)
    foreign = next(t for t in targets if not runnable_here(test_channel, t))  # no venv, no server needed
    layout = test_channel.channels.channel("test").index_path(foreign.variant.label)
    for option, url, expected in (("--index-url", "http://127.0.0.1:9/simple/", "http://127.0.0.1:9/simple/"),
                                  ("--site-url", "http://127.0.0.1:9/site/", "http://127.0.0.1:9/site/" + layout)):
        record = tmp_path / f"{option}.json"
        proc = builders("validate", "--matrix", str(MATRIX), "--channel", "test", option, url, "--target", foreign.id,
                        "--record", str(record), cwd=ROOT, timeout=300)
        assert proc.returncode == 42, proc.stdout + proc.stderr  # nothing passed: not runnable here
        (entry,) = json.loads(record.read_text())["targets"]
        assert (entry["status"], entry["index_url"]) == ("not-runnable", expected)


def test_site_url_with_index_url_is_refused(tmp_path: Path) -> None:
    proc = builders("validate", "--matrix", str(MATRIX), "--site-url", "http://127.0.0.1:9/", "--index-url",
                    "http://127.0.0.1:9/simple/", "--record", str(tmp_path / "v.json"), cwd=ROOT, timeout=300)
    assert proc.returncode == 5 and "--site-url" in proc.stderr, proc.stdout + proc.stderr
