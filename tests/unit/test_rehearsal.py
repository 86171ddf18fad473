"""``plan --rehearse``: a small release's minutes, bytes and dollars against figures worked out by hand.

The workflow, profile and prices are tests/rehearsal_fixtures.py's round numbers; the targets are the
matrix's first PyPI (variant, platform), so nothing here names a target. Each expected figure is written
out as the arithmetic of the jobs it sums."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from builders import cli
from builders.families import loader
from builders.index.audit import read_project
from builders.index.remote import Client
from builders.matrix.targets import Target, expand
from builders.report import layouts, prices, rehearsal, rehearsal_report, scale_profile
from tests import rehearsal_fixtures as fx


@pytest.fixture(scope="module")
def targets(shipped_text: str) -> list[Target]:
    return list(expand(loader.loads(shipped_text, "matrix.yaml"))[0])


def rehearse(tmp_path: Path, pair: list[Target], **change: float) -> rehearsal.Rehearsal:
    return rehearsal.rehearse(pair, fx.write(tmp_path, fx.release_workflow()), fx.profile(**change),
                              fx.price_table(*{t.runner for t in pair}))


def test_a_nightly_of_two_targets_by_hand(tmp_path: Path, targets: list[Target]) -> None:
    pair = fx.pypi_pair(targets)[:2]
    r = rehearse(tmp_path, pair)
    pull = 6000 / 100 / 60  # the image, at 100 MB/s
    build_up = (2 * 100 + 100 + 100) / 100 / 60  # build-<id> (both wheels) and wheel-<id> twice
    build_cold = 2 + 60 + 2 * 10 + pull + build_up
    build_warm = 2 + 30 + 2 * 10 * (30 / 60) + pull + build_up
    smoke = 2 + 5 + (100 + 50) / 100 / 60 + 100 / 100 / 60  # install wheel and runtime; download the wheel
    publish = 2 + 3 + (200 + 200) / 100 / 60  # download build-*, send it to the bucket
    nightly = r.totals["nightly"]
    assert nightly.minutes_cold == pytest.approx(build_cold + 2 * smoke + publish)
    assert nightly.minutes_warm == pytest.approx(build_warm + 2 * smoke + publish)
    assert nightly.wall_minutes == pytest.approx(build_cold + smoke + publish)
    assert r.ends["nightly"] == pytest.approx({"release.yml: build": build_cold, "release.yml: smoke": build_cold + smoke,
                                               "release.yml: nightly": build_cold + smoke + publish})
    assert nightly.dollars_cold == pytest.approx((build_cold + 2 * smoke + publish) * 0.01)
    assert (nightly.down_gb, nightly.up_gb, nightly.bucket_gb) == pytest.approx((0.4, 0.4, 0.2))
    assert nightly.artifact_gb_days == pytest.approx(0.4 * 5)
    by_job = {i.job.name: i for i in r.instances if i.run == "nightly"}
    assert by_job["build"].disk_mb == pytest.approx(100 + 6000 + 1000 + 200)  # checkout, image, tree, wheels
    assert by_job["smoke"].disk_mb == pytest.approx(100 + 100 + 150)  # checkout, download, install
    assert by_job["nightly"].disk_mb == pytest.approx(100 + 200)


def test_a_candidate_starts_no_nightly_job_and_the_month_is_the_schedule(tmp_path: Path, targets: list[Target]) -> None:
    pair = fx.pypi_pair(targets)[:2]
    r = rehearse(tmp_path, pair)
    assert {i.job.name for i in r.instances if i.run == "candidate"} == {"build", "smoke"}
    month = r.month()
    assert month["runs"] == 30  # "0 1 * * *": once a day
    assert month["dollars_cold"] == pytest.approx(30 * r.totals["nightly"].dollars_cold)
    assert month["bucket_gb"] == pytest.approx(0.2 * 14)  # the channel keeps 14 nightlies
    assert month["egress_gb"] == pytest.approx(10_000 * 0.1)  # 10,000 downloads of a 100 MB wheel
    assert month["egress_dollars"] == pytest.approx(1000 * 0.1)


def test_a_python_more_adds_its_wheel_and_its_smoke_job(tmp_path: Path, shipped_text: str) -> None:
    """Adding a Python to a copy of the matrix: per nightly, one more wheel in the build job and one smoke job."""
    listed = [str(p) for p in loader.loads(shipped_text, "matrix.yaml").pythons]
    new = next(f"3.{n}" for n in range(11, 99) if f"3.{n}" not in listed and int(listed[-1].rstrip("t")[2:]) < n)
    grown = shipped_text.replace(f'  - "{listed[-1]}"\n', f'  - "{listed[-1]}"\n  - "{new}"\n', 1)
    before = fx.pypi_pair(list(expand(loader.loads(shipped_text, "matrix.yaml"))[0]))
    after = fx.pypi_pair(list(expand(loader.loads(grown, "matrix.yaml"))[0]))
    assert len(after) == len(before) + 1
    a, b = rehearse(tmp_path / "a", after), rehearse(tmp_path / "b", before)
    smoke = 2 + 5 + 150 / 100 / 60  # its wheel-<id> is not uploaded (two positions): it downloads nothing
    added = 10 + 100 / 100 / 60 + smoke + (100 + 100) / 100 / 60  # a Python, its upload; smoke; the nightly's bytes
    assert a.totals["nightly"].minutes_cold - b.totals["nightly"].minutes_cold == pytest.approx(added)
    assert a.totals["nightly"].dollars_cold - b.totals["nightly"].dollars_cold == pytest.approx(added * 0.01)
    table = rehearsal_report.delta(b, a)
    assert f"+{added:,.0f}" in table and f"+{added * 0.01:,.2f}" in table


def test_layouts_side_by_side_by_hand(targets: list[Target]) -> None:
    group = fx.pypi_pair(targets)[:3]
    found = {x.name: x for x in layouts.compare(group, fx.profile(), fx.price_table(group[0].runner))}
    setup = 2 + 6000 / 100 / 60  # set-up and the image pull, every job
    assert found[layouts.PER_TARGET].minutes == pytest.approx(3 * (setup + 60 + 10))
    assert found[layouts.FAN_OUT].minutes == pytest.approx(setup + 60 + 3 * (setup + 10))
    assert found[layouts.LOOPED].minutes == pytest.approx(setup + 60 + 3 * 10)
    assert found[layouts.LOOPED].wall_minutes == pytest.approx(setup + 60 + 3 * 10)
    assert found[layouts.PER_TARGET].wall_minutes == pytest.approx(setup + 60 + 10)
    assert found[layouts.LOOPED].dollars == pytest.approx((setup + 60 + 30) * 0.01)
    assert found[layouts.LOOPED].used and not found[layouts.PER_TARGET].used


def test_the_shipped_profile_and_prices_say_where_they_come_from(targets: list[Target]) -> None:
    shipped = scale_profile.load(scale_profile.SHIPPED)
    assert shipped.date and "torch 2.15.0" in shipped.source
    assert all(shipped.of(t).wheel_mb > 100 for t in targets)  # every target matched, framework-sized
    table = prices.shipped()
    assert table.date == "2026-01-01" and table.runner("ubuntu-24.04").per_minute == 0.006
    assert not table.runner(["self-hosted", "linux", "gpu-x"]).priced


def test_a_runs_results_replace_the_profiles_sizes_and_times(targets: list[Target]) -> None:
    pair = fx.pypi_pair(targets)[:2]
    records = [{"id": pair[0].id, "status": "built", "size": 250_000_000, "core": {"status": "built", "seconds": 1200.0},
                "durations": {"build": 1500.0}}]
    found = scale_profile.from_results(records, pair, fx.profile(), "results.json")
    assert found.of(pair[0]).wheel_mb == 250 and found.of(pair[0]).core_cold_min == 20
    assert found.of(pair[0]).per_python_min == pytest.approx(300 / 60)
    assert found.of(pair[1]).wheel_mb == 100  # no size of its own: the profile's; its variant's times
    assert found.of(pair[1]).core_cold_min == 20


def test_the_matrix_declared_weights_are_a_profile(shipped_text: str, targets: list[Target]) -> None:
    m = loader.loads(shipped_text, "matrix.yaml")
    declared = scale_profile.from_matrix(m)
    assert declared.of(targets[0]).wheel_mb == m.project.wheel_size_budget_mb


class _Index(BaseHTTPRequestHandler):
    page = b""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/vnd.pypi.simple.v1+json")
        self.end_headers()
        self.wfile.write(self.page)

    def log_message(self, *args: object) -> None:
        pass


def test_a_published_index_sizes_the_wheels(targets: list[Target]) -> None:
    """The audit's reader, over a loopback server: each target takes the size its tags' file is served at."""
    pair = fx.pypi_pair(targets)[:2]
    files = [{"filename": t.wheel_name, "url": t.wheel_name, "hashes": {}, "size": 123_000_000 * (i + 1)}
             for i, t in enumerate(pair)]
    _Index.page = json.dumps({"meta": {"api-version": "1.1"}, "name": "p", "files": files}).encode()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Index)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        listed = read_project(Client(), f"http://127.0.0.1:{server.server_port}/simple/", "p") or []
    finally:
        server.shutdown()
        server.server_close()
    sizes = {f.filename: f.size for f in listed if f.size is not None}
    found = scale_profile.from_index(sizes, pair, fx.profile(), "the test index")
    assert [found.of(t).wheel_mb for t in pair] == [123, 246]


def with_cuda(text: str, version: str = "13.9") -> str:
    """``text`` with one more CUDA version, in the shipped matrix's shape."""
    entry = (f'      "{version}":\n        label: cu{version.replace(".", "")}\n        arch_list:\n'
             '          linux-x86_64: "8.0;9.0;10.0;12.0+PTX"\n          linux-aarch64: "8.0;9.0;10.0;12.0+PTX"\n'
             f'        toolkit:\n          requirements: ["cuda-toolkit[nvcc,cudart,cccl,crt,nvvm]=={version}.0"]\n'
             f'        runtime_requirements:\n          - \'cuda-toolkit[cudart]=={version}.0; platform_system == "Linux"\'\n')
    return text.replace("\n    versions:\n", "\n    versions:\n" + entry, 1)


