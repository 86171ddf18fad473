"""Adding an engine is one module: ``tests/dummy_engine.py`` registers the ``dummy`` engine with no edit
anywhere else, and ``build`` plans with it, prints it and runs the pipeline through its runner.

Without a subprocess: the host is described in one line, and its interpreter is a name that is on no
PATH, so the pipeline's check stage asks it through the dummy's runner and finds nothing there.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from builders import engines
from builders.base.console import Console
from builders.cli import main, parser
from builders.engines import local
from builders.matrix.model import OS, Matrix
from builders.matrix.targets import Target, expand
from builders.pipeline.executor import RunConfig, run_plan
from builders.pipeline.host import Host
from builders.pipeline.plan import BuildPlan, Context
from tests import dummy_engine
from tests.helpers import accelerator

ROOT = Path(__file__).resolve().parents[2]
ENV = {"PATH": "/nonexistent", "HOME": "/root", "SOURCE_DATE_EPOCH": "1700000000"}
PYTHON = "no-such-python"  # on no PATH: asking it runs no process


@pytest.fixture(scope="module")
def target(m: Matrix) -> Target:
    """A cpu target of the demo matrix for Linux x86_64 (whichever Python the matrix lists first)."""
    return next(t for t in expand(m)[0]
                if t.variant.accelerator == accelerator("cpu") and t.platform.name == "linux-x86_64")


def host_for(target: Target) -> Host:
    return Host(os=OS.LINUX, arch="x86_64", interpreters=((target.python.abi, PYTHON),), cxx20="/usr/bin/c++")


def setup(m: Matrix, target: Target, ctx: Context) -> engines.EngineSetup:
    return engines.EngineSetup(matrix=m, targets=(target,), host=ctx.host, env=ENV, cache=ctx.cache)


def context(target: Target, output: Path) -> Context:
    return Context(host=host_for(target), env=ENV, source=ROOT / "examples" / "minifw", source_digest="a" * 64,
                   epoch=1_700_000_000, output=output, cache=output / "cache", tools_python="/tools/bin/python",
                   builders_version="0.1.0+test")


def test_the_engine_module_registers_it_and_every_command_can_choose_it() -> None:
    assert engines.named(dummy_engine.NAME) is dummy_engine.FACTORY
    assert dummy_engine.NAME in engines.names() and dummy_engine.NAME not in {f.name for f in engines.builtin()}
    for command in ("build", "plan"):
        assert parser().parse_args([command, "--engine", dummy_engine.NAME]).engine == dummy_engine.NAME
    with pytest.raises(engines.EngineError, match="registered already"):
        engines.register(engines.EngineFactory(name=dummy_engine.NAME, help="", make=dummy_engine.make,
                                               unbuildable=dummy_engine.unbuildable))


def test_every_engine_module_of_builders_is_listed_by_the_registry() -> None:
    """One place lists builders' own engines: every module of ``builders/engines`` with a ``FACTORY`` is in BUILTIN."""
    import importlib

    package = ROOT / "builders" / "engines"
    factories = [getattr(importlib.import_module(f"builders.engines.{p.stem}"), "FACTORY", None)
                 for p in sorted(package.glob("*.py")) if p.stem != "__init__"]
    listed = [f for f in factories if f is not None]
    assert listed and all(f in engines.builtin() for f in listed) and len(listed) == len(engines.BUILTIN)
    assert engines.names()[:len(engines.BUILTIN)] == tuple(f.name for f in engines.builtin())


def test_a_dry_run_names_the_engine_and_its_runner(target, tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setattr("builders.cli.build.detect", lambda pythons, env, engines: host_for(target))
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    argv = ["build", "--dry-run", "--engine", dummy_engine.NAME, "--matrix", str(ROOT / "matrix.yaml"),
            "--target", target.id, "--output", str(tmp_path)]
    assert main([*argv, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (plan,) = doc["plans"]
    assert (doc["engine"], plan["engine"], plan["id"], doc["skipped"]) == (dummy_engine.NAME, dummy_engine.NAME,
                                                                           target.id, [])
    assert (plan["runner"]["kind"], plan["runner"]["marker"]) == ("marked", dummy_engine.MARKER)
    assert plan["smoke_runner"]["kind"] == "marked" and plan["smoke_runner"]["unset"]
    assert plan["interpreter"] == PYTHON and plan["check"]["interpreter"] == PYTHON
    assert main(argv) == 0
    table = capsys.readouterr().out
    assert f"host, marked {dummy_engine.MARKER}" in table and f"(plan {plan['digest']})" in table


def test_its_plans_differ_from_the_local_engines_only_where_it_does(target, m: Matrix, tmp_path: Path) -> None:
    ctx = context(target, tmp_path)
    mine = dummy_engine.FACTORY.make(setup(m, target, ctx))[0].plan(target, ctx)
    theirs = local.LocalEngine(cache=ctx.cache, env=ENV).plan(target, ctx)
    assert isinstance(mine, BuildPlan) and isinstance(theirs, BuildPlan)
    assert (mine.build, mine.repair, mine.smoke, mine.check) == (theirs.build, theirs.repair, theirs.smoke, theirs.check)
    assert mine.digest != theirs.digest  # another engine, another runner: another wheel as far as the store knows


def test_the_pipeline_runs_through_the_engines_runner(target, m: Matrix, tmp_path: Path) -> None:
    ctx = context(target, tmp_path)
    engine, _ = dummy_engine.FACTORY.make(setup(m, target, ctx))
    plan = engine.plan(target, ctx)
    assert isinstance(plan, BuildPlan)
    config = RunConfig(matrix=m, output=tmp_path, engine=engine, env=ENV, jobs=1)
    result = run_plan(plan, config, Console(io.StringIO()), (1, 1))
    assert result is not None and (result.engine, result.status, result.stage) == (dummy_engine.NAME, "skipped",
                                                                                     "check")
    assert result.reason == f"no CPython {target.python} at {PYTHON} (on the marked host)"
    log = config.log_path(target.id).read_text()
    assert f"# {target.id} ({dummy_engine.NAME} engine)" in log
    said = [line.removeprefix(dummy_engine.SAID) for line in log.splitlines() if line.startswith(dummy_engine.SAID)]
    assert said[0] == f"provision {target.id}" and said[1].startswith(f"{PYTHON} -c ")


def test_builders_own_runner_specs_print_and_hash_as_before() -> None:
    """The dry run's JSON and the digest's runner fields are what they were when the spec was one flat union."""
    from builders.engines.container import ContainerSpec, Mount
    from builders.engines.local import HostSpec

    host = HostSpec(unset=("X",), inherits=(("CC", "gcc"),))
    box = ContainerSpec(image="i:t", engine="podman", base="b", mounts=(Mount(source="/s", target="/t"),))
    assert list(host.to_json()) == ["kind", "env", "unset", "inherits", "keep"]
    assert list(box.to_json()) == ["kind", "image", "base", "engine", "network", "mounts", "env", "unset", "inherits"]
    assert box.to_json()["mounts"] == ["/s:/t:ro"] and (box.describe(), host.describe()) == ("podman i:t", "host")
    assert host.key() == {"kind": "host", "image": "", "inherits": {"CC": "gcc"}}
    assert box.key() == {"kind": "container", "image": "i:t", "inherits": {}}
    assert (host.sees(Path("/s")), box.sees(Path("/s")), box.sees(Path("/elsewhere"))) == ("/s", "/t", None)
