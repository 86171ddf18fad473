"""The build's closing summary: one row per wheel or failure, skips grouped by reason with an id pattern.

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


def test_console_lines_one_per_wheel_and_per_reason(ids) -> None:
    outcomes = run_of(ids)
    lines = summary.console_lines(outcomes)
    platforms = {summary.split_id(t)[2] for t in ids[3:]}
    assert len(lines) == 1 + 3 + 1  # counts, three rows, one skip group (one reason up to a word)
    assert lines[0].startswith(f"1 built, 1 reused, 1 failed, {len(ids) - 3} skipped of {len(ids)} targets")
    assert lines[1].split()[:2] == ["built", ids[0]] and "3.0 MiB" in lines[1] and "a" * 12 in lines[1]
    assert lines[2].split()[:2] == ["reused", ids[1]] and "2.0 KiB" in lines[2]
    # the reason is cut short (the columns before it are as wide as the widest row, a skip group's glob)
    assert lines[3].split()[:2] == ["failed", ids[2]] and len(lines[3].split(maxsplit=2)[2]) < 200 and "…" in lines[3]
    assert lines[4].startswith(f"{len(ids) - 3} skipped")
    # every platform's glob, unless the line caps its globs ("(+N more)": a grown matrix has more than fit)
    assert all(p in lines[4] for p in platforms) or ("(+" in lines[4] and sum(p in lines[4] for p in platforms) >= 2)


def test_a_shared_compile_cache_adds_its_hits_to_the_wheels_line_not_a_line(ids) -> None:
    plain = run_of(ids)
    record = remotecache.stats_of({"stats": {"cache_hits": {"counts": {"C/C++": 14}},
                                             "cache_misses": {"counts": {"C/C++": 1}}}}, "read-only")
    shared = [replace(plain[0], compiler_cache=record), *plain[1:]]
    lines = summary.console_lines(shared)
    assert len(lines) == len(summary.console_lines(plain))
    assert lines[1].endswith(remotecache.cell(record)) and "hits" not in "".join(summary.console_lines(plain))
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
