"""YAML to plain data, safely, keeping where every key and value came from.

The text is untrusted. We take only the parser's events (libyaml's when PyYAML has it) and
compose the document ourselves, without recursion, so that everything dangerous is refused
with its ``file:line:column`` before it can cost memory or a traceback:

- a tag outside YAML's core schema (``!!python/object``, ``!!binary``, ``!custom``...) and
  merge keys (``<<``);
- nesting deeper than :data:`MAX_DEPTH`;
- more than :data:`MAX_ALIASES` aliases, or a document whose aliases expand it past
  :data:`MAX_VALUES` values (a "billion laughs" alias bomb is refused at the alias that
  crosses the line, long before it is expanded);
- characters YAML does not allow, integers beyond 64 bits, more than one document.

Two YAML conveniences are turned off because they bite release matrices: dates stay strings,
and floats keep their source text (``3.10`` must not become ``3.1``) as :class:`YamlFloat`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, NoReturn

import yaml
from yaml import events as ev
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from builders.base.errors import Location, MatrixError, Problem

Path = tuple[str | int, ...]

MAX_DEPTH = 32
MAX_ALIASES = 1_000
MAX_VALUES = 20_000
MAX_INT = 2**63

CORE = "tag:yaml.org,2002:"
_SCALAR_TAGS = frozenset(CORE + t for t in ("str", "int", "float", "bool", "null"))
_KIND_TAG = {SequenceNode: CORE + "seq", MappingNode: CORE + "map"}
_NOT_YAML = re.compile("[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]")


class YamlFloat(str):
    """A YAML float kept as its source text (``3.10`` stays ``"3.10"``); ``float()`` gives its value."""


class _Resolver(yaml.resolver.Resolver):
    """YAML 1.1 implicit types without timestamps and the ``=`` value type."""


_Resolver.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in (CORE + "timestamp", CORE + "value")]
    for first, resolvers in yaml.resolver.Resolver.yaml_implicit_resolvers.items()
}
_RESOLVER = _Resolver()
_CONSTRUCTOR = yaml.constructor.SafeConstructor()


class _PyParser(yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser):
    """PyYAML's pure-Python event parser (used where libyaml is missing)."""

    def __init__(self, text: str) -> None:
        yaml.reader.Reader.__init__(self, text)
        yaml.scanner.Scanner.__init__(self)
        yaml.parser.Parser.__init__(self)


def _parser(text: str) -> Any:
    cparser = getattr(getattr(yaml, "_yaml", None), "CParser", None)
    return cparser(text) if yaml.__with_libyaml__ and cparser else _PyParser(text)


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
                return Location(file=self.file, line=mark.line + 1, column=mark.column + 1, key=key_path(path))
        return Location(file=self.file, line=1, column=1, key=key_path(path))


@dataclass(frozen=True)
class Parsed:
    """A parsed document: plain data, the marks of its keys and items, and what was wrong
    with it that does not stop the checks (duplicate keys: the first value is kept)."""

    data: Any
    marks: Marks
    problems: list[Problem] = field(default_factory=list)
    invalid: set[Path] = field(default_factory=set)  # scalars that are not what their tag says


def load(text: str, file: str) -> tuple[Any, Marks]:
    """Parse ``text`` into plain data and its marks; raise :class:`MatrixError` on any problem."""
    parsed = parse(text, file)
    if parsed.problems:
        raise MatrixError(parsed.problems)
    return parsed.data, parsed.marks


def parse(text: str, file: str) -> Parsed:
    """Parse ``text``; raise :class:`MatrixError` when no data can be had from it at all."""
    bad = _NOT_YAML.search(text)
    if bad:
        _fail(file, _text_mark(text, bad.start()), f"character U+{ord(bad.group()):04X} is not allowed in YAML",
              "remove it, or write it as an escape inside a double-quoted string")
    try:
        root = _Composer(text, file).compose()
    except yaml.MarkedYAMLError as exc:
        _fail(file, exc.problem_mark or exc.context_mark, f"not valid YAML: {_describe(exc)}")
    except yaml.YAMLError as exc:  # a reader error: only a character offset
        _fail(file, _text_mark(text, getattr(exc, "position", 0)), f"not valid YAML: {getattr(exc, 'reason', exc)}")
    if root is None:
        _fail(file, None, "the file is empty")
    walker = _Walker(Marks(file))
    return Parsed(walker.walk(root, ()), walker.marks, walker.problems, walker.invalid)


