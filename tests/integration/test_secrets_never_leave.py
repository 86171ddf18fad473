"""Secrets never leave: a distinct secret planted in every URL option of every command (read from the options
table) and in every credential variable builders knows, each command run through its success, refusal and failure
paths against loopback, and none of the secrets is found in stdout, stderr, a log, a record or the job summary."""

from __future__ import annotations

import http.server
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from builders import cli
from builders.base import redact
from builders.cli.options import ENVIRONMENT, OPTIONS, Option
from tests.hostile.make_wheels import facts, good_bytes
from tests.integration import test_channels_release as release
from tests.objectstore import free_port, object_store, package_server

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
MATRIX = ROOT / "matrix.yaml"
URL_OPTIONS = tuple(o for o in OPTIONS if o.metavar == "URL")
# What each command needs besides its URL options to get going (inputs made by :func:`inputs`); a command
# with a URL option and no row here fails the test below, so a new URL option is covered or noticed.
BASE: dict[str, list[str]] = {
    "plan": ["--rehearse", "declared"],
    "build": ["--dry-run", "--select", "cpu-*"],
    "audit": [],
    "publish": ["{wheelhouse}", "--channel", "test", "--no-mirror", "--record", "{out}/publish.json"],
    "validate": ["--installer", "pip", "--record", "{out}/validation.json"],  # whatever the index lists: its page read
    "promote-release": ["--validation", "{record}", "--manifest", "{record}", "--record", "{out}/promotion.json"],
    "yank": ["1.0", "--channel", "test", "--reason", "why", "--dry-run"],
    "rollback": ["--reason", "why", "--promotion", "publish-records/release/x.json"],
    "repair-index": ["--channel", "test", "--dry-run"],
    "history": ["--channel", "release"],
    "check-index": ["--channel", "test", "--select", "cpu-*-linux-x86_64", "--record", "{out}/coverage.json"],
    "verify-release": ["1.0", "--channel", "release", "--repository", "owner/name"],
}
# Paths that refuse: an input the command turns down after reading its URLs.
REFUSE: dict[str, list[str]] = {
    "validate": ["--site-url", "http://site-user:SITEPASSWORD-r@127.0.0.1:9/"],
    "build": ["--compile-cache", "s3://CCKEYREFUSED:CCSECRETREFUSED@cache/x"],
    "promote-release": ["--audit-timeout", "nan"],
}
# Commands whose runs here stop before any URL is printed (promote-release refuses the empty manifest first; a
# dry-run build prints no URL): the check above still holds for them, but proves less. promote-release's real
# promotion, to the upload's failure and success, is the test at the end of this module.
UNREACHED = frozenset({"build", "promote-release"})


def credential_variables() -> list[str]:
    """Every credential variable: the rule's table and every variable of the options table that is one."""
    names = set(redact.CREDENTIAL_VARIABLES) | {f.name for f in ENVIRONMENT if redact.is_credential(f.name)}
    return sorted(names | {o.env for o in OPTIONS if o.env and redact.is_credential(o.env)})


