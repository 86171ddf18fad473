"""``channels.promotion``: what promote-release's preflight holds a release to, as matrix data (its PyPI limits and
the targets accepted as not runnable, with their reasons), validated at load like every other key."""

from __future__ import annotations

import fnmatch
from pathlib import Path

import pytest

from builders import cli
from builders.channels import promoting, promotion
from builders.channels.evidence import InstallVerdict, PromotionRecord, TargetVerdict, ValidationRecord
from builders.channels.manifest import LABELLED, PYPI, Manifest, ManifestFile
from builders.cli import arguments, promote_release
from builders.families import loader as matrix
from builders.matrix.model import Matrix
from builders.matrix.promotion_policy import FILE_LIMIT_MB, TOTAL_LIMIT_GB, PromotionPolicy
from builders.matrix.targets import Target, expand
from builders.wheel.archive import file_sha256
from tests import expected
from tests.helpers import edit, only_problem

EMPTY = "    accept_not_runnable: []\n"


def promotion_raw(text: str) -> dict:
    return expected.raw(text)["channels"]["promotion"]


def line_of(text: str, needle: str) -> int:
    """The 1-based line of the first line of ``text`` holding ``needle`` (computed apart from the loader's marks)."""
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def with_accepts(text: str, *entries: tuple[str, str | None]) -> str:
    """``text`` with ``accept_not_runnable`` listing ``(glob, reason)`` entries (reason None: left out)."""
    lines = "".join(f'      - targets: "{glob}"\n' + (f'        reason: "{reason}"\n' if reason is not None else "")
                    for glob, reason in entries)
    return edit(text, EMPTY, "    accept_not_runnable:\n" + lines)


def test_the_shipped_key_is_in_the_model(m: Matrix, shipped_text: str) -> None:
    raw = promotion_raw(shipped_text)
    policy = m.channels.promotion
    assert policy.pypi_file_limit_mb == raw["pypi_file_limit_mb"]
    assert policy.pypi_total_limit_gb == raw["pypi_total_limit_gb"]
    assert [(a.targets, a.reason) for a in policy.accept_not_runnable] == [
        (e["targets"], e["reason"]) for e in raw["accept_not_runnable"]]


def test_the_shipped_key_writes_out_pypis_defaults(shipped_text: str) -> None:
    raw = promotion_raw(shipped_text)
    assert (raw["pypi_file_limit_mb"], raw["pypi_total_limit_gb"]) == (FILE_LIMIT_MB, TOTAL_LIMIT_GB) == (100, 10)


def test_without_the_key_or_its_entries_the_defaults_hold(shipped_text: str) -> None:
    raw = promotion_raw(shipped_text)
    block = (f"  promotion:\n    pypi_file_limit_mb: {raw['pypi_file_limit_mb']}\n"
             f"    pypi_total_limit_gb: {raw['pypi_total_limit_gb']}\n")
    assert matrix.loads(edit(shipped_text, block, "  promotion:\n")).channels.promotion == PromotionPolicy()
    assert matrix.loads(edit(shipped_text, block + EMPTY, "")).channels.promotion == PromotionPolicy()
    assert PromotionPolicy().pypi_file_limit_mb == 100 and PromotionPolicy().pypi_total_limit_gb == 10


def test_limits_are_read_as_written(shipped_text: str) -> None:
    raw = promotion_raw(shipped_text)
    text = edit(shipped_text, f"pypi_file_limit_mb: {raw['pypi_file_limit_mb']}\n", "pypi_file_limit_mb: 0.5\n")
    text = edit(text, f"pypi_total_limit_gb: {raw['pypi_total_limit_gb']}\n", "pypi_total_limit_gb: 25\n")
    policy = matrix.loads(text).channels.promotion
    assert (policy.pypi_file_limit_mb, policy.pypi_total_limit_gb) == (0.5, 25.0)


@pytest.mark.parametrize("key", ["pypi_file_limit_mb", "pypi_total_limit_gb"])
@pytest.mark.parametrize(("value", "phrase"), [("0", "above 0"), ("-1", "above 0"), ("0.0", "above 0"),
                                               ("many", "allowed form"), ("true", "allowed form")])
