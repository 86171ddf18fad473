"""The audit's pieces without a server: promises, page parsing, the comparison, the zip reader.

Facts come from the matrix's YAML (tests/expected.py); the HTTP half is
tests/integration/test_audit.py.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
import zlib
from types import SimpleNamespace

import pytest

from builders.base.errors import AuditError, SelectionError
from builders.index import audit, remote
from builders.wheel import zipcheck
from tests import expected
from tests.hostile import make_wheels as mw


def cuda_label(data: dict) -> str:
    return expected.label_of(data, "cuda", next(iter(data["accelerators"]["cuda"]["versions"])))


def test_promises_per_channel(m, data: dict) -> None:
    lbl = cuda_label(data)
    mine = audit.promises(m, lbl)
    assert {p.target.id for p in mine.values()} == {t for t in expected.live_ids(data) if t.startswith(f"{lbl}-")}
    assert all(f"+{lbl}-" in name for name in mine)
    pypi = audit.promises(m, "pypi")
    defaults = data["channels"]["pypi"]
    assert {p.target.id for p in pypi.values()} == {
        t for t in expected.live_ids(data) if defaults.get(t.split("-", 2)[2]) == t.split("-")[0]}
    assert not any("+" in name for name in pypi)
    with pytest.raises(SelectionError, match="not a channel of the matrix"):
        audit.promises(m, "cu999")


def test_pip_configuration_listing() -> None:
    listing = "global.extra-index-url='file:///x'\nglobal.index-url='https://mirror.invalid/simple'\n"
    assert audit.configured_index_url(listing) == "https://mirror.invalid/simple"
    assert audit.configured_index_url(listing + ":env:.index-url='http://env.invalid/'\n") == "http://env.invalid/"
    assert audit.configured_index_url("global.find-links='/opt/wheels'\n:env:.index-url=''\n") is None


def test_pep_503_and_691_pages_say_the_same() -> None:
    html = ('<a href="../files/a-1.0-py3-none-any.whl#sha256=abc" data-requires-python="&gt;=3.11" '
            'data-core-metadata="sha256=def" data-yanked="broken">a-1.0-py3-none-any.whl</a>'
            '<a href="b-1.0.tar.gz">b-1.0.tar.gz</a>')
    from_html = remote.files_from_html(html, "https://i.invalid/simple/a/")
    page = {"files": [{"filename": "a-1.0-py3-none-any.whl", "url": "../files/a-1.0-py3-none-any.whl",
                       "hashes": {"sha256": "abc"}, "requires-python": ">=3.11", "core-metadata": {"sha256": "def"},
                       "yanked": "broken"},
                      {"filename": "b-1.0.tar.gz", "url": "b-1.0.tar.gz", "hashes": {}}]}
    from_json = remote.files_from_json(json.loads(json.dumps(page)), "https://i.invalid/simple/a/")
    assert from_html == from_json
    assert from_html[0].url == "https://i.invalid/simple/files/a-1.0-py3-none-any.whl"
    assert from_html[0].yanked == "broken" and from_html[0].metadata and from_html[1].yanked is None
    with pytest.raises(AuditError, match="not a PEP 691 project page"):
        remote.files_from_json({"projects": []}, "https://i.invalid/simple/a/")


def metadata_for(promise: audit.Promise, *, requires_python: str = ">=3.11", extra: str = "") -> bytes:
    lines = [f"Name: {promise.target.project.name}", f"Version: {promise.version}", f"Requires-Python: {requires_python}"]
    lines += [f"Requires-Dist: {r}" for r in promise.requirements]
    return ("\n".join(lines) + "\n" + extra).encode()


def test_compare_names_each_kind_of_drift(m, data: dict) -> None:
    lbl = cuda_label(data)
    promised = audit.promises(m, lbl)
    names = sorted(promised)
    files = [audit.IndexFile(filename=n, url=n, metadata=True) for n in names[3:]]
    linux_x86 = next(n for n in names[:3] if "x86_64" in n)
    files.append(audit.IndexFile(filename=linux_x86.replace("manylinux_2_28", "linux"), url="x"))  # wrong tag
    files.append(audit.IndexFile(filename=names[3].replace(f"+{lbl}-", "+cpu-"), url="x"))  # another label
    mac = names[3].replace(names[3].rsplit("-", 1)[1], data["platforms"]["macos-arm64"]["wheel_platform"] + ".whl")
    files.append(audit.IndexFile(filename=mac, url="x"))  # an excluded combination
    files.append(audit.IndexFile(filename="minifw-2.14.0-py3-none-any.whl", url="x"))  # another release
    files.append(audit.IndexFile(filename=names[-1], url="y", yanked="", metadata=True))
    files = [f for f in files if audit._this_release(f.filename, m)]
    yanked = names[-1]
    files = [f for f in files if not (f.filename == yanked and f.url == yanked)]

    def meta(f: audit.IndexFile) -> bytes:
        p = promised[f.filename]
        return metadata_for(p, requires_python=">3.10" if f.filename == names[4] else ">=3.11")

    drift = audit.compare(m, lbl, promised, files, meta)
    codes = sorted((d.code, d.file) for d in drift)
    wrong = linux_x86.replace("manylinux_2_28", "linux")
    missing = sorted(set(names[:3]) - {linux_x86})
    assert ("wrong-tag", wrong) in codes
    assert [c for c in codes if c[0] == "missing"] == [("missing", n) for n in missing]
    assert ("yanked", yanked) in codes
    unexpected = {d.file: d.message for d in drift if d.code == "unexpected"}
    assert "label 'cpu'" in unexpected[names[3].replace(f"+{lbl}-", "+cpu-")]
    macos_reason = next(e["reason"] for e in data["exclude"] if e["targets"].startswith("cu") and "macos" in e["targets"])
    assert macos_reason in unexpected[mac]
    rp = [d.message for d in drift if d.code == "requires-python" and d.file == names[4]]
    assert any("the matrix says" in msg for msg in rp) and any("admits Python 3.10" in msg for msg in rp)


def zip_bytes(members: dict[str, bytes], comment: bytes = b"", method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=method) as zf:
        for name, body in members.items():
            zf.writestr(name, body)
        zf.comment = comment
    return buf.getvalue()


@pytest.mark.parametrize("method", [zipfile.ZIP_DEFLATED, zipfile.ZIP_STORED])
@pytest.mark.parametrize("comment", [b"", b"x" * 20_000])
def test_the_central_directory_reader_finds_metadata(tmp_path, method: int, comment: bytes) -> None:
    body = b"Metadata-Version: 2.4\nName: a\n" * 50
    members = {f"a/{i}.py": hashlib.shake_256(str(i).encode()).digest(1024) for i in range(300)} | {"a-1.0.dist-info/METADATA": body,
                                                                     "a-1.0.dist-info/RECORD": b""}
    path = tmp_path / "a-1.0-py3-none-any.whl"
    path.write_bytes(zip_bytes(members, comment, method))
    client = audit.Client()
    assert audit.remote_member(client, path.as_uri(), audit.is_metadata) == body
    if not comment:  # a long comment makes the reader fetch up to 64 KiB more to find the end record
        assert client.read["ranges"] < path.stat().st_size / 4


def test_the_reader_refuses_what_is_not_a_wheel(tmp_path) -> None:
    path = tmp_path / "x.whl"
    path.write_bytes(b"not a zip" * 100)
    with pytest.raises(AuditError, match="not a readable wheel"):
        audit.remote_member(audit.Client(), path.as_uri(), audit.is_metadata)
    path.write_bytes(zip_bytes({"a/x.py": b""}))
    with pytest.raises(AuditError, match="0 members match"):
        audit.remote_member(audit.Client(), path.as_uri(), audit.is_metadata)
    huge = zip_bytes({"a-1.0.dist-info/METADATA": b"\0" * (audit.MAX_METADATA + 1)})
    path.write_bytes(huge)
    with pytest.raises(AuditError, match="refused"):
        audit.remote_member(audit.Client(), path.as_uri(), audit.is_metadata)


def test_markdown_output_escapes_what_the_index_says() -> None:
    result = audit.Audit(index_url="http://i.invalid/", channel="cu132", project="p", version="1", promised=1,
                         listed=1, drift=(audit.Drift(code="unexpected", file="<b>|x`", message="<script>"),),
                         bytes_read={"pages": 1}, requests=1)
    md = audit.to_markdown(result)
    assert "<script>" not in md and "<b>" not in md and "1 drift finding(s)" in md


def test_a_compressed_tag_set_that_includes_the_promised_tag_is_that_file(m, data: dict) -> None:
    lbl = cuda_label(data)
    promised = audit.promises(m, lbl)
    name = next(n for n in sorted(promised) if n.endswith("manylinux_2_28_x86_64.whl"))
    compressed = name.replace("manylinux_2_28_x86_64", "manylinux2014_x86_64.manylinux_2_28_x86_64")
    others = [audit.IndexFile(filename=n, url=n, metadata=True) for n in promised if n != name]
    files = [*others, audit.IndexFile(filename=compressed, url=compressed, metadata=True)]
    by_url = {f.url: promised.get(f.filename) or promised[name] for f in files}
    assert audit.compare(m, lbl, promised, files, lambda f: metadata_for(by_url[f.url])) == []
    aarch = compressed.replace("manylinux2014_x86_64", "manylinux2014_aarch64")  # a foreign sibling
    files[-1] = audit.IndexFile(filename=aarch, url=aarch, metadata=True)
    codes = [d.code for d in audit.compare(m, lbl, promised, files, lambda f: b"")]
    assert "missing" in codes or "wrong-tag" in codes



def test_pypi_channel_uses_pip_s_configured_index_else_pip_s_own_default(m, monkeypatch: pytest.MonkeyPatch,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """No index configured (only extra indexes and find-links, as on this project's machines): the audit reads
    the index pip would, its default, which comes from pip and is never written into builders."""
    from pip._internal.models.index import PyPI

    from builders.base.process import ProcessError
    from builders.cli import audit as audit_cli

    exec(audit_cli.PIP_DEFAULT_INDEX, {})  # what builders asks pip, asked of this interpreter's pip
    assert capsys.readouterr().out == f"{PyPI.simple_url}\n"
    listing, asked = "global.extra-index-url='file:///x'\nglobal.find-links='/opt/wheels'\n", []

    def fake_run(argv: list[str], **_kwargs: object) -> SimpleNamespace:
        asked.append(argv[1:])
        pip_says = f"{PyPI.simple_url}\n" if argv[1:] == ["-c", audit_cli.PIP_DEFAULT_INDEX] else None
        return SimpleNamespace(stdout=pip_says if pip_says else listing)

    monkeypatch.setattr(audit_cli, "run", fake_run)
    assert audit_cli.default_index_url(m, "pypi", {}) == PyPI.simple_url
    listing = "global.index-url='https://mirror.invalid/simple'\n"
    assert audit_cli.default_index_url(m, "pypi", {}) == "https://mirror.invalid/simple"
    assert [a[0] for a in asked] == ["-m", "-c", "-m"]  # pip's default asked only when nothing is configured

    def broken(argv: list[str], **_kwargs: object) -> SimpleNamespace:
        if argv[1] == "-c":
            raise ProcessError(argv, 1, "ModuleNotFoundError")
        return SimpleNamespace(stdout="")

    monkeypatch.setattr(audit_cli, "run", broken)
    with pytest.raises(AuditError, match="pass --index-url URL"):
        audit_cli.default_index_url(m, "pypi", {})


def served(tmp_path, data: bytes, name: str = "a-1.0-py3-none-any.whl") -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return path.as_uri()


def test_a_central_directory_over_its_cap_is_refused_unfetched(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same caps as a wheel on disk (one zip reader): refused before the directory is fetched."""
    url = served(tmp_path, mw._many(2000))  # a 110,000-byte central directory
    monkeypatch.setattr(zipcheck, "MAX_CENTRAL_DIRECTORY", 50_000)
    client = audit.Client()
    with pytest.raises(AuditError, match="central directory is 110,000 bytes"):
        audit.remote_member(client, url, audit.is_metadata)
    assert client.read["ranges"] < 50_000
    monkeypatch.undo()
    monkeypatch.setattr(zipcheck, "MAX_MEMBERS", 1000)
    with pytest.raises(AuditError, match="2000 members, more than 1,000"):
        audit.remote_member(audit.Client(), url, audit.is_metadata)


def test_a_metadata_bomb_is_refused_from_its_entry(tmp_path) -> None:
    """A METADATA declaring 3 MiB from a few KiB (over 200:1) is refused before it is read."""
    bomb = zlib.compress(b"\0" * (3 << 20))[2:-4]
    entry = mw.Entry(name=b"a-1.0.dist-info/METADATA", data=bomb, plain=b"\0" * (3 << 20))
    client = audit.Client()
    with pytest.raises(AuditError, match="a zip bomb.*refused"):
        audit.remote_member(client, served(tmp_path, mw.raw_zip([entry])), audit.is_metadata)
    assert client.read["ranges"] <= remote.TAIL


def test_a_tampered_member_fails_its_crc(tmp_path) -> None:
    body = b"Metadata-Version: 2.4\nName: a\n"
    entry = mw.Entry(name=b"a-1.0.dist-info/METADATA", data=body.replace(b"a\n", b"b\n"), method=0, plain=body)
    with pytest.raises(AuditError, match="cannot be read: Bad CRC-32"):
        audit.remote_member(audit.Client(), served(tmp_path, mw.raw_zip([entry])), audit.is_metadata)


def test_the_bytes_fetched_for_one_member_are_bounded(tmp_path) -> None:
    body = b"Metadata-Version: 2.4\nName: a\n" + bytes(range(256)) * 200
    url = served(tmp_path, zip_bytes({"a/x.py": b"x" * 100_000, "a-1.0.dist-info/METADATA": body}, method=zipfile.ZIP_STORED))
    client = audit.Client()
    source = remote.RangedFile(client, url, limit=remote.TAIL + 1024)
    with zipcheck.open_zip(source, source.size, url) as zf, pytest.raises(AuditError, match="more than 9,216 bytes"):
        remote._member_bytes(zf, source, zf.getinfo("a-1.0.dist-info/METADATA"), url)
    assert client.read["ranges"] <= remote.TAIL + 1024


def test_the_ranged_file_reads_like_the_file(tmp_path) -> None:
    data = hashlib.shake_256(b"x").digest(50_000)
    source = remote.RangedFile(audit.Client(), served(tmp_path, data, "blob.bin"))
    for start, n in [(0, 10), (49_990, 100), (12_345, 20_000), (100, 0), (0, 50_000)]:
        source.seek(start)
        assert source.read(n) == data[start:start + n] and source.tell() == min(start + n, len(data))
    source.seek(-5, 2)
    assert source.read() == data[-5:]
