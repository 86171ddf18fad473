"""One options table: every argument comes from it, every environment variable builders reads is in it,
one precedence rule settles them, and ``--help`` and ``docs/options.md`` say what it says."""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from builders import cli
from builders.base.errors import InputError
from builders.cli import arguments, options, optionsdoc
from builders.cli.arguments import DEFAULT, ENV, FLAG, MATRIX, choose, parse
from builders.cli.options import OPTIONS, Computed, Option, env_names, for_command
from builders.families.provision import default_cache
from builders.pipeline import caches
from tests import importgraph

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = importgraph.PACKAGE
READER = PACKAGE / "cli" / "arguments.py"  # the one module that calls add_argument and reads os.environ
MATRIX_FILE = ROOT / "matrix.yaml"
ENV_NAME = re.compile(r"^BUILDERS_[A-Z0-9_]+$")


def trees() -> dict[Path, ast.AST]:
    return {path: ast.parse(path.read_text(encoding="utf-8")) for path in importgraph.modules().values()}


def calls_named(tree: ast.AST, attr: str) -> list[ast.Call]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
            and n.func.attr == attr]


# -- every argument from the table ---------------------------------------------------------------


def test_no_add_argument_outside_the_options_reader() -> None:
    found = {path.relative_to(PACKAGE).as_posix(): len(calls_named(tree, "add_argument")) for path, tree in trees().items()}
    assert {name for name, count in found.items() if count} == {"cli/arguments.py"}
    assert found["cli/arguments.py"] == 1  # one call, fed by the table (:func:`builders.cli.arguments.add`)


def test_every_parser_argument_is_a_row_of_the_table() -> None:
    """What argparse holds, command by command, is exactly the table's rows for it."""
    root = cli.parser()
    sub = next(a for a in root._actions if isinstance(a, argparse._SubParsersAction))
    assert set(sub.choices) == set(cli.COMMANDS)
    for name, command in sub.choices.items():
        held = [tuple(a.option_strings) or (a.dest,) for a in command._actions if a.dest != "help"]
        assert held == [o.flags for o in for_command(name) if o.flags], name


def test_rows_are_unique_per_command_and_names_are_valid() -> None:
    for command in cli.COMMANDS:
        rows = [o for o in for_command(command) if o.flags]
        flags = [f for o in rows for f in o.flags]
        assert len(flags) == len(set(flags)), command
        assert all(o.name.isidentifier() for o in rows)
    assert all(set(o.commands) <= {*cli.COMMANDS, options.ROOT} for o in OPTIONS)


# -- every environment variable in the table ---------------------------------------------------


def _is_os_environ(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "environb") and \
        isinstance(node.value, ast.Name) and node.value.id == "os"


def test_os_environ_is_read_only_by_the_options_reader() -> None:
    readers = {path.relative_to(PACKAGE).as_posix() for path, tree in trees().items()
               if any(_is_os_environ(n) for n in ast.walk(tree))
               or any(isinstance(n, ast.ImportFrom) and n.module == "os" and
                      any(a.name in ("environ", "getenv") for a in n.names) for n in ast.walk(tree))}
    assert readers == {"cli/arguments.py"}


def literal_env_reads(tree: ast.AST) -> set[str]:
    """Names read as ``X.get("NAME")``, ``X["NAME"]`` or ``getenv("NAME")`` with an upper-case literal."""
    found = set()
    for node in ast.walk(tree):
        key = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("get", "getenv"):
            key = node.args[0] if node.args else None
        elif isinstance(node, ast.Subscript):
            key = node.slice
        if isinstance(key, ast.Constant) and isinstance(key.value, str) and re.fullmatch(r"[A-Z][A-Z0-9_]*", key.value):
            found.add(key.value)
    return found


def test_every_builders_variable_read_is_declared() -> None:
    """A ``BUILDERS_*`` name anywhere in builders (a literal read, or the constant a read goes through) is in
    the table, and every variable the table declares is really read or set somewhere."""
    declared = env_names()
    named: dict[str, set[str]] = {}
    for path, tree in trees().items():
        where = path.relative_to(PACKAGE).as_posix()
        literals = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
                    and ENV_NAME.fullmatch(n.value)}
        for name in literals | {r for r in literal_env_reads(tree) if r.startswith("BUILDERS_")}:
            named.setdefault(name, set()).add(where)
    undeclared = {name: sorted(at) for name, at in named.items() if name not in declared}
    assert not undeclared, f"declare these in builders/cli/options.py: {undeclared}"
    assert {"BUILDERS_CACHE", "BUILDERS_BASE_IMAGE", "BUILDERS_STORE_BUDGET", "BUILDERS_ROCM_SOURCE"} <= declared
    assert {n for n in declared if n.startswith("BUILDERS_")} <= set(named)


