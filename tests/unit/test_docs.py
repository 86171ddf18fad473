"""The documentation says only what is true of this checkout.

- every relative link of README.md and docs/*.md names a file that exists, and a ``#anchor`` a
  heading of that page;
- every command shown exists: ``nox -s NAME`` is a session of noxfile.py, ``python -m builders
  CMD`` and ``builders CMD`` a subcommand, and every flag shown is in that command's ``--help``
  (for a nox session that runs ``python -m builders CMD``, the flags after ``--``);
- the generated parts of docs/ (the matrix keys, the exit codes) are what scripts/gen_docs.py
  renders from the schema and from builders/base/errors.py;
- README.md stays short, starts with the commands a fresh machine runs, and names as its test
  command what CI's .ci/run runs;
- docs/ stays short (each page and the whole), and the channel lifecycle table is written once, in
  docs/channels.md, with every other page that speaks of the lifecycle linking to it.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import shlex
from functools import cache
from pathlib import Path

import pytest

from builders import cli

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
README_LIMIT = 12 * 1024
PAGE_LIMIT, DOCS_LIMIT = 12 * 1024, 80 * 1024
# The options table's page is generated, a row per option (each cut to a few words): it grows with the table, which
# is where every new knob must be declared; the prose pages keep PAGE_LIMIT.
GENERATED_LIMITS = {"options.md": 14 * 1024}
LIFECYCLE = "channels.md#which-tag-or-dispatch-does-what"
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
SPAN = re.compile(r"`([^`\n]+)`")


def prose(text: str) -> str:
    """The page without its fenced code blocks (a link inside one is an example, not a link)."""
    return FENCE.sub("", text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation but '-' and '_' dropped, spaces as '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip()).replace("`", "").lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    return {slug(m) for m in re.findall(r"^#{1,6} (.+)$", prose(page.read_text(encoding="utf-8")), re.MULTILINE)}


def links(page: Path) -> list[str]:
    text = SPAN.sub("", prose(page.read_text(encoding="utf-8")))  # nor is one in a code span
    return [t for t in LINK.findall(text) if not re.match(r"[a-z]+:", t)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_exists(page: Path) -> None:
    found = links(page)
    for target in found:
        path, _, anchor = target.partition("#")
        where = (page.parent / path).resolve() if path else page
        assert where.exists(), f"{page.name}: link to {target}: no such file"
        assert where.is_relative_to(ROOT), f"{page.name}: link to {target} leaves the repository"
        if anchor and where.suffix == ".md":
            assert anchor in anchors(where), f"{page.name}: link to {target}: no such heading in {where.name}"
    if page.name == "README.md":
        assert {f"docs/{p.name}" for p in PAGES[1:]} <= set(found), "README links every page of docs/"


def test_the_link_checker_catches_a_broken_link(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# A title\n\n[ok](#a-title) [gone](missing.md) `[no](code.md)` [web](https://x.invalid)\n"
                    "```\n[example](nowhere.md)\n```\n")
    assert links(page) == ["#a-title", "missing.md"] and anchors(page) == {"a-title"}
    assert slug("The release run, locally, under `act`") == "the-release-run-locally-under-act"


@cache
def sessions() -> dict[str, str]:
    """noxfile.py's sessions, each with the builders subcommand it runs ("" for none)."""
    tree = ast.parse((ROOT / "noxfile.py").read_text(encoding="utf-8"))
    out = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and any("session" in ast.unparse(d) for d in node.decorator_list):
            source = ast.unparse(node)
            command = re.search(r"'-m', 'builders', '([a-z-]+)'", source)
            out[node.name] = command.group(1) if command else ""
    return out


@cache
def subcommands() -> frozenset[str]:
    text = help_text(None)
    return frozenset(re.findall(r"^    ([a-z][a-z-]+)(?: |$)", text, re.MULTILINE))


@cache
def help_text(command: str | None) -> str:
    argv = [command, "--help"] if command else ["--help"]
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        cli.main(argv)
    return out.getvalue()


def commands(text: str) -> list[list[str]]:
    """Every command line shown in a page: code spans and code-block lines, comments dropped."""
    lines = [line for block in FENCE.findall(text) for line in block.splitlines()[1:-1]]
    lines += SPAN.findall(prose(text).replace("\\|", "|"))
    out = []
    for line in lines:
        line = line.split(" #", 1)[0].strip().rstrip("\\").strip()
        try:
            words = shlex.split(line)
        except ValueError:
            words = line.split()
        for start, word in enumerate(words):
            nox = word == "nox" and words[start + 1:start + 2] in (["-s"], ["-l"])
            if nox or (start == 0 and word == "builders") or words[start:start + 3] == ["python", "-m", "builders"]:
                out.append(words[start:])
                break
    return out


def flags(words: list[str]) -> list[str]:
    """The options among ``words``: ``--name`` or ``-x``, without ``=value``; not a bare ``--``."""
    return [w.split("=", 1)[0] for w in words if re.match(r"^--?[a-zA-Z]", w)]


