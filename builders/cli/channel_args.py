"""``--channel`` and ``--commit-date`` for a command that builds or plans a channel's wheels (``build``)."""

from __future__ import annotations

import argparse
import datetime

from builders.base.errors import SelectionError
from builders.matrix.model import Matrix
from builders.matrix.release_channels import ChannelName


def add_channel_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--channel", choices=[c.value for c in ChannelName], default=None,
                   help="build for this channel's version: nightly is a dev release of the matrix's nightly base "
                        "from --commit-date (2.16.0.dev20261201+cu132); test and release the matrix's version "
                        "(default: the matrix's version)")
    p.add_argument("--commit-date", type=datetime.date.fromisoformat, default=None, metavar="YYYY-MM-DD",
                   help="with --channel nightly: the date of the commit built (git log -1 --format=%%cs)")


def on_channel(m: Matrix, args: argparse.Namespace) -> Matrix:
    """``m`` as ``--channel`` builds it (unchanged without the option)."""
    if args.channel is None:
        return m
    if args.channel == ChannelName.NIGHTLY.value and args.commit_date is None:
        raise SelectionError("--channel nightly needs --commit-date YYYY-MM-DD, the date of the commit built")
    try:
        channel = m.channels.channel(args.channel)
    except KeyError as exc:
        raise SelectionError(f"{exc.args[0]} in {m.path}") from None
    return m.on_channel(channel.name, args.commit_date)