def test_a_limit_must_be_a_number_over_zero(shipped_text: str, key: str, value: str, phrase: str) -> None:
    old = f"{key}: {promotion_raw(shipped_text)[key]}\n"
    text = edit(shipped_text, old, f"{key}: {value}\n")
    problem = only_problem(text, phrase)
    assert problem.location.key == f"channels.promotion.{key}"
    assert problem.location.line == line_of(text, f"{key}:")


def test_an_accepted_target_needs_a_reason(shipped_text: str) -> None:
    planned = sorted(expected.live_ids(expected.raw(shipped_text)))[0]
    text = with_accepts(shipped_text, (planned, None))
    problem = only_problem(text, "'reason' is a required property")
    assert problem.location.key == "channels.promotion.accept_not_runnable[0]"
    assert problem.location.line == line_of(text, f'targets: "{planned}"')
    blank = only_problem(with_accepts(shipped_text, (planned, "  ")), "reason")
    assert blank.location.key == "channels.promotion.accept_not_runnable[0].reason"


def test_a_glob_that_accepts_no_planned_target_is_refused(shipped_text: str) -> None:
    data = expected.raw(shipped_text)
    live = expected.live_ids(data)
    # an exclusion's glob matches candidates only: none of them is planned
    excluded = next(e["targets"] for e in data["exclude"] if not fnmatch.filter(live, e["targets"]))
    planned = sorted(live)[0]
    for glob in (excluded, "nosuch-*"):
        text = with_accepts(shipped_text, (planned, "fine"), (glob, "why"))
        problem = only_problem(text, "matches no planned target")
        assert problem.location.key == "channels.promotion.accept_not_runnable[1].targets"
        assert problem.location.line == line_of(text, f'targets: "{glob}"')
        assert problem.location.file == "m.yaml"


def test_accepted_targets_keep_their_reason_and_place(shipped_text: str) -> None:
    live = sorted(expected.live_ids(expected.raw(shipped_text)))
    glob = live[0].split("-")[0] + "-*"
    text = with_accepts(shipped_text, (glob, "no runner has this device"))
    (accepted,) = matrix.loads(text).channels.promotion.accept_not_runnable
    assert (accepted.targets, accepted.reason) == (glob, "no runner has this device")
    assert accepted.location is not None and accepted.location.line == line_of(text, f'targets: "{glob}"')
    assert {tid for tid in live if accepted.accepts(tid)} == set(fnmatch.filter(live, glob))


# --- promote-release: the matrix's values by default, an option given wins ------------------------------------


def promote_options(folder: Path, text: str, *argv: str) -> tuple[arguments.Options, Matrix]:
    """promote-release's options as the command line gives them, against the matrix ``text`` written to ``folder``."""
    path = folder / "matrix.yaml"
    path.write_text(text, encoding="utf-8")
    record = folder / "validation.json"
    record.write_text('{"targets": []}', encoding="utf-8")
    given = ["promote-release", "--matrix", str(path), "--bucket", "s3://downloads/", "--validation", str(record),
             "--manifest", str(record)]
    return arguments.parse(cli.parser(), [*given, *argv], {}), matrix.load(path, builds=False)


def with_file_limit(text: str, mb: str) -> str:
    return edit(text, f"pypi_file_limit_mb: {promotion_raw(text)['pypi_file_limit_mb']}\n", f"pypi_file_limit_mb: {mb}\n")


def pypi_wheel(folder: Path, m: Matrix, size: int) -> Path:
    wheel = folder / f"{m.project.name}-{m.project.version.public}-cp312-cp312-manylinux_2_28_x86_64.whl"
    wheel.write_bytes(b"\0" * size)
    return wheel


