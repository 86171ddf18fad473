"""Is the shared compile cache there? One bounded look before the first build, so that an outage degrades a run
instead of failing it.

A store that is down, black-holed (a port that takes the connection and never answers) or refuses the run's
credentials used to fail every build half-way (``sccache: error: couldn't connect to server``, CMake's configure
failing): a nightly and a release tag alike, though neither needs the cache to be right. :func:`probe` asks the
store what the build's compiler cache would ask first, with the credentials the build would use, and a timeout
(:data:`TIMEOUT`) on every step:

- ``redis://`` / ``rediss://``: ``AUTH`` (where ``$SCCACHE_REDIS_PASSWORD`` is set) and ``PING``;
- ``http://`` / ``https://`` (WebDAV for sccache, ccache's HTTP storage): one ``GET`` of the store's address with
  the store's credentials; any answer but 401/403 is a store that is there;
- ``s3://``: ``HeadBucket`` through boto3 at ``$SCCACHE_ENDPOINT``.

It returns the cause, one line without a credential in it, or ``""``. What the run does with a cause (build on
with the local cache, or stop: ``--compile-cache-required``) is the caller's.
"""

from __future__ import annotations

import base64
import socket
import ssl
import urllib.error
import urllib.request
from collections.abc import Mapping
from urllib.parse import urlsplit

TIMEOUT = 5.0  # seconds for each step of the look: a store slower than this would slow every compile anyway
REFUSED_AUTH = ("NOAUTH", "WRONGPASS", "NOPERM", "invalid password", "invalid username")


def probe(location: str, env: Mapping[str, str], timeout: float = TIMEOUT) -> str:
    """Why the store at ``location`` cannot serve this run (credentials from ``env``, the run's), or ``""``."""
    parts = urlsplit(location)
    try:
        if parts.scheme in ("redis", "rediss"):
            return _redis(parts.hostname or "localhost", parts.port or 6379, parts.scheme == "rediss", env, timeout)
        if parts.scheme in ("http", "https"):
            return _http(location, env, timeout)
        if parts.scheme == "s3":
            return _s3(parts.netloc, env, timeout)
    except TimeoutError:
        return f"{_where(location)}: no answer within {timeout:g} s (the port takes connections and says nothing)"
    except OSError as exc:
        return f"{_where(location)}: {exc.strerror or exc}"
    return ""


def _where(location: str) -> str:
    parts = urlsplit(location)
    return f"{parts.scheme}://{parts.hostname or ''}{f':{parts.port}' if parts.port else ''}"


def _redis(host: str, port: int, tls: bool, env: Mapping[str, str], timeout: float) -> str:
    """AUTH (if the run has a password) then PING, each answer read within ``timeout``."""
    with socket.create_connection((host, port), timeout=timeout) as raw:
        sock = ssl.create_default_context().wrap_socket(raw, server_hostname=host) if tls else raw
        sock.settimeout(timeout)
        password, user = env.get("SCCACHE_REDIS_PASSWORD", ""), env.get("SCCACHE_REDIS_USERNAME", "")
        if password:
            answer = _redis_call(sock, ["AUTH", *([user] if user else []), password])
            if answer.startswith("-"):
                return _redis_refusal(host, port, answer)
        answer = _redis_call(sock, ["PING"])
        if answer.startswith("-"):
            return _redis_refusal(host, port, answer)
        return "" if answer.startswith("+PONG") else f"redis://{host}:{port}: not a Redis server (answered {answer[:40]!r})"


def _redis_call(sock: socket.socket, words: list[str]) -> str:
    """One command in Redis's protocol; the first line of its answer."""
    sock.sendall(f"*{len(words)}\r\n".encode() + b"".join(f"${len(w.encode())}\r\n{w}\r\n".encode() for w in words))
    got = b""
    while b"\r\n" not in got and len(got) < 4096:
        chunk = sock.recv(4096)
        if not chunk:
            raise ConnectionResetError(0, "the server closed the connection without an answer")
        got += chunk
    return got.split(b"\r\n", 1)[0].decode("utf-8", "replace")


def _redis_refusal(host: str, port: int, answer: str) -> str:
    refused = any(word in answer for word in REFUSED_AUTH)
    what = "refused the credentials" if refused else "answered an error"
    return f"redis://{host}:{port}: {what} ({answer[1:].split(' ', 1)[0]})"


def _http(location: str, env: Mapping[str, str], timeout: float) -> str:
    """One GET of the store's address; 401 and 403 are refused credentials, any other answer a store that is there."""
    request = urllib.request.Request(location, method="GET", headers=_http_auth(env))
    try:
        with urllib.request.urlopen(request, timeout=timeout):
            return ""
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            return f"{_where(location)}: refused the credentials (HTTP {exc.code})"
        return ""
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, TimeoutError):
            raise exc.reason from None
        reason = exc.reason
        return f"{_where(location)}: {getattr(reason, 'strerror', None) or reason}"


def _http_auth(env: Mapping[str, str]) -> dict[str, str]:
    if env.get("SCCACHE_WEBDAV_TOKEN"):
        return {"Authorization": f"Bearer {env['SCCACHE_WEBDAV_TOKEN']}"}
    if env.get("SCCACHE_WEBDAV_USERNAME"):
        pair = f"{env['SCCACHE_WEBDAV_USERNAME']}:{env.get('SCCACHE_WEBDAV_PASSWORD', '')}".encode()
        return {"Authorization": f"Basic {base64.b64encode(pair).decode()}"}
    return {}


def _s3(bucket: str, env: Mapping[str, str], timeout: float) -> str:
    """HeadBucket at sccache's endpoint, with the run's keys (else boto3's own chain), one attempt."""
    import boto3
    import botocore.config
    import botocore.exceptions

    endpoint = env.get("SCCACHE_ENDPOINT") or None
    if endpoint and "://" not in endpoint:
        endpoint = ("https://" if env.get("SCCACHE_S3_USE_SSL", "true").lower() != "false" else "http://") + endpoint
    session = boto3.session.Session(aws_access_key_id=env.get("AWS_ACCESS_KEY_ID") or None,
                                    aws_secret_access_key=env.get("AWS_SECRET_ACCESS_KEY") or None,
                                    aws_session_token=env.get("AWS_SESSION_TOKEN") or None)
    config = botocore.config.Config(connect_timeout=timeout, read_timeout=timeout, retries={"max_attempts": 1})
    client = session.client(
        "s3", endpoint_url=endpoint, config=config,
        region_name=env.get("SCCACHE_REGION") or env.get("AWS_REGION") or "us-east-1")
    where = f"s3://{bucket}" + (f" at {endpoint}" if endpoint else "")
    try:
        client.head_bucket(Bucket=bucket)
    except botocore.exceptions.ClientError as exc:
        code = str(exc.response.get("Error", {}).get("Code", "?"))
        refused = code in ("403", "401", "InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied")
        return f"{where}: {'refused the credentials' if refused else 'answered an error'} ({code})"
    except (botocore.exceptions.ConnectTimeoutError, botocore.exceptions.ReadTimeoutError):
        return f"{where}: no answer within {timeout:g} s"
    except botocore.exceptions.BotoCoreError as exc:
        return f"{where}: {type(exc).__name__}"
    return ""
