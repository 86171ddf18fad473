"""Hostile wheels through ``verify``, ``promote`` and ``index`` (issue 9: nothing crashes,
nothing is laundered into a release).

Each wheel of :mod:`tests.hostile.make_wheels` goes through each tool with the shipped matrix.
A wheel that is a zip archive but not what it claims is refused with its finding code: verify
exits 7, promote 15, index 16, and promote and index write nothing. A file that is not a
readable zip archive at all exits 11 from every tool. The good wheel, and wheels that are odd
but right (UTF-8 in METADATA, a timestamp no calendar has), pass all three.
"""

from __future__ import annotations

from tests.hostile import make_wheels as mw
from tests.hostile.corpus import Case

MATRIX = str(mw.MATRIX)
EXIT = {"verify": 7, "promote": 15, "index": 16}

# wheel -> the phrase every tool's message must hold: a finding code, or the success line.
REFUSED = {
    "tampered": "record-mismatch",
    "relabelled": "label-contradicted",
    "zip-slip": "member-traversal",
    "absolute": "member-absolute",
    "backslash": "member-backslash",
    "nul-name": "member-control-char",
    "newline-name": "member-control-char",
    "duplicate": "member-duplicate",
    "symlink": "member-symlink",
    "fifo": "member-special",
    "encrypted": "member-encrypted",
    "compression": "member-compression",
    "bad-crc": "member-crc",
    "bomb": "member-ratio",
    "bomb-lying": "member-crc",
    "bomb-many": "archive-ratio",
    "too-large": "archive-too-large",
    "metadata-bomb": "member-ratio",
    "bad-requires-python": "requires-python-invalid",
    "bad-marker": "requirements-mismatch",
    "bad-tag-line": "invalid Tag line",
}
UNREADABLE = {
    "not-a-zip": "not a readable wheel",
    "truncated": "not a readable wheel",
    "empty": "not a readable wheel",
    "too-many-members": "members, more than 100,000",
    "huge-directory": "central directory is",
}
PASSING = ("good", "non-ascii-metadata", "bad-timestamp")
OK = {"verify": "ok for", "promote": "verified for", "index": "1 wheel(s)"}


def argv(tool: str) -> tuple[str, ...]:
    wheel = f"{{dir}}/house/{mw.facts().filename}"
    if tool == "verify":
        return ("verify", "--matrix", MATRIX, wheel, "--target", mw.facts().target_id)
    if tool == "promote":
        return ("promote", "--matrix", MATRIX, wheel, "--output", "{out}")
    return ("index", "--matrix", MATRIX, "{dir}/house", "--output", "{out}")


def case(name: str, tool: str, exit_code: int, message: str) -> Case:
    return Case(id=f"wheel-{name}-{tool}", argv=argv(tool), files={name: mw.MAKERS[name]}, exit_code=exit_code,
                message=message)


def layout_escape(folder) -> None:  # type: ignore[no-untyped-def]
    """A copy of the shipped matrix whose index layout climbs out of --output, and one good wheel."""
    text = mw.MATRIX.read_text()
    (folder / "m.yaml").write_text(text.replace('layout: "whl/{label}/"', 'layout: "../../escaped/{label}/"'))
    mw.good(folder)


CASES: list[Case] = [
    *(case(name, tool, EXIT[tool], code) for name, code in REFUSED.items() for tool in EXIT),
    *(case(name, tool, 11, phrase) for name, phrase in UNREADABLE.items() for tool in EXIT),
    *(case(name, tool, 0, OK[tool]) for name in PASSING for tool in EXIT),
    # The layout is the matrix's: the loader refuses '..' (and index resolves every path it writes).
    Case(id="wheel-index-layout-escape", argv=("index", "--matrix", "{dir}/m.yaml", "{dir}/house", "--output", "{out}"),
         files={"m.yaml": layout_escape}, exit_code=3, message="'..' segment"),
]
