"""The bucket's role session (builders.channels.credentials) without a network: the renewal decision as a pure
function of expiry and now, the session's length, what goes to $GITHUB_ENV, and the renewing credentials on a
clock the test turns (the token service and STS stand-ins are in-process fakes here; the real exchange, against
moto's STS and a stand-in token service on loopback, is tests/integration/test_bucket_credentials.py)."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from builders.base.errors import ObjectStoreError
from builders.channels import credentials, objectstore
from builders.channels.credentials import RoleSession

T0 = datetime.datetime(2026, 12, 1, 12, 0, tzinfo=datetime.UTC)
OIDC = {"AWS_ROLE_ARN": "arn:aws:iam::123456789012:role/publisher",
        "ACTIONS_ID_TOKEN_REQUEST_URL": "https://token.example/id?api-version=2.0",
        "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "request-token", "BUCKET_SESSION_SECONDS": "900"}


def at(seconds: float) -> datetime.datetime:
    return T0 + datetime.timedelta(seconds=seconds)


# -- the decision ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("left", "due"), [(3600, False), (601, False), (600, False), (599, True), (1, True),
                                           (0, True), (-30, True)])
def test_renewal_is_due_once_less_than_the_margin_is_left(left: float, due: bool) -> None:
    assert credentials.refresh_due(at(left), T0, 600) is due


def test_the_decision_reads_expiry_and_now_in_any_time_zone() -> None:
    cest = datetime.timezone(datetime.timedelta(hours=2))
    assert credentials.refresh_due(at(900).astimezone(cest), T0, 600) is False
    assert credentials.refresh_due(at(300).astimezone(cest), T0, 600) is True


@pytest.mark.parametrize(("seconds", "margin"), [(900, 225), (1800, 450), (3600, 600), (43200, 600)])
def test_a_session_is_renewed_ten_minutes_before_its_end_or_a_quarter_of_a_short_one(seconds: int, margin: int) -> None:
    assert credentials.renew_margin(seconds) == margin


@pytest.mark.parametrize(("given", "seconds"), [("", 3600), ("1800", 1800), ("60", 900), ("100000", 43200),
                                                (" 7200 ", 7200)])
def test_the_session_length_is_held_to_sts_bounds(given: str, seconds: int) -> None:
    assert credentials.session_seconds({"BUCKET_SESSION_SECONDS": given}) == seconds


@pytest.mark.parametrize("given", ["an hour", "-5", "3600s"])
def test_a_session_length_that_is_no_number_is_refused(given: str) -> None:
    with pytest.raises(ObjectStoreError, match="BUCKET_SESSION_SECONDS"):
        credentials.session_seconds({"BUCKET_SESSION_SECONDS": given})


def test_the_session_name_names_run_and_job_in_stss_characters() -> None:
    assert credentials.session_name({"GITHUB_RUN_ID": "42", "GITHUB_JOB": "candidate"}) == "builders-42-candidate"
    name = credentials.session_name({"GITHUB_RUN_ID": "7", "GITHUB_JOB": "a job/with:odd" + "x" * 80})
    assert len(name) == 64 and name.startswith("builders-7-a-job-with-odd")


@pytest.mark.parametrize("missing", ["AWS_ROLE_ARN", "ACTIONS_ID_TOKEN_REQUEST_URL", "ACTIONS_ID_TOKEN_REQUEST_TOKEN"])
def test_the_oidc_path_needs_a_role_and_a_job_that_mints_tokens(missing: str) -> None:
    assert credentials.from_github_oidc(OIDC)
    assert not credentials.from_github_oidc({**OIDC, missing: ""})


# -- what the step writes, and reads back ---------------------------------------------------------

def session(n: int, expiry: datetime.datetime) -> RoleSession:
    return RoleSession(access_key=f"ASIA{n}", secret_key=f"secret-{n}", token=f"token-{n}", expiry=expiry)


def test_github_env_lines_are_what_the_later_steps_read_back() -> None:
    lines = credentials.github_env_lines(session(1, at(900)), OIDC)
    env = dict(line.split("=", 1) for line in lines)
    assert env["AWS_CREDENTIAL_EXPIRATION"] == "2026-12-01T12:15:00+00:00" and env["BUCKET_SESSION_SECONDS"] == "900"
    assert credentials.exchanged(env) == session(1, at(900))
    assert credentials.exchanged({**env, "AWS_SESSION_TOKEN": ""}) is None  # keys from secrets: no session
    assert credentials.exchanged({**env, "AWS_CREDENTIAL_EXPIRATION": "soon"}) is None


def test_a_credential_with_a_line_break_is_never_written() -> None:
    with pytest.raises(ObjectStoreError, match="line break"):
        credentials.github_env_lines(RoleSession(access_key="A", secret_key="s\nX=1", token="t", expiry=T0), OIDC)


def test_the_step_refuses_anything_but_exchange(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert credentials.main(["swap"], {**OIDC, "GITHUB_ENV": str(tmp_path / "env")}) == 2
    assert credentials.main(["exchange"], OIDC) == 2  # no $GITHUB_ENV to write to
    assert "usage: credentials exchange" in capsys.readouterr().err


# -- the token service's answers ------------------------------------------------------------------

@dataclass
class Answer:
    status_code: int
    body: Any
    reason: str = "OK"

    @property
    def text(self) -> str:
        return str(self.body)

    def json(self) -> Any:
        if isinstance(self.body, str):
            raise ValueError("not JSON")
        return self.body


@dataclass
class TokenService:
    """GitHub's token service as the code sees it (``get``), each request recorded."""

    answers: list[Answer] = field(default_factory=list)
    asked: list[dict[str, Any]] = field(default_factory=list)

    def get(self, url: str, **kwargs: Any) -> Answer:
        self.asked.append({"url": url, **kwargs})
        return self.answers.pop(0) if self.answers else Answer(200, {"value": f"oidc-{len(self.asked)}"})