def preflight_of_pypi(wheel: Path, limits: promotion.PypiLimits, version: str,
                      server: promotion.Server | None = None) -> list[str]:
    """The PyPI half of the preflight for one file of the manifest validated from staging with its bytes (so only
    the limits can refuse it)."""
    file = ManifestFile(name=wheel.name, sha256=file_sha256(wheel), size=wheel.stat().st_size, target="t", form=PYPI)
    release = Manifest(project="p", version=version, channel="test", commit="c", tag=f"v{version}-rc1", run_id="1",
                       files=(file,))
    files = [promotion.PypiFile(path=wheel, sha256=file.sha256, size=file.size)]
    evidence = promotion.Evidence(manifest=release, limits=limits, server=server or promotion.Server())
    return promotion.pypi_refusals(files, evidence, version)


def files_of(targets: list[Target]) -> list[ManifestFile]:
    """A manifest's labelled file for each target (the bytes do not matter to these rules)."""
    return [ManifestFile(name=t.wheel_name, sha256="0" * 64, size=1, target=t.id, form=LABELLED) for t in targets]


def test_the_preflight_holds_a_file_to_the_matrixs_limit(shipped_text: str, tmp_path: Path) -> None:
    opts, m = promote_options(tmp_path, with_file_limit(shipped_text, "0.002"))
    limits, accept = promote_release.policy(opts, m)
    assert (limits.file_mb, limits.total_gb) == (0.002, m.channels.promotion.pypi_total_limit_gb)
    assert accept == m.channels.promotion.accept_not_runnable
    version = str(m.project.version.public)
    over = pypi_wheel(tmp_path, m, int(0.002 * promotion.MB) + 1)
    (refusal,) = preflight_of_pypi(over, limits, version)
    assert over.name in refusal and "over the project's PyPI file limit of 0.002 MB" in refusal
    assert preflight_of_pypi(pypi_wheel(tmp_path, m, int(0.002 * promotion.MB)), limits, version) == []


def test_a_limit_given_on_the_command_line_wins_over_the_matrixs(shipped_text: str, tmp_path: Path) -> None:
    opts, m = promote_options(tmp_path, with_file_limit(shipped_text, "0.002"), "--file-limit-mb", "1",
                              "--total-limit-gb", "0.000001")
    limits, _ = promote_release.policy(opts, m)
    assert (limits.file_mb, limits.total_gb) == (1.0, 0.000001)
    wheel = pypi_wheel(tmp_path, m, int(0.002 * promotion.MB) + 1)  # over the matrix's limit, under the flag's
    (refusal,) = preflight_of_pypi(wheel, limits, str(m.project.version.public))
    assert "over its limit of 1e-06 GB" in refusal


def test_without_the_key_the_preflight_takes_pypis_limits(shipped_text: str, tmp_path: Path) -> None:
    raw = promotion_raw(shipped_text)
    block = (f"    pypi_file_limit_mb: {raw['pypi_file_limit_mb']}\n"
             f"    pypi_total_limit_gb: {raw['pypi_total_limit_gb']}\n")
    limits, _ = promote_release.policy(*promote_options(tmp_path, edit(shipped_text, block, "")))
    assert limits == promotion.PypiLimits(file_mb=FILE_LIMIT_MB, total_gb=TOTAL_LIMIT_GB)


@pytest.mark.parametrize("value", ["0", "-2", "many"])
def test_a_limit_option_must_be_above_zero(shipped_text: str, tmp_path: Path, value: str) -> None:
    with pytest.raises(SystemExit):
        promote_options(tmp_path, shipped_text, "--file-limit-mb", value)


def not_runnable(targets: list[Target], why: str) -> ValidationRecord:
    return ValidationRecord(project="p", channel="test", version="1", host="h", manifest_sha256="",
                            targets=tuple(TargetVerdict(target=t.id, status="not-runnable", reason=why)
                                          for t in targets))


