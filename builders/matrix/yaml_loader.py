"""Load ``matrix.yaml``: the safe reader, the shape check, one pass into keyed values, the
semantic rules over them, then the frozen model.

One run reports every problem: the rules run on whatever parsed, skipping only a rule whose
input is missing or ill-typed (the schema has already said why); problems come out in file
order, each with ``file:line:column``, the key path and how to fix it (the message shows the
first 50).

The input is read by :mod:`builders.base.untrusted` (at most :data:`MATRIX_LIMIT` bytes of UTF-8)
and parsed by :mod:`builders.base.yamlmarks` (core YAML only, alias and depth caps). Then:

- :mod:`builders.matrix.schema`: the JSON Schema (shape), and the key paths it refused;
- :mod:`builders.matrix.build`: the one pass over the parsed YAML (each mapping visited once,
  each variant merged once) into :mod:`builders.matrix.draft` values that keep their key paths;
- :mod:`builders.matrix.rules`: the semantic rules over those values (the small checks are in
  :mod:`builders.matrix.findings`, :mod:`builders.matrix.properties`, :mod:`builders.matrix.policy`);
- :func:`builders.matrix.build.assemble`: the frozen :class:`~builders.matrix.model.Matrix`.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from builders.base import untrusted, yamlmarks
from builders.base.errors import InputError, MatrixError, Problem, raise_problems
from builders.matrix import build, rules
from builders.matrix.family import Accelerator, by_name
from builders.matrix.model import Matrix
from builders.matrix.schema import check_schema

MATRIX_LIMIT = untrusted.MIB


def load(path: Path | str, *, families: Iterable[Accelerator], source: Path | None = None, builds: bool = True) -> Matrix:
    """Raise :class:`MatrixError` listing every problem. This layer knows no family: the caller passes them.

    ``source`` (``--source``) replaces ``project.source`` unchecked; ``builds=False`` skips the source tree
    and smoke script checks, so a downloaded wheel verifies without them.
    """
    try:
        text = untrusted.read_text(path, what="matrix", limit=MATRIX_LIMIT)
    except InputError as exc:
        raise MatrixError(exc.problems) from None
    return loads(text, path, families=families, source=source, builds=builds)


def loads(text: str, path: Path | str = "matrix.yaml", *, families: Iterable[Accelerator], source: Path | None = None,
          builds: bool = True) -> Matrix:
    """Validate matrix ``text`` as if read from ``path`` (used by tests, no I/O but path checks; see :func:`load`)."""
    path = Path(path)
    parsed = yamlmarks.parse(text, str(path))
    known = by_name(families)
    found, bad = check_schema(parsed.data, parsed.marks, parsed.invalid, families=known)
    draft = build.read(parsed.data, bad, parsed.marks, known)
    problems = rules.check(draft, parsed.marks, base=path.parent, check_source=builds and source is None,
                           check_script=builds)
    raise_problems(sorted([*parsed.problems, *found, *problems], key=_file_order))
    return build.assemble(draft, parsed.marks, path, source)


def _file_order(problem: Problem) -> tuple[int, int]:
    return (problem.location.line, problem.location.column) if problem.location else (0, 0)
