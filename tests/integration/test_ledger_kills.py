"""yank, yank --undo, rollback and repair-index killed at each of their writes on ``rclone serve s3`` (the lease:
the most writes), then run again: the rerun exits 0 and reaches the end state of the uninterrupted run (objects,
pages, the ledger's chain), a second rerun says "already done", and right after every kill pip resolves from the
channel over HTTP what it resolved before the command or what it resolves after it: never a 404, never a hash
error, a yanked version skipped or not as one of the two states says and installed when pinned.

The kill is test_ledger_loopback's: the command stops dead at its Nth write (an object, the ledger's entry, its
lease or head, a page, a deletion). One server per test; before each kill point the bucket is put back, through
the S3 API, to what it held before the command. The promotions rollback undoes are made by ``promote-release``
through the CLI from fake wheels (a validation record written here: validate cannot pass a wheel whose extension
is a stub ELF).

Kill points measured: yank 6, yank --undo 6, rollback 6 (the entry, the lease taken, the head, the lease given
back, the project's two pages), repair-index 3 with the ledger intact (a lost ``.metadata`` made again, two root
pages) and 6 on a bucket whose ledger is lost (the first entry, lease, head, lease, two root pages).

Races, through the CLI as real processes, TRIES times on moto (conditional writes) and on rclone (the lease): a
nightly publish during a promote-release, two promote-release of different versions, a yank during a
promote-release; every entry ends in its ledger and the pages list exactly what the ledgers hold (before
promote-release rendered its pages from the ledger after its entry, the second race lost a version from the page
and the third a yank, both commands exiting 0).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from builders.channels import ledger as ledger_mod
from builders.channels.evidence import InstallVerdict, TargetVerdict, ValidationRecord
from builders.channels.objectstore import Bucket, open_bucket
from builders.cli import main
from builders.families import loader as matrix
from builders.matrix.model import Matrix
from tests import helpers
from tests.integration.test_ledger_loopback import STORES, TRIES, Killed, counting_writes, nightly_house
from tests.integration.test_objectstore import labelled_wheel, matrix_file
from tests.objectstore import MotoStore, ObjectStore, moto_store, object_store

pytestmark = pytest.mark.slow
BUCKET = "s3://downloads/"


@dataclass(frozen=True, kw_only=True)
class Versions:
    """Two versions of the project, each with its matrix file and its fake labelled wheel."""

    m: Matrix
    old: str
    new: str
    matrices: dict[str, Path]
    houses: dict[str, Path]


def two_versions(tmp_path: Path, text: str) -> Versions:
    m = matrix.loads(text)
    old = str(m.project.version)
    new = f"{m.project.version.major}.{m.project.version.minor}.{m.project.version.micro + 1}"
    texts = {old: text, new: text.replace(f"version: {old}", f"version: {new}")}
    matrices = {v: matrix_file(tmp_path / f"m-{v}", t) for v, t in texts.items()}
    houses = {}
    for v, t in texts.items():
        labelled_wheel(tmp_path / f"house-{v}", matrix.loads(t), version=v, label=m.variants[0].label)
        houses[v] = tmp_path / f"house-{v}"
    return Versions(m=m, old=old, new=new, matrices=matrices, houses=houses)


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ObjectStore]:
    """rclone serve s3 with its bucket; the lease short, its settle shorter (one writer at a time here)."""
    with object_store(tmp_path / "rclone") as s3:
        for name, value in s3.env.items():
            monkeypatch.setenv(name, value)
        s3.make_bucket("downloads")
        helpers.one_writer_at_a_time(monkeypatch, 1.0)
        yield s3


def put_back(bucket: Bucket, snapshot: dict[str, bytes]) -> None:
    """The bucket made to hold exactly ``snapshot`` again, through the S3 API (the server's view stays coherent)."""
    held = bucket.listing("")
    bucket.delete(sorted(k for k in held if k not in snapshot))
    for key, data in snapshot.items():
        if key not in held or bucket.read(key) != data:
            bucket.upload(key, data)


def end_state(s3: ObjectStore, channel: str) -> dict[str, object]:
    """What a reader and the ledger hold: every object outside the ledger's folder, and the chain's content without
    what carries a time or a writer (ids follow from those); a killed run's orphan entry object is not in it."""
    files = s3.files("downloads")
    out: dict[str, object] = {k: hashlib.sha256(v).hexdigest() for k, v in files.items() if not k.startswith("ledger/")}
    state = ledger_mod.Ledger(open_bucket(BUCKET, s3.env), channel, mode="lease", writer="reader").read().state
    out["ledger"] = [(e.seq, e.kind, e.added, e.removed, e.yanks, e.promotion, e.note) for e in state.entries]
    out["yanks"] = dict(state.yanks)
    return out


def pip_resolves(index: str, requirement: str, tmp: Path) -> str:
    """The file pip downloads for ``requirement`` from ``index`` alone (for cp312 manylinux x86_64), or "nothing"
    where no version matches; a 404 or a hash error fails the test on the spot."""
    dest = tmp / f"pip{len(list(tmp.glob('pip*')))}" if tmp.exists() else tmp / "pip0"
    proc = subprocess.run([sys.executable, "-m", "pip", "download", "--isolated", "--no-deps", "--no-cache-dir",
                           "--only-binary=:all:", "--python-version", "3.12", "--platform", "manylinux_2_28_x86_64",
                           "--disable-pip-version-check", "--index-url", index, "--dest", str(dest), requirement],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "PIP_CONFIG_FILE": os.devnull})
    said = proc.stdout + proc.stderr
    if proc.returncode == 0:
        (got,) = dest.glob("*.whl")
        return got.name
    assert "No matching distribution" in said and not re.search(r"404|HASHES|hash", said), said
    return "nothing"


