"""METADATA written by real build backends, through label and the promote rewrite (issue 20).

Tiny projects named as the shipped matrix's project are built into wheels with ``pip wheel``,
each backend fetched from the package index at test time through pip's own configuration:
setuptools (whose multi-line ``license`` folds into a License field with whitespace-only
continuation lines), hatchling, flit_core, scikit-build-core and, where cargo is on PATH,
maturin. Each wheel is labelled for the first Linux target whose variant adds runtime
requirements, then rewritten as promote rewrites it; verify must find nothing wrong with the
METADATA, and every field but Version and Requires-Dist must read as the backend wrote it.
"""

from __future__ import annotations

import email.parser
import email.policy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.metadata import Metadata

from builders.families import loader as matrix
from builders.index import audit
from builders.matrix.model import Matrix
from builders.matrix.targets import Target, expand
from builders.wheel.archive import Wheel
from builders.wheel.pypi_form import check_promoted, public_version, pypi_requirements
from builders.wheel.verify import METADATA_CODES, Expectation, verify
from builders.wheel.writer import label, rewrite
from tests.verdict import same_verdict

pytestmark = pytest.mark.slow

LICENSE = ("BSD 3-Clause License\n\nCopyright (c) 2024, Someone\n\n"
           "Redistribution and use in source and binary forms, with or without\n"
           "modification, are permitted provided that the following conditions are met:\n")
BODY = "A body\n\nwith a blank line and\nKey: a line that looks like a header\n"
METADATA_FINDINGS = {"wheel-unreadable", *METADATA_CODES.values()}


@pytest.fixture(scope="module")
def shipped(shipped_text: str) -> tuple[Matrix, Target]:
    m = matrix.loads(shipped_text)
    targets, _ = expand(m)
    return m, next(t for t in targets if t.variant.requirements and t.platform.name.startswith("linux"))


def toml_project(m: Matrix, license_line: str) -> str:
    p = m.project
    return (f'[project]\nname = "{p.name}"\nversion = "{p.version.public}"\nrequires-python = "{p.requires_python}"\n'
            f'description = "a test project"\n{license_line}\n'
            f'readme = {{text = """{BODY}""", content-type = "text/plain"}}\n')


LICENSE_TABLE = f'license = {{text = """{LICENSE}"""}}'


def setuptools_project(m: Matrix, src: Path) -> None:
    p = m.project
    (src / "pyproject.toml").write_text('[build-system]\nrequires = ["setuptools"]\n'
                                        'build-backend = "setuptools.build_meta"\n')
    (src / "setup.py").write_text(
        f"from setuptools import setup\nsetup(name={p.name!r}, version={str(p.version.public)!r}, "
        f"license={LICENSE!r}, packages=[{p.import_name!r}], python_requires={str(p.requires_python)!r}, "
        f"long_description={BODY!r}, long_description_content_type='text/plain')\n")


def hatchling_project(m: Matrix, src: Path) -> None:
    (src / "pyproject.toml").write_text('[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n'
                                        + toml_project(m, LICENSE_TABLE)
                                        + f'[tool.hatch.build.targets.wheel]\npackages = ["{m.project.import_name}"]\n')


def flit_project(m: Matrix, src: Path) -> None:
    (src / "pyproject.toml").write_text('[build-system]\nrequires = ["flit_core>=3.4"]\nbuild-backend = "flit_core.buildapi"\n'
                                        + toml_project(m, LICENSE_TABLE)
                                        + f'[tool.flit.module]\nname = "{m.project.import_name}"\n')


def scikit_build_project(m: Matrix, src: Path) -> None:
    (src / "pyproject.toml").write_text('[build-system]\nrequires = ["scikit-build-core"]\n'
                                        'build-backend = "scikit_build_core.build"\n' + toml_project(m, LICENSE_TABLE)
                                        + f'[tool.scikit-build]\nwheel.packages = ["{m.project.import_name}"]\n')
    (src / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.15)\n"
                                        "project(${SKBUILD_PROJECT_NAME} LANGUAGES NONE)\n")


def maturin_project(m: Matrix, src: Path) -> None:
    """A Rust binary with no crate dependencies (nothing is fetched from a crate registry)."""
    if shutil.which("cargo") is None:
        pytest.skip("maturin: cargo is not on PATH")
    (src / "pyproject.toml").write_text('[build-system]\nrequires = ["maturin>=1,<2"]\nbuild-backend = "maturin"\n'
                                        + toml_project(m, LICENSE_TABLE) + '[tool.maturin]\nbindings = "bin"\n')
    (src / "Cargo.toml").write_text(f'[package]\nname = "{m.project.import_name}"\nversion = "{m.project.version.public}"\n'
                                    'edition = "2021"\n')
    (src / "src").mkdir()
    (src / "src" / "main.rs").write_text('fn main() { println!("hello"); }\n')


