"""The closing summary of a build, sized for a person: at most :data:`MAX_LINES` lines at any matrix size.

A release matrix has dozens of targets and a laptop builds a few of them, so a row per target hides
the rows that matter. The summary is one line of counts, then one line per status of the wheels
(built, reused: how many, a glob-ish pattern of their ids, sizes and times), every failure with its
whole reason, and the skips grouped by reason: their count, a pattern of their ids and the reason
once. Reasons that differ in a word or two (``no CPython 3.14`` / ``no CPython 3.15``) share a group,
the differing words shown as ``{3.14,3.15}``. When the lines would not fit, failures are grouped by
reason too, and the last groups are folded into one line that says where the rest is: ``results.json``
keeps every record and ``-v`` the full per-target table (:func:`full_table`).

Pure functions over :class:`~builders.pipeline.results.Result`: nothing here prints.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from builders.base.console import markdown_table
from builders.pipeline.remotecache import cell
from builders.pipeline.results import STATUSES, Result

MAX_DIFFERING_WORDS = 2  # reasons differing in at most this many words are one group
MAX_ALTERNATIVES = 4  # more differing words than this at one place are shown as "*"
MAX_PATTERNS = 4  # id patterns shown per group before "+N more"
REASON_CUT = 120  # a failure's reason is cut here in the -v table (the summary, results.json and the log have it all)
PATTERN_WIDTH = 56  # the target column's width at most: a longer pattern pushes only its own line's detail
MAX_LINES = 15  # the console summary's lines, the counts included, however large the matrix
WHEELS = ("built", "reused")
FAILURES = ("failed", "interrupted")
FULL_HEADERS = ("target", "status", "stage / reason", "size", "sha256", "time")
SHARED_HEADER = "compile cache"  # a shared compile cache's hits per target (builders.pipeline.remotecache.cell)

Fields = tuple[str, str, str]  # a target id's (variant, python, platform)
Test = Callable[[str], bool]
T = TypeVar("T")


@dataclass(frozen=True, kw_only=True)
class SkipGroup:
    """Skipped targets that share one reason (up to a few differing words)."""

    reason: str
    ids: tuple[str, ...]


def reason_of(result: Result) -> str:
    """A result's reason with the stage it was decided at, as the full table shows it."""
    return (f"{result.stage}: " if result.stage else "") + result.reason


def group_skips(skips: Sequence[tuple[str, str]]) -> list[SkipGroup]:
    """``(id, reason)`` pairs grouped by reason, groups in order of first appearance."""
    groups: list[tuple[list[str], list[dict[str, None]], list[str]]] = []  # (words, each word's variants, ids)
    for target, reason in skips:
        words = reason.split(" ")
        for template, seen, ids in groups:
            if _fits(template, seen, words):
                for i, word in enumerate(words):
                    seen[i][word] = None
                ids.append(target)
                break
        else:
            groups.append((words, [{w: None} for w in words], [target]))
    return [SkipGroup(reason=_merged(template, seen), ids=tuple(ids)) for template, seen, ids in groups]


def _fits(template: list[str], seen: list[dict[str, None]], words: list[str]) -> bool:
    if len(words) != len(template):
        return False
    differing = sum(1 for i, w in enumerate(words) if len(seen[i]) > 1 or w != template[i])
    return differing <= MAX_DIFFERING_WORDS and differing * 2 < len(words)


def _merged(template: list[str], seen: list[dict[str, None]]) -> str:
    """The group's reason: its differing words in braces, in order of appearance, so that the n-th
    alternative of one place goes with the n-th of another."""
    out = []
    for word, variants in zip(template, seen):
        if len(variants) == 1:
            out.append(word)
        else:
            out.append("{" + ",".join(variants) + "}" if len(variants) <= MAX_ALTERNATIVES else "*")
    return " ".join(out)


def _natural(text: str) -> tuple[tuple[int, str], ...]:
    """Sort key that puts 7.14 before 10.0 and cp39 before cp311."""
    parts: list[tuple[int, str]] = []
    number = ""
    for ch in text + "\0":
        if ch.isdigit():
            number += ch
            continue
        if number:
            parts.append((int(number), ""))
            number = ""
        parts.append((-1, ch))
    return tuple(parts)