def added_row(out: str, run: str) -> list[float]:
    line = next(x for x in out.splitlines() if x.startswith(run + " "))
    return [float(v.replace(",", "").lstrip("+")) for v in line[len(run):].split()]


def test_plan_and_report_show_what_a_cuda_version_adds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A CUDA version more in a copy of the matrix: ``plan --rehearse --compare`` and ``report --cost --compare``
    show the minutes and dollars it adds per nightly, per release and per month (the limits: exit 47)."""
    root = Path(__file__).resolve().parents[2]
    grown = tmp_path / "matrix.yaml"
    grown.write_text(with_cuda((root / "matrix.yaml").read_text()))
    # the grown matrix is the one rehearsed, the shipped one the earlier: what the CUDA version adds
    argv = ["--matrix", str(grown), "--compare", str(root / "matrix.yaml")]
    (tmp_path / ".github").symlink_to(root / ".github")
    assert cli.main(["plan", *argv, "--rehearse", scale_profile.SHIPPED]) == 47
    out = capsys.readouterr().out
    for run in ("nightly", "candidate", "release"):
        minutes, _, _, dollars, _ = added_row(out.split("adds against")[1], run)
        assert minutes > 0 and dollars > 0, (run, out)
    assert cli.main(["report", *argv, "--cost", scale_profile.SHIPPED, "--output", str(tmp_path / "r")]) == 0
    page = (tmp_path / "r" / "cost.md").read_text()
    assert "| a release (candidate, final tag, promotion) |" in page and "## What the matrix adds against" in page
    assert added_row(page.split("```")[1].strip().split("\n", 2)[2], "month of nightlies")[0] > 0
