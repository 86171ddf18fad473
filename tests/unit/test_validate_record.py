"""validate's record is rewritten as each target ends, so a validate job that reaches its timeout keeps every
verdict it reached (the workflow uploads it ``if: always()``)."""

from __future__ import annotations

import dataclasses
import io
import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from builders import cli
from builders.base.console import Console
from builders.base.errors import InputError
from builders.channels.evidence import InstallVerdict, PromotionRecord, TargetVerdict, ValidationRecord
from builders.cli import arguments
from builders.cli import validate as validate_command
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

    def keep(done: Sequence[TargetVerdict]) -> None:
        validate_command.write_record(record, validate_command.record(done, channel="test", version="1", project="p",
                                                                      host=host.platform))
        seen.append([t.target for t in ValidationRecord.from_json(record.read_bytes(), str(record)).targets])

    validate_command.validated(m, channel, targets, opts, opts.index_url, None, Console(io.StringIO()), keep)
    assert seen == [[t.id for t in targets[:n]] for n in range(1, len(targets) + 1)]
    assert [p.name for p in record.parent.iterdir()] == [record.name]  # no partial file left beside it


def a_record() -> ValidationRecord:
    verdict = TargetVerdict(target="cpu-cp312-linux-x86_64", status="passed", index_url="http://127.0.0.1:9/",
                            installs=(InstallVerdict(installer="pip", status="passed", filename="p.whl", sha256="a" * 64),))
    return ValidationRecord(project="p", channel="test", version="1", host="linux-x86_64", manifest_sha256="b" * 64,
                            targets=(verdict, dataclasses.replace(verdict, target="t2", status="failed", reason="no")))


def test_the_records_round_trip_and_count_their_verdicts() -> None:
    record = a_record()
    assert ValidationRecord.from_json(record.to_json(), "v.json") == record
    data = json.loads(record.to_json())
    assert (data["passed"], data["failed"], data["targets"][0]["sha256"]) == (1, 1, "a" * 64)
    promoted = PromotionRecord(version="1", manifest_sha256="b" * 64, released=(("whl/cpu/p/p.whl", "a" * 64),),
                               before=(("whl/cpu/", ("whl/cpu/p/old.whl",)),), ledger_entry="00000001-abc")
    assert PromotionRecord.from_json(promoted.to_json(), "p.json") == promoted


@pytest.mark.parametrize(("edit", "key"), [({"record_version": 1}, "record_version"), ({"targets": None}, "targets"),
                                           ({"channel": None}, "channel"), ({"targets": [{"status": "passed"}]}, "target")])
def test_a_validation_record_of_another_version_or_without_a_key_names_both(edit: dict, key: str) -> None:
    data = {k: v for k, v in {**json.loads(a_record().to_json()), **edit}.items() if v is not None}
    with pytest.raises(InputError, match=f"v.json.*: {key} "):
        ValidationRecord.from_json(json.dumps(data).encode(), "v.json")


@pytest.mark.parametrize(("edit", "key"), [({"schema": None}, "schema"), ({"kind": "publication"}, "schema"),
                                           ({"manifest_sha256": None}, "manifest_sha256"),
                                           ({"released": []}, "released")])
def test_a_promotion_record_of_another_kind_or_without_a_key_names_both(edit: dict, key: str) -> None:
    whole = PromotionRecord(version="1", manifest_sha256="b" * 64)
    data = {k: v for k, v in {**json.loads(whole.to_json()), **edit}.items() if v is not None}
    with pytest.raises(InputError, match=f"p.json: {key} "):
        PromotionRecord.from_json(json.dumps(data).encode(), "p.json")
    assert InputError.exit_code == 20