@dataclass(frozen=True, kw_only=True)
class Command:
    """One command to kill: its argv, its channel, and how pip is asked (the index folder, requirements)."""

    name: str
    argv: list[str]
    channel: str
    folder: str  # the index folder pip is given (over HTTP)
    requirements: tuple[str, ...]


def kill_everywhere(s3: ObjectStore, command: Command, tmp: Path, capsys: pytest.CaptureFixture[str]) -> int:
    """``command`` run whole, then killed at each of its writes in turn from the same bucket and run again; returns
    the number of kill points. pip runs where a kill left the index folder's bytes other than before the command
    and after it (a page half written); where they are those of either state, pip's answer is that state's."""
    bucket = open_bucket(BUCKET, s3.env)
    before = s3.files("downloads")
    index = f"{s3.http_url}downloads/{command.folder}"
    resolve: Callable[[], tuple[str, ...]] = lambda: tuple(  # noqa: E731 - one line, used three times
        pip_resolves(index, r, tmp / command.name) for r in command.requirements)
    old, served_old = resolve(), served(s3, command.folder)
    with pytest.MonkeyPatch.context() as mp:
        writes = counting_writes(mp, None)
        assert main(command.argv) == 0
    whole, new, served_new = end_state(s3, command.channel), resolve(), served(s3, command.folder)
    mixed = 0
    for kill in range(len(writes)):
        where = f"{command.name} killed at write {kill}: {writes[kill]}"
        put_back(bucket, before)
        with pytest.MonkeyPatch.context() as mp:
            counting_writes(mp, kill)
            with pytest.raises(Killed):
                main(command.argv)
        now = served(s3, command.folder)
        mixed += now not in (served_old, served_new)
        assert (old if now == served_old else new if now == served_new else resolve()) in (old, new), where
        capsys.readouterr()
        assert main(command.argv) == 0, capsys.readouterr().err
        assert end_state(s3, command.channel) == whole, where
        capsys.readouterr()
        assert main(command.argv) == 0
        assert "already done" in capsys.readouterr().err, where
    with capsys.disabled():
        print(f"\n{command.name}: {len(writes)} kill points ({mixed} leaving the index between the two states): "
              f"{', '.join(writes)}; pip {old} -> {new}")
    return len(writes)


