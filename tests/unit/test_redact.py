"""One redaction rule: userinfo, secret query values, Authorization headers, credential assignments and the
remembered values of credential variables are masked wherever text leaves (console, logs, tails, records,
summaries); what is no credential is left alone. And the candidate's environment is a table: no credential
variable passes it."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from builders.base import redact, sandbox
from builders.base.console import Console
from builders.base.errors import ProcessError
from builders.base.process import Log
from builders.matrix.compile_cache import location_problem

MASKED = [
    ("s3://AKIAXXXX:abc/DEF+ghi@bucket/prefix/", "s3://***@bucket/prefix/"),
    ("https://__token__:pypi-AgEIcHlwaS5vcmc@upload.example/legacy/", "https://***@upload.example/legacy/"),
    ("http://ghp_abcdef123456@127.0.0.1:8080/simple/", "http://***@127.0.0.1:8080/simple/"),
    ("https://h/x?X-Amz-Signature=deadbeef&X-Amz-Date=20261201", "https://h/x?X-Amz-Signature=***&X-Amz-Date=20261201"),
    ("https://h/x?access_token=abc123&page=2", "https://h/x?access_token=***&page=2"),
    ("https://blob/x?sv=2020&sig=c2lnbmF0dXJl", "https://blob/x?sv=2020&sig=***"),
    ("Authorization: Bearer eyJhbGciOi", "Authorization: Bearer ***"),
    ("# env: SCCACHE_DIST_TOKEN=tok123456 HOME=/root", "# env: SCCACHE_DIST_TOKEN=*** HOME=/root"),
    ("TWINE_PASSWORD='p a s s'", "TWINE_PASSWORD=***"),
]
KEPT = [
    "http://127.0.0.1:8080/simple/minifw/ and someone@example.org",
    "https://download.example/whl/cpu/minifw-2.15.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl#sha256=ab12",
    "HOME=/root PATH=/usr/bin",
    "[3/9] cu132-cp312-linux-x86_64 build 41s",
]


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    redact.forget_all()
    yield
    redact.forget_all()


@pytest.mark.parametrize(("text", "masked"), MASKED)
def test_the_patterns_mask_credentials(text: str, masked: str) -> None:
    assert redact.redact(text) == masked


@pytest.mark.parametrize("text", KEPT)
def test_what_is_no_credential_is_kept(text: str) -> None:
    assert redact.redact(text) == text


def test_remembered_values_are_masked_in_every_spelling() -> None:
    redact.remember({"AWS_SECRET_ACCESS_KEY": "wJalr/XUtnFEMI+K7MDENG", "HOME": "/root", "SHORT_TOKEN": "abc"},
                    urls=["--bucket", "s3://AKIAEXAMPLE1:s3cr3t/value@b/"])
    text = "refused wJalr/XUtnFEMI+K7MDENG, wJalr%2FXUtnFEMI%2BK7MDENG, bucket AKIAEXAMPLE1:s3cr3t/value@b in /root"
    assert redact.redact(text) == "refused ***, ***, bucket ***@b in /root"
    assert redact.redact("abc") == "abc"  # too short to mask everywhere: no real credential is


def test_scrub_masks_every_string_of_a_record() -> None:
    record = {"index_url": "http://u:pw123456@h/simple/", "targets": [{"reason": "GET https://h/?token=t0k3n failed"}],
              "passed": 1}
    assert redact.scrub(record) == {"index_url": "http://***@h/simple/",
                                    "targets": [{"reason": "GET https://h/?token=*** failed"}], "passed": 1}


def test_console_log_tail_and_summary_pass_the_rule(tmp_path: Path) -> None:
    secret_url = "http://user:hunter2hunter2@127.0.0.1:9/simple/"
    stream, out = io.StringIO(), io.StringIO()
    summary = tmp_path / "summary.md"
    console = Console(stream, env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)}, stdout=out)
    console.line(secret_url)
    console.error(secret_url)
    console.out(secret_url)
    console.job_summary(f"| {secret_url} |")
    log = Log(tmp_path / "t.log")
    log.write(f"$ twine upload --repository-url {secret_url}\n")
    error = ProcessError(["twine", "--repository-url", secret_url], 1, f"HTTPError: 403 for {secret_url}")
    texts = [stream.getvalue(), out.getvalue(), summary.read_text(), log.path.read_text(), str(error), error.tail]
    assert all("hunter2" not in t and "***@127.0.0.1" in t for t in texts), texts


def test_the_compile_cache_refusal_is_the_rule() -> None:
    for location in ("s3://KEYID:S3CR3TVALUE@bucket/x", "http://127.0.0.1:8080/cache?token=t0k3nvalue",
                     "redis://:pw@host:6379"):
        problem = location_problem(location)
        assert problem and "user, password or token" in problem
        assert not [s for s in ("KEYID", "S3CR3T", "t0k3n", ":pw@") if s in problem]
    assert location_problem("s3://bucket/x") is None


def test_no_credential_variable_reaches_a_candidate() -> None:
    names = {*redact.CREDENTIAL_VARIABLES, "MY_SERVICE_API_KEY", "UV_PUBLISH_TOKEN", "GITHUB_TOKEN",
             "ACTIONS_RUNTIME_TOKEN", "BUILDERS_COMPILER_CACHE", "PYTHONPATH", "LD_PRELOAD"}
    env = dict.fromkeys(names, "x") | {"PATH": "/usr/bin", "PIP_INDEX_URL": "http://127.0.0.1/simple/",
                                           "LC_ALL": "C.UTF-8", "HTTPS_PROXY": "http://proxy:3128"}
    assert sandbox.candidate_env(env) == {"PATH": "/usr/bin", "PIP_INDEX_URL": "http://127.0.0.1/simple/",
                                          "LC_ALL": "C.UTF-8", "HTTPS_PROXY": "http://proxy:3128"}