def split_id(target: str) -> Fields | None:
    """``cu132-cp312-linux-x86_64`` as ``(cu132, cp312, linux-x86_64)``; None for an id of another shape."""
    parts = target.split("-", 2)
    return (parts[0], parts[1], parts[2]) if len(parts) == 3 and all(parts) else None


def id_pattern(ids: Sequence[str], universe: Sequence[str]) -> str:
    """A short glob-ish description of ``ids`` that matches no other id of ``universe``.

    Fields are widened to ``*``, ``prefix*`` or a character class (``cp31[45]t``) only where
    that keeps every other target of the run out; what cannot be put so is listed in braces.
    """
    fields = [split_id(t) for t in ids]
    every = [split_id(t) for t in universe]
    if any(f is None for f in fields):
        return _listed(list(ids))
    inside = _unique(f for f in fields if f)
    chosen = set(inside)
    others = [f for f in every if f and f not in chosen]
    return _listed(_unique(_render(block, others) for block in _blocks(inside)))


def _listed(items: list[str]) -> str:
    shown = ", ".join(items[:MAX_PATTERNS])
    return shown + (f" (+{len(items) - MAX_PATTERNS} more)" if len(items) > MAX_PATTERNS else "")


def _blocks(fields: list[Fields]) -> list[tuple[list[str], ...]]:
    """``fields`` cut into products (variants x pythons x platforms): whole, else per platform, else per
    platform and python. Values keep their order of first appearance."""
    if _is_product(fields):
        return [_columns(fields)]
    out: list[tuple[list[str], ...]] = []
    for platform in _unique(f[2] for f in fields):
        on = [f for f in fields if f[2] == platform]
        if _is_product(on):
            out.append(_columns(on))
            continue
        for python in _unique(f[1] for f in on):
            out.append(_columns([f for f in on if f[1] == python]))
    return out


def _unique(values: Iterable[T]) -> list[T]:
    return list(dict.fromkeys(values))


def _columns(fields: list[Fields]) -> tuple[list[str], ...]:
    return tuple(_unique(f[i] for f in fields) for i in range(3))


def _is_product(fields: list[Fields]) -> bool:
    columns = _columns(fields)
    return len(fields) == len(columns[0]) * len(columns[1]) * len(columns[2])


def _render(block: tuple[list[str], ...], others: list[Fields]) -> str:
    """Each field as general as it can be while no other target matches the whole pattern."""
    tests: list[Test] = [_exact(values) for values in block]
    shown = [_exact_text(values) for values in block]
    for i, values in enumerate(block):
        for text, test in _widenings(values):
            trial = [*tests[:i], test, *tests[i + 1:]]
            if not any(all(t(f[k]) for k, t in enumerate(trial)) for f in others):
                tests[i], shown[i] = test, text
                break
    pattern = "-".join(shown)
    while "*-*" in pattern:
        pattern = pattern.replace("*-*", "*")
    return pattern


def _exact(values: list[str]) -> Test:
    chosen = frozenset(values)
    return lambda v: v in chosen


def _exact_text(values: list[str]) -> str:
    return values[0] if len(values) == 1 else "{" + ",".join(sorted(values, key=_natural)) + "}"


def _widenings(values: list[str]) -> list[tuple[str, Test]]:
    """The ways to write ``values`` more generally, most general first."""
    out: list[tuple[str, Test]] = [("*", lambda v: True)]
    prefix = _common_prefix(values)
    if len(values) > 1 and len(prefix) >= 2:
        out.append((prefix + "*", lambda v: v.startswith(prefix)))
    klass = _char_class(values)
    if klass:
        out.append(klass)
    return out


def _common_prefix(values: list[str]) -> str:
    first, last = min(values), max(values)
    n = 0
    while n < min(len(first), len(last)) and first[n] == last[n]:
        n += 1
    return first[:n]


