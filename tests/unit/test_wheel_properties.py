"""Property: whatever bytes a wheel file holds, reading and verifying it raises nothing but
builders' own errors (``BuildersError`` subclasses); every problem is a finding or one error.

Inputs start from the good wheel of ``tests/hostile/make_wheels.py`` and are mutated the ways
an attacker or a broken disk would: bytes flipped anywhere (headers, data, central directory),
the file cut short, or the archive rewritten byte by byte with random member names (``../``,
NUL, newline, backslash, duplicates), random ``external_attr``, flags, compression methods,
CRCs and declared sizes. The three properties together run in a few seconds.
"""

from __future__ import annotations

import functools
import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builders.base.errors import BuildersError
from builders.wheel.archive import Wheel
from builders.wheel.verify import Expectation, verify
from tests.hostile import make_wheels as mw

# WHEEL_PROPERTY_EXAMPLES=5000 for a deeper search than the unit suite's few seconds.
SETTINGS = settings(max_examples=int(os.environ.get("WHEEL_PROPERTY_EXAMPLES", "60")), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@functools.cache
def good() -> bytes:
    return mw.good_bytes()


def exercise(data: bytes) -> None:
    """Every reading path over ``data`` as a wheel file: only BuildersError may come out."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / mw.facts().filename
        path.write_bytes(data)
        wheel = Wheel(path)
        for step in (lambda: verify(wheel, Expectation(target=mw.target(), dropped=mw.shipped().dropped)),
                     wheel.problems, lambda: _read_everything(wheel)):
            try:
                step()
            except BuildersError:
                pass


def _read_everything(wheel: Wheel) -> None:
    with wheel.open() as reader:
        for info in reader.infos:
            for _chunk in reader.member_stream(info):
                pass
        for part in (lambda: reader.metadata, lambda: reader.wheel_tags, reader.record, lambda: reader.requires_dist):
            try:
                part()
            except BuildersError:
                pass


@SETTINGS
@given(st.lists(st.tuples(st.integers(min_value=0), st.integers(min_value=1, max_value=255)), min_size=1, max_size=8))
def test_flipped_bytes(flips: list[tuple[int, int]]) -> None:
    data = bytearray(good())
    for position, mask in flips:
        data[position % len(data)] ^= mask
    exercise(bytes(data))


@SETTINGS
@given(st.integers(min_value=0), st.booleans())
def test_truncated(cut: int, keep_tail: bool) -> None:
    data = good()
    cut %= len(data)
    exercise(data[cut:] if keep_tail else data[:cut])


NAMES = st.one_of(
    st.lists(st.sampled_from(["a", "b", "/", ".", "../", "\\", "\x00", "\n", "\x7f", "é", ":", "C"]),
             max_size=10).map("".join),
    st.binary(max_size=12),  # not UTF-8 although the UTF-8 flag says so
    st.sampled_from(["../../evil.py", "/etc/passwd", "minifw/__init__.py", "minifw-2.15.0+cu132.dist-info/METADATA"]),
)
ENTRIES = st.builds(
    lambda name, data, method, flags, attr, crc, size, csize: mw.replace(
        mw.entry(name, data), method=method, flags=flags, attr=attr, crc=crc, size=size, csize=csize),
    name=NAMES,
    data=st.binary(max_size=64),
    method=st.one_of(st.sampled_from([0, 8, 12, 14, 99]), st.integers(min_value=0, max_value=0xFFFF)),
    flags=st.one_of(st.just(0x800), st.integers(min_value=0, max_value=0xFFFF)),
    attr=st.one_of(st.sampled_from([0, 0o100644 << 16, 0o120777 << 16, 0o010644 << 16, 0o040755 << 16]),
                   st.integers(min_value=0, max_value=0xFFFFFFFF)),
    crc=st.one_of(st.none(), st.integers(min_value=0, max_value=0xFFFFFFFF)),
    size=st.one_of(st.none(), st.integers(min_value=0, max_value=0xFFFFFFFF)),
    csize=st.one_of(st.none(), st.integers(min_value=0, max_value=0xFFFFFFFF)),
)


@SETTINGS
@given(st.lists(ENTRIES, max_size=6), st.booleans())
def test_random_members(extra: list[mw.Entry], duplicate: bool) -> None:
    f = mw.facts()
    entries = mw.wheel_entries(mw.contents(f), f.dist_info) + extra
    if duplicate and extra:
        entries.append(extra[0])
    exercise(mw.raw_zip(entries))
