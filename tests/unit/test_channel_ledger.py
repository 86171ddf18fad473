"""The ledger's records and its pure parts: entries round-trip and are refused when malformed, the fold of a
chain, and publish's plan from evidence alone (what it uploads, commits, renders, refuses, and "already done")."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import pytest

from builders.base.errors import SelectionError
from builders.channels import promoting, promotion, publishing
from builders.channels.evidence import (
    FileRecord,
    Head,
    Lease,
    LedgerCorrupt,
    LedgerEntry,
    PromotionDigests,
    PromotionRecord,
    YankMark,
)
from builders.channels.ledger import ChannelState, chained, fold
from builders.families import loader as matrix
from builders.matrix.release_channels import ReleaseChannel

A, B, C = ("a" * 64, "b" * 64, "c" * 64)
Channels = tuple[ReleaseChannel, ReleaseChannel, str, str]


def entry(*added: FileRecord, removed: tuple[str, ...] = (), yanks: tuple[YankMark, ...] = (),
          kind: str = "publish") -> LedgerEntry:
    return LedgerEntry(seq=0, parent=None, parent_sha256=None, kind=kind, at="2026-12-03T12:00:00.000000Z", writer="w",
                 added=added, removed=removed, yanks=yanks)


def wheel(key: str, sha: str = A) -> tuple[FileRecord, FileRecord]:
    return (FileRecord(key=key, sha256=sha, size=3, target="cpu-cp312-linux-x86_64", requires_python=">=3.11"),
            FileRecord(key=f"{key}.metadata", sha256=hashlib.sha256(sha.encode()).hexdigest(), size=1, form="metadata"))


def chain(*entries: LedgerEntry) -> ChannelState:
    state = ChannelState()
    for e in entries:
        state = state.after(chained(state, e))
    return state


def test_an_entry_round_trips_and_names_its_bytes() -> None:
    e = LedgerEntry(seq=3, parent="00000002-" + "d" * 16, parent_sha256="d" * 64, kind="promotion", at="t", writer="w",
              added=wheel("whl/cpu/p/p-1.0+cpu-py3-none-any.whl"), removed=("x",), yanks=(YankMark(key="x", reason="bad"),),
              promotion=PromotionDigests(version="1.0", manifest_sha256=A, validation_sha256=(B, C)))
    again = LedgerEntry.from_json(e.to_json(), "here")
    assert again == e and again.id == e.id and e.id.startswith("00000003-" + e.sha256[:16])


@pytest.mark.parametrize("raw", [b"not json", b"[]", b'{"schema": 99}',
                                 b'{"schema": 1, "seq": 0, "kind": "publish", "at": "t", "writer": "w", "added": [{}]}',
                                 b'{"schema": 1, "seq": -1, "kind": "publish", "at": "t", "writer": "w"}',
                                 b'{"schema": 1, "seq": 0, "kind": "steal", "at": "t", "writer": "w"}'])
def test_a_malformed_entry_is_refused_with_its_place_named(raw: bytes) -> None:
    with pytest.raises(LedgerCorrupt, match=r"^ledger/x: ") as caught:
        LedgerEntry.from_json(raw, "ledger/x")
    assert caught.value.exit_code == 40


def test_head_and_lease_round_trip() -> None:
    head = Head(entry="00000001-abc", sha256=A, seq=1, token=7, writer="w")
    assert Head.from_json(head.to_json(), "HEAD") == head
    lease = Lease(writer="w", token=8, expires=12.5)
    assert Lease.from_json(lease.to_json(), "LOCK") == lease
    with pytest.raises(LedgerCorrupt):
        Head.from_json(b'{"schema": 1, "entry": "x", "sha256": "short", "seq": 1}', "HEAD")


def test_the_fold_holds_files_yanks_and_removals_and_chains_each_parent() -> None:
    one, two = wheel("f/p/one.whl"), wheel("f/p/two.whl", B)
    state = chain(entry(*one), entry(*two), entry(yanks=(YankMark(key="f/p/one.whl", reason="broken"),), kind="yank"),
                  entry(removed=tuple(r.key for r in one)))
    assert set(state.files) == {r.key for r in two}
    assert state.yanks == {} and state.removed == {r.key for r in one}
    assert [e.seq for e in state.entries] == [0, 1, 2, 3]
    assert all(e.parent == p.id and e.parent_sha256 == p.sha256 for p, e in zip(state.entries, state.entries[1:]))
    assert fold(state.entries) == state


def test_a_yank_of_a_file_the_channel_does_not_hold_is_corrupt() -> None:
    with pytest.raises(LedgerCorrupt, match="does not hold"):
        chain(entry(yanks=(YankMark(key="nope.whl", reason="x"),), kind="yank"))


# --- publish's plan, from evidence alone ----------------------------------------------------------------------


@pytest.fixture
def channels(shipped_text: str) -> Channels:
    m = matrix.loads(shipped_text)
    return m.channels.channel("nightly"), m.channels.channel("test"), m.variants[0].label, m.project.name


def evidence(channel: ReleaseChannel, label: str, project: str, keys: dict[str, str], *, state: ChannelState,
             stored: dict[str, str | None] | None = None, pages: dict[str, bytes | None] | None = None,
             objects: frozenset[str] = frozenset()) -> publishing.PublishFacts:
    local = {}
    for name, sha in keys.items():
        for record in wheel(f"{channel.index_path(label)}{project}/{name}", sha):
            local[record.key] = publishing.LocalFile(record=record, source=Path("/nowhere") if record.form == "wheel" else b"m")
    return publishing.PublishFacts(channel=channel, project=project, folders=((label, channel.index_path(label)),),
                               local=local, stored=stored or dict.fromkeys(local), objects=objects,
                               pages=pages or {}, mirror={}, state=state)


def name(project: str, version: str, label: str) -> str:
    return f"{project}-{version}+{label}-cp312-cp312-manylinux_2_28_x86_64.whl"


def test_a_first_publication_uploads_commits_and_renders_only_what_the_ledger_will_hold(channels: Channels) -> None:
    nightly, _test, label, project = channels
    ev = evidence(nightly, label, project, {name(project, "2.0.0.dev20261201", label): A}, state=ChannelState())
    plan = publishing.plan(ev, at="t", writer="w")
    assert {f.record.key for f in plan.uploads} == set(ev.local) and plan.entry is not None
    assert {f.key for f in plan.entry.added} == set(ev.local)
    folder = nightly.index_path(label)
    page = json.loads(plan.pages[f"{folder}{project}/index.json"])
    assert [f["hashes"]["sha256"] for f in page["files"]] == [A]
    meta = f"{folder}{project}/{name(project, '2.0.0.dev20261201', label)}.metadata"
    assert page["files"][0]["core-metadata"]["sha256"] == ev.local[meta].record.sha256
    assert set(plan.writes) == set(plan.pages)


def test_a_rerun_after_the_commit_only_writes_pages_and_a_finished_one_is_done(channels: Channels) -> None:
    nightly, _test, label, project = channels
    ev = evidence(nightly, label, project, {name(project, "2.0.0.dev20261201", label): A}, state=ChannelState())
    first = publishing.plan(ev, at="t", writer="w")
    assert first.entry is not None
    committed = chain(first.entry)
    stored: dict[str, str | None] = {k: f.record.sha256 for k, f in ev.local.items()}
    cut = evidence(nightly, label, project, {name(project, "2.0.0.dev20261201", label): A}, state=committed,
                   stored=stored)
    finish = publishing.plan(cut, at="t2", writer="w")
    assert not finish.uploads and finish.entry is None and set(finish.writes) == set(first.pages)
    done = evidence(nightly, label, project, {name(project, "2.0.0.dev20261201", label): A}, state=committed,
                    stored=stored, pages=dict(first.pages))
    assert publishing.plan(done, at="t3", writer="w").done


def test_swapped_bytes_under_a_held_key_are_written_again(channels: Channels) -> None:
    nightly, _test, label, project = channels
    ev = evidence(nightly, label, project, {name(project, "2.0.0.dev20261201", label): A}, state=ChannelState())
    committed = chain(publishing.plan(ev, at="t", writer="w").entry)  # type: ignore[arg-type]
    stored: dict[str, str | None] = {k: f.record.sha256 for k, f in ev.local.items()}
    wheel_key = next(k for k, f in ev.local.items() if f.record.form == "wheel")
    stored[wheel_key] = C
    swapped = evidence(nightly, label, project, {name(project, "2.0.0.dev20261201", label): A}, state=committed,
                       stored=stored)
    plan = publishing.plan(swapped, at="t2", writer="w")
    assert [f.record.key for f in plan.uploads] == [wheel_key] and plan.entry is None and not plan.done


def test_other_bytes_are_refused_on_nightly_and_replace_on_test(channels: Channels) -> None:
    nightly, test, label, project = channels
    for channel, refused in ((nightly, True), (test, False)):
        wheel_name = name(project, "2.0.0.dev20261201" if channel is nightly else "2.0.0", label)
        first = publishing.plan(evidence(channel, label, project, {wheel_name: A}, state=ChannelState()), at="t", writer="w")
        state = chain(first.entry)  # type: ignore[arg-type]
        plan = publishing.plan(evidence(channel, label, project, {wheel_name: B}, state=state), at="t", writer="w")
        key = f"{channel.index_path(label)}{project}/{wheel_name}"
        assert (key in plan.refused) is refused and (key in plan.replaced) is not refused


def test_nightly_keeps_its_newest_versions_and_deletes_what_the_ledger_dropped(channels: Channels) -> None:
    nightly, _test, label, project = channels
    assert nightly.keep is not None
    state = ChannelState()
    days = [f"2.0.0.dev202612{d:02d}" for d in range(1, nightly.keep + 2)]
    for day in days:
        plan = publishing.plan(evidence(nightly, label, project, {name(project, day, label): A}, state=state),
                               at="t", writer="w")
        state = state.after(chained(state, plan.entry))  # type: ignore[arg-type]
    oldest = f"{nightly.index_path(label)}{project}/{name(project, days[0], label)}"
    assert oldest not in state.files and oldest in state.removed
    again = evidence(nightly, label, project, {name(project, days[-1], label): A}, state=state,
                     objects=frozenset({oldest, f"{oldest}.metadata", "stray.whl"}))
    assert publishing.plan(again, at="t", writer="w").deletes == (oldest, f"{oldest}.metadata")


def test_a_page_never_lists_a_file_the_ledger_does_not_hold(channels: Channels) -> None:
    nightly, _test, label, project = channels
    state = chain(entry(*wheel(f"{nightly.index_path(label)}{project}/{name(project, '2.0.0.dev20261201', label)}")))
    pages = publishing.render(state, ((label, nightly.index_path(label)),), {})
    listed = {f["filename"] for k, v in pages.items() if k.endswith(f"{project}/index.json")
              for f in json.loads(v)["files"]}
    assert listed == {k.rsplit("/", 1)[-1] for k, f in state.files.items() if f.form == "wheel"}


# --- yank, rollback and repair plans ------------------------------------------------------------------------------


def promoted(key: str) -> LedgerEntry:
    return LedgerEntry(seq=0, parent=None, parent_sha256=None, kind="promotion", at="t", writer="w", added=wheel(key),
                 promotion=PromotionDigests(version="2.15.0", manifest_sha256=A, validation_sha256=(B,)))


def test_a_yank_marks_every_label_and_a_second_is_already_done() -> None:
    from packaging.version import Version

    from builders.channels import yanking

    keys = [f"whl/{label}/p/p-2.15.0+{label}-py3-none-any.whl" for label in ("cpu", "cu132")]
    state = chain(entry(*wheel(keys[0]), *wheel(keys[1]), *wheel("whl/cpu/p/p-2.14.0+cpu-py3-none-any.whl")))
    first = yanking.yank_entry(state, project="p", version=Version("2.15.0"), reason="bad", at="t", writer="w")
    assert first is not None and sorted(m.key for m in first.yanks) == keys
    after = state.after(chained(state, first))
    assert yanking.yank_entry(after, project="p", version=Version("2.15.0"), reason="bad", at="t", writer="w") is None
    undo = yanking.yank_entry(after, project="p", version=Version("2.15.0"), reason=None, at="t", writer="w")
    assert undo is not None and after.after(chained(after, undo)).yanks == {}
    with pytest.raises(SelectionError):
        yanking.yank_entry(state, project="p", version=Version("9.0"), reason="x", at="t", writer="w")


def test_a_rollback_is_found_by_id_or_record_and_happens_once() -> None:
    from builders.channels import yanking

    key = "whl/cpu/p/p-2.15.0+cpu-py3-none-any.whl"
    state = chain(promoted(key))
    promotion = state.entries[-1]
    assert yanking.promotion_entry(state, promotion.id, None) == promotion
    assert yanking.promotion_entry(state, "any.json", PromotionRecord(version="2.15.0", manifest_sha256=A)) == promotion
    with pytest.raises(SelectionError, match="history"):
        yanking.promotion_entry(state, "any.json", PromotionRecord(version="2.15.0", manifest_sha256=B))
    rollback = yanking.rollback_entry(state, promotion, reason="broken", at="t", writer="w")
    assert rollback is not None and [m.key for m in rollback.yanks] == [key] and rollback.undoes == promotion.id
    after = state.after(chained(state, rollback))
    assert after.yanks == {key: "broken"}
    assert yanking.rollback_entry(after, promotion, reason="other", at="t", writer="w") is None


def test_repair_renders_the_ledger_names_strays_and_lost_files(channels: Channels) -> None:
    from builders.channels import repairing

    _nightly, test, label, project = channels
    folder = test.index_path(label)
    key = f"{folder}{project}/{name(project, '2.15.0', label)}"
    state = chain(entry(*wheel(key)), entry(yanks=(YankMark(key=key, reason="bad"),), kind="yank"))
    stray = f"{folder}{project}/{name(project, '2.15.1', label)}"
    ev = repairing.RepairFacts(channel=test, folders=((label, folder),), state=state, adopt=None,
                            sizes={key: 3, f"{key}.metadata": 1, stray: 3}, pages={},
                            digests={k: f.sha256 for k, f in state.files.items()})
    fix = repairing.plan(ev)
    page = json.loads(fix.pages[f"{folder}{project}/index.json"])
    assert [(f["filename"], f.get("yanked")) for f in page["files"]] == [(key.rsplit("/", 1)[-1], "bad")]
    assert fix.strays == (stray,) and not fix.lost and set(fix.writes) == set(fix.pages)
    assert repairing.plan(dataclasses.replace(ev, pages=dict(fix.pages))).done
    swapped = repairing.plan(dataclasses.replace(ev, digests={**ev.digests, key: C}))
    assert swapped.lost == (key,)


def test_a_first_ledger_keeps_the_provenance_the_pages_link_and_the_bucket_stores(channels: Channels) -> None:
    """Issue 45 item 2 on a bucket from before the ledger: each listed wheel's ``<file>.provenance`` that its JSON or
    HTML page links and the bucket stores is adopted (form "provenance", its stored sha256 and size), so the pages
    repair renders link it again; one the bucket lacks, or a wheel not kept, adds nothing."""
    from builders.channels import repairing

    _nightly, test, label, project = channels
    folder = test.index_path(label)
    key, other = (f"{folder}{project}/{name(project, v, label)}" for v in ("2.15.0", "2.15.1"))
    prov = FileRecord(key=f"{key}.provenance", sha256=C, size=7, form="provenance")
    before = chain(entry(*wheel(key), *wheel(other), prov))
    pages = publishing.render(before, ((label, folder),), {})
    for page in (f"{folder}{project}/index.json", f"{folder}{project}/index.html"):
        assert repairing.linked_provenance({page: pages[page]}) == {key: prov.key}, page
    kept = {f.key: f for f in (*wheel(key), *wheel(other))}
    links = repairing.linked_provenance(pages)
    assert repairing.provenance_records(links, kept, {prov.key: (C, 7)}) == {prov.key: prov}
    assert repairing.provenance_records(links, kept, {}) == {}
    assert repairing.provenance_records(links, {k: f for k, f in kept.items() if not k.startswith(key)},
                                        {prov.key: (C, 7)}) == {}
    adopt = entry(*kept.values(), prov, kind="adopt")
    ev = repairing.RepairFacts(channel=test, folders=((label, folder),), state=ChannelState(), adopt=adopt,
                               sizes={k: f.size for k, f in before.files.items()}, pages={},
                               digests={k: f.sha256 for k, f in before.files.items()})
    fix = repairing.plan(ev)
    assert fix.pages == pages and not fix.strays and not fix.lost


# --- promote-release's plan, from evidence alone --------------------------------------------------------------


def promotion_facts(shipped_text: str, *, state: ChannelState, stored: dict[str, str | None],
                    pages: dict[str, bytes | None] | None = None, recorded: frozenset[str] = frozenset(),
                    pypi_done: tuple[str, ...] = (),
                    provenance: tuple[str, int] | None = None) -> promoting.PromoteFacts:
    """One labelled wheel of the shipped matrix promoted from test to release, with one PyPI file (and, with
    ``provenance``, the (sha256, size) of the test channel's ``<wheel>.provenance``)."""
    m = matrix.loads(shipped_text)
    test, release, label, project = (m.channels.channel("test"), m.channels.channel("release"), m.variants[0].label,
                                     m.project.name)
    file = name(project, str(m.project.version), label)
    src, dest = f"{test.index_path(label)}{project}/{file}", f"{release.index_path(label)}{project}/{file}"
    found = promotion.Promotion(
        version=str(m.project.version), copies=(), unchanged=(), refusals=(), manifest=C, pypi_done=pypi_done,
        pypi=(promotion.PypiFile(path=Path("/dist/p-1-py3-none-any.whl"), sha256=A, size=1),),
        release=(promotion.Released(source=src, dest=dest, sha256=A, size=10, requires_python=">=3.11",
                                    metadata_sha256=B, metadata_size=2, target="t",
                                    provenance=provenance is not None),),
        folders=((test.index_path(label), release.index_path(label)),), held=((dest, A),))
    site = publishing.PublishFacts(channel=release, project="", folders=((label, release.index_path(label)),), local={},
                                   stored={}, objects=frozenset(), pages=pages or {}, mirror={}, state=state)
    return promoting.PromoteFacts(promotion=found, validations=(b"record",), site=site, stored=stored,
                                  recorded=recorded, provenance={f"{src}.provenance": provenance} if provenance else {})


def test_a_promotion_copies_commits_renders_uploads_and_records_then_is_done(shipped_text: str) -> None:
    """The first run plans everything; after a kill between the wheel's copy and its .metadata's, only the
    .metadata; once the ledger, pages, package server and record hold it, nothing: "already done"."""
    first = promotion_facts(shipped_text, state=ChannelState(), stored={})
    plan = promoting.plan(first, at="2026-12-01T00:00:00.000000Z", writer="w")
    (wheel_copy, meta_copy) = plan.copies
    assert meta_copy.dest == f"{wheel_copy.dest}.metadata" and (wheel_copy.sha256, meta_copy.sha256) == (A, B)
    assert plan.entry is not None and plan.entry.promotion == PromotionDigests(
        version=first.promotion.version, manifest_sha256=C, validation_sha256=(hashlib.sha256(b"record").hexdigest(),))
    assert {(f.key, f.form) for f in plan.entry.added} == {(wheel_copy.dest, "wheel"), (meta_copy.dest, "metadata")}
    page = next(v for k, v in plan.pages.items() if k.endswith("/index.json") and k.count("/") > 2)
    assert [f["hashes"]["sha256"] for f in json.loads(page)["files"]] == [A]
    assert set(plan.writes) == set(plan.pages) and plan.pypi and plan.record and not plan.done
    cut = promotion_facts(shipped_text, state=ChannelState(), stored={wheel_copy.dest: A})
    assert promoting.plan(cut, at="2026-12-01T00:00:00.000000Z", writer="w").copies == (meta_copy,)
    committed = ChannelState().after(chained(ChannelState(), plan.entry))
    entry = committed.entries[-1]
    finished = promotion_facts(shipped_text, state=committed, stored={wheel_copy.dest: A, meta_copy.dest: B},
                               pages=dict(plan.pages), recorded=frozenset({publishing.record_key("release", entry)}),
                               pypi_done=("p-1-py3-none-any.whl",))
    again = promoting.plan(finished, at="2026-12-01T00:00:00.000000Z", writer="w")
    assert again.done and again.entry is None
    record = promoting.record_of(finished.promotion, committed, entry)
    assert record.ledger_entry == entry.id and record.unchanged == ()


def test_a_promotion_copies_the_test_channels_provenance_and_its_entry_and_pages_name_it(shipped_text: str) -> None:
    """The provenance gathered from the test channel is copied last (after the .metadata), recorded in the entry
    with form "provenance" and the gathered sha256 and size, and linked from the pages rendered from the ledger;
    a rerun after its copy was cut short copies only it."""
    first = promotion_facts(shipped_text, state=ChannelState(), stored={}, provenance=(C, 7))
    plan = promoting.plan(first, at="2026-12-01T00:00:00.000000Z", writer="w")
    (wheel_copy, meta_copy, prov_copy) = plan.copies
    assert (prov_copy.source, prov_copy.dest, prov_copy.sha256) == (
        f"{wheel_copy.source}.provenance", f"{wheel_copy.dest}.provenance", C)
    assert plan.entry is not None
    assert {(f.key, f.form, f.sha256, f.size) for f in plan.entry.added if f.form == "provenance"} == {
        (prov_copy.dest, "provenance", C, 7)}
    page = next(v for k, v in plan.pages.items() if k.endswith("/index.json") and k.count("/") > 2)
    (item,) = json.loads(page)["files"]
    assert item["provenance"].endswith(".whl.provenance")
    cut = promotion_facts(shipped_text, state=ChannelState(), stored={wheel_copy.dest: A, meta_copy.dest: B},
                          provenance=(C, 7))
    assert promoting.plan(cut, at="2026-12-01T00:00:00.000000Z", writer="w").copies == (prov_copy,)
    without = promoting.plan(promotion_facts(shipped_text, state=ChannelState(), stored={}),
                             at="2026-12-01T00:00:00.000000Z", writer="w")
    assert len(without.copies) == 2 and without.entry is not None and without.entry.added == plan.entry.added[:2]


def test_only_a_projects_own_page_lists_files(shipped_text: str) -> None:
    """A folder's own index.json (PEP 691's project list) is no project page: a bucket from before the ledger holds
    one in every folder, and reading it for files refused the whole bucket (exit 40)."""
    m = matrix.loads(shipped_text)
    channel = m.channels.channel("test")
    folders = tuple((v.label, channel.index_path(v.label)) for v in m.variants)
    (_label, folder), other = folders[0], folders[1][1]
    project = m.project.name
    assert publishing.project_page(f"{folder}{project}/index.json", folders)
    assert not publishing.project_page(f"{folder}index.json", folders)
    assert not publishing.project_page(f"{folder}{project}/index.html", folders)
    assert not publishing.project_page(f"{other}{project}/index.json", folders[:1])
    page = {f"{folder}index.json": json.dumps({"projects": [{"name": project}]}).encode()}
    assert publishing.unrecorded(ChannelState(), page, {}, folders=folders, at="now", writer="test") is None