def check(words: list[str]) -> None:
    """One command line of a page exists as shown, or an AssertionError says what does not."""
    shown = " ".join(words)
    if words[0] == "nox":
        if words[1:2] == ["-l"]:
            return
        assert words[1] == "-s" and words[2] in sessions(), f"{shown}: no nox session {words[2]!r} in noxfile.py"
        command, rest = sessions()[words[2]], words[words.index("--") + 1:] if "--" in words else []
    else:
        rest = words[3:] if words[0] == "python" else words[1:]
        if not rest:
            return  # `python -m builders` itself
        command, rest = (rest[0], rest[1:]) if rest[0][0] != "-" else (None, rest)
        if command and command.isupper():
            return  # a placeholder: `python -m builders COMMAND`
        assert command is None or command in subcommands(), f"{shown}: no subcommand {command!r}"
    if command != "":
        for flag in flags(rest):
            assert re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", help_text(command)), \
                f"{shown}: `{command} --help` has no {flag}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_command_shown_exists(page: Path) -> None:
    shown = commands(page.read_text(encoding="utf-8"))
    for words in shown:
        check(words)
    if page.name == "README.md":
        assert len(shown) >= 20


def test_the_command_checker_catches_what_does_not_exist() -> None:
    with pytest.raises(AssertionError, match="no nox session"):
        check(["nox", "-s", "deploy"])
    with pytest.raises(AssertionError, match="no subcommand"):
        check(["python", "-m", "builders", "deploy"])
    with pytest.raises(AssertionError, match="has no --frobnicate"):
        check(["nox", "-s", "build", "--", "--frobnicate"])
    with pytest.raises(AssertionError, match="has no --matrix"):
        check(["builders", "merge-index", "site", "--matrix", "m.yaml"])
    assert commands("run `nox -s plan -- --json` or\n```sh\npython -m builders verify W --target T  # one\n```\n") \
        == [["python", "-m", "builders", "verify", "W", "--target", "T"], ["nox", "-s", "plan", "--", "--json"]]


def test_readme_says_which_commands_take_matrix() -> None:
    """The README names the commands without --matrix; every other command has it."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    said = re.search(r"all but ((?:`[a-z-]+`(?:, | and )?)+) take `--matrix", text)
    assert said, "README says which commands take --matrix"
    without = set(re.findall(r"`([a-z-]+)`", said.group(1)))
    assert without == {c for c in subcommands() if "--matrix" not in help_text(c)}


def load_generator():
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "scripts" / "gen_docs.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_pages_are_what_the_generator_renders() -> None:
    gen = load_generator()
    for page, parts in gen.generated().items():
        text = page.read_text(encoding="utf-8")
        for name, body in parts.items():
            assert gen.replaced(text, name, body) == text, f"{page.name} is stale: run python scripts/gen_docs.py"


def test_every_schema_key_is_in_the_matrix_reference() -> None:
    import json

    gen = load_generator()
    schema = json.loads(gen.SCHEMA.read_text(encoding="utf-8"))
    page = (ROOT / "docs" / "matrix.md").read_text(encoding="utf-8")
    names: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, dict):
            names.update(node.get("properties", {}))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    assert len(names) > 40
    missing = sorted(n for n in names if not re.search(rf"`[^`]*\b{re.escape(n)}\b[^`]*`", page))
    assert not missing, f"docs/matrix.md lacks {missing}"


def test_readme_is_short_and_starts_with_the_fresh_machine_commands() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.encode()) < README_LIMIT
    first = FENCE.search(text)
    assert first and text[:first.start()].count("\n") < 10, "the commands come first"
    shown = commands(first.group(0))
    assert shown == [["nox", "-s", "build"], ["nox", "-s", "tests"]]
    assert "python3 -m pip install nox" in first.group(0)
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line.startswith("nox ")]
    assert ci == ["nox -s tests"], "CI runs exactly the README's test command"


def test_no_issue_numbers_or_changelog_in_docs() -> None:
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        assert not re.search(r"\b[Ii]ssue \d+|\(before, |MISSED", text), page.name


def test_docs_are_short() -> None:
    sizes = {page.name: len(page.read_bytes()) for page in PAGES[1:]}
    over = {name: size for name, size in sizes.items() if size > GENERATED_LIMITS.get(name, PAGE_LIMIT)}
    assert not over, f"pages over {PAGE_LIMIT} bytes (generated: {GENERATED_LIMITS})"
    assert sum(sizes.values()) <= DOCS_LIMIT, f"docs/ is {sum(sizes.values())} bytes, over {DOCS_LIMIT}: {sizes}"


def tables(text: str) -> list[str]:
    """The Markdown tables of a page (outside code blocks), each as its lines."""
    return re.findall(r"(?:^\|.*\n?)+", prose(text), re.MULTILINE)


def lifecycle(table: str) -> bool:
    """A table that says what the nightly schedule, a candidate tag and the promotion dispatch do."""
    return all(word in table for word in ("schedule", "-rc", "promote.yml"))


def test_the_lifecycle_table_is_written_once_and_linked_from_the_others() -> None:
    found = [page.name for page in PAGES for table in tables(page.read_text(encoding="utf-8")) if lifecycle(table)]
    assert found == ["channels.md"], f"the lifecycle table is written in {found}, not once in channels.md"
    speaking = [page for page in PAGES if page.name != "channels.md"
                and re.search(r"INDEX_BUCKET|promote\.yml", prose(page.read_text(encoding="utf-8")))]
    for page in speaking:
        assert any(link.endswith(LIFECYCLE) for link in links(page)), f"{page.name} speaks of the lifecycle: link {LIFECYCLE}"


def test_the_lifecycle_check_sees_a_second_table() -> None:
    text = "| event | publishes |\n|---|---|\n| schedule | nightly |\n| tag -rc1 | test |\n| promote.yml | release |\n"
    assert [lifecycle(t) for t in tables(text + "\nprose\n\n| a |\n")] == [True, False]
