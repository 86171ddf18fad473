"""One table of CPU architecture names, and every spelling the pipeline meets resolves through it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from builders.base import arch
from builders.matrix.model import PythonVersion
from builders.pipeline.interpreters import windows_candidates
from builders.wheel import elf


@pytest.mark.parametrize(("spelling", "canonical"), [
    ("x86_64", "x86_64"), ("AMD64", "x86_64"), ("amd64", "x86_64"),
    ("aarch64", "aarch64"), ("arm64", "aarch64"), ("ARM64", "aarch64"),
    ("armv8l", "armv7l"), ("x86", "i686"), ("riscv64", "riscv64"), ("PPC64LE", "ppc64le"),
])
def test_every_spelling_has_one_canonical_name(spelling: str, canonical: str) -> None:
    assert arch.canonical_arch(spelling) == canonical
    assert elf.normalise_arch(spelling) == canonical  # what verify compares ELF files against


def test_every_matrix_arch_is_a_cpu_elf_and_the_host_know() -> None:
    known = set(elf.ARCHITECTURES.values())
    for os_name, arches in arch.ARCHES.items():
        for spelling in arches:
            assert arch.canonical_arch(spelling) in known, (os_name, spelling)


def test_the_schema_lists_exactly_the_matrix_arches(root: Path) -> None:
    schema = json.loads((root / "builders/schema/matrix.schema.json").read_text(encoding="utf-8"))
    spellings = {s for arches in arch.ARCHES.values() for s in arches}
    found = [node["enum"] for node in walk(schema) if isinstance(node, dict) and "AMD64" in node.get("enum", ())]
    assert [set(e) for e in found] == [spellings]


def walk(node: object):
    yield node
    children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
    for child in children:
        yield from walk(child)


@pytest.mark.parametrize(("spelling", "folder"), [("x86_64", "x64"), ("AMD64", "x64"), ("arm64", "arm64"),
                                                   ("aarch64", "arm64")])
def test_the_tool_cache_folder(spelling: str, folder: str, tmp_path: Path) -> None:
    assert arch.tool_cache_arch(spelling) == folder
    exe = tmp_path / "Python" / "3.12.10" / folder / "python.exe"
    exe.parent.mkdir(parents=True)
    exe.touch()
    found = windows_candidates(PythonVersion.parse("3.12"), {"RUNNER_TOOL_CACHE": str(tmp_path)},
                               arch.canonical_arch(spelling))
    assert found[0] == (str(exe),)
