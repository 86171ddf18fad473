"""Numbers are checked where they are parsed: every numeric row of the options table refuses NaN, infinities,
negatives and absurd magnitudes, and the refusal names the option (``--audit-timeout nan`` used to poll forever)."""

from __future__ import annotations

import argparse
import contextlib
import io

import pytest

from builders import cli
from builders.base.errors import InputError
from builders.cli import options
from builders.cli.arguments import choose
from builders.cli.options import OPTIONS, Number, Option

SIZES = (options.size, options.budget)  # sizes in bytes: 500M, 20G
NUMERIC = tuple(o for o in OPTIONS if isinstance(o.parse, Number) or o.parse in SIZES)
BAD = ("nan", "NaN", "inf", "-inf", "infinity", "-1", "1e400", "1e30", "99999999999999999999999")
BAD_SIZES = ("nan", "inf", "-1", "1e30", "99999999999999999999999T")


def ids(option: Option) -> str:
    return f"{','.join(option.commands)}:{option.flags[0]}"


def test_no_row_parses_a_bare_number() -> None:
    """``int`` and ``float`` accept nan, inf and -5: a numeric row says its range through :class:`Number`."""
    bare = [ids(o) for o in OPTIONS if o.parse in (int, float)]
    assert bare == []
    assert len(NUMERIC) >= 10  # every numeric row is covered below (jobs, limits, timeouts, sizes, ...)


def refusal(command: str, flag: str, text: str) -> str:
    """What argparse prints refusing ``flag text`` for ``command`` (SystemExit 2 expected)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit) as exited:
        cli.parser(command).parse_args([command, f"{flag}={text}"])
    assert exited.value.code == 2
    return err.getvalue()


@pytest.mark.parametrize("option", NUMERIC, ids=ids)
def test_every_numeric_row_refuses_nonsense_naming_the_option(option: Option) -> None:
    for text in BAD_SIZES if option.parse in SIZES else BAD:
        with pytest.raises(argparse.ArgumentTypeError):
            option.parse(text)  # type: ignore[misc]
        for command in option.commands:
            assert f"argument {'/'.join(option.flags)}" in refusal(command, option.flags[0], text), (command, text)


@pytest.mark.parametrize("option", [o for o in NUMERIC if o.env], ids=ids)
def test_a_numeric_variable_is_refused_naming_it(option: Option) -> None:
    with pytest.raises(InputError, match=rf"\${option.env}"):
        choose(option, {}, {option.env: "nan"})  # type: ignore[dict-item]


@pytest.mark.parametrize("option", NUMERIC, ids=ids)
def test_every_numeric_row_takes_its_default_and_a_sane_value(option: Option) -> None:
    """The refusals are not everything: the default (as text) and an ordinary value parse."""
    sane = "2G" if option.parse in SIZES else "2"
    assert option.parse(sane) is not None  # type: ignore[misc]
    default = option.default_for({})
    if isinstance(default, (int, float)) and isinstance(option.parse, Number):
        assert option.parse(str(default)) == default
