"""What a rebuild reads from the release: the manifest's build records (version 2), the results record's
``rebuild`` field, and the pure parts of ``rebuild`` (its build command, the inputs that differ)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name

from builders.base.errors import InputError, RebuildError
from builders.channels import manifest, rebuilding
from builders.channels.manifest import LABELLED, Manifest, ManifestFile
from builders.matrix.targets import expand
from builders.pipeline import results

RECORD = {"record_version": 1, "engine": "local", "epoch": 1796124056, "accelerator": "cuda", "toolkit": "13.2",
          "pins": ["cuda-toolkit[nvcc]==13.2.2"], "compiler": "cc (Debian 12.2.0-14) 12.2.0", "local_only": True}
FILE = ManifestFile(name="demo-1.0+cu132-cp312-cp312-manylinux_2_28_x86_64.whl", sha256="a" * 64, size=10,
                    target="cu132-cp312-linux-x86_64", form=LABELLED)


def made(**changes: object) -> Manifest:
    fields = {"project": "demo", "version": "1.0", "channel": "test", "commit": "c" * 40, "tag": "v1.0-rc1",
              "run_id": "1", "files": (FILE,), "builds": ((FILE.target, json.dumps(RECORD)),)}
    return Manifest(**{**fields, **changes})  # type: ignore[arg-type]


def test_a_manifest_with_build_records_is_version_2_and_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_bytes(made().dumps())
    data = json.loads(path.read_text())
    assert data["manifest_version"] == manifest.BUILDS_VERSION and data["builds"][FILE.target] == RECORD
    back = manifest.load(path)
    assert back.build_of(FILE.target) == RECORD and back.build_of("cpu-cp312-linux-x86_64") is None
    assert back.digest == made().digest


def test_a_manifest_without_records_stays_version_1_with_its_digest() -> None:
    plain = made(builds=())
    assert plain.to_json()["manifest_version"] == manifest.MANIFEST_VERSION and "builds" not in plain.to_json()


def test_builds_that_are_not_records_name_the_key(tmp_path: Path) -> None:
    data = made().to_json() | {"builds": {FILE.target: "gcc"}}
    (tmp_path / "m.json").write_text(json.dumps(data))
    with pytest.raises(InputError, match="builds: not a mapping"):
        manifest.load(tmp_path / "m.json")


def test_results_keep_the_rebuild_record_through_the_schema(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    results.record(path, results.Result(id=FILE.target, status="built", rebuild=RECORD))
    assert results.load(path)[0].rebuild == RECORD
    bad = {"schema": 1, "targets": [{"id": FILE.target, "status": "built", "rebuild": {"epoch": "soon"}}]}
    assert list(results.schema_problems(bad))


def test_the_build_command_is_the_releases_engine_and_tagging() -> None:
    argv = rebuilding.build_argv(Path("/w/src/matrix.yaml"), FILE.target, Path("/w/out"), Path("/w/cache/t"), made(),
                                 RECORD)
    assert argv[argv.index("--engine") + 1] == "local" and "--local-only" in argv and "--no-smoke" in argv
    nightly = rebuilding.build_argv(Path("m"), FILE.target, Path("o"), Path("c"), made(channel="nightly"), RECORD)
    assert nightly[nightly.index("--commit-date") + 1] == "2026-12-01"
    assert "--local-only" not in rebuilding.build_argv(Path("m"), FILE.target, Path("o"), Path("c"), made(), {})


def test_inputs_that_were_not_the_releases_are_named() -> None:
    assert rebuilding.notes(RECORD, RECORD) == ()
    (note,) = rebuilding.notes(RECORD, {**RECORD, "compiler": "cc 14"})
    assert note.startswith("compiler:") and "cc 14" in note
    assert "records no build" in rebuilding.notes({}, RECORD)[0]


def test_a_released_file_must_be_the_manifests() -> None:
    assert rebuilding.released_file(made(), FILE.target) == FILE
    with pytest.raises(RebuildError, match="no labelled file of cpu-cp312"):
        rebuilding.released_file(made(), "cpu-cp312-linux-x86_64")
    with pytest.raises(RebuildError, match="the manifest's .* is " + "a" * 64):
        rebuilding.checked(b"other bytes", FILE, "w.whl")


def test_a_released_file_is_fetched_from_its_variants_index_on_the_channel(m) -> None:
    target = next(t for t in expand(m)[0] if t.variant.label == "cu132")
    file = ManifestFile(name=target.wheel_name, sha256="a" * 64, size=1, target=target.id, form=LABELLED)
    url = rebuilding.served_at(m, "test", file)
    index = m.channels.index_url(m.declared_channel("test"), "cu132")
    assert url == f"{index}{canonicalize_name(m.project.name)}/{target.wheel_name}"
