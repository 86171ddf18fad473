"""ci/bucket-credentials.sh and builders' renewing role session, against real servers on loopback.

GitHub's OIDC token service exists only inside a GitHub Actions job and cannot run here: a tiny HTTP server
on 127.0.0.1 stands in for it, answering as GitHub does (GET ``$ACTIONS_ID_TOKEN_REQUEST_URL&audience=...``
with ``Authorization: bearer $ACTIONS_ID_TOKEN_REQUEST_TOKEN``, JSON ``{"value": TOKEN}``) and recording each
request. STS is moto's server (``moto[server]``, in this process's threads) on 127.0.0.1, which implements
AssumeRoleWithWebIdentity; it checks neither the token's signature nor the role's trust policy (AWS's side, not
tested here), but it issues real sessions with the asked length and knows which keys belong to which session
(GetCallerIdentity), which is how these tests tell the keys written are the role session's. Its S3 is the
bucket the client then writes to.
"""

from __future__ import annotations

import datetime
import http.server
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from builders.channels import credentials, objectstore
from tests.objectstore import free_port

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "ci/bucket-credentials.sh"
ROLE = "arn:aws:iam::123456789012:role/publisher"
BEARER = "request-token-of-the-job"


@dataclass
class TokenService:
    """The stand-in for GitHub's token service: each request recorded, each token new; ``refuse`` answers 403."""

    url: str = ""
    refuse: bool = False
    asked: list[dict[str, Any]] = field(default_factory=list)


def _handler(service: TokenService) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # http.server's name for it
            query = parse_qs(urlsplit(self.path).query)
            service.asked.append({"query": query, "authorization": self.headers.get("Authorization")})
            ok = not service.refuse and self.headers.get("Authorization") == f"bearer {BEARER}"
            body = json.dumps({"value": f"oidc-token-{len(service.asked)}"} if ok else {"message": "Forbidden"})
            self.send_response(200 if ok else 403)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture
def tokens() -> Iterator[TokenService]:
    service = TokenService()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(service))
    service.url = f"http://127.0.0.1:{server.server_address[1]}/_apis/idtoken?api-version=2.0"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield service
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def sts() -> Iterator[str]:
    server_module = pytest.importorskip("moto.server", reason="moto[server] is in the test extra")
    port = free_port()
    server = server_module.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


def job_env(tokens: TokenService, sts: str, **more: str) -> dict[str, str]:
    """What a GitHub job with ``id-token: write`` and a bucket role has, the stand-ins' addresses in it."""
    return {"INDEX_BUCKET": "s3://downloads/", "AWS_ROLE_ARN": ROLE, "AWS_ENDPOINT_URL": sts, "AWS_REGION": "us-east-1",
            "ACTIONS_ID_TOKEN_REQUEST_URL": tokens.url, "ACTIONS_ID_TOKEN_REQUEST_TOKEN": BEARER,
            "GITHUB_RUN_ID": "4242", "GITHUB_JOB": "candidate", **more}


def run_script(env: dict[str, str], tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    github_env = tmp_path / "github_env"
    github_env.touch()
    base = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTHONPATH": str(ROOT), "PYTHON": sys.executable,
            "GITHUB_ENV": str(github_env), "GITHUB_ACTIONS": "true", "RUNNER_TEMP": str(tmp_path)}
    proc = subprocess.run(["bash", str(SCRIPT)], env={**base, **env}, cwd=tmp_path, text=True, capture_output=True,
                          timeout=120)
    written = dict(line.split("=", 1) for line in github_env.read_text().splitlines() if line)
    return proc, written


