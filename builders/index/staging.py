"""A staging package index for one validation run: this candidate's PyPI-form wheels, on 127.0.0.1, then gone.

A long-lived staging server keeps the first candidate's file: rc2's PyPI-form wheel has rc1's name (the
public version), so an upload of rc2 is refused (HTTP 400) and validation would install rc1's stale bytes.
A fresh index per run holds exactly the files given: a PEP 503 folder per project, served by the
standard library's HTTP server (its folder listing is a page of links, which pip and uv read).
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import shutil
import tempfile
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

from packaging.utils import canonicalize_name, parse_wheel_filename


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        """The installers' own output says what they fetched."""


@contextlib.contextmanager
def staging_index(wheels: Sequence[Path]) -> Iterator[str]:
    """``wheels`` served as a simple index on 127.0.0.1 for the block; yields its URL (ending in ``/``)."""
    with tempfile.TemporaryDirectory(prefix="builders-staging-") as tmp:
        root = Path(tmp)
        for wheel in wheels:
            folder = root / canonicalize_name(parse_wheel_filename(wheel.name)[0])
            folder.mkdir(exist_ok=True)
            shutil.copyfile(wheel, folder / wheel.name)
        with serving_folder(root, _Quiet) as url:
            yield url


@contextlib.contextmanager
def serving_folder(root: Path, handler: type[http.server.SimpleHTTPRequestHandler]) -> Iterator[str]:
    """``root`` served by ``handler`` on 127.0.0.1 (a thread of this process) for the block; yields the base URL,
    ending in ``/``."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