def _char_class(values: list[str]) -> tuple[str, Test] | None:
    """``cp314t``, ``cp315t`` as ``cp31[45]t``: same length, differing at one place only."""
    if len(values) < 2 or len({len(v) for v in values}) != 1:
        return None
    places = [i for i in range(len(values[0])) if len({v[i] for v in values}) > 1]
    if len(places) != 1:
        return None
    at = places[0]
    head, tail = values[0][:at], values[0][at + 1:]
    chars = "".join(sorted({v[at] for v in values}))
    return f"{head}[{chars}]{tail}", lambda v: len(v) == len(head) + 1 + len(tail) and v.startswith(head) \
        and v.endswith(tail) and v[at] in chars


def counts(outcomes: Sequence[Result]) -> str:
    """``9 built, 68 skipped of 77 targets``."""
    found = {s: sum(r.status == s for r in outcomes) for s in STATUSES}
    said = ", ".join(f"{n} {s}" for s, n in found.items() if n)
    noun = "target" if len(outcomes) == 1 else "targets"
    return f"{said} of {len(outcomes)} {noun}" if said else "nothing selected"


Row = tuple[str, str, str]  # (status, or count and status; target or pattern; detail)


@dataclass(frozen=True, kw_only=True)
class _Line:
    """One row of the summary before it is written: the results it stands for and what it says of them."""

    status: str
    ids: tuple[str, ...]
    detail: str
    single: bool = False  # one result, named by its id (a wheel, or a failure in full)


def rows(outcomes: Sequence[Result], budget: int = MAX_LINES - 1) -> list[Row]:
    """At most ``budget`` rows: the wheels grouped per status, each failure in full (grouped by reason when they
    would not fit), then the skips grouped by reason; groups that do not fit are folded into one last row."""
    ids = [r.id for r in outcomes]
    wheels = [line for status in WHEELS if (line := _wheels(status, [r for r in outcomes if r.status == status]))]
    failures = [_Line(status=r.status, ids=(r.id,), detail=_oneline(r), single=True)
                for r in outcomes if r.status in FAILURES]
    skips = _grouped(outcomes, ("skipped",))
    room = budget - len(wheels)
    if len(failures) > room - min(len(skips), 1):  # the failures come first: each in full while they fit
        failures = _grouped(outcomes, FAILURES)
    failures = _folded(failures, room - min(len(skips), 1))
    return [_row(line, ids) for line in (*wheels, *failures, *_folded(skips, room - len(failures)))]


def _row(line: _Line, ids: Sequence[str]) -> Row:
    if line.single:
        return line.status, line.ids[0], line.detail
    return f"{len(line.ids)} {line.status}", id_pattern(line.ids, ids), line.detail


def _oneline(result: Result) -> str:
    return " ".join(reason_of(result).split())


def _wheels(status: str, done: Sequence[Result]) -> _Line | None:
    """One row for every wheel of ``status``: a lone wheel as it is (size, sha256, time), several summed up."""
    if not done:
        return None
    if len(done) == 1:
        return _Line(status=status, ids=(done[0].id,), detail=_detail(done[0]), single=True)
    sizes, times = sorted(r.size for r in done), sorted(sum(r.durations.values()) for r in done)
    detail = (f"{size(sum(sizes))} in all ({size(sizes[0]) or '0'} to {size(sizes[-1])}), "
              f"{times[0]:.0f}s to {times[-1]:.0f}s each")
    return _Line(status=status, ids=tuple(r.id for r in done), detail=f"{detail}  {_shared_cells(done)}".strip())


def _shared_cells(done: Sequence[Result]) -> str:
    """The wheels' shared compile-cache figures summed (as :func:`cell` shows one target's), or ``""``."""
    records = [r.compiler_cache for r in done if r.compiler_cache.get("backend")]
    if not records:
        return ""
    if records[0].get("unavailable"):  # one cause for the run: the store was looked at once, before the builds
        return cell(records[0])
    hits, misses = sum(int(c.get("hits", 0)) for c in records), sum(int(c.get("misses", 0)) for c in records)
    return cell({"backend": records[0]["backend"], "hits": hits, "misses": misses,
                 "hit_rate": hits / (hits + misses) if hits + misses else None,
                 "writes": sum(int(c.get("writes", 0)) for c in records),
                 "mode": "/".join(dict.fromkeys(str(c.get("mode", "?")) for c in records))})


