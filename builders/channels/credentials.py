"""The bucket's role session from the job's GitHub OIDC token: exchanged at once, renewed before it ends.

A GitHub job with ``id-token: write`` mints an OIDC token by a GET of ``$ACTIONS_ID_TOKEN_REQUEST_URL`` with
``audience=sts.amazonaws.com`` and ``Authorization: bearer $ACTIONS_ID_TOKEN_REQUEST_TOKEN`` (the answer is JSON,
``{"value": TOKEN}``). The token lives about five minutes, so it is exchanged for a session of the role
``AWS_ROLE_ARN`` at once (AssumeRoleWithWebIdentity, at ``AWS_ENDPOINT_URL_STS`` or ``AWS_ENDPOINT_URL``, AWS's own
STS where neither is set), never left to boto3 to exchange at its first request, which may come an hour later.

- ``ci/bucket-credentials.sh`` calls :func:`main` (``exchange``): the session's keys, masked in the log, and its
  expiry go to ``$GITHUB_ENV``, so a refused token or role fails that step, not a publish halfway.
- :func:`botocore_session`, which :func:`builders.channels.objectstore.client` uses where the job can mint tokens:
  credentials that mint a new token and assume the role again some minutes before the session ends
  (:func:`refresh_due`), so an upload or a hash that outlasts one session goes on.

A session lasts ``BUCKET_SESSION_SECONDS`` (the workflow passes the job's timeout), held to STS's 900 to 43,200
seconds; the role's MaxSessionDuration (one hour unless raised) is the ceiling STS enforces. Every value comes from
the mapping passed in, never from this process's environment.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import requests
from botocore.credentials import CredentialProvider, CredentialResolver, RefreshableCredentials
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from builders.base import redact, safe_output
from builders.base.console import Console
from builders.base.errors import ObjectStoreError, PathError

if TYPE_CHECKING:
    import botocore.session

AUDIENCE = "sts.amazonaws.com"
METHOD = "github-oidc"
SHORTEST, LONGEST = 900, 43200  # STS's bounds on DurationSeconds
DEFAULT_SECONDS = 3600  # STS's default, and a role's MaxSessionDuration unless raised
RENEW_BEFORE = 600  # seconds before the end: ten minutes, or a quarter of a shorter session
TOKEN_TIMEOUT = 30
NOT_IN_SESSION_NAME = re.compile(r"[^\w+=,.@-]")
USAGE = "usage: credentials exchange (writes the role session to $GITHUB_ENV)"


@dataclass(frozen=True, kw_only=True)
class RoleSession:
    """The role's temporary credentials and when they end."""

    access_key: str
    secret_key: str
    token: str
    expiry: datetime.datetime

    def metadata(self) -> dict[str, str]:
        """As botocore's refreshable credentials take them."""
        return {"access_key": self.access_key, "secret_key": self.secret_key, "token": self.token,
                "expiry_time": self.expiry.isoformat()}

    def secrets(self) -> tuple[str, ...]:
        return (self.access_key, self.secret_key, self.token)


def from_github_oidc(env: Mapping[str, str]) -> bool:
    """A job that may assume ``AWS_ROLE_ARN`` with a token it mints itself (``id-token: write``)."""
    return all(env.get(name) for name in ("AWS_ROLE_ARN", "ACTIONS_ID_TOKEN_REQUEST_URL",
                                          "ACTIONS_ID_TOKEN_REQUEST_TOKEN"))


def session_seconds(env: Mapping[str, str]) -> int:
    """``BUCKET_SESSION_SECONDS`` held to STS's bounds (900 to 43,200); unset, STS's one hour."""
    text = (env.get("BUCKET_SESSION_SECONDS") or "").strip()
    if not text:
        return DEFAULT_SECONDS
    if not text.isdigit():
        raise ObjectStoreError(f"BUCKET_SESSION_SECONDS={text!r} is not a whole number of seconds")
    return min(max(int(text), SHORTEST), LONGEST)


def session_name(env: Mapping[str, str]) -> str:
    """``builders-<run id>-<job>``, as CloudTrail shows it (at most 64 of STS's allowed characters)."""
    name = f"builders-{env.get('GITHUB_RUN_ID') or 'run'}-{env.get('GITHUB_JOB') or 'job'}"
    return NOT_IN_SESSION_NAME.sub("-", name)[:64]


