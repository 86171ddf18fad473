"""GitHub Actions expressions (a job's ``if:``), parsed into a small tree.

The drift check must tell ``needs.plan.outputs.release == 'true' && ...`` from
``always() || needs.plan.outputs.release == 'true'``: a substring test passes both, GitHub runs
the second on every run. Only what ``if:`` conditions use is understood: literals, context
references (``needs.plan.outputs.release``, ``needs['x'].result``), function calls, ``!``,
comparisons, ``&&`` and ``||`` with GitHub's precedence, and parentheses. Anything else is
refused, so an expression the check cannot read is drift, not a pass.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from builders.base.errors import Problem, WorkflowDrift

TOKEN = re.compile(r"""\s*(?:(?P<str>'(?:[^']|'')*')|(?P<num>-?\d+(?:\.\d+)?)|(?P<op>&&|\|\||==|!=|<=|>=|[<>!(),\[\]])
                       |(?P<ref>[A-Za-z_][A-Za-z0-9_-]*(?:\.[A-Za-z_*][A-Za-z0-9_-]*)*)|(?P<dot>\.[A-Za-z_*][A-Za-z0-9_-]*))""",
                   re.X)
COMPARISONS = ("==", "!=", "<=", ">=", "<", ">")
STATUS_FUNCTIONS = frozenset({"always", "cancelled", "failure", "success"})


def _unreadable(message: str) -> WorkflowDrift:
    """An ``if:`` expression this check cannot read is drift (the caller reports it with the job)."""
    return WorkflowDrift([Problem(message=message)])


@dataclass(frozen=True, kw_only=True)
class Node:
    """``kind`` is and, or, not, cmp, call, ref or lit; ``text`` the operator, name or value."""

    kind: str
    text: str = ""
    args: tuple[Node, ...] = ()


def parse(source: object) -> Node:
    """The tree of an ``if:`` value (a bare expression or one wrapped in ``${{ }}``); true/false for booleans."""
    if isinstance(source, bool):
        return Node(kind="lit", text=str(source).lower())
    text = str(source).strip()
    if text.startswith("${{") and text.endswith("}}") and text.count("${{") == 1:
        text = text[3:-2]
    parser = _Parser(_tokens(text))
    node = parser.disjunction()
    if parser.pos != len(parser.tokens):
        raise _unreadable(f"cannot read {source!r} after {parser.tokens[parser.pos - 1] if parser.pos else ''!r}")
    return node


def _tokens(text: str) -> list[str]:
    out, pos = [], 0
    while pos < len(text.rstrip()):
        match = TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            raise _unreadable(f"cannot read {text!r} at {text[pos:]!r}")
        out.append(match.group().strip())
        pos = match.end()
    return out


class _Parser:
    """Recursive descent in GitHub's precedence: ``||`` < ``&&`` < comparison < ``!`` < primary."""

    def __init__(self, tokens: list[str]) -> None:
        self.tokens, self.pos = tokens, 0

    def peek(self) -> str:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else ""

    def take(self, expected: str | None = None) -> str:
        token = self.peek()
        if not token or (expected is not None and token != expected):
            raise _unreadable(f"expected {expected or 'more'} in {' '.join(self.tokens)!r}, found {token!r}")
        self.pos += 1
        return token

    def disjunction(self) -> Node:
        return self._chain("||", "or", self.conjunction)

    def conjunction(self) -> Node:
        return self._chain("&&", "and", self.comparison)

    def _chain(self, op: str, kind: str, operand: Callable[[], Node]) -> Node:
        parts = [operand()]
        while self.peek() == op:
            self.take()
            parts.append(operand())
        return parts[0] if len(parts) == 1 else Node(kind=kind, text=op, args=tuple(parts))

    def comparison(self) -> Node:
        left = self.unary()
        if self.peek() in COMPARISONS:
            op = self.take()
            return Node(kind="cmp", text=op, args=(left, self.unary()))
        return left

    def unary(self) -> Node:
        if self.peek() == "!":
            self.take()
            return Node(kind="not", text="!", args=(self.unary(),))
        return self.primary()

    def primary(self) -> Node:
        token = self.take()
        if token == "(":
            node = self.disjunction()
            self.take(")")
            return node
        if token[0] == "'" or token[0].isdigit() or token[0] == "-" or token in ("true", "false", "null"):
            return Node(kind="lit", text=token[1:-1].replace("''", "'") if token[0] == "'" else token)
        if token[0].isalpha() or token[0] == "_":
            return self._call(token) if self.peek() == "(" else self._reference(token)
        raise _unreadable(f"unexpected {token!r} in {' '.join(self.tokens)!r}")

    def _call(self, name: str) -> Node:
        self.take("(")
        args: list[Node] = []
        while self.peek() != ")":
            args.append(self.disjunction())
            if self.peek() == ",":
                self.take()
        self.take(")")
        return Node(kind="call", text=name.lower(), args=tuple(args))

    def _reference(self, name: str) -> Node:
        while self.peek() == "[":  # needs['build'].result: the index joins the path as a name
            self.take()
            key = self.take()
            self.take("]")
            name += "." + key.strip("'")
            while self.pos < len(self.tokens) and self.peek().startswith("."):
                name += self.take()
        return Node(kind="ref", text=name)


def conjuncts(node: Node) -> tuple[Node, ...]:
    """The terms that must all hold (the top-level ``&&`` operands; the node itself otherwise)."""
    return node.args if node.kind == "and" else (node,)


def calls(node: Node) -> set[str]:
    """Every function named anywhere in the tree."""
    found = {node.text} if node.kind == "call" else set()
    return found.union(*(calls(a) for a in node.args))


def equals(node: Node, reference: str, value: str) -> bool:
    """``reference == 'value'`` (either side), the only shape a gate may take."""
    if node.kind != "cmp" or node.text != "==":
        return False
    kinds = {(a.kind, a.text) for a in node.args}
    return kinds == {("ref", reference), ("lit", value)}


def references(node: Node) -> set[str]:
    """Every context reference anywhere in the tree."""
    found = {node.text} if node.kind == "ref" else set()
    return found.union(*(references(a) for a in node.args))
