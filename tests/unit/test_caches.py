"""``builders cache`` and the store budget: which entries go (pure), and the command on a tmp cache."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from builders import cli
from builders.pipeline import caches
from builders.pipeline.caches import DAY, Entry, Keep, choose, parse_size
from builders.pipeline.store import Store

NOW = 1_800_000_000.0


def entry(key: str, size: int, days_ago: float, kind: str = "store", path: Path | None = None) -> Entry:
    return Entry(kind=kind, key=key, size=size, used=NOW - days_ago * DAY, path=path)


def keys(entries: list[Entry]) -> list[str]:
    return [e.key for e in entries]


def test_nothing_goes_without_a_limit_but_leftovers_of_killed_runs() -> None:
    entries = [entry("a", 10, 100), entry(".a-123", 5, 0, kind=caches.PARTIAL)]
    assert keys(choose(entries, Keep(), now=NOW)) == [".a-123"]


def test_older_than_takes_exactly_the_entries_unused_that_long() -> None:
    entries = [entry("old", 10, 31), entry("edge", 10, 29.9), entry("new", 10, 1)]
    assert keys(choose(entries, Keep(), now=NOW, older_than=30)) == ["old"]


def test_max_size_takes_the_least_recently_used_until_the_total_fits() -> None:
    entries = [entry("c", 30, 1), entry("a", 30, 9), entry("b", 30, 5), entry("d", 30, 0)]
    assert keys(choose(entries, Keep(), now=NOW, max_size=60)) == ["a", "b"]
    assert keys(choose(entries, Keep(), now=NOW, max_size=120)) == []
    assert keys(choose(entries, Keep(), now=NOW, max_size=0)) == ["a", "b", "c", "d"]


def test_what_the_plans_reference_is_never_taken_even_over_budget() -> None:
    entries = [entry("kept", 100, 50), entry("a", 10, 9), entry("b", 10, 1)]
    keep = Keep(keys=frozenset({"kept"}))
    assert keys(choose(entries, keep, now=NOW, max_size=50, older_than=0)) == ["a", "b"]


def test_age_and_budget_together_count_what_age_already_freed() -> None:
    entries = [entry("ancient", 50, 400), entry("a", 30, 9), entry("b", 30, 1)]
    assert keys(choose(entries, Keep(), now=NOW, older_than=365, max_size=60)) == ["ancient"]


def test_a_kept_folder_keeps_the_entry_that_holds_it(tmp_path: Path) -> None:
    cuda = tmp_path / "cuda-13.2.2"
    keep = Keep(paths=frozenset({cuda / "cuda"}))
    assert keep.holds(entry("cuda-13.2.2", 1, 0, kind="toolchain", path=cuda))
    assert not keep.holds(entry("cuda-13.4.2", 1, 0, kind="toolchain", path=tmp_path / "cuda-13.4.2"))
    assert not keep.holds(entry(".partial-x", 1, 0, kind=caches.PARTIAL, path=cuda))


@pytest.mark.parametrize(("text", "size"), [("1000", 1000), ("500M", 500 * 2**20), ("20G", 20 * 2**30),
                                             ("1.5GiB", int(1.5 * 2**30)), ("2k", 2048), ("3 MB", 3 * 2**20)])
def test_sizes_read_as_people_write_them(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "lots", "-1G", "5X"])
def test_a_size_that_is_not_one_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="is not a size"):
        parse_size(text)


# -- on disk ---------------------------------------------------------------------------------


def stored(output: Path, key: str, size: int, days_ago: float) -> Path:
    """A real store entry of ``size`` bytes, last used ``days_ago`` days ago."""
    wheel = output / f"{key}.whl"
    wheel.parent.mkdir(parents=True, exist_ok=True)
    wheel.write_bytes(b"x" * size)
    entry = Store(output / ".store").put(key, wheel, {"id": key}).wheel.parent
    wheel.unlink()
    when = time.time() - days_ago * DAY
    for path in (*entry.iterdir(), entry):
        os.utime(path, (when, when))
    return entry


def test_store_entries_are_wheels_cores_and_leftovers(tmp_path: Path) -> None:
    stored(tmp_path, "aa", 100, 1)
    (tmp_path / ".store" / ".aa-killed").mkdir()
    (tmp_path / ".store" / "core" / "c1").mkdir(parents=True)
    (tmp_path / ".store" / "core" / "c1" / "lib.a").write_bytes(b"y" * 50)
    found = {(e.kind, e.key) for e in caches.store_entries(tmp_path)}
    assert found == {("store", "aa"), (caches.PARTIAL, ".aa-killed"), ("core", "c1")}
    aa = next(e for e in caches.store_entries(tmp_path) if e.key == "aa")
    assert aa.size > 100 and time.time() - aa.used == pytest.approx(DAY, abs=60)


def test_a_temporary_folder_of_a_running_build_is_not_a_leftover(tmp_path: Path) -> None:
    from builders.pipeline.store import temp_prefix

    (tmp_path / ".store").mkdir()
    (tmp_path / ".store" / f"{temp_prefix('aa' * 32)}x").mkdir()  # ours: we are running
    (tmp_path / ".store" / ".aaaaaaaaaaaa-999999999-x").mkdir()  # no such process
    assert [e.key for e in caches.store_entries(tmp_path)] == [".aaaaaaaaaaaa-999999999-x"]


def test_a_store_over_budget_is_trimmed_oldest_first_never_the_protected(tmp_path: Path) -> None:
    for key, days in (("old", 9), ("mid", 5), ("new", 1), ("just-built", 20)):
        stored(tmp_path, key, 1000, days)
    gone = caches.trim_store(tmp_path, 2500, Keep(keys=frozenset({"just-built"})), now=time.time())
    assert keys(gone) == ["old", "mid"]
    assert sorted(p.name for p in (tmp_path / ".store").iterdir()) == ["just-built", "new"]


def test_a_reused_entry_counts_as_used_now(tmp_path: Path) -> None:
    stored(tmp_path, "aa", 10, 30)
    Store(tmp_path / ".store").touch("aa")
    (aa,) = caches.store_entries(tmp_path)
    assert time.time() - aa.used < 60


# -- the command -------------------------------------------------------------------------------


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache like ~/.cache/builders, and a PATH with no container engine (no subprocess runs)."""
    home = tmp_path / "cache"
    for folder, size, days in (("toolchains/cuda-13.2.2", 4000, 40), ("toolchains/.partial-cuda-1", 10, 0),
                               ("ccache/host-cpu-default", 2000, 2), ("uv", 3000, 1)):
        (home / folder).mkdir(parents=True)
        (home / folder / "data").write_bytes(b"z" * size)
        when = time.time() - days * DAY
        for path in (home / folder / "data", home / folder):
            os.utime(path, (when, when))
    monkeypatch.setenv("BUILDERS_CACHE", str(home))
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    monkeypatch.chdir(tmp_path)
    return home