def _retrying() -> requests.Session:
    """Three tries of a GET that found the token service down or busy (as ``curl --retry 3`` did)."""
    retry = Retry(total=3, backoff_factor=1, status_forcelist=(429, 500, 502, 503, 504), allowed_methods=("GET",))
    session = requests.Session()
    session.mount("https://", HTTPAdapter(max_retries=retry))
    session.mount("http://", HTTPAdapter(max_retries=retry))
    return session


def github_token(env: Mapping[str, str], http: requests.Session | None = None) -> str:
    """A new OIDC token of this job for STS, from GitHub's token service."""
    url, bearer = env.get("ACTIONS_ID_TOKEN_REQUEST_URL"), env.get("ACTIONS_ID_TOKEN_REQUEST_TOKEN")
    if not url or not bearer:
        raise ObjectStoreError("the job cannot mint an OIDC token (no ACTIONS_ID_TOKEN_REQUEST_URL/_TOKEN): give it "
                               "permissions id-token: write")
    service = f"GitHub's OIDC token service ({urlsplit(url).netloc})"
    try:
        answer = (http or _retrying()).get(url, params={"audience": AUDIENCE}, timeout=TOKEN_TIMEOUT,
                                           headers={"Authorization": f"bearer {bearer}"})
    except requests.RequestException as exc:
        raise ObjectStoreError(f"{service} did not answer: {exc}") from None
    if answer.status_code != 200:
        raise ObjectStoreError(f"{service} refused a token for {AUDIENCE}: HTTP {answer.status_code} "
                               f"{answer.reason}: {answer.text[:200]}")
    try:
        value = answer.json().get("value")
    except (ValueError, AttributeError):
        value = None
    if not isinstance(value, str) or not value:
        raise ObjectStoreError(f"{service} answered without a token (JSON {{\"value\": ...}} expected)")
    return value


def assume_role(env: Mapping[str, str], token: str, seconds: int) -> RoleSession:
    """AssumeRoleWithWebIdentity of ``AWS_ROLE_ARN`` with ``token``, for ``seconds`` (an unsigned request)."""
    import boto3
    from botocore import UNSIGNED
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError, ClientError

    role = env["AWS_ROLE_ARN"]
    endpoint = env.get("AWS_ENDPOINT_URL_STS") or env.get("AWS_ENDPOINT_URL") or None
    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1"
    config = Config(signature_version=UNSIGNED, retries={"max_attempts": 5, "mode": "standard"})
    sts = boto3.session.Session(region_name=region).client("sts", endpoint_url=endpoint, config=config)
    try:
        answer = sts.assume_role_with_web_identity(RoleArn=role, RoleSessionName=session_name(env),
                                                   WebIdentityToken=token, DurationSeconds=seconds)
    except (ClientError, BotoCoreError) as exc:
        raise ObjectStoreError(f"AssumeRoleWithWebIdentity of {role} for {seconds} s failed at STS ({endpoint or 'AWS'}): "
                               f"{exc} (STS refuses a session longer than the role's MaxSessionDuration: lower "
                               "BUCKET_SESSION_SECONDS or raise it)") from None
    found = answer["Credentials"]
    return RoleSession(access_key=found["AccessKeyId"], secret_key=found["SecretAccessKey"],
                       token=found["SessionToken"], expiry=_aware(found["Expiration"]))


def exchange(env: Mapping[str, str], http: requests.Session | None = None) -> RoleSession:
    """A new token, exchanged at once for a session of ``session_seconds(env)``."""
    return assume_role(env, github_token(env, http), session_seconds(env))


def _aware(moment: datetime.datetime) -> datetime.datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.UTC)


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def exchanged(env: Mapping[str, str]) -> RoleSession | None:
    """The session ``ci/bucket-credentials.sh`` wrote to ``$GITHUB_ENV`` (all four values), or None."""
    values = [env.get(name) for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                                         "AWS_CREDENTIAL_EXPIRATION")]
    if not all(values):
        return None
    try:
        expiry = _aware(datetime.datetime.fromisoformat(str(values[3])))
    except ValueError:
        return None
    return RoleSession(access_key=str(values[0]), secret_key=str(values[1]), token=str(values[2]), expiry=expiry)


# -- renewal -------------------------------------------------------------------------------------

