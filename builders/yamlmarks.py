"""YAML to plain data, keeping where every key and value came from.

PyYAML's composed node tree carries marks; we walk it ourselves so that every value can be
traced back to ``file:line:column`` for error messages. Two YAML conveniences are turned off
because they bite release matrices: dates stay strings, and floats keep their source text
(``3.10`` must not become ``3.1``) as :class:`YamlFloat`.
"""

from __future__ import annotations

from typing import Any

import yaml

from .errors import Location, MatrixError, Problem

Path = tuple[str | int, ...]


class YamlFloat(str):
    """A YAML float kept as its source text (``3.10`` stays ``"3.10"``); ``float()`` gives its value."""


class _Loader(yaml.SafeLoader):
    """SafeLoader without the timestamp resolver."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def key_path(path: Path) -> str:
    """Render a path the way the matrix docs write it: ``a.b."13.4".c[2]``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
            continue
        text = part if part.replace("_", "").replace("-", "").isalnum() else f'"{part}"'
        out += f".{text}" if out else text
    return out


class Marks:
    """Locations of the nodes of one YAML document, by path."""

    def __init__(self, file: str) -> None:
        self.file = file
        self._marks: dict[Path, yaml.Mark] = {}

    def add(self, path: Path, mark: yaml.Mark) -> None:
        self._marks[path] = mark

    def at(self, path: Path) -> Location:
        """The location of ``path``, or of its nearest ancestor that has one."""
        for end in range(len(path), -1, -1):
            mark = self._marks.get(path[:end])
            if mark is not None:
                return Location(
                    file=self.file, line=mark.line + 1, column=mark.column + 1, key=key_path(path)
                )
        return Location(file=self.file, line=1, column=1, key=key_path(path))


def load(text: str, file: str) -> tuple[Any, Marks]:
    """Parse ``text`` into plain data and the marks of its keys and items."""
    marks = Marks(file)
    try:
        root = yaml.compose(text, Loader=_Loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        loc = Location(file=file, line=mark.line + 1, column=mark.column + 1) if mark else None
        raise MatrixError([Problem(message=f"not valid YAML: {exc}", location=loc)]) from exc
    if root is None:
        raise MatrixError([Problem(message="the file is empty", location=Location(file=file, line=1, column=1))])
    walker = _Walker(marks)
    data = walker.walk(root, ())
    if walker.problems:
        raise MatrixError(walker.problems)
    return data, marks


class _Walker:
    """Turns composed nodes into plain data, recording marks and duplicate keys."""

    def __init__(self, marks: Marks) -> None:
        self.marks = marks
        self.problems: list[Problem] = []
        self._constructor = _Loader("")

    def walk(self, node: yaml.Node, path: Path) -> Any:
        self.marks.add(path, node.start_mark)
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, path)
        if isinstance(node, yaml.SequenceNode):
            return [self.walk(item, (*path, i)) for i, item in enumerate(node.value)]
        return self._scalar(node)

    def _scalar(self, node: yaml.Node) -> Any:
        if node.tag == "tag:yaml.org,2002:float":
            return YamlFloat(node.value)
        return self._constructor.construct_object(node, deep=True)

    def _mapping(self, node: yaml.MappingNode, path: Path) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                self.problems.append(Problem(message="keys must be plain scalars", location=self.marks.at(path)))
                continue
            key = str(self._scalar(key_node))
            child = (*path, key)
            self.marks.add(child, key_node.start_mark)
            if key in out:
                self.problems.append(Problem(message=f"duplicate key {key!r}", location=self.marks.at(child)))
                continue
            out[key] = self.walk(value_node, child)
            self.marks.add(child, key_node.start_mark)
        return out
