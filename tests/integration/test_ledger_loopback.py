"""A channel's ledger on the loopback servers: two writers at once lose no entry (moto's conditional writes,
rclone's lease), a publish killed at any write reruns to the uninterrupted end state with pip installing the old
or the new state at every kill point, a swapped object is written again, a malformed page is exit 40.

The kill is the command stopping dead at its Nth write (a ``BaseException`` no handler of builders catches, raised
from inside the object store's write calls): what a SIGKILL between two requests leaves in the bucket.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from builders.base.errors import ObjectStoreError
from builders.channels import ledger as ledger_mod
from builders.channels.objectstore import Bucket, open_bucket
from builders.cli import main
from builders.families import loader as matrix
from builders.matrix.model import Matrix
from tests import helpers
from tests.integration.test_objectstore import labelled_wheel, matrix_file
from tests.objectstore import MotoStore, ObjectStore, moto_store, object_store, static_http

pytestmark = pytest.mark.slow
TRIES = 3  # concurrent pairs per server
STORES = ("moto", "rclone")


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ObjectStore | MotoStore]:
    opener = moto_store if request.param == "moto" else object_store
    with opener(tmp_path / request.param) as server:
        for name, value in server.env.items():
            monkeypatch.setenv(name, value)
        server.make_bucket("downloads")
        yield server


def nightly_house(tmp_path: Path, m: Matrix, day: str) -> Path:
    nightly = m.channels.channel("nightly")
    date = datetime.datetime.strptime(day, "%Y%m%d").date()
    house = tmp_path / f"house-{day}"
    labelled_wheel(house, m, version=str(nightly.version(m.project.version, date)), label=m.variants[0].label)
    return house


def publish_argv(matrix_path: Path, house: Path) -> list[str]:
    return ["publish", str(house), "--matrix", str(matrix_path), "--channel", "nightly", "--bucket", "s3://downloads/",
            "--no-mirror"]


def served(bucket: Bucket, folder: str, project: str) -> dict[str, str]:
    """file name -> sha256 as the project page lists it, each link checked against the stored bytes."""
    page = json.loads(bucket.read(f"{folder}{project}/index.json"))
    out = {}
    for item in page["files"]:
        key = f"{folder}{project}/{item['filename']}"
        assert hashlib.sha256(bucket.read(key)).hexdigest() == item["hashes"]["sha256"], key
        assert hashlib.sha256(bucket.read(f"{key}.metadata")).hexdigest() == item["core-metadata"]["sha256"], key
        out[item["filename"]] = item["hashes"]["sha256"]
    return out


def test_two_nightlies_at_once_lose_no_entry(tmp_path: Path, store: ObjectStore | MotoStore, shipped_text: str) -> None:
    """Two days' nightlies published at the same moment, TRIES times: every day ends in the ledger and on the page,
    on moto (conditional writes) and on rclone (the lease)."""
    m = matrix.loads(shipped_text)
    path = matrix_file(tmp_path, shipped_text)
    folder, project = m.channels.channel("nightly").index_path(m.variants[0].label), m.project.name
    bucket = open_bucket("s3://downloads/", store.env)
    assert ledger_mod.probe(bucket, "nightly") == ("lease" if isinstance(store, ObjectStore) else "conditional")
    env = {**os.environ, **store.env, "PYTHONPATH": str(Path.cwd())}
    days = []
    for attempt in range(TRIES):
        pair = [f"202612{2 * attempt + 1:02d}", f"202612{2 * attempt + 2:02d}"]
        procs = [subprocess.Popen([sys.executable, "-m", "builders", *publish_argv(path, nightly_house(tmp_path, m, d))],
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for d in pair]
        outs = [p.communicate(timeout=300)[0] for p in procs]
        assert [p.returncode for p in procs] == [0, 0], outs
        days += pair
        listed = served(bucket, folder, project)
        assert sorted(d for d in days if any(f"dev{d}" in n for n in listed)) == days, (listed, outs)
    state = ledger_mod.Ledger(bucket, "nightly", mode="lease", writer="reader").read().state
    assert len([e for e in state.entries if e.kind == "publish"]) == 2 * TRIES


class Killed(BaseException):
    """The command stopped dead (no handler of builders catches it)."""


def counting_writes(monkeypatch: pytest.MonkeyPatch, kill_at: int | None) -> list[str]:
    """Every write the command makes (object uploads, deletions, conditional head moves), in order; with
    ``kill_at`` the command dies as that write starts."""
    writes: list[str] = []

    def wrap(name: str, original: Any) -> Any:
        def write(self: Any, *args: Any, **kwargs: Any) -> Any:
            if kill_at is not None and len(writes) == kill_at:
                raise Killed(f"killed at write {kill_at}: {name} {args[:1]}")
            writes.append(f"{name} {args[0] if args else ''}")
            return original(self, *args, **kwargs)
        return write

    monkeypatch.setattr(Bucket, "upload", wrap("upload", Bucket.upload))
    monkeypatch.setattr(Bucket, "delete", wrap("delete", Bucket.delete))
    monkeypatch.setattr(ledger_mod.Ledger, "_put_conditional", wrap("head", ledger_mod.Ledger._put_conditional))
    return writes


def channel_state(server: ObjectStore) -> dict[str, bytes]:
    """The bucket as a reader and the ledger see it, without what carries a time (entries, records, the lease)."""
    files = server.files("downloads")
    out = {k: v for k, v in files.items() if k.startswith("whl/")}
    head = json.loads(files["ledger/nightly/head.json"])
    entry = json.loads(files[f"ledger/nightly/entries/{head['entry']}.json"])
    out["ledger files"] = json.dumps(sorted(f["key"] for f in entry["added"])).encode()
    records = [json.loads(v) for k, v in files.items() if k.startswith("publish-records/nightly/")]
    out["records"] = json.dumps(sorted(json.dumps({k: v for k, v in r.items() if k not in ("at", "ledger_entry")},
                                                  sort_keys=True) for r in records)).encode()
    return out


def pip_installs(server: ObjectStore, folder: str, project: str, tmp: Path) -> str:
    """What pip installs from the channel over HTTP (the newest dev version), or its error."""
    target = tmp / "target"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--pre", "--no-cache-dir",
                           "--disable-pip-version-check", "--target", str(target), "--python-version", "3.12",
                           "--platform", "manylinux_2_28_x86_64", "--only-binary=:all:",
                           "--index-url", f"{server.http_url}downloads/{folder}", project],
                          capture_output=True, text=True, env={**os.environ, "PIP_CONFIG_FILE": os.devnull}, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (dist,) = target.glob("*.dist-info")
    return dist.name


def test_a_publish_killed_at_each_write_reruns_to_the_same_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               shipped_text: str,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Day 2's nightly after day 1's, on rclone (the lease, the most writes): killed at each of its writes in
    turn, pip installs day 1 or day 2 from the channel, never an error; the rerun exits 0 and reaches the bytes of
    the uninterrupted run; a second rerun says "already done"."""
    text = shipped_text.replace("keep: 14", "keep: 1")  # day 2 prunes day 1: deletions are kill points too
    m = matrix.loads(text)
    path = matrix_file(tmp_path, text)
    folder, project = m.channels.channel("nightly").index_path(m.variants[0].label), m.project.name
    day1, day2 = nightly_house(tmp_path, m, "20261201"), nightly_house(tmp_path, m, "20261202")

    helpers.one_writer_at_a_time(monkeypatch, 2.0)

    @contextlib.contextmanager
    def fresh(name: str) -> Iterator[ObjectStore]:
        with object_store(tmp_path / name) as server:
            for key, value in server.env.items():
                monkeypatch.setenv(key, value)
            server.make_bucket("downloads")
            assert main(publish_argv(path, day1)) == 0
            yield server

    with (fresh("whole")) as server:
        writes = counting_writes(monkeypatch, None)
        assert main(publish_argv(path, day2)) == 0
        monkeypatch.undo()
        helpers.one_writer_at_a_time(monkeypatch, 2.0)
        whole, points = channel_state(server), len(writes)
    print(f"{points} kill points: {writes}")
    assert points >= 8, writes
    installed: set[str] = set()
    for kill in range(points):
        with (fresh(f"kill{kill}")) as server:
            counting_writes(monkeypatch, kill)
            with pytest.raises(Killed):
                main(publish_argv(path, day2))
            monkeypatch.undo()
            helpers.one_writer_at_a_time(monkeypatch, 2.0)
            for key, value in server.env.items():
                monkeypatch.setenv(key, value)
            installed.add(pip_installs(server, folder, project, tmp_path / f"pip{kill}"))
            assert main(publish_argv(path, day2)) == 0
            assert channel_state(server) == whole, f"kill at write {kill} of {points}"
            capsys.readouterr()
            assert main(publish_argv(path, day2)) == 0
            assert "already done" in capsys.readouterr().err
    assert len(installed) == 2, installed  # the old state at the first kill points, the new one at the last