def renew_margin(seconds: int) -> int:
    """How long before its end a session of ``seconds`` is renewed: ten minutes, a quarter of a shorter one."""
    return min(RENEW_BEFORE, seconds // 4)


def refresh_due(expiry: datetime.datetime, now: datetime.datetime, margin: float) -> bool:
    return (expiry - now).total_seconds() < margin


class RenewingCredentials(RefreshableCredentials):
    """botocore's refreshable credentials, renewed by :func:`refresh_due`'s decision.

    botocore asks at every request: past the advisory margin one thread renews while the others go on with
    the current keys; past the mandatory one (half of it) every request waits for the new session."""

    _expiry_time: datetime.datetime
    _time_fetcher: Callable[[], datetime.datetime]
    _advisory_refresh_timeout: int

    def refresh_needed(self, refresh_in: int | None = None) -> bool:
        margin = self._advisory_refresh_timeout if refresh_in is None else refresh_in
        return refresh_due(self._expiry_time, self._time_fetcher(), margin)


def renewing(env: Mapping[str, str], *, http: requests.Session | None = None,
             clock: Callable[[], datetime.datetime] = _now) -> RenewingCredentials:
    """Credentials of the role that renew themselves: the step's session where ``env`` has it, else one exchanged
    now (so a refused token fails here, before any request), then a new token and session before each ends."""
    first = exchanged(env) or exchange(env, http)
    margin = renew_margin(session_seconds(env))
    return RenewingCredentials(access_key=first.access_key, secret_key=first.secret_key, token=first.token,
                               expiry_time=first.expiry, refresh_using=lambda: exchange(env, http).metadata(),
                               method=METHOD, time_fetcher=clock, advisory_timeout=margin,
                               mandatory_timeout=margin // 2)


class _Given(CredentialProvider):
    """A credential chain of one link: the credentials it was given."""

    METHOD = METHOD

    def __init__(self, credentials: RenewingCredentials) -> None:
        super().__init__()
        self.credentials = credentials

    def load(self) -> RenewingCredentials:
        return self.credentials


def botocore_session(env: Mapping[str, str], *, http: requests.Session | None = None,
                     clock: Callable[[], datetime.datetime] = _now) -> botocore.session.Session:
    """A botocore session whose only credentials are :func:`renewing`'s (never the process's own chain)."""
    import botocore.session

    session = botocore.session.Session()
    session.register_component("credential_provider", CredentialResolver([_Given(renewing(env, http=http, clock=clock))]))
    return session


# -- the step: ci/bucket-credentials.sh ------------------------------------------------------------

def github_env_lines(session: RoleSession, env: Mapping[str, str]) -> list[str]:
    """What later steps read: the keys, the expiry (ISO 8601) and the session length the renewals ask for."""
    values = {"AWS_ACCESS_KEY_ID": session.access_key, "AWS_SECRET_ACCESS_KEY": session.secret_key,
              "AWS_SESSION_TOKEN": session.token, "AWS_CREDENTIAL_EXPIRATION": session.expiry.isoformat(),
              "BUCKET_SESSION_SECONDS": str(session_seconds(env)), "AWS_ROLE_SESSION_NAME": session_name(env)}
    if any("\n" in value or "\r" in value for value in values.values()):
        raise ObjectStoreError("STS answered a credential with a line break: not written to $GITHUB_ENV")
    return [f"{name}={value}" for name, value in values.items()]


def main(argv: Sequence[str], env: Mapping[str, str]) -> int:
    """``exchange``: the role session, exchanged now, to ``$GITHUB_ENV``; each secret masked first (on GitHub)."""
    redact.remember(env)
    console = Console(env=env)
    if list(argv) != ["exchange"] or not env.get("GITHUB_ENV"):
        console.error(f"{USAGE}; got {list(argv)}, GITHUB_ENV={env.get('GITHUB_ENV', '')!r}")
        return 2
    try:
        session = exchange(env)
        lines = github_env_lines(session, env)
    except ObjectStoreError as exc:
        console.error(f"bucket credentials: {exc}")
        return ObjectStoreError.exit_code
    if console.github:
        for secret in session.secrets():
            console.line(f"::add-mask::{secret}")
    redact.remember(dict(zip(("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"), session.secrets())))
    try:
        with safe_output.open_append(Path(env["GITHUB_ENV"])) as out:
            out.write("".join(f"{line}\n" for line in lines))
    except PathError as exc:
        console.error(f"bucket credentials: GITHUB_ENV {exc}")
        return PathError.exit_code
    console.line(f"bucket credentials: role {env['AWS_ROLE_ARN']}, session {session_name(env)} until "
                 f"{session.expiry.isoformat()} ({session_seconds(env)} s asked; builders renews it before then)")
    return 0
