"""The build's closing summary: at most MAX_LINES lines at any matrix size; wheels grouped per status, each
failure in full while they fit, skips grouped by reason with an id pattern.

The ids come from the shipped matrix; a pattern is checked by expanding its braces and matching it
with fnmatch (the selectors' glob) against every target, so the check is independent of how the
pattern was found.
"""

from __future__ import annotations

import fnmatch
import io
import itertools
import re
from dataclasses import replace

import pytest

from builders.base.console import Console
from builders.matrix.targets import expand
from builders.pipeline import remotecache, summary
from builders.pipeline.executor import summarize
from builders.pipeline.results import Result


def matches(pattern: str, ids: list[str]) -> set[str]:
    """The ids a rendered pattern names: comma-separated globs, each with optional ``{a,b}`` sets."""
    out: set[str] = set()
    for glob in pattern.split(", "):
        pieces = re.split(r"\{([^}]*)\}", glob)
        choices = [p.split(",") if i % 2 else [p] for i, p in enumerate(pieces)]
        for parts in itertools.product(*choices):
            out |= set(fnmatch.filter(ids, "".join(parts)))
    return out


@pytest.fixture(scope="module")
def ids(m) -> list[str]:
    return [t.id for t in expand(m)[0]]


def field_partitions(ids: list[str]):
    """Groups a host could skip together: per platform, per python, per variant, per (variant, python)."""
    fields = {t: summary.split_id(t) for t in ids}
    for keys in ((2,), (1,), (0,), (0, 1), (1, 2)):
        groups: dict[tuple[str, ...], list[str]] = {}
        for t, f in fields.items():
            groups.setdefault(tuple(f[k] for k in keys), []).append(t)
        yield from groups.values()


def test_a_pattern_names_exactly_its_group(ids) -> None:
    tried = 0
    for group in field_partitions(ids):
        pattern = summary.id_pattern(group, ids)
        assert matches(pattern, ids) == set(group), pattern
        tried += 1
    assert tried > len(ids) // 2


def test_unions_of_groups_are_named_exactly(ids) -> None:
    groups = list(field_partitions(ids))
    for a, b in itertools.combinations(groups[:12], 2):
        group = list(dict.fromkeys(a + b))
        pattern = summary.id_pattern(group, ids)
        assert matches(pattern, ids) == set(group), pattern


def test_a_whole_platform_is_one_glob(ids) -> None:
    platform = summary.split_id(ids[-1])[2]
    group = [t for t in ids if t.endswith("-" + platform)]
    assert summary.id_pattern(group, ids) == f"*-{platform}"
    assert summary.id_pattern(ids, ids) == "*"


def test_ids_of_another_shape_are_listed() -> None:
    assert summary.id_pattern(["x", "y"], ["x", "y", "z"]) == "x, y"
    many = [f"t{i}" for i in range(9)]
    assert summary.id_pattern(many, many).endswith(f"(+{len(many) - summary.MAX_PATTERNS} more)")


def test_reasons_differing_in_a_word_are_one_group() -> None:
    skips = [("a", "no CPython 3.14 interpreter found"), ("b", "no CPython 3.15 interpreter found"),
             ("c", "no free-threaded CPython 3.14t interpreter found"), ("d", "no CPython 3.14 interpreter found")]
    groups = summary.group_skips(skips)
    assert [(g.reason, g.ids) for g in groups] == [
        ("no CPython {3.14,3.15} interpreter found", ("a", "b", "d")),
        ("no free-threaded CPython 3.14t interpreter found", ("c",)),
    ]


def test_alternatives_keep_their_order_so_places_pair_up() -> None:
    skips = [(str(i), f"needs a {host} host; CI runner: {runner}")
             for i, (host, runner) in enumerate([("linux-aarch64", "ubuntu-arm"), ("windows", "windows-2025")])]
    (group,) = summary.group_skips(skips)
    assert group.reason == "needs a {linux-aarch64,windows} host; CI runner: {ubuntu-arm,windows-2025}"


def test_different_reasons_stay_apart() -> None:
    skips = [("a", "x"), ("b", "y"), ("c", "toolkit missing here"), ("d", "image lacks CPython entirely")]
    assert len(summary.group_skips(skips)) == 4


