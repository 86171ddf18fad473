"""``--channel`` and ``--commit-date`` of ``build``: the matrix as that channel's builds see it (the options are
rows of :mod:`builders.cli.options`)."""

from __future__ import annotations

import datetime

from builders.base.errors import SelectionError
from builders.matrix.model import Matrix
from builders.matrix.release_channels import ChannelName


def on_channel(m: Matrix, channel: str | None, commit_date: datetime.date | None) -> Matrix:
    """``m`` as ``--channel`` builds it (unchanged without the option)."""
    if channel is None:
        return m
    if channel == ChannelName.NIGHTLY.value and commit_date is None:
        raise SelectionError("--channel nightly needs --commit-date YYYY-MM-DD, the date of the commit built")
    return m.on_channel(m.declared_channel(channel).name, commit_date)