def test_cache_list_shows_every_kind_with_sizes(cache_home: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    stored(tmp_path / "out", "d1", 500, 3)
    assert cli.main(["cache", "list", "--output", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    for name in ("cuda-13.2.2", ".partial-cuda-1", "host-cpu-default", "uv", "d1"):
        assert name in out
    assert "toolchain 3.9 KiB" in out and "total" in out


def test_cache_prune_by_age_and_budget(cache_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    stored(out, "d1", 500, 3)
    argv = ["cache", "prune", "--no-keep", "--output", str(out), "--older-than", "30"]
    assert cli.main([*argv, "--dry-run"]) == 0
    assert "would delete toolchain cuda-13.2.2" in capsys.readouterr().err
    assert (cache_home / "toolchains" / "cuda-13.2.2").is_dir()
    assert cli.main(argv) == 0
    assert sorted(p.name for p in (cache_home / "toolchains").iterdir()) == []  # old toolkit and leftover gone
    assert cli.main(["cache", "prune", "--no-keep", "--output", str(out), "--max-size", "4K"]) == 0
    # 5.4 KiB left: the wheel (3 days), then the compiler cache (2 days) go; uv's (1 day, 2.9 KiB) fits
    assert not (out / ".store" / "d1").exists() and not (cache_home / "ccache" / "host-cpu-default").exists()
    assert (cache_home / "uv").is_dir()


def test_cache_prune_needs_the_matrix_it_keeps_for(cache_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["cache", "prune", "--max-size", "0"]) == 19
    assert "--no-keep" in capsys.readouterr().err
    assert (cache_home / "uv").is_dir()


def test_the_build_budget_reads_option_then_environment_then_default() -> None:
    from builders.cli import parser
    from builders.cli.arguments import parse

    def store_budget(argv: list[str], env: dict[str, str]) -> int | None:
        return parse(parser(), ["build", *argv], env).store_budget

    assert store_budget(["--store-budget", "123"], {caches.STORE_BUDGET_ENV: "1G"}) == 123
    assert store_budget([], {caches.STORE_BUDGET_ENV: "1G"}) == 2**30
    assert store_budget([], {caches.STORE_BUDGET_ENV: "unlimited"}) is None
    assert store_budget([], {}) == parse_size(caches.DEFAULT_STORE_BUDGET)
    assert json.dumps(store_budget([], {}))


# -- with real plans ---------------------------------------------------------------------------


def test_the_keep_set_is_what_the_plans_use(m) -> None:
    from dataclasses import replace

    from tests.unit.test_buildplan import CONTAINER, HOST, built, context, plans

    local = built(plans(m, ctx=context(host=replace(HOST, ccache="/usr/bin/ccache"))))
    container = built(plans(m, CONTAINER))
    keep = caches.referenced([*local.values(), *container.values()])
    for plan in (*local.values(), *container.values()):
        assert plan.digest in keep.keys and (plan.core is None or plan.core.digest in keep.keys)
    assert {p.runner.image for p in container.values()} <= keep.keys
    cuda = next(p for p in local.values() if p.toolchain.pins)
    pin = Path(cuda.toolchain.root or "").relative_to("/cache").parts[0]
    assert keep.holds(entry(pin, 1, 0, kind="toolchain", path=Path("/cache") / pin))
    assert not keep.holds(entry("cuda-0.0.1", 1, 0, kind="toolchain", path=Path("/cache/cuda-0.0.1")))
    host_ccache = {v for p in local.values() for k, v in p.build.env if k == "CCACHE_DIR"}
    assert host_ccache and all(keep.holds(entry("c", 1, 0, kind="ccache", path=Path(d))) for d in host_ccache)
    for plan in container.values():
        (folder,) = plan.provision.folders
        assert keep.holds(entry("c", 1, 0, kind="ccache", path=Path(folder)))
    assert not keep.holds(entry("uv", 1, 0, kind="uv", path=Path("/uv")))


def test_build_notes_a_missing_ccache_once_and_only_for_builds_on_this_host(m) -> None:
    from dataclasses import replace

    from builders.pipeline.outcome import ccache_note
    from tests.unit.test_buildplan import CONTAINER, HOST, context, plans

    local = list(plans(m).values())
    assert ccache_note(local, HOST) == caches_note()
    assert "apt-get install ccache" in (ccache_note(local, HOST) or "")
    assert ccache_note(local, replace(HOST, ccache="/usr/bin/ccache")) is None
    assert ccache_note(list(plans(m, CONTAINER, ctx=context()).values()), HOST) is None


def caches_note() -> str:
    from builders.pipeline.compilercache import MISSING

    return MISSING


def test_a_killed_runs_half_placed_wheel_is_swept_a_running_ones_is_not(tmp_path: Path) -> None:
    from builders.pipeline.store import place, sweep_partials

    wheel = tmp_path / "a.whl"
    wheel.write_bytes(b"whole")
    folder = tmp_path / "whl" / "cpu"
    place(wheel, folder / "a.whl")
    (folder / ".b.whl.999999999.partial").write_bytes(b"half")  # its writer is gone
    (folder / f".c.whl.{os.getpid()}.partial").write_bytes(b"half")  # we are still writing it
    assert [p.name for p in sweep_partials(tmp_path / "whl")] == [".b.whl.999999999.partial"]
    assert sorted(p.name for p in folder.iterdir()) == [f".c.whl.{os.getpid()}.partial", "a.whl"]