BACKENDS = {"setuptools": setuptools_project, "hatchling": hatchling_project, "flit_core": flit_project,
            "scikit-build-core": scikit_build_project, "maturin": maturin_project}


def build(m: Matrix, backend: str, tmp: Path) -> Wheel:
    src = tmp / "src"
    (src / m.project.import_name).mkdir(parents=True)
    (src / m.project.import_name / "__init__.py").write_text('"""A test package."""\n')
    BACKENDS[backend](m, src)
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", str(tmp / "dist"), str(src)],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (path,) = (tmp / "dist").glob("*.whl")
    return Wheel(path)


def fields(wheel: Wheel) -> list[tuple[str, str]]:
    raw = wheel.read(f"{wheel.dist_info}/METADATA")
    meta = email.parser.BytesParser(policy=email.policy.compat32).parsebytes(raw)
    assert not meta.defects, meta.defects
    return [(k, str(v)) for k, v in meta.items() if k not in ("Version", "Requires-Dist")] + [("", meta.get_payload())]


def test_setuptools_folds_its_license_with_whitespace_only_lines(shipped, tmp_path: Path) -> None:
    """The input the bug needs: a License fold with a whitespace-only continuation line."""
    m, _t = shipped
    raw = build(m, "setuptools", tmp_path)
    lines = raw.read(f"{raw.dist_info}/METADATA").splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.startswith(b"License:"))
    fold = [line for line in lines[start + 1:] if line[:1] in (b" ", b"\t")]
    assert any(not line.strip() for line in fold), lines[start:start + 8]


@pytest.mark.parametrize("backend", BACKENDS)
def test_label_and_promote_keep_a_backends_metadata(shipped, tmp_path: Path, backend: str) -> None:
    m, t = shipped
    raw = build(m, backend, tmp_path)
    labelled = Wheel(label(raw, t.version, t.requirements, tmp_path / "labelled", 315532800))
    found = verify(labelled, Expectation(target=t, dropped=m.dropped))
    assert not [f for f in found if f.code in METADATA_FINDINGS], found
    assert labelled.version == t.version and labelled.requires_dist == t.requirements
    assert fields(labelled) == fields(raw)

    (tmp_path / "promoted").mkdir()
    promoted = Wheel(rewrite(labelled, tmp_path / "promoted", version=public_version(m),
                             requirements=pypi_requirements(m)))
    found = check_promoted(m, promoted, t)
    assert not [f for f in found if f.code in METADATA_FINDINGS], found
    assert promoted.requires_dist == pypi_requirements(m)
    assert fields(promoted) == fields(raw)
    meta = Metadata.from_email(promoted.read(f"{promoted.dist_info}/METADATA"), validate=False)
    license_text = meta.license or ""
    if backend == "setuptools":
        assert all(line in license_text for line in LICENSE.splitlines() if line)


@pytest.mark.parametrize("backend", BACKENDS)
def test_verify_and_audit_give_a_backends_metadata_one_verdict(shipped, tmp_path: Path, backend: str) -> None:
    """The shared rules (builders.wheel.metadata_rules) on real METADATA: the labelled wheel as its own index
    holds it, and the promoted one as PyPI holds it; neither side finds anything, and both agree."""
    m, t = shipped
    labelled = label(build(m, backend, tmp_path), t.version, t.requirements, tmp_path / "labelled", 315532800)
    promise = audit.promises(m, t.variant.label)[t.wheel_name]
    assert same_verdict(labelled, m, Expectation(target=t, dropped=m.dropped), promise) == frozenset()
    if not t.on_pypi:
        return
    (tmp_path / "promoted").mkdir()
    promoted = rewrite(Wheel(labelled), tmp_path / "promoted", version=public_version(m), requirements=pypi_requirements(m))
    expect = Expectation(target=t, dropped=m.dropped, version=public_version(m), requirements=pypi_requirements(m))
    (pypi,) = (p for p in audit.promises(m, audit.PYPI).values() if p.target == t)
    assert same_verdict(promoted, m, expect, pypi) == frozenset()