def caller(env: dict[str, str], sts: str) -> str:
    """Whose keys these are, as STS knows them (an independent reading, not the code under test's)."""
    import boto3

    client = boto3.client("sts", endpoint_url=sts, region_name="us-east-1", aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
                          aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"], aws_session_token=env["AWS_SESSION_TOKEN"])
    return str(client.get_caller_identity()["Arn"])


def test_the_script_exchanges_the_token_at_once_and_writes_the_session(tokens: TokenService, sts: str,
                                                                       tmp_path: Path) -> None:
    before = datetime.datetime.now(datetime.UTC)
    proc, written = run_script(job_env(tokens, sts, BUCKET_SESSION_SECONDS="1800"), tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert tokens.asked == [{"query": {"api-version": ["2.0"], "audience": ["sts.amazonaws.com"]},
                             "authorization": f"bearer {BEARER}"}]
    assert caller(written, sts) == "arn:aws:sts::123456789012:assumed-role/publisher/builders-4242-candidate"
    expiry = datetime.datetime.fromisoformat(written["AWS_CREDENTIAL_EXPIRATION"])
    assert abs((expiry - before).total_seconds() - 1800) < 60, expiry
    assert written["BUCKET_SESSION_SECONDS"] == "1800"
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        secret = written[name]
        assert f"::add-mask::{secret}" in out, name
        assert out.count(secret) == 1, f"{name} shows in the log outside its ::add-mask:: line"
    assert "oidc-token-1" not in out


@pytest.mark.parametrize(("asked", "lasts"), [("60", 900), ("100000", 43200)])
def test_the_session_asked_of_sts_is_held_to_its_bounds(tokens: TokenService, sts: str, tmp_path: Path,
                                                        asked: str, lasts: int) -> None:
    before = datetime.datetime.now(datetime.UTC)
    proc, written = run_script(job_env(tokens, sts, BUCKET_SESSION_SECONDS=asked), tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    expiry = datetime.datetime.fromisoformat(written["AWS_CREDENTIAL_EXPIRATION"])
    assert abs((expiry - before).total_seconds() - lasts) < 60 and written["BUCKET_SESSION_SECONDS"] == str(lasts)


def test_a_refused_token_fails_the_step_saying_so_and_writes_nothing(tokens: TokenService, sts: str,
                                                                     tmp_path: Path) -> None:
    tokens.refuse = True
    proc, written = run_script(job_env(tokens, sts), tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and written == {}, out
    assert "::error::bucket credentials: GitHub's OIDC token service (127.0.0.1:" in out
    assert "refused a token for sts.amazonaws.com: HTTP 403" in out
    assert f"::error::ci/bucket-credentials.sh: no session of role {ROLE}" in out


def test_without_id_token_write_the_step_says_what_to_grant(tokens: TokenService, sts: str, tmp_path: Path) -> None:
    proc, written = run_script({**job_env(tokens, sts), "ACTIONS_ID_TOKEN_REQUEST_TOKEN": ""}, tmp_path)
    assert proc.returncode != 0 and written == {} and tokens.asked == []
    assert "give it permissions id-token: write" in proc.stdout + proc.stderr


def test_keys_from_secrets_are_left_as_they_are(tokens: TokenService, sts: str, tmp_path: Path) -> None:
    env = {**job_env(tokens, sts), "AWS_ROLE_ARN": "", "AWS_ACCESS_KEY_ID": "AKIDSECRET", "AWS_SECRET_ACCESS_KEY": "s"}
    proc, written = run_script(env, tmp_path)
    assert proc.returncode == 0 and written == {} and tokens.asked == [], proc.stdout + proc.stderr
    assert "access key from the environment's secrets" in proc.stdout


# -- the renewal, for real -----------------------------------------------------------------------------

@dataclass
class Clock:
    now: datetime.datetime = field(default_factory=lambda: datetime.datetime.now(datetime.UTC))

    def __call__(self) -> datetime.datetime:
        return self.now


def test_the_session_is_renewed_with_a_new_token_when_near_its_end(tokens: TokenService, sts: str) -> None:
    """One real renewal: moto's STS issues a 900 s session; with the clock moved to 200 s before its end (the
    margin is 225 s) the next request mints a new token and assumes the role again, and the new keys are a
    session STS knows."""
    env, clock = job_env(tokens, sts, BUCKET_SESSION_SECONDS="900"), Clock()
    creds = credentials.renewing(env, clock=clock)
    first = creds.get_frozen_credentials()
    assert len(tokens.asked) == 1
    clock.now += datetime.timedelta(seconds=900 - 240)
    assert creds.get_frozen_credentials() == first and len(tokens.asked) == 1
    clock.now += datetime.timedelta(seconds=40)
    renewed = creds.get_frozen_credentials()
    assert len(tokens.asked) == 2 and renewed.access_key != first.access_key
    keys = {"AWS_ACCESS_KEY_ID": renewed.access_key, "AWS_SECRET_ACCESS_KEY": renewed.secret_key,
            "AWS_SESSION_TOKEN": renewed.token}
    assert caller(keys, sts).endswith(":assumed-role/publisher/builders-4242-candidate")


def test_the_client_uses_the_steps_session_then_its_own(tokens: TokenService, sts: str, tmp_path: Path) -> None:
    """What a later step does: objectstore.client with the job's environment after the credentials step. It
    starts from the session the step wrote (no new token) and writes to the bucket with it."""
    proc, written = run_script(job_env(tokens, sts), tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    s3 = objectstore.client({**job_env(tokens, sts), **written})
    s3.create_bucket(Bucket="downloads")
    s3.put_object(Bucket="downloads", Key="whl/test/index.html", Body=b"<html></html>")
    assert s3.get_object(Bucket="downloads", Key="whl/test/index.html")["Body"].read() == b"<html></html>"
    assert len(tokens.asked) == 1, "the client minted a token although the step's session was good"
    assert s3._request_signer._credentials.access_key == written["AWS_ACCESS_KEY_ID"]
