"""``audit`` against a loopback index: zero drift, then exactly the drift that was made.

The wheelhouse is made here with ``zipfile`` (one wheel per target of the channel, named,
tagged and with METADATA computed from the matrix's YAML, plus 256 KiB of payload so that
reading a whole wheel would show), laid out with builders' index writer, and served by
``http.server`` on 127.0.0.1 (a bounded thread pool) that answers HTTP Range requests,
negotiates PEP 691 JSON, and counts every byte it sends per file. ``audit`` runs as the
command users run.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import zipfile
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from builders.index.pages import build_index
from tests import expected

pytestmark = pytest.mark.slow

CHANNEL_FAMILY, CHANNEL_VERSION = "cuda", "13.2"  # the label comes from the matrix
PAYLOAD = 256 * 1024
WORKERS = 8


# --- the loopback index server -----------------------------------------------------------------


class Served:
    """Bytes sent per path, and whether Range requests are honoured."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.bytes: Counter[str] = Counter()
        self.ranges = True

    def add(self, path: str, n: int) -> None:
        with self.lock:
            self.bytes[path] += n

    def wheel_bytes(self) -> dict[str, int]:
        return {p: n for p, n in self.bytes.items() if p.endswith(".whl")}


def handler_for(root: Path, served: Served) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = (root / unquote(urlsplit(self.path).path).lstrip("/")).resolve()
            if not path.is_relative_to(root.resolve()):
                return self.send_error(403)
            content_type = "application/octet-stream"
            if path.is_dir():
                json_first = ("application/vnd.pypi.simple.v1+json" in self.headers.get("Accept", "")
                              and (path / "index.json").is_file())
                path = path / ("index.json" if json_first else "index.html")
                content_type = "application/vnd.pypi.simple.v1+json" if json_first else "text/html"
            if not path.is_file():
                return self.send_error(404)
            size = path.stat().st_size
            start, end = self.span(size)
            self.send_response(206 if (start, end) != (0, size) else 200)
            if (start, end) != (0, size):
                self.send_header("Content-Range", f"bytes {start}-{end - 1}/{size}")
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(end - start))
            self.end_headers()
            with path.open("rb") as fh:
                fh.seek(start)
                left = end - start
                while left > 0:
                    chunk = fh.read(min(left, 1 << 20))
                    if not chunk:
                        break
                    self.wfile.write(chunk)
                    served.add(str(path.relative_to(root.resolve())), len(chunk))
                    left -= len(chunk)
            return None

        def span(self, size: int) -> tuple[int, int]:
            match = re.fullmatch(r"bytes=(\d*)-(\d*)", self.headers.get("Range", ""))
            if not served.ranges or not match or match.groups() == ("", ""):
                return 0, size
            first, last = match.groups()
            if not first:
                return max(size - int(last), 0), size
            return int(first), min(int(last) + 1 if last else size, size)

        def log_message(self, *args: object) -> None:
            pass

    return Handler


class PoolServer(HTTPServer):
    """An HTTP server whose requests run on a fixed pool of threads (never one thread per request)."""

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(address, handler)
        self.pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="index")

    def process_request(self, request, client_address) -> None:  # type: ignore[no-untyped-def]
        self.pool.submit(self._work, request, client_address)

    def _work(self, request, client_address) -> None:  # type: ignore[no-untyped-def]
        try:
            self.finish_request(request, client_address)
        except Exception:  # noqa: BLE001 (http.server's own policy: report and go on)
            self.handle_error(request, client_address)
        finally:
            self.shutdown_request(request)

    def server_close(self) -> None:
        super().server_close()
        self.pool.shutdown(wait=True)


@dataclass
class Site:
    url: str
    served: Served


@pytest.fixture(scope="module")
def sites(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Served, str]]:
    root = tmp_path_factory.mktemp("sites")
    served = Served()
    server = PoolServer(("127.0.0.1", 0), handler_for(root, served))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield root, served, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


# --- wheels made from the YAML -----------------------------------------------------------------


def label(data: dict) -> str:
    return expected.label_of(data, CHANNEL_FAMILY, CHANNEL_VERSION)


def requirements(data: dict, runtime_of: list[str]) -> list[str]:
    """Requires-Dist: the project's dependencies, each extra's (marked), the runtime requirements."""
    project = data["project"]
    out = list(project.get("dependencies", []))
    for extra, reqs in (project.get("optional_dependencies") or {}).items():
        out += [f'{r}; extra == "{extra}"' for r in reqs]
    return out + runtime_of