def test_swapped_bytes_are_written_again_and_a_malformed_page_is_exit_40(tmp_path: Path, store: ObjectStore | MotoStore,
                                                                        shipped_text: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Why-bullets 5 and 7: a stored wheel swapped for other bytes under a page's sha256 is not "published
    already": the rerun writes the ledger's bytes again. A bucket from before the ledger whose project page is not
    JSON stops with exit 40 and that page named, no traceback; one whose pages are whole (the folder's own
    index.json lists projects, not files) gets its first ledger entry from them at the next publish (item 4)."""
    m = matrix.loads(shipped_text)
    path = matrix_file(tmp_path, shipped_text)
    folder, project = m.channels.channel("nightly").index_path(m.variants[0].label), m.project.name
    house = nightly_house(tmp_path, m, "20261201")
    assert main(publish_argv(path, house)) == 0
    bucket = open_bucket("s3://downloads/", store.env)
    (wheel,) = house.glob("*.whl")
    key = f"{folder}{project}/{wheel.name}"
    bucket.upload(key, b"swapped")
    capsys.readouterr()
    assert main(publish_argv(path, house)) == 0
    said = capsys.readouterr()
    assert f"restore  {key}" in said.err and "finished a publication cut short" in said.err
    assert served(bucket, folder, project) == {wheel.name: hashlib.sha256(wheel.read_bytes()).hexdigest()}

    other = open_bucket("s3://downloads/older/", store.env)  # a site of the same bucket with no ledger
    other.upload(f"{folder}{project}/index.json", b"{not json")
    other.upload(f"{folder}index.json", json.dumps({"projects": [{"name": project}]}).encode())
    argv = publish_argv(path, house)
    argv[argv.index("s3://downloads/")] = "s3://downloads/older/"
    assert main(argv) == ObjectStoreError.exit_code
    err = capsys.readouterr().err
    assert "Traceback" not in err and f"{folder}{project}/index.json: the page cannot be read" in err, err

    day2 = nightly_house(tmp_path, m, "20261202")
    (second,) = day2.glob("*.whl")
    before = open_bucket("s3://downloads/before/", store.env)  # as an earlier builders left it: pages, no ledger
    argv[argv.index("s3://downloads/older/")] = "s3://downloads/before/"
    assert main(argv) == 0
    before.delete(before.listing("ledger/"))
    assert {f"{folder}index.json", f"{folder}{project}/index.json"} <= before.listing(folder).keys()
    argv[argv.index(str(house))] = str(day2)
    assert main(argv) == 0, capsys.readouterr().err
    entries = ledger_mod.Ledger(before, "nightly", mode="lease", writer="reader").read().state.entries
    assert [e.kind for e in entries] == ["adopt", "publish"]
    assert {f.key.rsplit("/", 1)[-1] for f in entries[0].added} >= {wheel.name, f"{wheel.name}.metadata"}
    assert served(before, folder, project).keys() == {wheel.name, second.name}


def test_links_are_checked_through_the_web_front_where_one_is_given(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shipped_text: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 43 item 2: with --site-url, every link of every page publish wrote is read through that web front and
    checked to the page's sha256. The bucket's own front passes; a front serving a stale copy (day 1's wheel with
    other bytes than the bucket's, day 2's not there yet) is exit 40 naming each URL, though the bucket is right."""
    m = matrix.loads(shipped_text)
    path = matrix_file(tmp_path, shipped_text)
    folder, project = m.channels.channel("nightly").index_path(m.variants[0].label), m.project.name
    day1, day2 = nightly_house(tmp_path, m, "20261201"), nightly_house(tmp_path, m, "20261202")
    (first,), (second,) = day1.glob("*.whl"), day2.glob("*.whl")
    with object_store(tmp_path / "rclone") as server:
        for key, value in server.env.items():
            monkeypatch.setenv(key, value)
        server.make_bucket("downloads")
        capsys.readouterr()
        assert main([*publish_argv(path, day1), "--site-url", f"{server.http_url}downloads/"]) == 0
        assert "ledger entry" in capsys.readouterr().err
        stale = tmp_path / "stale"
        shutil.copytree(server.root / "downloads", stale)
        (stale / folder / project / first.name).write_bytes(b"a stale copy")
        with static_http(stale) as front:
            assert main([*publish_argv(path, day2), "--site-url", front]) == ObjectStoreError.exit_code
        err = capsys.readouterr().err
        assert f"{front}{quote(f'{folder}{project}/{first.name}')}: served bytes are not the sha256" in err, err
        assert f"{front}{quote(f'{folder}{project}/{second.name}')}: linked by" in err, err
        assert "Traceback" not in err
        assert served(open_bucket("s3://downloads/", server.env), folder, project).keys() == {first.name, second.name}


def test_repair_restores_lost_pages_with_their_yanks_and_never_lists_a_stray(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shipped_text: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Why-bullet 3: two versions on test, one yanked; a wheel put in the folder by hand; both project pages lost.
    repair-index --dry-run names the stray and writes nothing; repair-index restores the pages with the yank and
    without the stray; a second repair and a second yank say "already done" and write nothing."""
    m = matrix.loads(shipped_text)
    label, project = m.variants[0].label, m.project.name
    folder = m.channels.channel("test").index_path(label)
    path = matrix_file(tmp_path, shipped_text)
    old, new = str(m.project.version), f"{m.project.version.major}.{m.project.version.minor}.{m.project.version.micro + 1}"
    new_text = shipped_text.replace(f"version: {old}", f"version: {new}")
    bucket_argv = ["--bucket", "s3://downloads/", "--matrix"]
    with object_store(tmp_path / "rclone") as server:
        for key, value in server.env.items():
            monkeypatch.setenv(key, value)
        server.make_bucket("downloads")
        for version, text in ((old, shipped_text), (new, new_text)):
            house = tmp_path / f"house-{version}"
            labelled_wheel(house, matrix.loads(text), version=version, label=label)
            mpath = matrix_file(tmp_path / version, text)
            assert main(["publish", str(house), "--matrix", str(mpath), "--channel", "test", "--bucket",
                         "s3://downloads/", "--no-mirror"]) == 0
        yank = ["yank", new, "--channel", "test", "--reason", "broken kernels", *bucket_argv, str(path)]
        assert main(yank) == 0
        stray = labelled_wheel(tmp_path / "stray", m, version=f"{old}.post1", label=label)
        bucket = open_bucket("s3://downloads/", server.env)
        bucket.upload(f"{folder}{project}/{stray.name}", stray)
        bucket.delete([f"{folder}{project}/index.html", f"{folder}{project}/index.json"])
        repair = ["repair-index", "--channel", "test", *bucket_argv, str(path)]
        before = server.files("downloads")
        capsys.readouterr()
        assert main([*repair, "--dry-run"]) == 0
        assert f"stray    {folder}{project}/{stray.name}" in capsys.readouterr().err
        assert server.files("downloads") == before
        assert main(repair) == 0
        page = json.loads(bucket.read(f"{folder}{project}/index.json"))
        yanks = {f["filename"]: f.get("yanked") for f in page["files"]}
        assert stray.name not in yanks and len(yanks) == 2, yanks
        assert set(yanks.values()) == {None, "broken kernels"}
        assert 'data-yanked="broken kernels"' in bucket.read(f"{folder}{project}/index.html").decode()
        after = server.files("downloads")
        capsys.readouterr()
        assert main(repair) == 0 and main(yank) == 0
        said = capsys.readouterr().err
        assert said.count("already done") == 2, said
        assert server.files("downloads") == after


def test_promotions_and_a_yank_at_once_lose_no_entry(store: ObjectStore | MotoStore) -> None:
    """Two promotions of different versions and a yank of an earlier release, appended at the same moment to the
    release ledger by three writers, TRIES times: every entry is in the chain, each parent the one before it (the
    nightly channel has a ledger of its own, so a nightly never races a promotion)."""
    import threading

    from builders.channels.evidence import FileRecord, LedgerEntry, PromotionDigests, YankMark
    from builders.channels.ledger import ChannelState

    bucket = open_bucket("s3://downloads/", store.env)
    mode = ledger_mod.probe(bucket, "release")

    def promotion(version: str) -> LedgerEntry:
        key = f"whl/cpu/p/p-{version}+cpu-py3-none-any.whl"
        return LedgerEntry(seq=0, parent=None, parent_sha256=None, kind="promotion", at="t", writer="w",
                     added=(FileRecord(key=key, sha256="a" * 64, size=1),
                            FileRecord(key=f"{key}.metadata", sha256="b" * 64, size=1, form="metadata")),
                     promotion=PromotionDigests(version=version, manifest_sha256=hashlib.sha256(version.encode()).hexdigest()))

    def once(entry: LedgerEntry) -> Any:
        return lambda state: None if any(e.promotion == entry.promotion and e.yanks == entry.yanks
                                         and e.kind == entry.kind for e in state.entries) else entry

    errors: list[Exception] = []

    def append(ledger: ledger_mod.Ledger, entry: LedgerEntry) -> None:
        try:
            ledger.append(once(entry))
        except Exception as exc:  # noqa: BLE001 - a thread's failure is asserted in the test's thread
            errors.append(exc)

    for attempt in range(TRIES):
        base = f"1.{attempt}"
        ledger_mod.Ledger(bucket, "release", mode=mode, writer="setup").append(once(promotion(f"{base}.0")))
        yank = LedgerEntry(seq=0, parent=None, parent_sha256=None, kind="yank", at="t", writer="w",
                     yanks=(YankMark(key=f"whl/cpu/p/p-{base}.0+cpu-py3-none-any.whl", reason="bad"),))
        writers = [ledger_mod.Ledger(open_bucket("s3://downloads/", store.env), "release", mode=mode, writer=f"w{i}")
                   for i in range(3)]  # boto3 makes clients safely in one thread only, then each thread uses its own
        threads = [threading.Thread(target=append, args=(w, e))
                   for w, e in zip(writers, (promotion(f"{base}.1"), promotion(f"{base}.2"), yank), strict=True)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
    state: ChannelState = ledger_mod.Ledger(bucket, "release", mode=mode, writer="reader").read().state
    kinds = [e.kind for e in state.entries]
    assert kinds.count("promotion") == 3 * TRIES and kinds.count("yank") == TRIES, kinds
    assert len(state.yanks) == TRIES