def test_every_fact_names_the_module_that_reads_it() -> None:
    for fact in options.ENVIRONMENT:
        for module in (m.strip() for m in fact.read_by.split(",")):
            assert fact.name in (ROOT / module).read_text(encoding="utf-8"), (fact.name, module)


def test_the_reader_sees_a_read_it_must_catch() -> None:
    tree = ast.parse('env.get("BUILDERS_X"); env["PATH"]; os.environ.get("HOME")')
    assert literal_env_reads(tree) == {"BUILDERS_X", "PATH", "HOME"}
    assert any(_is_os_environ(n) for n in ast.walk(tree))


# -- one precedence rule -----------------------------------------------------------------------


FOUR = Option(flags=("--level",), commands=("test",), env="BUILDERS_TEST_LEVEL", matrix="project.level",
              default="from-default", help="")


def four_levels(argv: list[str], env: dict[str, str], matrix: object | None) -> tuple[object, str]:
    parser = argparse.ArgumentParser()
    arguments.add(parser, FOUR)
    return choose(FOUR, vars(parser.parse_args(argv)), env, matrix)


def test_flag_beats_environment_beats_matrix_beats_default() -> None:
    matrix = SimpleNamespace(project=SimpleNamespace(level="from-matrix"))
    env = {"BUILDERS_TEST_LEVEL": "from-env"}
    assert four_levels(["--level", "from-flag"], env, matrix) == ("from-flag", FLAG)
    assert four_levels([], env, matrix) == ("from-env", ENV)
    assert four_levels([], {"BUILDERS_TEST_LEVEL": ""}, matrix) == ("from-matrix", MATRIX)  # empty is unset
    assert four_levels([], {}, SimpleNamespace(project=SimpleNamespace(level=None))) == ("from-default", DEFAULT)
    assert four_levels([], {}, None) == ("from-default", DEFAULT)


def build(argv: list[str], env: dict[str, str]) -> arguments.Options:
    return parse(cli.parser(), ["build", "--matrix", str(MATRIX_FILE), *argv], env)


def test_the_real_options_follow_the_rule(tmp_path: Path) -> None:
    env = {caches.STORE_BUDGET_ENV: "1G", "BUILDERS_BASE_IMAGE": "env/base", "BUILDERS_CACHE": str(tmp_path / "c"),
           "HOME": str(tmp_path / "home")}
    given = build(["--store-budget", "5M", "--base-image", "flag/base", "--cache", str(tmp_path / "flag")], env)
    assert (given.store_budget, given.base_image, given.cache) == (5 * 2**20, "flag/base", tmp_path / "flag")
    assert {given.origin(n) for n in ("store_budget", "base_image", "cache")} == {FLAG}
    from_env = build([], env)
    assert (from_env.store_budget, from_env.base_image, from_env.cache) == (2**30, "env/base", tmp_path / "c" / "toolchains")
    plain = build([], {"HOME": str(tmp_path / "home")})
    assert plain.store_budget == caches.parse_size(caches.DEFAULT_STORE_BUDGET) and plain.base_image is None
    assert plain.cache == tmp_path / "home" / ".cache" / "builders" / "toolchains"  # env's HOME, not the process's
    assert (plain.origin("cache"), plain.jobs >= 1, plain.smoke, plain.target) == (DEFAULT, True, True, ())


def test_the_matrix_stands_in_for_source_only_when_no_flag_gives_it(tmp_path: Path) -> None:
    from builders.families import loader

    m = loader.load(MATRIX_FILE)
    assert build([], {}).with_matrix(m).source == m.project.source
    assert build([], {}).with_matrix(m).origin("source") == MATRIX
    given = build(["--source", str(tmp_path)], {}).with_matrix(m)
    assert (given.source, given.origin("source")) == (tmp_path, FLAG)


def test_a_bad_value_in_the_environment_names_the_variable() -> None:
    with pytest.raises(InputError, match=r"\$BUILDERS_STORE_BUDGET: "):
        build([], {caches.STORE_BUDGET_ENV: "lots"})