def test_a_token_is_asked_for_sts_with_the_jobs_bearer() -> None:
    service = TokenService()
    assert credentials.github_token(OIDC, service) == "oidc-1"  # type: ignore[arg-type]
    asked = service.asked[0]
    assert asked["url"] == OIDC["ACTIONS_ID_TOKEN_REQUEST_URL"] and asked["params"] == {"audience": "sts.amazonaws.com"}
    assert asked["headers"] == {"Authorization": "bearer request-token"}


@pytest.mark.parametrize(("answer", "said"), [
    (Answer(403, "Forbidden", "Forbidden"), "refused a token for sts.amazonaws.com: HTTP 403"),
    (Answer(200, "<html>"), "answered without a token"),
    (Answer(200, {"count": 1}), "answered without a token"),
])
def test_a_refused_token_says_what_github_answered(answer: Answer, said: str) -> None:
    with pytest.raises(ObjectStoreError, match=said):
        credentials.github_token(OIDC, TokenService([answer]))  # type: ignore[arg-type]


def test_no_token_without_id_token_write() -> None:
    with pytest.raises(ObjectStoreError, match="id-token: write"):
        credentials.github_token({**OIDC, "ACTIONS_ID_TOKEN_REQUEST_TOKEN": ""})


# -- renewing credentials on a clock the test turns -----------------------------------------------

@dataclass
class Clock:
    now: datetime.datetime = T0

    def __call__(self) -> datetime.datetime:
        return self.now


@dataclass
class Sts:
    """STS as a fake: each exchange of a token gives a new session of the asked length from the clock's now."""

    clock: Clock = field(default_factory=Clock)
    exchanged: list[tuple[str, int]] = field(default_factory=list)

    def assume_role(self, env: Any, token: str, seconds: int) -> RoleSession:
        self.exchanged.append((token, seconds))
        return session(len(self.exchanged), self.clock.now + datetime.timedelta(seconds=seconds))


@pytest.fixture
def sts(monkeypatch: pytest.MonkeyPatch) -> Sts:
    fake = Sts()
    monkeypatch.setattr(credentials, "assume_role", fake.assume_role)
    return fake


def test_renewing_credentials_mint_a_new_token_only_when_due(sts: Sts) -> None:
    service = TokenService()
    creds = credentials.renewing(OIDC, http=service, clock=sts.clock)  # type: ignore[arg-type]
    assert sts.exchanged == [("oidc-1", 900)] and creds.get_frozen_credentials().access_key == "ASIA1"  # at once
    sts.clock.now = at(900 - 226)  # 226 s left, the margin is 225: not yet
    assert creds.get_frozen_credentials().access_key == "ASIA1" and len(service.asked) == 1
    sts.clock.now = at(900 - 224)
    assert creds.get_frozen_credentials().access_key == "ASIA2"  # a new token, a new session
    assert sts.exchanged == [("oidc-1", 900), ("oidc-2", 900)] and creds.method == "github-oidc"


def test_the_steps_session_is_used_first_and_renewed_before_it_ends(sts: Sts) -> None:
    service = TokenService()
    env = {**OIDC, **dict(line.split("=", 1) for line in credentials.github_env_lines(session(0, at(900)), OIDC))}
    creds = credentials.renewing(env, http=service, clock=sts.clock)  # type: ignore[arg-type]
    assert creds.get_frozen_credentials().access_key == "ASIA0" and sts.exchanged == [] and service.asked == []
    sts.clock.now = at(800)
    assert creds.get_frozen_credentials().access_key == "ASIA1" and [t for t, _ in sts.exchanged] == ["oidc-1"]


def test_a_failed_renewal_waits_while_time_is_left_and_fails_when_none_is(sts: Sts) -> None:
    """botocore's two margins: inside the first a failed renewal keeps the session; inside the second (half the
    first) it is an error, never a request signed with keys about to expire."""
    service = TokenService()
    creds = credentials.renewing(OIDC, http=service, clock=sts.clock)  # type: ignore[arg-type]
    service.answers = [Answer(500, "down", "Internal Server Error")] * 2
    sts.clock.now = at(900 - 200)  # within 225 s, not within 112 s
    assert creds.get_frozen_credentials().access_key == "ASIA1"
    sts.clock.now = at(900 - 100)
    with pytest.raises(ObjectStoreError, match="HTTP 500"):
        creds.get_frozen_credentials()
    assert len(sts.exchanged) == 1


# -- objectstore.client: which credentials ----------------------------------------------------------

def test_the_client_takes_keys_from_secrets_as_before() -> None:
    s3 = objectstore.client({"AWS_ACCESS_KEY_ID": "AKIDSECRET", "AWS_SECRET_ACCESS_KEY": "s", "AWS_REGION": "eu-west-1",
                             "ACTIONS_ID_TOKEN_REQUEST_URL": "https://token.example/id"})  # no role: no OIDC
    found = s3._request_signer._credentials
    assert found.access_key == "AKIDSECRET" and found.method == "explicit" and s3.meta.region_name == "eu-west-1"


def test_the_client_of_a_job_that_mints_tokens_renews_the_role_session() -> None:
    seeded = dict(line.split("=", 1) for line in credentials.github_env_lines(session(0, T0 + datetime.timedelta(
        days=365 * 100)), OIDC))
    s3 = objectstore.client({**OIDC, **seeded})  # the step's session, good for a century: no request made
    found = s3._request_signer._credentials
    assert isinstance(found, credentials.RenewingCredentials) and found.access_key == "ASIA0"