def _fail(file: str, mark: yaml.Mark | None, message: str, hint: str = "") -> NoReturn:
    line, column = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
    raise MatrixError([Problem(message=message, location=Location(file=file, line=line, column=column), hint=hint)])


def _text_mark(text: str, index: int) -> yaml.Mark:
    line = text.count("\n", 0, index)
    return yaml.Mark("", index, line, index - (text.rfind("\n", 0, index) + 1), None, 0)


def _describe(exc: yaml.MarkedYAMLError) -> str:
    """The problem without PyYAML's ``in "<unicode string>", line 3`` lines (we give our own)."""
    parts = [exc.context, exc.problem] if exc.context and exc.problem else [exc.problem or exc.context]
    return ": ".join(str(p) for p in parts if p) or type(exc).__name__


class _Refused(yaml.MarkedYAMLError):
    """A document this loader will not compose (a cap or a tag), at the event's mark."""

    def __init__(self, mark: Any, problem: str) -> None:
        super().__init__(problem=problem, problem_mark=mark)


@dataclass
class _Open:
    """A collection being composed: its start event and the nodes composed so far."""

    start: Any  # a SequenceStartEvent or MappingStartEvent
    items: list[Node] = field(default_factory=list)


class _Composer:
    """Events to nodes without recursion, refusing foreign tags and counting aliases."""

    def __init__(self, text: str, file: str) -> None:
        self.parser = _parser(text)
        self.file = file
        self.anchors: dict[str, Node] = {}
        self.sizes: dict[int, int] = {}  # id(node) -> values it expands to
        self.values = 0
        self.aliases = 0

    def compose(self) -> Node | None:
        self._expect(ev.StreamStartEvent)
        if self.parser.check_event(ev.StreamEndEvent):
            return None
        self._expect(ev.DocumentStartEvent)
        root = self._node()
        self._expect(ev.DocumentEndEvent)
        if not self.parser.check_event(ev.StreamEndEvent):
            raise _Refused(self.parser.peek_event().start_mark, "expected one YAML document, found another (---)")
        return root

    def _expect(self, kind: type[ev.Event]) -> Any:
        event = self.parser.get_event()
        if not isinstance(event, kind):
            raise _Refused(event.start_mark, f"unexpected {type(event).__name__}")
        return event

    def _node(self) -> Node:
        stack: list[_Open] = []
        while True:
            event = self.parser.get_event()
            if isinstance(event, ev.CollectionStartEvent):
                if len(stack) >= MAX_DEPTH:
                    raise _Refused(event.start_mark, f"nested deeper than {MAX_DEPTH} levels")
                stack.append(_Open(event))
                continue
            node = self._close(stack.pop(), event) if isinstance(event, ev.CollectionEndEvent) else self._leaf(event)
            if not stack:
                return node
            stack[-1].items.append(node)

    def _leaf(self, event: Any) -> Node:
        if isinstance(event, ev.AliasEvent):
            return self._alias(event)
        if not isinstance(event, ev.ScalarEvent):
            raise _Refused(event.start_mark, f"unexpected {type(event).__name__}")
        tag = event.tag
        if tag is None or tag == "!":
            tag = _RESOLVER.resolve(ScalarNode, event.value, event.implicit)
        _check_tag(tag, _SCALAR_TAGS, event)
        start: Any = event.start_mark  # libyaml's marks are a Mark of their own
        end: Any = event.end_mark
        node = ScalarNode(tag, event.value, start, end, style=event.style)
        return self._done(node, event, 1)

    def _close(self, open_: _Open, end: Any) -> Node:
        start = open_.start
        kind = SequenceNode if isinstance(start, ev.SequenceStartEvent) else MappingNode
        tag = _KIND_TAG[kind] if start.tag in (None, "!") else start.tag
        _check_tag(tag, {_KIND_TAG[kind]}, start)
        node = kind(tag, [], start.start_mark, end.end_mark, flow_style=start.flow_style)
        node.value = open_.items if kind is SequenceNode else list(zip(open_.items[::2], open_.items[1::2]))
        return self._done(node, start, 1 + sum(self.sizes[id(item)] for item in open_.items))

    def _alias(self, event: Any) -> Node:
        node = self.anchors.get(event.anchor)
        if node is None:
            raise _Refused(event.start_mark, f"alias *{event.anchor} names no anchor defined before it")
        self.aliases += 1
        if self.aliases > MAX_ALIASES:
            raise _Refused(event.start_mark, f"more than {MAX_ALIASES} aliases")
        self._count(self.sizes[id(node)], event)
        return node

    def _done(self, node: Node, event: Any, size: int) -> Node:
        self.sizes[id(node)] = size
        self._count(1, event)
        if event.anchor is not None:
            self.anchors[event.anchor] = node
        return node

    def _count(self, values: int, event: Any) -> None:
        self.values += values
        if self.values > MAX_VALUES:
            why = "aliases repeating aliases: an alias bomb?" if self.aliases else "a release matrix has a few hundred"
            raise _Refused(event.start_mark, f"the document expands to more than {MAX_VALUES:,} values ({why})")


