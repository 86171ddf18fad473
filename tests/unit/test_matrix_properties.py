"""Property: whatever the matrix text, loading it ends in a Matrix or in builders' own error.

Random edits of the shipped text (byte flips, deletions, duplications, YAML values spliced in
at keys) are fed to :func:`builders.matrix.yaml_loader.loads`; no other exception may escape, and a matrix
that loads must expand into targets whose ids, versions and wheel names can be computed.
"""

from __future__ import annotations

import os
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builders.base.errors import BuildersError
from builders.families import loader as matrix
from builders.matrix import targets

EXAMPLES = int(os.environ.get("BUILDERS_PROPERTY_EXAMPLES", "120"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))

# Characters that change YAML's structure, plus ones the reader must refuse.
SPECIAL = list(":-[]{},&*!|>'\"#%@`?\n\t ") + ["\x00", "\x07", "\ufeff", "\u2028", "é", "0", "9", ".", "t", "$", "{python}"]
KEY = re.compile(r"^(\s*-?\s*)([A-Za-z0-9_.\"'-]+):[ ]", re.MULTILINE)

scalars = st.one_of(
    st.sampled_from(["", "~", "null", "yes", "no", "on", ".inf", "-.nan", "0x1F", "0o17", "1_000", "1:30", "3.10", "3.1",
                     "2026-13-45", "=", "<<", "'x'", '"\\x00"', "!!str 3", "!!int x", "!!float y", "!!bool maybe",
                     "!!binary aGk=", "!!python/object:os.system x", "!custom x", "*nowhere", "&a x", "9" * 50,
                     "$ORIGIN/../..", "{0}", "{label}", "http://x/", "cu..134", "-1", "0", "0.0", "1e400"]),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.lists(st.sampled_from(SPECIAL + list("abcxyz")), max_size=12).map("".join),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4).map(lambda items: "[" + ", ".join(items) + "]"),
        st.dictionaries(st.sampled_from(["a", "label", "os", "arch", "1", "versions"]), inner, max_size=3)
        .map(lambda d: "{" + ", ".join(f"{k}: {v}" for k, v in d.items()) + "}"),
    ),
    max_leaves=8,
)


@st.composite
def mutations(draw: st.DrawFn, text: str) -> str:
    """``text`` with one to three random edits."""
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        kind = draw(st.sampled_from(["flip", "delete", "duplicate", "splice"]))
        text = EDITS[kind](draw, text)
    return text


def _flip(draw: st.DrawFn, text: str) -> str:
    i = draw(st.integers(min_value=0, max_value=max(len(text) - 1, 0)))
    return text[:i] + draw(st.sampled_from(SPECIAL)) + text[i + 1:]


def _span(draw: st.DrawFn, text: str) -> tuple[int, int]:
    start = draw(st.integers(min_value=0, max_value=max(len(text) - 1, 0)))
    return start, min(len(text), start + draw(st.integers(min_value=1, max_value=400)))


def _delete(draw: st.DrawFn, text: str) -> str:
    start, end = _span(draw, text)
    return text[:start] + text[end:]


def _duplicate(draw: st.DrawFn, text: str) -> str:
    start, end = _span(draw, text)
    at = draw(st.integers(min_value=0, max_value=len(text)))
    return text[:at] + text[start:end] + text[at:]


def _splice(draw: st.DrawFn, text: str) -> str:
    """Replace the value of a random ``key:`` line with a random YAML value."""
    keys = list(KEY.finditer(text))
    if not keys:
        return text
    match = draw(st.sampled_from(keys))
    line_end = text.find("\n", match.end())
    line_end = len(text) if line_end < 0 else line_end
    return text[:match.end()] + draw(values) + text[line_end:]


EDITS = {"flip": _flip, "delete": _delete, "duplicate": _duplicate, "splice": _splice}


def load_or_refuse(text: str) -> None:
    try:
        m = matrix.loads(text, "m.yaml")
    except BuildersError as exc:
        assert str(exc)
        return
    found, _ = targets.expand(m)
    for target in found:
        assert target.id and target.wheel_name and str(target.version)


def test_mutated_matrices_load_or_are_refused(shipped_text: str) -> None:
    @SETTINGS
    @given(mutations(shipped_text))
    def check(text: str) -> None:
        load_or_refuse(text)

    check()


@SETTINGS
@given(st.text(max_size=300))
def test_any_text_loads_or_is_refused(text: str) -> None:
    load_or_refuse(text)


@SETTINGS
@given(values)
def test_any_value_at_the_root_is_refused(value: str) -> None:
    load_or_refuse(value)