def _grouped(outcomes: Sequence[Result], statuses: Sequence[str]) -> list[_Line]:
    """The results of each of ``statuses`` grouped by reason: the reason once for all its targets."""
    return [_Line(status=status, ids=g.ids, detail=g.reason) for status in statuses
            for g in group_skips([(r.id, _oneline(r)) for r in outcomes if r.status == status])]


def _folded(lines: list[_Line], room: int) -> list[_Line]:
    """``lines`` in at most ``room`` rows (at least one): those past it as one row that says where they are."""
    room = max(room, 1)
    if len(lines) <= room:
        return lines
    kept, rest = lines[:room - 1], lines[room - 1:]
    statuses = "/".join(dict.fromkeys(line.status for line in rest))
    return [*kept, _Line(status=statuses, ids=tuple(i for line in rest for i in line.ids),
                         detail=f"{len(rest)} more reasons: each with -v and in results.json")]


def _detail(result: Result) -> str:
    if result.status in ("built", "reused"):
        shared = cell(result.compiler_cache)  # a shared compile cache: its hit rate, on the wheel's own line
        return f"{size(result.size):>9}  {result.sha256[:12]}  {_seconds(result):>5}  {shared}".strip()
    why = " ".join(reason_of(result).split())  # one line: a reason may hold a log's lines
    return why if len(why) <= REASON_CUT else why[:REASON_CUT - 1] + "…"


def _seconds(result: Result) -> str:
    return f"{sum(result.durations.values()):.0f}s"


def console_lines(outcomes: Sequence[Result]) -> list[str]:
    """The closing summary: the counts, then :func:`rows` in aligned columns."""
    table = rows(outcomes)
    head = counts(outcomes) + ("; every record in results.json, each target with -v" if table else "")
    if not table:
        return [head]
    widths = [min(max(len(row[i]) for row in table), PATTERN_WIDTH) for i in range(2)]  # a long pattern: its line
    return [head] + [f"{s:<{widths[0]}}  {t:<{widths[1]}}  {d}".rstrip() for s, t, d in table]


def full_table(outcomes: Sequence[Result]) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """Every target, one row each (``build -v`` shows it before the summary); a column of shared compile-cache
    hits where the run used one."""
    shared = _shared(outcomes)
    return FULL_HEADERS + shared, [(r.id, r.status, _detail(r) if r.status not in ("built", "reused") else "",
                                    size(r.size), r.sha256[:12], _seconds(r), *_cells(r, shared)) for r in outcomes]


def _shared(outcomes: Sequence[Result]) -> tuple[str, ...]:
    return (SHARED_HEADER,) if any(r.compiler_cache.get("backend") for r in outcomes) else ()


def _cells(result: Result, shared: tuple[str, ...]) -> tuple[str, ...]:
    return (cell(result.compiler_cache),) if shared else ()


def markdown(outcomes: Sequence[Result]) -> str:
    """The job summary: the counts, the wheels and failures, the skip groups, then every skip folded."""
    done = [r for r in outcomes if r.status != "skipped"]
    parts = [f"**{counts(outcomes)}**"]
    if done:
        shared = _shared(done)
        parts.append(markdown_table(("target", "status", "stage / reason", "size", "sha256", "time", *shared),
                                    [(r.id, r.status, " ".join(reason_of(r).split()), size(r.size), r.sha256[:12],
                                      _seconds(r), *_cells(r, shared)) for r in done]))
    skips = [(r.id, reason_of(r)) for r in outcomes if r.status == "skipped"]
    if skips:
        ids = [r.id for r in outcomes]
        groups = group_skips(skips)
        parts.append(markdown_table(("skipped", "targets", "reason"),
                                    [(str(len(g.ids)), f"`{id_pattern(g.ids, ids)}`", g.reason) for g in groups]))
        parts.append("<details><summary>every skipped target</summary>\n\n"
                     + markdown_table(("target", "reason"), skips) + "\n\n</details>")
    return "\n\n".join(parts) + "\n"


def size(n: int) -> str:
    """A wheel's size as people read it (empty for none)."""
    if not n:
        return ""
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 1024:.1f} KiB"