def _check_tag(tag: str, allowed: set[str] | frozenset[str], event: Any) -> None:
    if tag in allowed:
        return
    if tag == CORE + "merge":
        raise _Refused(event.start_mark, "merge keys (<<) are not supported: write the keys out "
                       "(accelerator families already give defaults to their versions)")
    shown = "!!" + tag.removeprefix(CORE) if tag.startswith(CORE) else tag
    raise _Refused(event.start_mark, f"tag {shown} is not allowed here: a matrix holds only plain YAML "
                   "(strings, numbers, booleans, null, lists and mappings)")


class _Walker:
    """Turns composed nodes into plain data, recording marks and duplicate keys."""

    def __init__(self, marks: Marks) -> None:
        self.marks = marks
        self.problems: list[Problem] = []
        self.invalid: set[Path] = set()

    def walk(self, node: Node, path: Path) -> Any:
        self.marks.add(path, node.start_mark)
        if isinstance(node, MappingNode):
            return self._mapping(node, path)
        if isinstance(node, SequenceNode):
            return [self.walk(item, (*path, i)) for i, item in enumerate(node.value)]
        return self._scalar(node, path)

    def _scalar(self, node: Node, path: Path) -> Any:
        try:
            return scalar_value(node)
        except ValueError as exc:
            self.problems.append(Problem(message=str(exc), location=self.marks.at(path)))
            self.invalid.add(path)
            return node.value

    def _mapping(self, node: MappingNode, path: Path) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, ScalarNode):
                mark = key_node.start_mark
                where = Location(file=self.marks.file, line=mark.line + 1, column=mark.column + 1, key=key_path(path))
                self.problems.append(Problem(message="keys must be plain scalars", location=where,
                                             hint="a list or mapping cannot be a key"))
                continue
            key = str(key_node.value)
            child = (*path, key)
            if key in out:
                self.marks.add(child, key_node.start_mark)
                self.problems.append(Problem(message=f"duplicate key {key!r}", location=self.marks.at(child),
                                             hint="each key may appear once in a mapping; the first one is used"))
                continue
            out[key] = self.walk(value_node, child)
            self.marks.add(child, key_node.start_mark)
        return out


def scalar_value(node: Node) -> Any:
    """The value of a core-schema scalar; :class:`ValueError` says why one is not valid."""
    kind = node.tag.removeprefix(CORE)
    if kind == "str":
        return node.value
    if kind == "null":
        return None
    if kind == "int" and len(node.value) > 40:
        raise ValueError(f"integer {node.value[:40]}... is out of range (64 bits at most)")
    try:
        value = getattr(_CONSTRUCTOR, f"construct_yaml_{kind}")(node)
    except (ValueError, KeyError, IndexError, TypeError):
        raise ValueError(f"{node.value[:40]!r} is not a valid {kind}") from None
    if kind == "int" and abs(value) >= MAX_INT:
        raise ValueError(f"integer {node.value[:40]}... is out of range (64 bits at most)")
    return YamlFloat(node.value) if kind == "float" else value