def test_a_target_the_matrix_accepts_is_released_with_its_reason(shipped_text: str, tmp_path: Path) -> None:
    planned = expand(matrix.loads(shipped_text))[0]
    accepted, other = planned[0], next(t for t in planned if t.variant.label != planned[0].variant.label)
    glob = f"{accepted.variant.label}-*"
    opts, m = promote_options(tmp_path, with_accepts(shipped_text, (glob, "no runner has this device")))
    _, accept = promote_release.policy(opts, m)
    found = promoting.verdicts([not_runnable([accepted, other], "no such device here")])
    assert promoting.file_refusals(files_of([accepted]), found, accept, "validation") == []
    (refusal,) = promoting.file_refusals(files_of([accepted, other]), found, accept, "validation")
    assert other.id in refusal and "channels.promotion.accept_not_runnable" in refusal
    (released,) = promoting.accepted_targets(files_of([accepted, other]), found, accept)
    assert (released.target, released.by.targets, released.by.reason) == (accepted.id, glob, "no runner has this device")
    record = promoting.record_of_plan(promotion.Promotion(version=str(m.project.version), copies=(), unchanged=(),
                                                          pypi=(), refusals=(), accepted=(released,),
                                                          manifest="b" * 64))
    assert dict(record.accepted) == {accepted.id: str(released)}
    assert PromotionRecord.from_json(record.to_json(), "record.json") == record
    assert "no runner has this device" in str(released) and accepted.id in str(released)


def test_globs_given_on_the_command_line_replace_the_matrixs(shipped_text: str, tmp_path: Path) -> None:
    planned = expand(matrix.loads(shipped_text))[0]
    first, other = planned[0], next(t for t in planned if t.variant.label != planned[0].variant.label)
    text = with_accepts(shipped_text, (f"{first.variant.label}-*", "matrix reason"))
    opts, m = promote_options(tmp_path, text, "--accept-not-runnable", other.id)
    _, accept = promote_release.policy(opts, m)
    assert [(a.targets, a.reason) for a in accept] == [(other.id, "given on the command line (--accept-not-runnable)")]
    found = promoting.verdicts([not_runnable([first, other], "no such device here")])
    assert [a.target for a in promoting.accepted_targets(files_of([first, other]), found, accept)] == [other.id]
    (refusal,) = promoting.file_refusals(files_of([first, other]), found, accept, "validation")
    assert first.id in refusal


def test_a_target_passes_only_if_every_record_of_it_passed(shipped_text: str) -> None:
    """One passing and one failing record of the same target, in either order of --validation: refused."""
    (target,) = expand(matrix.loads(shipped_text))[0][:1]
    files = files_of([target])
    def record(verdict: TargetVerdict) -> ValidationRecord:
        return ValidationRecord(project="p", channel="test", version="1", host="h", manifest_sha256="",
                                targets=(verdict,))

    passed = record(TargetVerdict(target=target.id, status="passed", installs=(
        InstallVerdict(installer="pip", status="passed", filename=files[0].name, sha256=files[0].sha256),)))
    failed = record(TargetVerdict(target=target.id, status="failed", reason="smoke failed on host B"))
    for records in ([passed, failed], [failed, passed]):
        (refusal,) = promoting.file_refusals(files, promoting.verdicts(records), (), "validation")
        assert target.id in refusal and "smoke failed on host B" in refusal and "every record" in refusal


def test_an_upload_cut_short_resumes_and_other_bytes_on_the_server_are_refused(shipped_text: str, tmp_path: Path) -> None:
    """Why-bullet 6: the package server holding the manifest's own file with its sha256 is an upload to finish (no
    refusal, the file counted as done and not in the project's total twice); the same name with other bytes is
    refused."""
    m = matrix.loads(shipped_text)
    wheel = pypi_wheel(tmp_path, m, 1000)
    version = str(m.project.version.public)
    limits = promotion.PypiLimits(file_mb=1, total_gb=1)
    done = promotion.Server(on_server=(wheel.name,), served=((wheel.name, file_sha256(wheel)),), project_bytes=1000)
    assert preflight_of_pypi(wheel, limits, version, done) == []
    assert promotion.uploaded_already([promotion.PypiFile(path=wheel, sha256=file_sha256(wheel), size=1000)],
                                      done) == (wheel.name,)
    other = promotion.Server(on_server=(wheel.name,), served=((wheel.name, "f" * 64),), project_bytes=1000)
    (refusal,) = preflight_of_pypi(wheel, limits, version, other)
    assert wheel.name in refusal and "uploaded once" in refusal
