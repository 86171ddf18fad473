"""validate's record is rewritten as each target ends, so a validate job that reaches its timeout keeps every
verdict it reached (the workflow uploads it ``if: always()``)."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from pathlib import Path

from builders import cli
from builders.base.console import Console
from builders.cli import arguments
from builders.cli import validate as validate_command
from builders.index import validate
from builders.matrix.model import Matrix
from builders.matrix.targets import expand
from builders.pipeline.host import detect, foreign


def test_the_record_holds_each_target_as_it_ends(m: Matrix, tmp_path: Path) -> None:
    host = detect(m.pythons, {}, engines=False)
    targets = tuple(t for t in expand(m)[0] if foreign(t, host))[:3]  # not runnable here: each verdict is immediate
    assert len(targets) >= 2
    record = tmp_path / "validation" / "test.json"
    opts = arguments.parse(cli.parser(), ["validate", "--channel", "test", "--record", str(record),
                                          "--index-url", "http://127.0.0.1:9/whl/test/",
                                          *(a for t in targets for a in ("--target", t.id))], {})
    channel = m.declared_channel(opts.channel)
    seen: list[list[str]] = []

    def keep(done: Sequence[validate.Validated]) -> None:
        validate.write_record(record, validate.record(done, channel="test", version="1", project="p", host=host))
        seen.append([t["target"] for t in json.loads(record.read_text())["targets"]])

    validate_command.validated(m, channel, targets, opts, opts.index_url, None, Console(io.StringIO()), keep)
    assert seen == [[t.id for t in targets[:n]] for n in range(1, len(targets) + 1)]
    assert [p.name for p in record.parent.iterdir()] == [record.name]  # no partial file left beside it
