"""One zip reader: every wheel builders reads goes through the capped reader (``zipcheck.open_zip``, behind
``Wheel.open``); the one writer (``wheel/writer.py``) is the only other ``ZipFile``.

Read with ``ast``: a ``ZipFile(...)`` anywhere else under ``builders/`` fails. The modules that read
wheels without it before (variant checks, the RPATH strip, the index's description of a wheel variant)
are then shown to refuse a hostile archive as the capped reader does: a finding or a typed error,
never an inflated bomb.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from builders.base.errors import WheelError
from builders.index import pages as index
from builders.wheel import rpath
from builders.wheel import variant as wheel_variant
from builders.wheel.writer import write_wheel
from builders.wheel.zipcheck import MIB
from tests.hostile import make_wheels as mw

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "builders"
# the file and the function where a ZipFile may be made: the one reader, the one writer
ALLOWED = {("builders/wheel/zipcheck.py", "open_zip"), ("builders/wheel/writer.py", "write_members")}


def zipfiles_made(path: Path, root: Path = ROOT) -> list[tuple[str, str, int]]:
    """Each ``ZipFile(...)`` call in ``path``: (file, the function it is in, line)."""
    rel = path.relative_to(root).as_posix()
    found = []

    def visit(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else function
            func = child.func if isinstance(child, ast.Call) else None
            if isinstance(func, ast.Name | ast.Attribute) and (getattr(func, "id", None) or getattr(func, "attr", None)) \
                    == "ZipFile":
                found.append((rel, function, child.lineno))
            visit(child, inner)

    visit(ast.parse(path.read_text(encoding="utf-8")), "")
    return found


def test_no_zipfile_but_the_reader_and_the_writer() -> None:
    made = [hit for path in sorted(PACKAGE.rglob("*.py")) for hit in zipfiles_made(path)]
    stray = [f"{rel}:{line} (in {function or 'the module'})" for rel, function, line in made
             if (rel, function) not in ALLOWED]
    assert not stray, "read wheels with builders.wheel.archive.Wheel.open (the capped reader):\n" + "\n".join(stray)
    assert {(rel, function) for rel, function, _ in made} == ALLOWED


def test_the_scan_sees_each_spelling(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("import zipfile\nfrom zipfile import ZipFile\n"
                      "def read(p):\n    with zipfile.ZipFile(p) as zf:\n        return ZipFile(p).namelist()\n"
                      "x = zipfile.ZipInfo('a')\n")
    assert zipfiles_made(sample, tmp_path) == [("sample.py", "read", 4), ("sample.py", "read", 5)]


def bomb(folder: Path) -> Path:
    """A wheel of 64 MiB of zeros deflated to a few KiB (the hostile corpus's bomb, smaller): refused unread."""
    mw.bomb(folder, size=64 * MIB)
    (path,) = (folder / "house").glob("*.whl")
    return path


def test_a_variant_check_refuses_a_bomb_with_a_finding(tmp_path: Path) -> None:
    twin = bomb(tmp_path)
    found = wheel_variant.package_findings(twin, twin)
    assert [f.code for f in found] == ["variant-archive"] and "a zip bomb); nothing was inflated" in found[0].message


def test_the_rpath_strip_refuses_a_bomb(tmp_path: Path) -> None:
    wheel = bomb(tmp_path)
    with pytest.raises(WheelError, match=r"archive-ratio: .*nothing was inflated"):
        rpath.strip_rpaths(wheel, frozenset({"/opt/python/lib"}), {}, None, 315532800)


def test_describe_reads_a_wheel_variant_under_its_label(tmp_path: Path) -> None:
    dist = "pkg-1.0.dist-info"
    plain = tmp_path / "pkg-1.0-py3-none-any.whl"
    write_wheel(plain, {f"{dist}/METADATA": b"Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\nRequires-Python: >=3.11\n",
                        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nTag: py3-none-any\n"}, dist, {}, 315532800)
    labelled = plain.with_name("pkg-1.0-py3-none-any-cu132.whl")
    labelled.write_bytes(plain.read_bytes())
    entry, twin = index.describe(labelled, "ignored"), index.describe(plain, "cpu")
    assert (entry.label, entry.version, entry.project, entry.requires_python) == ("cu132", "1.0", "pkg", ">=3.11")
    assert (twin.label, twin.metadata) == ("cpu", entry.metadata)
    with pytest.raises(WheelError, match="not-a-wheel"):
        index.describe(tmp_path / "not-a-wheel.whl", "")