class Secrets:
    """Distinct secrets, each one a fresh string nobody else prints."""

    def __init__(self) -> None:
        self.planted: list[str] = []

    def new(self, what: str) -> str:
        value = f"S3cr3t{len(self.planted):03d}{what.replace('-', '').replace('_', '')[:12]}"
        self.planted.append(value)
        return value

    def url(self, option: Option, port: int) -> str:
        user, password, token = self.new("user"), self.new(option.name), self.new("tok")
        if option.flags[0] == "--bucket":
            return f"s3://{user}:{password}@bucket-name/prefix/"
        if option.flags[0] == "--compile-cache":
            return f"http://127.0.0.1:{port}/cache/?token={token}"
        return f"http://{user}:{password}@127.0.0.1:{port}/simple/?token={token}&X-Amz-Signature={self.new('sig')}"


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture()
def server(tmp_path: Path) -> Iterator[int]:
    """A loopback server that answers every page with an empty simple index (the success paths)."""
    site = tmp_path / "site"
    (site / "simple").mkdir(parents=True)
    (site / "simple" / "index.html").write_text("<html><body></body></html>")
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), lambda *a: Quiet(*a, directory=str(site)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield httpd.server_address[1]
    httpd.shutdown()


def run(argv: list[str], env: dict[str, str], cwd: Path) -> str:
    """What the command said, and every file it left in ``cwd`` (records are rewritten run after run)."""
    done = subprocess.run([sys.executable, "-m", "builders", *argv], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode >= 0, done.stderr
    return done.stdout + done.stderr + everything_written(cwd)


def everything_written(folder: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in folder.rglob("*") if p.is_file())


def test_every_url_option_has_a_base_row() -> None:
    commands = {c for o in URL_OPTIONS for c in o.commands}
    assert commands <= set(BASE) and commands & set(cli.COMMANDS) == commands
    assert len(URL_OPTIONS) >= 10


@pytest.mark.parametrize("command", sorted(BASE))
def test_no_secret_leaves(command: str, tmp_path: Path, server: int) -> None:
    secrets = Secrets()
    out = tmp_path / "out"
    out.mkdir()
    labelled = facts("cpu")  # publish gets as far as the bucket: a labelled wheel in its wheelhouse
    (tmp_path / "wheelhouse" / "whl" / "cpu").mkdir(parents=True)
    (tmp_path / "wheelhouse" / "whl" / "cpu" / labelled.filename).write_bytes(good_bytes(labelled))
    (tmp_path / "record.json").write_text("{}")
    closed = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GITHUB_ACTIONS": "true",
           "GITHUB_STEP_SUMMARY": str(out / "summary.md"),
           **{name: secrets.new(name) for name in credential_variables()},
           "AWS_ENDPOINT_URL": f"http://{secrets.new('ep')}:{secrets.new('eppw')}@127.0.0.1:{closed}/"}
    base = [a.format(wheelhouse=tmp_path / "wheelhouse", out=out, record=tmp_path / "record.json")
            for a in BASE[command]]
    paths = {"failure": closed, "success": server}
    said = []
    mine = [o for o in URL_OPTIONS if command in o.commands]
    for port, option in ((p, o) for p in paths.values() for o in mine):  # each URL option on its own
        if port == server and (option.flags[0] == "--bucket" or command in UNREACHED):
            continue  # the loopback server is no object store, and an early refusal reads no URL: one run
        urls = [a for o in mine if o is option or o.required for a in (o.flags[0], secrets.url(o, port))]
        said.append(run([command, "--matrix", str(MATRIX), *base, *urls], env, tmp_path))
    if command in REFUSE:  # every URL option at once, and the refusal
        urls = [a for o in mine for a in (o.flags[0], secrets.url(o, closed))]
        said.append(run([command, "--matrix", str(MATRIX), *base, *urls, *REFUSE[command]], env, tmp_path))
    texts = "\n".join(said) + everything_written(tmp_path)
    planted = [*secrets.planted, "SITEPASSWORD", "CCKEYREFUSED", "CCSECRETREFUSED"]
    assert [s for s in planted if s in texts] == []
    if command not in UNREACHED:
        assert "***" in texts  # something was masked: the secrets did reach the output


# --- promote-release through a real promotion, as far as the PyPI upload ------------------------------------------


@dataclass(frozen=True)
class Built:
    """The candidate's build, run for real with a secret in every credential variable and index URL."""

    wheels: Path  # its output folder: wheels, logs/<id>.log, results.json
    said: str  # its stdout, stderr, every file of its output folder and its job summary
    planted: tuple[str, ...]


def planted_build_env(secrets: Secrets, summary: Path) -> dict[str, str]:
    """Every credential variable, and pip's and uv's index URLs (port 9, discard, closed: the host's own find-links
    and extra indexes still serve the build requirements) with userinfo, on top of this environment. The same
    values every run: the index URL is part of the plan's digest, and a digest seen before reuses the source's
    metadata (26 s of the build otherwise)."""
    index = {name: f"http://{secrets.new('idxuser')}:{secrets.new(name)}@127.0.0.1:9/simple/"
             for name in ("PIP_INDEX_URL", "UV_INDEX_URL")}
    return {**os.environ, **{name: secrets.new(name) for name in credential_variables()}, **index,
            "PYTHONPATH": str(ROOT), "GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)}


@pytest.fixture(scope="module")
def candidate(root: Path, tmp_path_factory: pytest.TempPathFactory) -> Built:
    """cp312's CPU wheel of the demo, built once for real (the build's success path, and the candidate
    promote-release releases), the sccache-dist scheduler a closed port (the build goes on without it)."""
    out, secrets = tmp_path_factory.mktemp("wheelhouse"), Secrets()
    summary = tmp_path_factory.mktemp("summary") / "summary.md"
    proc = subprocess.run([sys.executable, "-m", "builders", "build", "--target", release.TARGET, "--output", str(out),
                           "--sccache-dist", f"http://127.0.0.1:{free_port()}/"], env=planted_build_env(secrets, summary),
                          cwd=root, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    said = proc.stdout + proc.stderr + everything_written(out / "logs") + (out / "results.json").read_text()
    return Built(wheels=out, said=said + (summary.read_text() if summary.exists() else ""),
                 planted=tuple(secrets.planted))


def test_a_real_build_and_its_failures_leak_nothing(candidate: Built, tmp_path: Path) -> None:
    """The build that succeeded (above) and one that fails for real, not a dry run: the compile cache down with
    --compile-cache-required (exit 20, before any compile), every credential variable and index URL planted."""
    secrets = Secrets()
    summary = tmp_path / "summary.md"
    closed = free_port()
    done = subprocess.run([sys.executable, "-m", "builders", "build", "--target", release.TARGET, "--output",
                           str(tmp_path / "out"), "--compile-cache-required", "--compile-cache",
                           f"http://127.0.0.1:{closed}/cache/", "--sccache-dist", f"http://127.0.0.1:{closed}/"],
                          env=planted_build_env(secrets, summary), cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 20, done.stdout + done.stderr
    texts = candidate.said + done.stdout + done.stderr + everything_written(tmp_path)
    assert [s for s in [*candidate.planted, *secrets.planted] if s in texts] == []
    assert "http://***@127.0.0.1" in candidate.said  # the index URL did reach the build's log, masked


def test_promote_release_upload_failure_and_success_leak_nothing(
        root: Path, shipped_text: str, candidate: Built, tmp_path: Path) -> None:
    """A validated candidate promoted for real: the token in ``--repository-url`` (twine's error when the upload
    fails on a closed port, exit 12; then the upload that succeeds), the password in ``--simple-url`` (read by the
    preflight and the audit, written in ``--record``), the store's key pair and every other credential variable:
    none is in the output, the record, the bucket or the job summary."""
    (tmp_path / "matrix.yaml").write_text(release.cpu_default(shipped_text), encoding="utf-8")
    (tmp_path / "examples").symlink_to(root / "examples")
    matrix = tmp_path / "matrix.yaml"
    secrets = Secrets()
    with object_store(tmp_path / "store") as s3, package_server(tmp_path / "pypi") as pypi:
        s3.make_bucket("downloads")
        rc = release.make_candidate(root, s3, matrix, candidate.wheels, tmp_path / "rc", "v2.15.0-rc1")
        pypi_validation = release.staged(root, s3, matrix, rc, tmp_path)
        out = tmp_path / "out"
        out.mkdir()
        planted_env = {name: secrets.new(name) for name in credential_variables() if not name.startswith("AWS_")}
        env = {**os.environ, **s3.env, **planted_env, "PYTHONPATH": str(root), "GITHUB_ACTIONS": "true",
               "GITHUB_STEP_SUMMARY": str(out / "summary.md")}
        simple = pypi.simple_url.replace("://", f"://{secrets.new('simpleuser')}:{secrets.new('simplepass')}@", 1)
        promote = ["promote-release", "--matrix", str(matrix), "--bucket", release.BUCKET, "--target", release.TARGET,
                   "--manifest", str(rc.manifest), "--validation", str(rc.validation), "--pypi-wheels", str(rc.pypi),
                   "--pypi-validation", str(pypi_validation), "--simple-url", simple, "--audit-timeout", "60"]
        said = []
        for port, code in ((free_port(), 12), (int(pypi.url.rsplit(":", 1)[1].strip("/")), 0)):  # failure, success
            upload = f"http://__token__:{secrets.new('uploadtoken')}@127.0.0.1:{port}/"
            record = out / f"promotion-{code}.json"
            done = subprocess.run([sys.executable, "-m", "builders", *promote, "--repository-url", upload,
                                   "--record", str(record)], env=env, cwd=tmp_path, capture_output=True, text=True,
                                  timeout=600)
            said.append(done.stdout + done.stderr)
            assert done.returncode == code, said[-1]
            assert record.is_file(), said[-1]
        uploaded = list(pypi.root.iterdir())
        objects = s3.files("downloads")
    bucket = "\n".join(v.decode(errors="replace") for v in objects.values())
    texts = "\n".join(said) + everything_written(out) + bucket
    assert [p.name for p in uploaded] == [p.name for p in rc.pypi.glob("*.whl")], said  # it did reach PyPI
    assert any(k.startswith("publish-records/release/") for k in objects), sorted(objects)  # the bucket's record
    planted = [*secrets.planted, s3.key, s3.secret]
    assert [s for s in planted if s in texts] == [], said
    assert "***" in texts
