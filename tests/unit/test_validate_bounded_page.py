"""validate reads the project's page itself, through the bounded reader, before any installer: a page over
``--index-page-limit`` or an index that does not answer within ``--index-timeout`` fails its targets with a clear
reason, and pip or uv never ask for it (a 600 MiB page once grew validate's process tree to 1.8 GiB)."""

from __future__ import annotations

import http.server
import io
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from builders import cli
from builders.base.console import Console
from builders.channels import validate
from builders.channels.evidence import TargetVerdict
from builders.cli import arguments
from builders.cli import validate as validate_command
from builders.index import PAGE_LIMIT
from builders.matrix.model import Matrix
from builders.matrix.targets import expand

BIG = 3 * 1024 * 1024


class Pages(http.server.BaseHTTPRequestHandler):
    """Every page: ``BIG`` bytes of HTML; each request's User-Agent noted (pip's and uv's differ from ours)."""

    agents: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.agents.append(self.headers.get("User-Agent", ""))
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(BIG))
        self.end_headers()
        chunk = b"<!-- " + b"x" * (64 * 1024 - 9) + b" -->"
        for _ in range(BIG // len(chunk)):
            self.wfile.write(chunk)
        self.wfile.write(b" " * (BIG % len(chunk)))

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture()
def big_index() -> Iterator[str]:
    Pages.agents = []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Pages)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/simple/"
    httpd.shutdown()


@pytest.fixture()
def black_hole() -> Iterator[str]:
    """A port that accepts connections and never answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/simple/"


def validated(m: Matrix, tmp_path: Path, index_url: str, *flags: str) -> list[TargetVerdict]:
    targets = expand(m)[0][:2]
    opts = arguments.parse(cli.parser(), ["validate", "--channel", "test", "--record", str(tmp_path / "v.json"),
                                          "--index-url", index_url, *flags], {})
    channel = m.declared_channel(opts.channel)
    return validate_command.validated(m, channel, targets, opts, opts.index_url, None, Console(io.StringIO()))


def test_a_page_over_the_cap_fails_its_targets_before_any_installer(m: Matrix, tmp_path: Path, big_index: str) -> None:
    results = validated(m, tmp_path, big_index, "--index-page-limit", "1M")
    assert {r.status for r in results} == {validate.FAILED}
    assert all(f"larger than {1024 * 1024} bytes; refused" in r.reason for r in results), results[0].reason
    assert all(r.installs == () for r in results)
    assert len(Pages.agents) == 1 and Pages.agents[0].startswith("python-requests")  # no pip, no uv


def test_a_page_under_the_cap_is_read(m: Matrix, tmp_path: Path, big_index: str) -> None:
    """The same page under the default cap is read (and lists nothing: not published), so the cap is what refused."""
    assert BIG < PAGE_LIMIT
    results = validated(m, tmp_path, big_index)
    assert {r.status for r in results} == {validate.NOT_PUBLISHED}


def test_an_index_that_never_answers_fails_within_the_timeout(m: Matrix, tmp_path: Path, black_hole: str) -> None:
    results = validated(m, tmp_path, black_hole, "--index-timeout", "1")
    assert {r.status for r in results} == {validate.FAILED}
    assert all("timed out" in r.reason.lower() for r in results), results[0].reason