def served(s3: ObjectStore, folder: str) -> dict[str, bytes]:
    """What the index folder serves: its pages, wheels and ``.metadata`` files."""
    return {k: v for k, v in s3.files("downloads").items() if k.startswith(folder)}


def published(versions: Versions, channel: str = "test") -> None:
    for v in (versions.old, versions.new):
        assert main(["publish", str(versions.houses[v]), "--matrix", str(versions.matrices[v]), "--channel", channel,
                     "--bucket", BUCKET, "--no-mirror"]) == 0


def test_yank_and_its_undo_killed_at_each_write_rerun_to_the_same_end(
        tmp_path: Path, server: ObjectStore, shipped_text: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Two versions on test; the newer yanked, then listed again: unpinned pip gets the newer before the yank and the
    older after it (never nothing, never an error), ``==newer`` installs the newer in every state."""
    v = two_versions(tmp_path, shipped_text)
    published(v)
    label, project = v.m.variants[0].label, v.m.project.name
    index = v.m.channels.channel("test").index_path(label)
    asks = (project, f"{project}=={v.new}")
    common = ["--channel", "test", "--bucket", BUCKET, "--matrix", str(v.matrices[v.new])]
    points = {}
    yank = Command(name="yank", argv=["yank", v.new, "--reason", "broken kernels", *common], channel="test",
                   folder=index, requirements=asks)
    points["yank"] = kill_everywhere(server, yank, tmp_path, capsys)
    undo = Command(name="undo", argv=["yank", v.new, "--undo", "--reason", "fixed", *common], channel="test", folder=index,
                   requirements=asks)
    points["yank --undo"] = kill_everywhere(server, undo, tmp_path, capsys)
    print(f"kill points: {points}")
    assert all(n >= 4 for n in points.values()), points  # the entry, the lease twice, the head, the pages


def test_repair_killed_at_each_write_reruns_to_the_same_end(
        tmp_path: Path, server: ObjectStore, shipped_text: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The newer of two versions yanked, a stray wheel put in the folder, the label's root pages lost, and: (a) the
    yanked version's ``.metadata`` lost too (repair makes it again: an object written), (b) the ledger lost too (a
    bucket from before it: repair builds one, the lease, the entry and the head written). pip gets the older version
    unpinned at every kill point, never the stray."""
    v = two_versions(tmp_path, shipped_text)
    published(v)
    label, project = v.m.variants[0].label, v.m.project.name
    folder = v.m.channels.channel("test").index_path(label)
    common = ["--channel", "test", "--bucket", BUCKET, "--matrix", str(v.matrices[v.new])]
    assert main(["yank", v.new, "--reason", "broken kernels", *common]) == 0
    bucket = open_bucket(BUCKET, server.env)
    stray = labelled_wheel(tmp_path / "stray", v.m, version=f"{v.new}.post1", label=label)
    bucket.upload(f"{folder}{project}/{stray.name}", stray)
    bucket.delete([f"{folder}index.html", f"{folder}index.json"])
    (newer,) = [k for k in bucket.listing(f"{folder}{project}/") if f"-{v.new}+" in k and k.endswith(".whl")]
    repair = Command(name="repair", argv=["repair-index", *common], channel="test", folder=folder,
                     requirements=(project,))
    points = {}
    bucket.delete([f"{newer}.metadata"])
    points["repair (a lost .metadata)"] = kill_everywhere(server, repair, tmp_path / "a", capsys)
    assert bucket.read(f"{newer}.metadata")
    bucket.delete([*sorted(bucket.listing("ledger/")), f"{folder}index.html", f"{folder}index.json"])
    points["repair (no ledger)"] = kill_everywhere(server, repair, tmp_path / "b", capsys)
    print(f"kill points: {points}")
    assert stray.name not in json.dumps(json.loads(bucket.read(f"{folder}{project}/index.json")))
    assert min(points.values()) >= 3, points


def candidate(v: Versions, version: str, tmp: Path) -> list[str]:
    """``version`` published on test, its manifest made, a passing validation record of it written: the
    promote-release arguments that release it."""
    house, mpath = v.houses[version], v.matrices[version]
    assert main(["publish", str(house), "--matrix", str(mpath), "--channel", "test", "--bucket", BUCKET,
                 "--no-mirror"]) == 0
    return promotion_argv(v, version, tmp)


def promotion_argv(v: Versions, version: str, tmp: Path) -> list[str]:
    """The manifest and a passing validation record of ``version`` (made once per folder), as promote-release's
    arguments."""
    house, mpath = v.houses[version], v.matrices[version]
    manifest, record = tmp / f"manifest-{version}.json", tmp / f"validation-{version}.json"
    if not manifest.exists():
        tmp.mkdir(parents=True, exist_ok=True)
        assert main(["manifest", str(house), "--matrix", str(mpath), "--output", str(manifest), "--tag",
                     f"v{version}-rc1", "--commit", "c0ffee", "--run-id", "7"]) == 0
        record.write_bytes(validation_record(manifest))
    (target,) = [f["target"] for f in json.loads(manifest.read_text())["files"]]
    return ["promote-release", "--matrix", str(mpath), "--bucket", BUCKET, "--target", target, "--manifest",
            str(manifest), "--validation", str(record)]


def validation_record(manifest: Path) -> bytes:
    """What ``validate --record`` writes for a manifest whose every labelled file passed with pip."""
    data = json.loads(manifest.read_text())
    return ValidationRecord(
        project=data["project"], version=data["version"], channel="test", host="this test",
        manifest_sha256=hashlib.sha256(manifest.read_bytes()).hexdigest(),
        targets=tuple(TargetVerdict(target=f["target"], status="passed", installs=(
            InstallVerdict(installer="pip", status="passed", filename=f["name"], sha256=f["sha256"]),))
            for f in data["files"] if f["form"] == "labelled")).to_json()


def test_rollback_killed_at_each_write_reruns_to_the_same_end(
        tmp_path: Path, server: ObjectStore, shipped_text: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Two promotions; the newer rolled back by its ledger id: unpinned pip gets the newer before and the older
    after (the previous release listed again), ``==newer`` installs the newer in every state."""
    v = two_versions(tmp_path, shipped_text)
    for version in (v.old, v.new):
        assert main(candidate(v, version, tmp_path / "candidates")) == 0
    state = ledger_mod.Ledger(open_bucket(BUCKET, server.env), "release", mode="lease", writer="r").read().state
    (promotion,) = [e.id for e in state.entries if e.promotion and e.promotion.version == v.new]
    label, project = v.m.variants[0].label, v.m.project.name
    index = v.m.channels.channel("release").index_path(label)
    rollback = Command(name="rollback", channel="release", folder=index, requirements=(project, f"{project}=={v.new}"),
                       argv=["rollback", "--promotion", promotion, "--reason", "broken kernels", "--bucket", BUCKET,
                             "--matrix", str(v.matrices[v.new])])
    points = kill_everywhere(server, rollback, tmp_path, capsys)
    print(f"kill points: rollback {points}")
    assert points >= 4


# --- races through the CLI ------------------------------------------------------------------------


def listing_matches_ledger(bucket: Bucket, channel: str, folder: str, project: str) -> dict[str, str | None]:
    """The project page of ``folder`` lists exactly the wheels the channel's ledger holds there, each with the
    ledger's sha256 and yank; returns file name -> yank reason."""
    state = ledger_mod.Ledger(bucket, channel, mode="lease", writer="reader").read().state
    base = f"{folder}{project}/"
    held = {k.removeprefix(base): (f.sha256, state.yanks.get(k)) for k, f in state.files.items()
            if k.startswith(base) and f.form == "wheel"}
    page = json.loads(bucket.read(f"{base}index.json"))
    listed = {i["filename"]: (i["hashes"]["sha256"], i.get("yanked")) for i in page["files"]}
    assert listed == held, (channel, listed, held)
    return {name: yank for name, (_sha, yank) in listed.items()}


def together(env: dict[str, str], *argvs: list[str]) -> list[str]:
    """The commands started at the same moment as separate processes; each must exit 0; their outputs."""
    procs = [subprocess.Popen([sys.executable, "-m", "builders", *a], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for a in argvs]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0] * len(procs), outs
    return outs


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ObjectStore | MotoStore]:
    """moto (conditional writes) or rclone (the lease) with its bucket, its keys in the environment (the racing
    processes keep the ledger's own settle time)."""
    with (moto_store if request.param == "moto" else object_store)(tmp_path / request.param) as s3:
        for name, value in s3.env.items():
            monkeypatch.setenv(name, value)
        s3.make_bucket("downloads")
        monkeypatch.setattr(ledger_mod, "SETTLE_SECONDS", 0.05)  # the setup's writes in this process, one at a time
        yield s3


def test_promotions_nightlies_and_yanks_at_once_through_the_cli_lose_no_entry(
        tmp_path: Path, store: ObjectStore | MotoStore, shipped_text: str) -> None:
    """TRIES times on each store, each try under a prefix of its own, real processes: a nightly publish during a
    promote-release, two promote-release of different versions, a yank during a promote-release. Every command
    exits 0, every entry is in its channel's ledger, and the pages list exactly what the ledgers hold."""
    versions = [several(tmp_path, shipped_text, i) for i in range(4)]
    m, project = versions[0].m, versions[0].m.project.name
    label = m.variants[0].label
    release, nightly = (m.channels.channel(c).index_path(label) for c in ("release", "nightly"))
    env = {**os.environ, **store.env, "PYTHONPATH": str(Path.cwd())}
    for attempt in range(TRIES):
        url = f"s3://downloads/try{attempt}/"  # one bucket: rclone does not see a folder made after its first listing
        for v in versions:
            assert main(["publish", str(v.houses[v.old]), "--matrix", str(v.matrices[v.old]), "--channel", "test",
                         "--bucket", url, "--no-mirror"]) == 0
        promote = [on(promotion_argv(v, v.old, tmp_path / "candidates"), url) for v in versions]
        day = nightly_house(tmp_path, m, f"202612{attempt + 1:02d}")
        together(env, promote[0], ["publish", str(day), "--matrix", str(versions[0].matrices[versions[0].old]),
                                   "--channel", "nightly", "--bucket", url, "--no-mirror"])
        together(env, promote[1], promote[2])
        together(env, promote[3], ["yank", versions[0].old, "--channel", "release", "--reason", "bad", "--bucket", url,
                                   "--matrix", str(versions[0].matrices[versions[0].old])])
        bucket = open_bucket(url, store.env)
        state = ledger_mod.Ledger(bucket, "release", mode="lease", writer="reader").read().state
        assert sorted(e.promotion.version for e in state.entries if e.promotion) == sorted(v.old for v in versions)
        assert [e.kind for e in state.entries].count("yank") == 1, [e.kind for e in state.entries]
        yanks = listing_matches_ledger(bucket, "release", release, project)
        assert len(yanks) == 4 and sorted(r for r in yanks.values() if r) == ["bad"], yanks
        assert len(listing_matches_ledger(bucket, "nightly", nightly, project)) == 1


def several(tmp_path: Path, text: str, i: int) -> Versions:
    """Version ``i`` steps above the matrix's (micro), with its matrix and wheel, as :class:`Versions`' ``old``."""
    m = matrix.loads(text)
    version = f"{m.project.version.major}.{m.project.version.minor}.{m.project.version.micro + i}"
    changed = text.replace(f"version: {m.project.version}", f"version: {version}")
    house = tmp_path / f"race-house-{version}"
    labelled_wheel(house, matrix.loads(changed), version=version, label=m.variants[0].label)
    return Versions(m=m, old=version, new=version, matrices={version: matrix_file(tmp_path / f"race-m-{version}",
                                                                                   changed)}, houses={version: house})


def on(argv: list[str], url: str) -> list[str]:
    """``argv`` with its bucket replaced by ``url``."""
    return [url if a == BUCKET else a for a in argv]
