"""One redaction rule for every text that leaves builders: the console, the targets' logs, the tails of the
commands it runs, the records it writes and the job summary.

A credential reaches builders three ways, and the rule knows each:

- in a URL's userinfo (``s3://KEY:SECRET@bucket``, ``https://__token__:TOKEN@upload``): the userinfo goes;
- in a URL's query (``?token=``, ``access_token=``, ``X-Amz-Signature=``, ``sig=``) or an ``Authorization``
  header a tool echoes: the value goes;
- in any URL of the environment (``PIP_INDEX_URL``, ``HTTPS_PROXY``) or of the command line: its userinfo;
- in a credential variable builders knows (:data:`CREDENTIAL_VARIABLES`, and any name that ends like one:
  ``*_TOKEN``, ``*_PASSWORD``, ``*_SECRET_ACCESS_KEY``): its value goes wherever it shows, however it got there
  (a tool that prints the key it was refused with).

The values are :func:`remember`-ed once, by ``main`` from the run's environment and from the URLs it was
given; the patterns need nothing remembered. Applied where text leaves, never at each call site: a caller that
prints, logs or records does not have to know what it holds. Over-redaction is the safe side of the rule.
"""

from __future__ import annotations

import re
import threading
import urllib.parse
from collections.abc import Iterable, Mapping
from typing import Any

MASK = "***"
SHORTEST = 6  # a shorter value would mask ordinary words and digits everywhere; no real credential is that short
CREDENTIAL_VARIABLES = frozenset({
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "TWINE_PASSWORD", "TWINE_USERNAME",
    "GITHUB_TOKEN", "GH_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_TOKEN", "ACTIONS_RUNTIME_TOKEN", "SCCACHE_DIST_TOKEN",
    "SCCACHE_REDIS_PASSWORD", "SCCACHE_WEBDAV_PASSWORD", "SCCACHE_WEBDAV_TOKEN", "SCCACHE_GCS_KEY_PATH",
    "SCCACHE_AZURE_CONNECTION_STRING", "PYPI_API_TOKEN", "UV_PUBLISH_TOKEN", "UV_PUBLISH_PASSWORD",
})
CREDENTIAL_NAME = re.compile(r"(TOKEN|PASSWORD|PASSWD|SECRET|SECRET_ACCESS_KEY|ACCESS_KEY_ID|API_KEY|PRIVATE_KEY"
                             r"|CONNECTION_STRING|_AUTH)$")
_EXCLUDED = frozenset({"ACTIONS_ID_TOKEN_REQUEST_URL"})  # a URL, not a secret (its query is masked by the rule)

# scheme://user:password@ (the password may hold '/', as AWS secret keys do) and scheme://token@
_USERINFO = re.compile(r"(?P<scheme>\b[a-z][a-z0-9+.-]*://)(?:[^\s:/@'\"<>]*:[^\s@'\"<>]*|[^\s:/@'\"<>]+)@", re.I)
_QUERY = re.compile(r"(?P<key>[?&;](?:[a-z0-9_.-]*(?:token|sig|signature|password|passwd|secret|credential|key|auth)"
                    r"[a-z0-9_.-]*)=)[^&\s#'\"<>]+", re.I)
_HEADER = re.compile(r"(?P<key>\b(?:authorization|x-amz-security-token|proxy-authorization)\s*[:=]\s*"
                     r"(?:(?:bearer|basic|token)\s+)?)[^\s'\",]+", re.I)
_ASSIGNED = re.compile(r"(?P<key>\b(?P<name>[A-Z][A-Z0-9_]*)=)(?P<value>'[^']*'|\"[^\"]*\"|[^\s'\"]+)")

_SECRETS: set[str] = set()
_LOCK = threading.Lock()
_PATTERN: list[re.Pattern[str] | None] = [None]


def is_credential(name: str) -> bool:
    """Whether the variable ``name`` holds a credential (by the table, else by how it ends)."""
    return name not in _EXCLUDED and (name in CREDENTIAL_VARIABLES or bool(CREDENTIAL_NAME.search(name)))


def remember(env: Mapping[str, str], urls: Iterable[str] = ()) -> None:
    """Mask from now on the values of ``env``'s credential variables and the secrets inside ``urls``
    (their userinfo and secret query values), in every spelling they may be printed in."""
    found = [v for k, v in env.items() if is_credential(k)]
    found += [part for url in [*urls, *env.values()] if "=" in url or "@" in url for part in _url_secrets(url)]
    spelled = {s for v in found for s in (v, urllib.parse.quote(v, safe=""), urllib.parse.unquote(v))}
    with _LOCK:
        before = len(_SECRETS)
        _SECRETS.update(s for s in spelled if len(s) >= SHORTEST)
        if len(_SECRETS) != before:
            _PATTERN[0] = re.compile("|".join(re.escape(s) for s in sorted(_SECRETS, key=len, reverse=True)))


def forget_all() -> None:
    """Forget every remembered value (a test's fresh start; a run never calls it)."""
    with _LOCK:
        _SECRETS.clear()
        _PATTERN[0] = None


def holds_credential(url: str) -> bool:
    """Whether ``url`` carries a credential the rule would mask (userinfo, a secret query value): a location that
    builders must refuse without repeating it, since the refusal itself would print it."""
    try:
        netloc = urllib.parse.urlsplit(url).netloc
    except ValueError:
        netloc = ""
    return bool(_USERINFO.search(url) or _QUERY.search(url) or _HEADER.search(url)) or "@" in netloc


def _url_secrets(text: str) -> list[str]:
    """The userinfo (whole, user and password) and the secret query values of the URLs in ``text``."""
    out: list[str] = []
    for match in _USERINFO.finditer(text):
        userinfo = match.group(0)[len(match.group("scheme")):-1]
        out += [userinfo, *userinfo.split(":", 1)]
    out += [m.group(0)[len(m.group("key")):] for m in _QUERY.finditer(text)]
    return out


def redact(text: str) -> str:
    """``text`` with every credential the rule knows replaced by :data:`MASK`."""
    if not text:
        return text
    pattern = _PATTERN[0]
    if pattern is not None:
        text = pattern.sub(MASK, text)
    text = _USERINFO.sub(lambda m: f"{m.group('scheme')}{MASK}@", text)
    text = _QUERY.sub(lambda m: f"{m.group('key')}{MASK}", text)
    text = _HEADER.sub(lambda m: f"{m.group('key')}{MASK}", text)
    return _ASSIGNED.sub(_assigned, text)


def _assigned(match: re.Match[str]) -> str:
    return f"{match.group('key')}{MASK}" if is_credential(match.group("name")) else match.group(0)


def scrub(value: Any) -> Any:
    """A JSON-like value (a record) with every string in it redacted, keys included."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {scrub(k): scrub(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [scrub(v) for v in value]
    return value
