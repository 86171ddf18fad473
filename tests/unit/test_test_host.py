"""The test host's rule: what ``scripts/setup-test-host.sh`` installs is there, and a test that finds one of
those tools missing fails naming that script, never skips (a skipped check is a check nobody ran)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests import helpers

TESTS = Path(helpers.__file__).resolve().parent


def skip_messages() -> list[tuple[str, str]]:
    """(file:line, message text) of every ``pytest.skip(...)`` in the test suite."""
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "skip"
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "pytest" and node.args):
                text = " ".join(c.value for c in ast.walk(node.args[0])
                                if isinstance(c, ast.Constant) and isinstance(c.value, str))
                found.append((f"{path.relative_to(TESTS)}:{node.lineno}", text))
    return found


def test_the_setup_script_has_one_table_of_tools() -> None:
    installs = helpers.setup_installs()
    assert {"podman", "ccache", "chromium", "dockerd", "readelf"} <= set(installs)
    assert 'for tool in "${!package[@]}"' in helpers.SETUP_SCRIPT.read_text(), "the script checks its table, no other list"


def test_no_test_skips_for_a_tool_the_setup_script_installs() -> None:
    offenders = [(where, text) for where, text in skip_messages()
                 if "setup-test-host" in text or "not installed" in text]
    assert not offenders, f"use tests.helpers.require_tool (fails naming the setup script): {offenders}"


def test_a_missing_tool_fails_naming_the_install_step(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(pytest.fail.Exception, match=r"ccache is not installed: run scripts/setup-test-host.sh .*"
                                                    r"Debian's ccache package"):
        helpers.require_tool("ccache", path="/nonexistent")
