"""The one reader of the command line and the environment: parsers made from the options table, one
precedence rule, and one frozen :class:`Options` value per run.

:func:`choose` is the rule, for every option alike: the command line, else the option's environment
variable (from the ``env`` mapping the run was given), else the matrix value it names, else its
default. Parsers are built with ``argparse.SUPPRESS`` defaults, so what the user typed is known
apart from what was defaulted. ``os.environ`` is read here and only here (:func:`environ`), once
per run; everything below the CLI is handed the mapping.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from builders import __version__
from builders.base.errors import InputError, PathError, Problem
from builders.cli.options import ROOT, Computed, Option, for_command
from builders.cli.paths import CHECKS

FLAG, ENV, MATRIX, DEFAULT = "command line", "environment", "matrix", "default"
BAD_ENV = (argparse.ArgumentTypeError, ValueError, TypeError)


def environ() -> dict[str, str]:
    """The process's environment, read once by ``main`` and passed down as a mapping."""
    return dict(os.environ)


@dataclass(frozen=True, kw_only=True)
class Subcommand:
    """A subcommand as ``--help`` lists it (its options come from the table)."""

    name: str
    help: str
    description: str | None = None


@dataclass(frozen=True, kw_only=True)
class Options:
    """One command's options, settled: each value with where it came from (:data:`FLAG`, :data:`ENV`,
    :data:`MATRIX`, :data:`DEFAULT`). Read an option as an attribute (``opts.jobs``); a name the
    command does not take is an ``AttributeError``, never a silent None."""

    command: str
    values: Mapping[str, Any]
    origins: Mapping[str, str]
    given: Mapping[str, Any] = field(repr=False)
    env: Mapping[str, str] = field(repr=False)

    def __getattr__(self, name: str) -> Any:
        values = object.__getattribute__(self, "values")
        if name in values:
            return values[name]
        raise AttributeError(f"{object.__getattribute__(self, 'command')!r} takes no option {name!r}")

    def origin(self, name: str) -> str:
        return self.origins[name]

    def with_matrix(self, matrix: object) -> Options:
        """The matrix fills what neither the command line nor the environment gave (``--source``: ``project.source``)."""
        return resolve(self.command, self.given, self.env, matrix)


def choose(option: Option, given: Mapping[str, Any], env: Mapping[str, str],
           matrix: object | None = None) -> tuple[Any, str]:
    """The value of ``option`` and where it came from: command line, else environment, else matrix, else default."""
    if option.name in given and option.flags:
        return _frozen(given[option.name]), FLAG
    if option.env and env.get(option.env):
        read = option.from_env or option.parse or str
        try:
            return read(env[option.env]), ENV
        except BAD_ENV as exc:
            raise InputError([Problem(message=f"${option.env}: {exc}")]) from None
    found = _lookup(matrix, option.matrix)
    if found is not None:
        return found, MATRIX
    return option.default_for(env), DEFAULT


def _lookup(matrix: object | None, key: str | None) -> Any:
    """The matrix value at ``key`` (an attribute path; None where a section on the way is absent: no
    ``compile_cache``); None for a per-target key (``platforms.<platform>...``, which the engine reads for each
    target)."""
    if key is None or "<" in key:
        return None
    found = matrix
    for part in key.split("."):
        found = None if found is None else getattr(found, part)
    return found


def _frozen(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def resolve(command: str, given: Mapping[str, Any], env: Mapping[str, str], matrix: object | None = None) -> Options:
    """Every option of ``command`` settled by :func:`choose` (the first row of a shared ``dest`` decides it). A row
    without flags declares a variable read where its help says, from the ``env`` handed there: no value here, but
    its default is in that ``env`` where the variable is unset (the reader below never settles it again)."""
    values: dict[str, Any] = {}
    origins: dict[str, str] = {}
    settled = dict(env)
    for option in for_command(command):
        if option.flags and option.name not in values:
            values[option.name], origins[option.name] = choose(option, given, env, matrix)
        elif not option.flags and option.env and option.default is not None and not env.get(option.env):
            settled[option.env] = str(option.default_for(env))
    return Options(command=command, values=MappingProxyType(values), origins=MappingProxyType(origins),
                   given=MappingProxyType(dict(given)), env=MappingProxyType(settled))


def parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None, env: Mapping[str, str]) -> Options:
    """The command line read by ``parser`` (from :func:`parser`), settled against ``env``."""
    namespace = vars(parser.parse_args(argv))
    command = namespace.pop("command")
    return resolve(command, namespace, env)


def parser(commands: Sequence[Subcommand], *, description: str | None, epilog: str) -> argparse.ArgumentParser:
    """``python -m builders`` and one subparser per command, every argument from the options table."""
    root = argparse.ArgumentParser(prog="python -m builders", description=description, epilog=epilog,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    for option in for_command(ROOT):
        add(root, option)
    sub = root.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in commands:
        p = sub.add_parser(command.name, help=command.help, description=command.description)
        groups: dict[str, argparse._ArgumentGroup] = {}
        for option in (o for o in for_command(command.name) if o.flags):
            if option.group is not None and option.group not in groups:
                groups[option.group] = p.add_argument_group(option.group)
            add(p if option.group is None else groups[option.group], option)
    return root


def add(parser: argparse.ArgumentParser | argparse._ArgumentGroup, option: Option) -> None:
    """The one ``add_argument``: ``option`` as argparse takes it (no default: :func:`choose` supplies it)."""
    kwargs: dict[str, Any] = {"help": option.help_text() or None}
    if option.action == "version":
        kwargs.update(action="version", version=f"builders {__version__}")
    elif option.action is not None:
        kwargs["action"] = option.action
    if not option.positional:
        kwargs.update(dest=option.name, default=argparse.SUPPRESS)
    if option.action in (None, "append"):
        kwargs.update(type=option.parse, choices=option.choice_list(), metavar=option.metavar)
    if option.action == "store_const":
        kwargs["const"] = option.const
    if option.required:
        kwargs["required"] = True
    parser.add_argument(*option.flags, **{k: v for k, v in kwargs.items() if v is not None or k == "help"})


def path_options(command: str) -> tuple[Option, ...]:
    """The options of ``command`` that name a path, each checked by :func:`check_paths`."""
    return tuple(o for o in for_command(command) if o.parse in CHECKS)


def check_paths(opts: Options) -> None:
    """Check every path given, or defaulted by the table, before the command runs (a value from the environment or
    worked out from it is the environment's, as before)."""
    for option in path_options(opts.command):
        origin = opts.origin(option.name)
        if origin in (ENV, MATRIX) or (origin == DEFAULT and isinstance(option.default, Computed)):
            continue
        value = opts.values[option.name]
        for path in value if isinstance(value, tuple) else [value]:
            if path is not None:
                _check(option, CHECKS[option.parse], Path(path))  # type: ignore[index]


def _check(option: Option, check: Any, path: Path) -> None:
    name = str(option.metavar or option.name) if option.positional else option.flags[0]
    try:
        check(path)
    except PathError as exc:
        raise PathError(f"{name} {exc}") from None
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise PathError(f"{name} {path}: {reason}") from None
