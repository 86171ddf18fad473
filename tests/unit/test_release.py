"""The release checks: pure functions of the matrix, a tag and file names; each problem named."""

from __future__ import annotations

import hashlib

import pytest
from packaging.version import Version

from builders.base.errors import MatrixError
from builders.ci.checks import release_problems, tag_kind, wheel_set_problems
from builders.families import loader as matrix
from builders.matrix.model import OS
from tests import expected

DIGEST = "sha256:" + hashlib.sha256(b"a base image").hexdigest()


def linux_bases(text: str) -> dict[str, str]:
    """Each Linux platform's base_image as written in ``text``."""
    return {name: p["base_image"] for name, p in expected.raw(text)["platforms"].items() if p["os"] == "linux"}


def unpinned(text: str) -> str:
    """``text`` with every Linux base image by tag (the shipped matrix pins them by digest)."""
    for base in linux_bases(text).values():
        text = text.replace(f"base_image: {base}\n", f"base_image: {base.split('@')[0]}\n")
    return text


def pinned(text: str, suffix: str = f"@{DIGEST}") -> str:
    text = unpinned(text)
    for base in linux_bases(text).values():
        text = text.replace(f"base_image: {base}\n", f"base_image: {base}{suffix}\n")
    return text


@pytest.fixture(scope="module")
def unpinned_matrix(shipped_text: str):
    return matrix.loads(unpinned(shipped_text), "matrix.yaml")


def test_the_shipped_matrix_is_releasable_as_committed(shipped_text: str) -> None:
    m = matrix.loads(shipped_text, "matrix.yaml")
    assert release_problems(m, f"v{m.project.version}") == []


@pytest.fixture(scope="module")
def released(shipped_text: str):
    return matrix.loads(pinned(shipped_text), "matrix.yaml")


def test_the_tag_of_the_matrix_version_with_pinned_bases_is_releasable(released) -> None:
    assert release_problems(released, f"v{released.project.version}") == []


def test_a_tag_for_another_version_names_both(released) -> None:
    version = released.project.version
    other = Version(f"{version.major}.{version.minor}.{version.micro + 1}")
    (problem,) = release_problems(released, f"v{other}")
    assert f"v{other}" in problem and str(other) in problem and str(version) in problem
    (problem,) = release_problems(released, "nightly")
    assert "'nightly' names no version" in problem and f"v{version}" in problem


def test_every_unpinned_linux_base_is_named_with_its_place(unpinned_matrix, shipped_text: str) -> None:
    shipped_text = unpinned(shipped_text)
    problems = release_problems(unpinned_matrix, f"v{unpinned_matrix.project.version}")
    linux = [p for p in unpinned_matrix.platforms if p.os is OS.LINUX]
    assert len(problems) == len(linux) == len(linux_bases(shipped_text)) > 0
    for platform, problem in zip(linux, problems, strict=True):
        line = shipped_text.splitlines().index(f"  {platform.name}:") + 1
        assert problem.startswith(f"matrix.yaml:{line}:") and f"platforms.{platform.name}.base_image" in problem


def test_a_tag_and_a_digest_together_are_pinned(shipped_text: str) -> None:
    m = matrix.loads(pinned(shipped_text, f":2026.11@{DIGEST}"), "matrix.yaml")
    assert {p.image_digest for p in m.platforms if p.os is OS.LINUX} == {DIGEST}
    assert release_problems(m, f"v{m.project.version}") == []


@pytest.mark.parametrize("digest", [DIGEST[:-1], "sha256:" + "0" * 63 + "g", "sha512:" + "0" * 64,
                                    f"{DIGEST}@{DIGEST}", ""])
def test_a_malformed_digest_is_refused_at_load_with_its_place(shipped_text: str, digest: str) -> None:
    shipped_text = unpinned(shipped_text)
    name, base = next(iter(linux_bases(shipped_text).items()))
    text = shipped_text.replace(f"base_image: {base}\n", f"base_image: {base}@{digest}\n")
    with pytest.raises(MatrixError) as err:
        matrix.loads(text, "m.yaml")
    (problem,) = err.value.problems
    assert "not pinned by a valid digest" in problem.message
    assert problem.location.key == f"platforms.{name}.base_image"
    assert problem.location.line == text.splitlines().index(f"    base_image: {base}@{digest}") + 1


def test_wheel_set_problems_list_each_missing_and_unexpected_file() -> None:
    expected_ = {"a-1-py3-none-any.whl", "b-1-py3-none-any.whl", "c-1-py3-none-any.whl"}
    found = {"a-1-py3-none-any.whl", "d-1-py3-none-any.whl", "e-1-py3-none-any.whl"}
    assert wheel_set_problems(expected_, found) == [
        "missing: b-1-py3-none-any.whl (planned, not found)", "missing: c-1-py3-none-any.whl (planned, not found)",
        "unexpected: d-1-py3-none-any.whl (found, not planned)", "unexpected: e-1-py3-none-any.whl (found, not planned)"]
    assert wheel_set_problems(expected_, set(expected_)) == []


def test_the_tag_is_exactly_v_version_not_an_equal_version(released) -> None:
    """PEP 440 calls all of these 2.15.0; only the exact spelling releases, and -rcN is a candidate."""
    version = str(released.project.version)
    major, minor, micro = version.split(".")
    assert tag_kind(released, f"v{version}") == "release"
    assert release_problems(released, f"v{version}") == []
    for tag in (f"v{major}.{minor}", f"v{version}.0", f"v0{major}.{minor}.0{micro}"):
        assert Version(tag) == released.project.version  # the looseness this refuses
        assert tag_kind(released, tag) is None
        (problem,) = release_problems(released, tag)
        assert f"is not spelled v{version}" in problem, problem
    for n in ("1", "12"):
        assert tag_kind(released, f"v{version}-rc{n}") == "candidate"
        assert release_problems(released, f"v{version}-rc{n}") == []
    for tag in (f"v{version}-rc0", f"v{version}-rc", f"v{version}rc1", f"v{version}-rc1.post1"):
        assert tag_kind(released, tag) is None, tag
        assert release_problems(released, tag), tag