def run_of(ids: list[str]) -> list[Result]:
    """A run like a laptop's: the first three built (one reused), one failed, the rest skipped per platform."""
    out = [Result(id=ids[0], status="built", size=3 << 20, sha256="a" * 64, durations={"build": 40.4}),
           Result(id=ids[1], status="reused", size=2048, sha256="b" * 64),
           Result(id=ids[2], status="failed", stage="build", reason="exit 1\n" + "x" * 500)]
    for t in ids[3:]:
        platform = summary.split_id(t)[2]
        out.append(Result(id=t, status="skipped", reason=f"needs a {platform} host (this is linux-x86_64)"))
    return out


def test_console_lines_one_per_wheel_status_each_failure_in_full_and_one_per_reason(ids) -> None:
    outcomes = run_of(ids)
    lines = summary.console_lines(outcomes)
    platforms = {summary.split_id(t)[2] for t in ids[3:]}
    assert len(lines) == 1 + 3 + 1  # counts, three rows, one skip group (one reason up to a word)
    assert lines[0].startswith(f"1 built, 1 reused, 1 failed, {len(ids) - 3} skipped of {len(ids)} targets")
    assert lines[1].split()[:2] == ["built", ids[0]] and "3.0 MiB" in lines[1] and "a" * 12 in lines[1]
    assert lines[2].split()[:2] == ["reused", ids[1]] and "2.0 KiB" in lines[2]
    assert lines[3].split()[:2] == ["failed", ids[2]] and lines[3].endswith("build: exit 1 " + "x" * 500)  # in full
    assert lines[4].startswith(f"{len(ids) - 3} skipped")
    # every platform's glob, unless the line caps its globs ("(+N more)": a grown matrix has more than fit)
    assert all(p in lines[4] for p in platforms) or ("(+" in lines[4] and sum(p in lines[4] for p in platforms) >= 2)


def counted(lines: list[str]) -> int:
    """The results a summary's rows stand for: ``N status`` for a group, one for a row that names its target."""
    return sum(int(line.split()[0]) if line.split()[0].isdigit() else 1 for line in lines[1:])