def runtime_requirements(data: dict, lbl: str) -> list[str]:
    for family in data["accelerators"].values():
        for v in (family.get("versions") or {}).values():
            if v["label"] == lbl:
                return list(v.get("runtime_requirements") or family.get("runtime_requirements") or [])
        if family.get("label") == lbl:
            return list(family.get("runtime_requirements") or [])
    raise KeyError(lbl)


def make_wheel(folder: Path, data: dict, version: str, python: str, platform: str, requires: list[str],
               requires_python: str | None = None) -> Path:
    """A wheel with a correct RECORD, METADATA from the YAML, and an incompressible payload."""
    project = data["project"]
    dist = re.sub(r"[-_.]+", "_", project["name"]).lower()
    abi = expected.abi(python)
    tag = f"{abi.rstrip('t')}-{abi}-{data['platforms'][platform]['wheel_platform']}"
    info = f"{dist}-{version}.dist-info"
    meta = ["Metadata-Version: 2.4", f"Name: {project['name']}", f"Version: {version}",
            f"Requires-Python: {requires_python or project['requires_python']}"]
    meta += [f"Requires-Dist: {r}" for r in requires]
    members = {
        f"{dist}/__init__.py": b"",
        f"{dist}/payload.bin": hashlib.shake_256(f"{version}{tag}".encode()).digest(PAYLOAD),
        f"{info}/METADATA": ("\n".join(meta) + "\n").encode(),
        f"{info}/WHEEL": f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: {tag}\n".encode(),
    }
    record = [f"{n},sha256={base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b'=').decode()},{len(b)}"
              for n, b in members.items()] + [f"{info}/RECORD,,"]
    members[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    path = folder / f"{dist}-{version}-{tag}.whl"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, body in members.items():
            zf.writestr(name, body)
    return path


def channel_ids(data: dict, lbl: str) -> list[str]:
    return sorted(tid for tid in expected.live_ids(data) if tid.startswith(f"{lbl}-"))


def python_of(tid: str) -> str:
    abi = tid.split("-")[1].removeprefix("cp")
    return f"{abi[0]}.{abi[1:]}"


@pytest.fixture(scope="module")
def wheelhouse(data: dict, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every wheel the channel promises, labelled."""
    lbl = label(data)
    folder = tmp_path_factory.mktemp("wheelhouse")
    version = f"{data['project']['version']}+{lbl}"
    reqs = requirements(data, runtime_requirements(data, lbl))
    for tid in channel_ids(data, lbl):
        make_wheel(folder, data, version, python_of(tid), tid.split("-", 2)[2], reqs)
    return folder


def publish(wheels: list[Path], sites: tuple[Path, Served, str], name: str, data: dict) -> str:
    """Lay ``wheels`` out as a static index under the server's root; the channel's index URL."""
    root, _served, base = sites
    layout = data["channels"]["index"]["layout"]
    build_index(wheels, root / name, layout=lambda lbl: layout.format(label=lbl))
    return f"{base}/{name}/{layout.format(label=label(data))}"


def run_audit(root: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, dict, str]:
    proc = subprocess.run([sys.executable, "-m", "builders", "audit", "--format", "json", *args], cwd=root,
                          text=True, capture_output=True, timeout=300,
                          env={**{k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}, **(env or {})})
    report = json.loads(proc.stdout) if proc.stdout.strip() else {}
    return proc.returncode, report, proc.stderr


# --- the tests ---------------------------------------------------------------------------------


def test_a_complete_index_has_no_drift_and_only_metadata_files_are_read(root: Path, data: dict, wheelhouse: Path,
                                                                        sites) -> None:
    url = publish(sorted(wheelhouse.glob("*.whl")), sites, "complete", data)
    served = sites[1]
    code, report, err = run_audit(root, "--channel", label(data), "--index-url", url)
    assert code == 0, (err, report)
    assert report["drift"] == [] and report["promised"] == len(channel_ids(data, label(data)))
    wheels = {p for p in served.wheel_bytes() if p.startswith("complete/")}
    assert not wheels  # every file has a PEP 658 metadata file: no wheel byte was read
    metadata = [p for p in served.bytes if p.startswith("complete/") and p.endswith(".metadata")]
    assert len(metadata) == report["promised"]


def test_exactly_the_drift_that_was_made(root: Path, data: dict, wheelhouse: Path, sites, tmp_path: Path) -> None:
    lbl = label(data)
    wheels = sorted(wheelhouse.glob("*.whl"))
    removed, changed = wheels[0], wheels[1]
    kept = [w for w in wheels if w not in (removed, changed)]
    extra_python = expected.dropped_pythons(data)[0]
    version = f"{data['project']['version']}+{lbl}"
    reqs = requirements(data, runtime_requirements(data, lbl))
    python, platform = python_and_platform(data, changed.name)
    differing = make_wheel(tmp_path, data, version, python, platform, [*reqs, "requests>=2.0"])
    assert differing.name == changed.name
    dropped = make_wheel(tmp_path, data, version, extra_python, "linux-x86_64", reqs, requires_python=">=3.10")
    url = publish([*kept, differing, dropped], sites, "drifted", data)

    code, report, err = run_audit(root, "--channel", lbl, "--index-url", url)
    assert code == 21, err
    found = {(d["code"], d["file"]) for d in report["drift"]}
    assert found == {("missing", removed.name), ("unexpected", dropped.name), ("requires-dist", changed.name)}
    by_code = {d["code"]: d["message"] for d in report["drift"]}
    assert f"Python {extra_python} was dropped" in by_code["unexpected"]
    assert "requests>=2.0" in by_code["requires-dist"]
    assert "error: AuditError: 3 drift finding(s)" in err


def python_and_platform(data: dict, filename: str) -> tuple[str, str]:
    """(``3.14t``, ``linux-x86_64``) of a wheel file name made by :func:`make_wheel`."""
    _dist, _version, _py, abi, tag = filename.removesuffix(".whl").split("-")
    platform = next(name for name, p in data["platforms"].items() if p["wheel_platform"] == tag)
    return python_of(f"x-{abi}-y"), platform


def strip_metadata(site: Path) -> None:
    """The index as a host without PEP 658 serves it: no .metadata files, no metadata keys."""
    for path in site.rglob("*.metadata"):
        path.unlink()
    for path in site.rglob("index.json"):
        doc = json.loads(path.read_text())
        for f in doc.get("files", []):
            f.pop("core-metadata", None)
            f.pop("dist-info-metadata", None)
        path.write_text(json.dumps(doc))
    for path in site.rglob("index.html"):
        path.write_text(re.sub(r' data-(core|dist-info)-metadata="[^"]*"', "", path.read_text()))


def test_without_metadata_files_it_reads_ranges_not_wheels(root: Path, data: dict, wheelhouse: Path, sites,
                                                           capsys) -> None:
    wheels = sorted(wheelhouse.glob("*.whl"))
    url = publish(wheels, sites, "ranges", data)
    strip_metadata(sites[0] / "ranges")
    code, report, err = run_audit(root, "--channel", label(data), "--index-url", url)
    assert code == 0, (err, report)
    served = {p: n for p, n in sites[1].wheel_bytes().items() if p.startswith("ranges/")}
    total = sum(w.stat().st_size for w in wheels)
    assert len(served) == len(wheels)
    assert max(served.values()) < 16 * 1024 < PAYLOAD
    assert sum(served.values()) == report["bytes_read"]["ranges"]
    with capsys.disabled():
        print(f"\naudit over ranges: {sum(served.values()):,} of {total:,} wheel bytes read "
              f"({100 * sum(served.values()) / total:.2f} %), {report['requests']} requests for {len(wheels)} wheels")


def test_a_server_without_ranges_is_reported_not_downloaded(root: Path, data: dict, wheelhouse: Path, sites) -> None:
    wheels = sorted(wheelhouse.glob("*.whl"))[:1]
    url = publish(wheels, sites, "noranges", data)
    strip_metadata(sites[0] / "noranges")
    sites[1].ranges = False
    try:
        code, report, _err = run_audit(root, "--channel", label(data), "--index-url", url)
    finally:
        sites[1].ranges = True
    assert code == 21
    unreadable = [d for d in report["drift"] if d["code"] == "metadata-unreadable"]
    assert len(unreadable) == 1 and "ignores HTTP Range" in unreadable[0]["message"]


def test_the_pypi_channel_from_pips_configuration(root: Path, data: dict, sites, tmp_path: Path) -> None:
    """PyPI wheels (no label, the union of the defaults' runtime requirements) found through
    PIP_INDEX_URL, as pip itself would; a labelled wheel there is unexpected."""
    defaults = data["channels"]["pypi"]
    runtime = list(dict.fromkeys(r for lbl in dict.fromkeys(defaults.values()) for r in runtime_requirements(data, lbl)))
    reqs = requirements(data, runtime)
    for tid in sorted(expected.live_ids(data)):
        lbl, _abi, platform = tid.split("-", 2)
        if defaults.get(platform) == lbl:
            make_wheel(tmp_path, data, str(data["project"]["version"]), python_of(tid), platform, reqs)
    wheels = sorted(tmp_path.glob("*.whl"))
    site = sites[0] / "pypi"  # a PEP 503 page only, as a plain static host serves it
    (site / "simple" / canonical(data)).mkdir(parents=True)
    for w in wheels:
        shutil.copy(w, site / "simple" / canonical(data) / w.name)
    links = "".join(f'<a href="{w.name}" data-requires-python="{data["project"]["requires_python"].replace(">", "&gt;")}">'
                    f"{w.name}</a>\n" for w in wheels)
    (site / "simple" / canonical(data) / "index.html").write_text(f"<!DOCTYPE html><html><body>{links}</body></html>")
    env = {"PIP_CONFIG_FILE": os.devnull, "PIP_INDEX_URL": f"{sites[2]}/pypi/simple/"}
    code, report, err = run_audit(root, "--channel", "pypi", env=env)
    assert code == 0, (err, report.get("drift", [])[:3])
    assert report["index_url"] == env["PIP_INDEX_URL"] and report["promised"] == len(wheels)



def test_the_pypi_channel_with_no_index_configured_is_pip_s_default(root: Path) -> None:
    """Nothing configured: the index pip itself would use, its default, as pip (run here) names it. Not read:
    a test reaches no index on the internet."""
    env = {**os.environ, "PIP_CONFIG_FILE": os.devnull, "PIP_INDEX_URL": ""}
    ask = "from pip._internal.models.index import PyPI; print(PyPI.simple_url)"
    pips = subprocess.run([sys.executable, "-c", ask], env=env, capture_output=True, text=True, check=True).stdout
    ours = ("from builders.cli.audit import default_index_url; from builders.families.loader import load; "
            "print(default_index_url(load('matrix.yaml', builds=False), 'pypi', __import__('os').environ))")
    used = subprocess.run([sys.executable, "-c", ours], cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert used.returncode == 0, used.stderr[-2000:]
    assert used.stdout == pips and pips.startswith("https://")


def canonical(data: dict) -> str:
    return re.sub(r"[-_.]+", "-", data["project"]["name"]).lower()


def test_metadata_of_a_large_real_wheel_over_ranges(sites) -> None:
    """PyTorch's CPU wheel (183 MiB, 12,248 members; fetched once by benchmarks/bench_verify.py):
    its METADATA read over HTTP ranges is byte for byte zipfile's, for a few MiB at most."""
    import importlib.util

    from builders.index.audit import Client, is_metadata, remote_member

    spec = importlib.util.spec_from_file_location("bench_verify", Path(__file__).parents[2] / "benchmarks/bench_verify.py")
    assert spec and spec.loader
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    wheel = bench.fetch(bench.default_cache())
    root, served, base = sites
    (root / "real").mkdir(exist_ok=True)
    served_copy = root / "real" / wheel.name
    if not served_copy.exists():
        try:
            os.link(wheel, served_copy)
        except OSError:  # another filesystem
            shutil.copyfile(wheel, served_copy)
    client = Client()
    got = remote_member(client, f"{base}/real/{wheel.name}", is_metadata)
    with zipfile.ZipFile(wheel) as zf:
        (name,) = [n for n in zf.namelist() if is_metadata(n)]
        assert got == zf.read(name)
    read = served.bytes[f"real/{wheel.name}"]
    assert read == client.read["ranges"] < 4 * 1024 * 1024
    print(f"\n{wheel.name}: METADATA over {client.requests} range requests, {read:,} of "
          f"{wheel.stat().st_size:,} bytes ({100 * read / wheel.stat().st_size:.2f} %)")