def test_the_default_cache_reads_the_env_it_is_given(tmp_path: Path) -> None:
    assert default_cache({"HOME": str(tmp_path)}) == tmp_path / ".cache" / "builders" / "toolchains"
    assert default_cache({"HOME": "/x", "XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "builders" / "toolchains"
    assert default_cache({"BUILDERS_CACHE": str(tmp_path)}) == tmp_path / "toolchains"


def test_an_options_value_is_frozen_and_refuses_an_option_its_command_lacks() -> None:
    opts = build([], {})
    with pytest.raises(AttributeError, match="takes no option 'verb'"):
        opts.verb  # noqa: B018
    with pytest.raises(TypeError):
        opts.values["jobs"] = 3  # type: ignore[index]
    with pytest.raises(AttributeError):
        opts.command = "plan"  # type: ignore[misc]


def test_no_namespace_leaves_the_cli() -> None:
    """Below ``builders/cli`` nothing names argparse; in it, only the table and its reader do."""
    users = {path.relative_to(PACKAGE).as_posix() for path, tree in trees().items()
             if any(isinstance(n, ast.Name) and n.id == "argparse" for n in ast.walk(tree))}
    assert users <= {"cli/__init__.py", "cli/arguments.py", "cli/options.py"}


# -- --help and the docs come from the table ---------------------------------------------------


@pytest.mark.parametrize("command", cli.COMMANDS)
def test_help_lists_every_option_of_the_command(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main([command, "--help"])
    assert exit_.value.code == 0
    shown = capsys.readouterr().out
    for option in (o for o in for_command(command) if o.flags):
        for flag in option.flags if not option.positional else (optionsdoc.usage(option).strip("`"),):
            assert re.search(rf"(^|[\s\[,]){re.escape(flag)}(?=[\s\],=]|$)", shown), (command, flag)
        first = " ".join(option.help_text().split()[:4])
        assert first in " ".join(shown.split()), (command, option.flags, first)


def test_python_m_builders_help_lists_every_command_with_its_help_text() -> None:
    """``--help`` imports every command's module for its text; a start that runs a command does not."""
    out = subprocess.run([sys.executable, "-m", "builders", "--help"], capture_output=True, text=True, check=True,
                         cwd=ROOT).stdout
    assert all(name in out for name in cli.COMMANDS) and "--version" in out
    assert all(cli.module(name).HELP.split("(")[0].strip()[:40] in " ".join(out.split()) for name in cli.COMMANDS)


@pytest.mark.parametrize("argv", [["build", "--target", "cpu-cp312-linux-x86_64", "--jobs", "2", "--no-smoke"],
                                  ["plan", "--json", "--select", "cu*"], ["smoke", "x.whl", "--target", "t"],
                                  ["promote-release", "--help-me"], ["merge-index", "a", "--into", "b"]])
def test_a_command_parses_alike_with_only_its_own_help_text(argv: list[str]) -> None:
    """The parser a start builds (help text for the command it runs only) parses as the whole one does."""
    assert cli.chosen(argv) == argv[0]

    def parsed(root: argparse.ArgumentParser) -> dict | str:
        try:
            return vars(root.parse_args(argv))
        except SystemExit as exc:  # an unknown option: both must refuse it
            return f"exit {exc.code}"

    assert parsed(cli.parser(argv[0])) == parsed(cli.parser())


def test_only_help_or_no_command_takes_every_command_s_help_text() -> None:
    for argv in (["--help"], ["build", "--help"], ["-h"], ["--version"], [], ["bogus"], ["plan", "--select", "x", "-h"]):
        assert cli.chosen(argv) is None, argv


def test_a_start_imports_the_module_of_the_command_it_runs_alone() -> None:
    """Every start used to import all seventeen command modules for their help text: about 1 s of 1.3."""
    code = ("import sys; from builders import cli; cli.main(['plan', '--matrix', 'no-such-matrix.yaml']); "
            "print(' '.join(sorted(n for n in sys.modules if n.startswith('builders.cli.') and n[13:] in "
            "[c.replace('-', '_') for c in cli.COMMANDS])))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60).stdout
    assert out.split() == ["builders.cli.plan"]


def test_docs_options_md_is_the_rendered_table() -> None:
    """Rendered in a fresh interpreter: only builders' own engines and families, as a reader's checkout has."""
    rendered = subprocess.run([sys.executable, "-m", "builders.cli.optionsdoc"], capture_output=True, text=True,
                              check=True, cwd=ROOT).stdout
    committed = (ROOT / "docs" / "options.md").read_text(encoding="utf-8")
    assert committed == rendered, f"docs/options.md is stale; regenerate it: {optionsdoc.COMMAND}"
    for option in (o for o in OPTIONS if o.flags and o.commands != (options.ROOT,)):
        assert optionsdoc.usage(option).split(",")[0] in committed
    assert all(f"`{name}`" in committed for name in env_names())


def test_computed_defaults_say_how_in_the_docs() -> None:
    assert all(o.default.text for o in OPTIONS if isinstance(o.default, Computed))


def test_each_command_reads_only_options_it_declares() -> None:
    """``opts.NAME`` in a command's module names a row of that command (what a dataclass per command would
    make mypy check), or the value's own fields."""
    own = {"env", "command", "origin", "with_matrix", "values", "origins", "given"}
    for command in cli.COMMANDS:
        path = PACKAGE / "cli" / f"{command.replace('-', '_')}.py"
        read = {n.attr for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "opts"}
        assert read, command
        assert read - own <= {o.name for o in for_command(command)}, (command, read - own)