def test_the_wheels_of_a_status_are_one_line_naming_exactly_them(ids) -> None:
    half = ids[: len(ids) // 2]
    outcomes = [Result(id=t, status="built" if t in half else "skipped", size=(i + 1) << 20, sha256="c" * 64,
                       durations={"build": 10.0 + i}, reason="" if t in half else "needs another host")
                for i, t in enumerate(ids)]
    lines = summary.console_lines(outcomes)
    assert len(lines) == 3 and lines[1].startswith(f"{len(half)} built ")
    pattern = summary.rows(outcomes)[0][1]
    assert "(+" in pattern or matches(pattern, ids) == set(half)
    assert f"{summary.size(sum((i + 1) << 20 for i in range(len(half))))} in all" in lines[1]
    assert "10s to" in lines[1] and counted(lines) == len(ids)


def universe(labels: int, pythons: int, platforms: int) -> list[str]:
    return [f"{v}-cp3{p}-{os}" for v in ("cpu", *(f"cu1{i:02}" for i in range(labels - 1)))
            for p in range(10, 10 + pythons) for os in ("linux-x86_64", "linux-aarch64", "windows-x86_64",
                                                        "macos-arm64", "linux-riscv64")[:platforms]]


def mixed_run(ids: list[str], reasons: int, failures: int) -> list[Result]:
    """Every status; ``failures`` failures with a reason each, skips with ``reasons`` reasons that differ in many
    words (never one group)."""
    out = []
    for i, t in enumerate(ids):
        if i < failures:
            out.append(Result(id=t, status="failed", stage="build", reason=f"compiler {i} said: error number {i}"))
        elif i % 7 == 0:
            out.append(Result(id=t, status="built", size=1 << 20, sha256="d" * 64, durations={"build": 3.0}))
        elif i % 11 == 0:
            out.append(Result(id=t, status="reused", size=1 << 20, sha256="e" * 64))
        else:
            k = i % reasons
            out.append(Result(id=t, status="skipped", reason=f"r{k} a{k} b{k} c{k} d{k} here"))
    return out


@pytest.mark.parametrize(("failures", "reasons"), [(0, 1), (3, 4), (5, 40), (60, 3), (200, 50)])
def test_at_most_max_lines_at_any_size_every_result_counted(ids, failures: int, reasons: int) -> None:
    """The shipped (or grown) matrix, and a synthetic one of hundreds of targets: never more than MAX_LINES."""
    for universe_ids in (ids, universe(labels=12, pythons=7, platforms=5)):
        outcomes = mixed_run(universe_ids, reasons, min(failures, len(universe_ids) // 2))
        lines = summary.console_lines(outcomes)
        assert len(lines) <= summary.MAX_LINES, "\n".join(lines)
        assert counted(lines) == len(outcomes), "\n".join(lines)
        failed = [r for r in outcomes if r.status == "failed"]
        if len(failed) + 3 < summary.MAX_LINES:  # they fit beside the wheels and a skip line: each named, whole
            assert all(any(r.id in line and line.endswith(summary.reason_of(r)) for line in lines) for r in failed)


def test_the_shipped_matrix_all_built_is_two_lines(ids) -> None:
    outcomes = [Result(id=t, status="built", size=1 << 20, sha256="f" * 64, durations={"build": 1.0}) for t in ids]
    lines = summary.console_lines(outcomes)
    assert len(lines) == 2 and lines[1].startswith(f"{len(ids)} built") and summary.rows(outcomes)[0][1] == "*"


def test_a_shared_compile_cache_adds_its_hits_to_the_wheels_line_not_a_line(ids) -> None:
    plain = run_of(ids)
    record = remotecache.stats_of({"stats": {"cache_hits": {"counts": {"C/C++": 14}},
                                             "cache_misses": {"counts": {"C/C++": 1}}}}, "read-only")
    shared = [replace(plain[0], compiler_cache=record), *plain[1:]]
    lines = summary.console_lines(shared)
    assert len(lines) == len(summary.console_lines(plain))
    assert lines[1].endswith(remotecache.cell(record)) and "hits" not in "".join(summary.console_lines(plain))
    several = [replace(r, status="built", compiler_cache=record) for r in shared[:3]]  # summed on their one line
    (row,) = summary.rows(several)
    assert row[2].endswith(remotecache.cell({**record, "hits": 42, "misses": 3, "hit_rate": 42 / 45}))
    headers, rows = summary.full_table(shared)
    assert headers[-1] == summary.SHARED_HEADER and rows[0][-1] == remotecache.cell(record) and rows[1][-1] == ""
    assert summary.full_table(plain)[0] == summary.FULL_HEADERS
    assert remotecache.cell(record) in summary.markdown(shared) and "compile cache" not in summary.markdown(plain)


def test_summarize_prints_the_short_form_and_the_full_table_with_verbose(ids) -> None:
    outcomes = run_of(ids)
    short, full = io.StringIO(), io.StringIO()
    summarize(outcomes, Console(short, env={}))
    summarize(outcomes, Console(full, env={}), verbose=True)
    assert len(short.getvalue().strip().splitlines()) == len(summary.console_lines(outcomes))
    assert all(t in full.getvalue() for t in ids) and not all(t in short.getvalue() for t in ids)


def test_job_summary_has_the_groups_and_every_skip(ids, tmp_path) -> None:
    outcomes = run_of(ids)
    path = tmp_path / "summary.md"
    summarize(outcomes, Console(io.StringIO(), env={"GITHUB_STEP_SUMMARY": str(path)}))
    md = path.read_text()
    assert md.startswith(f"**{summary.counts(outcomes)}**")
    assert "| skipped | targets | reason |" in md and "<details>" in md
    assert all(f"| {t} |" in md for t in ids)  # every target in a row of its own, skips folded
    assert "x" * 500 in md  # the job summary keeps the whole reason


def test_nothing_selected() -> None:
    assert summary.console_lines([]) == ["nothing selected"]


def test_the_readmes_sample_summary_has_the_summarys_shape() -> None:
    """README's "What they print" block is a real run's summary: within MAX_LINES, the wheels on one line."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```\n(\d+ built, .*? of \d+ targets.*?)```", readme, re.DOTALL)
    assert block, "README.md shows no build summary"
    lines = block.group(1).splitlines()
    built = int(lines[0].split()[0])
    assert len(lines) <= summary.MAX_LINES and lines[1].startswith(f"{built} built ")
    assert counted(lines) == int(re.search(r"of (\d+) targets", lines[0]).group(1))
