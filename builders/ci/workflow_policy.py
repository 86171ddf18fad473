"""The release policy as data (``.github/workflow-policy.yml``), applied to every workflow file.

The policy names, per workflow file, its allowed triggers and dispatch inputs and the kind of each job;
per kind, what it may do (upload to PyPI, write a channel, make a GitHub Release, assume the bucket's
role, mint an OIDC token), the channels it may write, whether it is a gate (no status function, no
``||``, no constant or block-scalar ``if``, no ``continue-on-error``), whether it publishes (no
``cancel-in-progress``, a concurrency group per ref, version or date), its environments, the commands
and actions it must run unconditionally, the artifacts it may download, whether it builds released
bytes (no cache restored on a tag run), and where its outputs come from. A job the policy does not
name, in any file, may do none of the dangerous things. Every file also keeps the rules no policy
relaxes: no attacker-controlled context in ``run:``, ``persist-credentials: false`` on each checkout,
no ``secrets: inherit``, no ``pull_request_target``, no checkout of a pull request's head where
secrets are, and ``retention-days`` on every upload.
"""

from __future__ import annotations

import fnmatch
import functools
import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from builders.base.errors import Problem, WorkflowDrift
from builders.ci import expressions as ex
from builders.ci.workflow_commands import builders_command, channel_of, commands, has_command, program
from builders.ci.workflow_jobs import (
    CHECKOUT_ACTION,
    DOWNLOAD_ACTION,
    PYPI_ACTIONS,
    UPLOAD_ACTION,
    Workflow,
    action,
    given,
)
from builders.ci.workflow_lifecycle import triggers
from builders.ci.workflow_rules import environment, outcomes, where

POLICY = Path(".github/workflow-policy.yml")
CAPABILITIES = ("pypi", "channel", "github-release", "release-role", "id-token")
CHANNEL_COMMANDS = frozenset({"publish", "promote-release", "yank", "rollback", "repair-index", "deploy-index",
                              "check-index"})
CHANNEL_SCRIPTS = (("ci/deploy-index.sh",), ("ci/promote.sh", "index"))
PYPI_PROGRAMS = (("twine",), ("uv", "publish"), ("flit", "publish"), ("poetry", "publish"), ("hatch", "publish"))
RELEASE_SCRIPTS = (("ci/github-release.sh",), ("gh", "release"))
ROLE_ACTIONS = ("aws-actions/configure-aws-credentials",)
ROLE_SCRIPTS = (("ci/bucket-credentials.sh",),)
ROLE_SECRETS = re.compile(r"secrets\.AWS_")
PER_RUN = ("github.ref", "inputs.version", "needs.plan.outputs.nightly_date", "github.run_id")
CACHE_ACTIONS = ("actions/cache", "actions/cache/restore")
SETUP_CACHE_INPUTS = ("cache", "enable-cache")
PR_HEAD = re.compile(r"github\.(head_ref|event\.pull_request\.head)")
EXPRESSION = re.compile(r"\$\{\{(.*?)\}\}", re.S)
REFERENCE = re.compile(r"[A-Za-z_][\w-]*(?:\.[\w*-]+|\[[^\]]*\])*")
OUTPUT = re.compile(r"^\$\{\{\s*steps\.([\w-]+)\.outputs\.([\w-]+)\s*\}\}$")


@dataclass(frozen=True, kw_only=True)
class Kind:
    """What one kind of job may and must do."""

    name: str
    may: frozenset[str] = frozenset()
    channels: tuple[str, ...] = ()
    gate: bool = False
    strict_if: bool = False
    publishes: bool = False
    environment: tuple[str, ...] | None = None  # None: not constrained
    steps: tuple[tuple[str, ...] | str, ...] = ()  # words of a command, or "uses:ACTION"
    downloads: tuple[str, ...] | None = None
    release_bytes: bool = False
    outputs_from: str | None = None
    step_continue_on_error: tuple[str, ...] = ()
    always_uploads: tuple[str, ...] = ()  # globs of the artifacts uploaded whatever happened (records)
    channel_facts: Mapping[str, str] | None = None  # plan's option -> the github context its env variable must hold


@dataclass(frozen=True, kw_only=True)
class FilePolicy:
    triggers: frozenset[str]
    dispatch_inputs: frozenset[str]
    jobs: Mapping[str, str]


@dataclass(frozen=True, kw_only=True)
class Policy:
    retention_days: int
    untrusted: tuple[str, ...]
    files: Mapping[str, FilePolicy]
    kinds: Mapping[str, Kind]

    def kind(self, wf: Workflow, job: str) -> Kind | None:
        named = self.files.get(wf.name)
        return self.kinds.get(named.jobs.get(job, "")) if named else None


def _refused(path: Path, message: str) -> WorkflowDrift:
    return WorkflowDrift([Problem(message=f"{path}: {message}; fix the policy file")])


def load(path: Path) -> Policy:
    """The policy at ``path``; a missing or malformed file is drift (no policy would let everything through)."""
    if not path.is_file():
        raise _refused(path, "the release policy is missing")
    data = yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    if not isinstance(data, dict) or not isinstance(data.get("kinds"), dict) or not isinstance(data.get("workflows"), dict):
        raise _refused(path, "not a mapping with `kinds` and `workflows`")
    kinds = {str(n): _kind(path, str(n), k) for n, k in data["kinds"].items()}
    files = {str(n): _file(path, str(n), f, kinds) for n, f in data["workflows"].items()}
    days = data.get("retention_days")
    if not isinstance(days, int) or isinstance(days, bool) or days < 1:
        raise _refused(path, f"retention_days {days!r} is not a positive number of days")
    return Policy(retention_days=days, untrusted=tuple(map(str, data.get("untrusted_contexts") or ())),
                  files=files, kinds=kinds)


KIND_KEYS = frozenset({"may", "channels", "gate", "strict_if", "publishes", "environment", "steps", "downloads",
                       "release_bytes", "outputs_from", "step_continue_on_error", "always_uploads", "channel_facts"})


def _kind(path: Path, name: str, raw: Any) -> Kind:
    raw = raw if isinstance(raw, dict) else {}
    unknown = (set(raw) - KIND_KEYS) | (set(raw.get("may", ())) - set(CAPABILITIES))
    if unknown:
        raise _refused(path, f"kind {name!r}: unknown {sorted(map(str, unknown))}")
    env, downloads = raw.get("environment"), raw.get("downloads")

    def strings(key: str) -> tuple[str, ...]:
        return tuple(map(str, raw.get(key, ())))

    return Kind(name=name, may=frozenset(strings("may")), channels=strings("channels"), gate=bool(raw.get("gate")),
                strict_if=bool(raw.get("strict_if") or raw.get("publishes")), publishes=bool(raw.get("publishes")),
                environment=None if env is None else strings("environment"),
                steps=tuple(_requirement(path, name, s) for s in raw.get("steps", ())),
                downloads=None if downloads is None else strings("downloads"),
                release_bytes=bool(raw.get("release_bytes")), outputs_from=raw.get("outputs_from"),
                step_continue_on_error=strings("step_continue_on_error"), always_uploads=strings("always_uploads"),
                channel_facts=_facts(path, name, raw.get("channel_facts")))


def _facts(path: Path, kind: str, raw: Any) -> Mapping[str, str] | None:
    """``channel_facts``: ``{--event: github.event_name, ...}``, each of plan's options and the context behind it."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or not raw:
        raise _refused(path, f"kind {kind!r}: channel_facts is not a mapping of plan's options to github contexts")
    return {str(k): str(v) for k, v in raw.items()}


def _requirement(path: Path, kind: str, raw: Any) -> tuple[str, ...] | str:
    """A required step: the words of a command (``[ci/promote.sh, preflight]``) or ``{uses: ACTION}``."""
    if isinstance(raw, list) and raw:
        return tuple(map(str, raw))
    if isinstance(raw, dict) and isinstance(raw.get("uses"), str):
        return f"uses:{raw['uses']}"
    raise _refused(path, f"kind {kind!r}: the step {raw!r} is neither a command's words nor {{uses: ACTION}}")


def _file(path: Path, name: str, raw: Any, kinds: Mapping[str, Kind]) -> FilePolicy:
    jobs = {str(j): str(k) for j, k in (raw.get("jobs") or {}).items()}
    unknown = sorted(set(jobs.values()) - kinds.keys())
    if unknown:
        raise _refused(path, f"workflow {name!r} names kinds {unknown} that `kinds` does not define")
    return FilePolicy(triggers=frozenset(map(str, raw.get("triggers", ()))),
                      dispatch_inputs=frozenset(map(str, raw.get("dispatch_inputs", ()))), jobs=jobs)


# -- what a job can do -----------------------------------------------------------------------

def job_steps(job: dict[str, Any], actions: Mapping[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The job's steps, a local composite action's own steps in place of the step that uses it."""
    found = job.get("steps", [])
    out: list[dict[str, Any]] = []
    for step in found if isinstance(found, list) else []:
        if not isinstance(step, dict):
            continue
        local = str(step.get("uses", "")).removeprefix("./").rstrip("/")
        out += actions.get(local, [step])
    return out


def _commands(step: dict[str, Any]) -> list[list[str]]:
    return [program(c) for c in commands(str(step.get("run", "")))]


def _starts(words: list[str], prefixes: tuple[tuple[str, ...], ...]) -> bool:
    return any(tuple(words[:len(p)]) == p for p in prefixes)


def capabilities(wf: Workflow, job: dict[str, Any], actions: Mapping[str, list[dict[str, Any]]]) -> dict[str, str]:
    """``{capability: what shows it}`` for the dangerous things the job can do."""
    found: dict[str, str] = {}
    for step in job_steps(job, actions):
        used = action(step)
        if used in PYPI_ACTIONS:
            found.setdefault("pypi", used)
        if used in ROLE_ACTIONS:
            found.setdefault("release-role", used)
        for words in _commands(step):
            text = " ".join(words[:3])
            if _starts(words, PYPI_PROGRAMS):
                found.setdefault("pypi", text)
            if builders_command(words) in CHANNEL_COMMANDS or _starts(words, CHANNEL_SCRIPTS):
                found.setdefault("channel", text)
            if _starts(words, RELEASE_SCRIPTS):
                found.setdefault("github-release", text)
            if _starts(words, ROLE_SCRIPTS):
                found.setdefault("release-role", text)
    if ROLE_SECRETS.search(_text(job.get("env", {})) + _text(job_steps(job, actions))):
        found.setdefault("release-role", "secrets.AWS_*")
    if _id_token(wf, job):
        found.setdefault("id-token", "permissions id-token: write")
    return found


def _id_token(wf: Workflow, job: dict[str, Any]) -> bool:
    granted = job.get("permissions", wf.top.get("permissions"))
    if isinstance(granted, str):
        return granted == "write-all"
    return isinstance(granted, dict) and str(granted.get("id-token", "")) == "write"


# -- the rules -------------------------------------------------------------------------------

JobRule = Callable[[Policy, Workflow, str, dict[str, Any], "Kind | None", Mapping[str, list[dict[str, Any]]]],
                   Iterator[str]]


def policy_problems(policy: Policy, workflows: list[Workflow],
                    actions: Mapping[str, list[dict[str, Any]]] | None = None) -> list[str]:
    """Every way the workflows break the policy (empty: they keep it)."""
    actions = actions or {}
    problems = [p for wf in workflows for p in _file_problems(policy, wf)]
    for wf in workflows:
        for name, job in wf.jobs.items():
            kind = policy.kind(wf, name)
            for rule in JOB_RULES:
                problems += rule(policy, wf, name, job, kind, actions)
    return problems


def _file_problems(policy: Policy, wf: Workflow) -> Iterator[str]:
    on = triggers(wf)
    named = policy.files.get(wf.name)
    allowed = named.triggers if named else frozenset({"workflow_dispatch", "push", "pull_request", "schedule"})
    for trigger in sorted(set(on) - allowed):
        yield (f"{wf.name}: job '(workflow)', key 'on': the trigger {trigger!r} is not one the policy allows "
               f"here ({', '.join(sorted(allowed))})")
    if "pull_request_target" in on:
        yield (f"{wf.name}: job '(workflow)', key 'on': pull_request_target runs a fork's pull request with this "
               "repository's secrets and write token; use pull_request")
    dispatch = on.get("workflow_dispatch")
    inputs = dispatch.get("inputs") if isinstance(dispatch, dict) else None
    extra = sorted(set(inputs or {}) - (named.dispatch_inputs if named else frozenset()))
    if extra:
        yield (f"{wf.name}: job '(workflow)', key 'on': the dispatch inputs {extra} are not the policy's: an input "
               "could make a dispatch a nightly or a release; add it to the policy with the mutation that proves it")
    if wf.top.get("concurrency") is not None and _publishes_anywhere(policy, wf):
        yield from _concurrency(wf, "(workflow)", wf.top["concurrency"])


def _publishes_anywhere(policy: Policy, wf: Workflow) -> bool:
    return any((kind := policy.kind(wf, name)) is not None and kind.publishes for name in wf.jobs)


def _may(policy: Policy, wf: Workflow, name: str, job: dict[str, Any], kind: Kind | None,
         actions: Mapping[str, list[dict[str, Any]]]) -> Iterator[str]:
    allowed = kind.may if kind else frozenset()
    for capability, shown in sorted(capabilities(wf, job, actions).items()):
        if capability not in allowed:
            key = "permissions" if capability == "id-token" else "steps"
            what = f"a job of kind {kind.name!r}" if kind else f"a job {POLICY} does not name"
            yield (f"{where(wf, name, key)} {what} may not {capability} ({shown}); only the jobs the policy names "
                   "may upload to PyPI, write a channel, make a release, assume the release role or mint a token")


def _channels(policy: Policy, wf: Workflow, name: str, job: dict[str, Any], kind: Kind | None,
              actions: Mapping[str, list[dict[str, Any]]]) -> Iterator[str]:
    if kind is None or "channel" not in kind.may:
        return
    for step in job_steps(job, actions):
        for words in commands(str(step.get("run", ""))):
            channel = channel_of(words) if builders_command(words) == "publish" else None
            if channel is not None and kind.channels and channel not in kind.channels:
                yield (f"{where(wf, name, 'steps')} publishes the {channel!r} channel; a {kind.name} job writes only "
                       f"{', '.join(kind.channels)} (the release channel is only ever promoted)")


def _gate(policy: Policy, wf: Workflow, name: str, job: dict[str, Any], kind: Kind | None,
          actions: Mapping[str, list[dict[str, Any]]]) -> Iterator[str]:
    condition = job.get("if")
    block = condition is not None and ("\n" in str(condition) or name in block_scalar_ifs(wf))
    if block:
        yield (f"{where(wf, name, 'if')} a block scalar (`if: |`) is a string GitHub reads as always true; write "
               "the condition on one line")
    if kind is None or not kind.gate:
        return
    if condition is not None and not block:
        yield from _gate_if(wf, name, condition, strict=kind.strict_if)
    if job.get("continue-on-error") not in (None, False):
        yield f"{where(wf, name, 'continue-on-error')} a gate job's failure must stop the release"
    for step in job_steps(job, actions):
        quiet = step.get("continue-on-error")
        if quiet not in (None, False) and str(quiet) not in kind.step_continue_on_error:
            yield (f"{where(wf, name, 'continue-on-error')} the step {_label(step)} may fail quietly in a gate job "
                   "(its failure must stop the release)")


def _text(value: Any) -> str:
    """Every string of a parsed job in one text, to search (JSON: a YAML dump took most of a check's time)."""
    return json.dumps(value, default=str, ensure_ascii=False)


def block_scalar_ifs(wf: Workflow) -> frozenset[str]:
    """The jobs whose ``if`` is written as a block scalar (``|``, ``|-``, ``>``): the parsed value cannot tell."""
    return _block_scalar_ifs(wf.text)


@functools.lru_cache(maxsize=64)
def _block_scalar_ifs(text: str) -> frozenset[str]:
    """Once per file's text (every job's gate asks), composed by libyaml where PyYAML has it."""
    try:
        root = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        return frozenset()
    jobs = next((v for k, v in getattr(root, "value", []) if getattr(k, "value", None) == "jobs"), None)
    found = set()
    for name, job in getattr(jobs, "value", []) if isinstance(jobs, yaml.MappingNode) else []:
        for key, value in job.value if isinstance(job, yaml.MappingNode) else []:
            if key.value == "if" and isinstance(value, yaml.ScalarNode) and value.style in ("|", ">"):
                found.add(str(name.value))
    return frozenset(found)


def _gate_if(wf: Workflow, name: str, condition: Any, *, strict: bool) -> Iterator[str]:
    try:
        node = ex.parse(condition)
    except WorkflowDrift as exc:
        yield f"{where(wf, name, 'if')} {exc.problems[0].message}"
        return
    if not ex.references(node) and not ex.calls(node):
        yield f"{where(wf, name, 'if')} the constant {condition!r}: a gate that never or always holds"
    if not strict:
        return
    if ex.calls(node) & ex.STATUS_FUNCTIONS:
        yield (f"{where(wf, name, 'if')} a status function ({', '.join(sorted(ex.calls(node) & ex.STATUS_FUNCTIONS))}) "
               "runs a gate job when a job it needs failed or was cancelled")
    if _has_or(node):
        yield f"{where(wf, name, 'if')} an || lets a gate job run on a run the policy does not mean"


def _has_or(node: ex.Node) -> bool:
    return node.kind == "or" or any(_has_or(a) for a in node.args)


def _label(step: dict[str, Any]) -> str:
    return repr(step.get("name") or step.get("uses") or str(step.get("run", "")).split("\n")[0][:60])


def _publishing(policy: Policy, wf: Workflow, name: str, job: dict[str, Any], kind: Kind | None,
                actions: Mapping[str, list[dict[str, Any]]]) -> Iterator[str]:
    if kind is not None and kind.publishes:
        if job.get("concurrency") is None:
            yield f"{where(wf, name, 'concurrency')} none: two runs would publish at once"
        else:
            yield from _concurrency(wf, name, job["concurrency"])
    found = environment(job)
    if kind is not None and kind.environment is not None and found not in (kind.environment or (None,)):
        yield (f"{where(wf, name, 'environment')} {found!r}: a {kind.name} job runs in "
               f"{', '.join(kind.environment) or 'no environment'}")


def _concurrency(wf: Workflow, name: str, concurrency: Any) -> Iterator[str]:
    group = concurrency.get("group", "") if isinstance(concurrency, dict) else concurrency
    cancel = concurrency.get("cancel-in-progress", False) if isinstance(concurrency, dict) else False
    if cancel is not False:
        yield (f"{where(wf, name, 'concurrency')} cancel-in-progress {cancel!r} where a run publishes or promotes: "
               "a later run would cancel one half-way through a publication")
    references = {r for body in EXPRESSION.findall(str(group)) for r in REFERENCE.findall(body)}
    if not references & set(PER_RUN):
        yield (f"{where(wf, name, 'concurrency')} group {group!r} is shared by every tag, version or day: GitHub "
               "keeps one pending run per group and cancels the older pending one; name the run's "
               f"{' or '.join(PER_RUN[:3])} in the group")


def _steps(policy: Policy, wf: Workflow, name: str, job: dict[str, Any], kind: Kind | None,
           actions: Mapping[str, list[dict[str, Any]]]) -> Iterator[str]:
    if kind is None:
        return
    unconditional = [s for s in job_steps(job, actions) if "if" not in s]
    for needed in kind.steps:
        if isinstance(needed, str):
            found = any(action(s) == needed.removeprefix("uses:") for s in unconditional)
        else:
            found = any(has_command(str(s.get("run", "")), needed) for s in unconditional)
        if not found:
            shown = needed.removeprefix("uses:") if isinstance(needed, str) else " ".join(needed)
            yield (f"{where(wf, name, 'steps')} no unconditional step runs `{shown}`, which every {kind.name} job "
                   "must (without it the gate it is for is gone)")


def _downloads(policy: Policy, wf: Workflow, name: str, job: dict[str, Any], kind: Kind | None,
               actions: Mapping[str, list[dict[str, Any]]]) -> Iterator[str]:
    for step in job_steps(job, actions):
        if action(step) != DOWNLOAD_ACTION:
            continue
        wanted = str(given(step).get("name") or given(step).get("pattern") or "")
        allowed = kind.downloads if kind and kind.downloads is not None else None
        if not wanted:
            yield (f"{where(wf, name, 'steps')} a download with no name or pattern takes every artifact of the run "
                   "(tens of GB at framework scale)")
        elif allowed is not None and not any(fnmatch.fnmatchcase(wanted, g) for g in allowed):
            yield (f"{where(wf, name, 'steps')} downloads {wanted!r}; a {kind.name if kind else ''} job may take "
                   f"only {', '.join(allowed) or 'no artifact'} as its input")


def _uploads(policy: Policy, wf: Workflow, name: str, job: dict[str, Any], kind: Kind | None,
             actions: Mapping[str, list[dict[str, Any]]]) -> Iterator[str]:
    for step in job_steps(job, actions):
        days, named = given(step).get("retention-days"), str(given(step).get("name", ""))
        if action(step) != UPLOAD_ACTION:
            continue
        if kind and any(fnmatch.fnmatchcase(named, g) for g in kind.always_uploads) and "always()" not in str(
                step.get("if", "")):
            yield (f"{where(wf, name, 'if')} the record {named!r} is uploaded only when the job succeeds; a failed or "
                   "timed-out job loses the verdicts it reached: upload it if: always()")
        if days != policy.retention_days:
            yield (f"{where(wf, name, 'retention-days')} the upload {given(step).get('name')!r} keeps its artifact "
                   f"{days if days is not None else 'the repository default (90)'} days, not the policy's "
                   f"{policy.retention_days} (the promotion window)")


def _credentials(policy: Policy, wf: Workflow, name: str, job: dict[str, Any], kind: Kind | None,
                 actions: Mapping[str, list[dict[str, Any]]]) -> Iterator[str]:
    if str(job.get("secrets", "")) == "inherit":
        yield (f"{where(wf, name, 'secrets')} `secrets: inherit` hands the called workflow every secret; pass the "
               "ones it needs by name")
    secretive = "secrets." in _text(job) or _id_token(wf, job)
    for step in job_steps(job, actions):
        if action(step) != CHECKOUT_ACTION:
            continue
        if str(given(step).get("persist-credentials", "")).lower() != "false":
            yield (f"{where(wf, name, 'persist-credentials')} a checkout leaves the job's token in .git/config for "
                   "every later step; set persist-credentials: false")
        if secretive and PR_HEAD.search(str(given(step).get("ref", "")) + str(given(step).get("repository", ""))):
            yield (f"{where(wf, name, 'ref')} checks out a pull request's head in a job with secrets or an OIDC "
                   "token: its code would run with them")


def _injection(policy: Policy, wf: Workflow, name: str, job: dict[str, Any], kind: Kind | None,
               actions: Mapping[str, list[dict[str, Any]]]) -> Iterator[str]:
    for step in job_steps(job, actions):
        for body in EXPRESSION.findall(str(step.get("run", ""))):
            bad = sorted({r for r in REFERENCE.findall(body) if _untrusted(policy, r)})
            if bad:
                yield (f"{where(wf, name, 'run')} `${{{{ {bad[0]} }}}}` is expanded into the shell script, where its "
                       "author's text runs as code; pass it through env: and quote the variable")


def _untrusted(policy: Policy, reference: str) -> bool:
    normal = re.sub(r"\[['\"]?([\w-]+)['\"]?\]", r".\1", reference)
    return any(fnmatch.fnmatchcase(normal, g) or normal == g.rstrip(".*") for g in policy.untrusted)


def _caches(policy: Policy, wf: Workflow, name: str, job: dict[str, Any], kind: Kind | None,
            actions: Mapping[str, list[dict[str, Any]]]) -> Iterator[str]:
    if kind is None or not kind.release_bytes:
        return
    for step in job_steps(job, actions):
        used = action(step)
        setup = used.split("/")[-1].startswith("setup-") and any(
            str(given(step).get(k, "")).lower() not in ("", "false") for k in SETUP_CACHE_INPUTS)
        if (used in CACHE_ACTIONS or setup) and _runs_on_a_tag(step):
            yield (f"{where(wf, name, 'steps')} {used} restores a cache on a tag run, into bytes that are "
                   "released (a cache any branch can write is a poisoning path); add `if: github.ref_type != 'tag'`")


def _runs_on_a_tag(step: dict[str, Any]) -> bool:
    try:
        return True in outcomes(ex.parse(step.get("if", True)), {"github.ref_type": "tag"}, {})
    except WorkflowDrift:
        return True


def _outputs(policy: Policy, wf: Workflow, name: str, job: dict[str, Any], kind: Kind | None,
             actions: Mapping[str, list[dict[str, Any]]]) -> Iterator[str]:
    outputs = job.get("outputs")
    if kind is None or kind.outputs_from is None or not isinstance(outputs, dict):
        return
    for key, value in outputs.items():
        found = OUTPUT.match(str(value))
        if found is None or found.groups() != (kind.outputs_from, str(key)):
            yield (f"{where(wf, name, 'outputs')} {key}: {value!r} is not "
                   f"${{{{ steps.{kind.outputs_from}.outputs.{key} }}}}: every later gate reads it")


# -- the channel is plan's decision ------------------------------------------------------------

CHANNEL_OPTIONS = ("--channel", "--release-tag")
SHELL_LOGIC = re.compile(r"(?:^|[\s;(])(?:if|elif|case|while|until)\s|\[\[?\s|(?:^|[\s;])test\s|&&|\|\|")
FROM_ENV = re.compile(r"^\$\{?([A-Za-z_]\w*)\}?$")


def _channel_facts(policy: Policy, wf: Workflow, name: str, job: dict[str, Any], kind: Kind | None,
                   actions: Mapping[str, list[dict[str, Any]]]) -> Iterator[str]:
    """A plan job hands plan the run's facts, each from ``env:`` holding exactly its context, and decides nothing
    about channels in shell: no ``--channel``/``--release-tag`` of its own, no conditional (builders.ci.run_channel)."""
    if kind is None or kind.channel_facts is None:
        return
    planned = False
    for step in job_steps(job, actions):
        run = str(step.get("run", ""))
        if SHELL_LOGIC.search(run):
            yield (f"{where(wf, name, 'run')} shell logic in a {kind.name} step: the channel is plan's decision from "
                   "the run's facts (--event, --ref, --default-branch), never the workflow's")
        for words in commands(run):
            if any(w in CHANNEL_OPTIONS or w.startswith(tuple(f"{o}=" for o in CHANNEL_OPTIONS)) for w in words):
                yield (f"{where(wf, name, 'run')} `{' '.join(words[:4])} ...` names a channel or a release tag itself: "
                       "plan decides it from --event and the ref's facts")
            if _is_plan(words):
                planned = True
                yield from _facts_given(wf, name, kind.channel_facts, words, {**(job.get("env") or {}),
                                                                                **(step.get("env") or {})})
    if not planned:
        yield f"{where(wf, name, 'steps')} no step runs plan with the run's facts ({', '.join(kind.channel_facts)})"


def _is_plan(words: list[str]) -> bool:
    rest = program(words)
    return rest[:3] == ["nox", "-s", "plan"] or builders_command(words) == "plan"


def _facts_given(wf: Workflow, name: str, facts: Mapping[str, str], words: list[str],
                 env: Mapping[str, Any]) -> Iterator[str]:
    """Each fact passed as ``"$VAR"``, where ``VAR`` is ``${{ <its context> }}`` in the step's (or job's) env."""
    for option, context in facts.items():
        value = next((words[i + 1] for i, w in enumerate(words[:-1]) if w == option), None)
        found = FROM_ENV.match(value or "")
        if found is None:
            yield f"{where(wf, name, 'run')} plan is not given {option} \"$VAR\" (the run's {context}, through env:)"
            continue
        held = re.sub(r"\s+", "", str(env.get(found.group(1), "")))
        if held != f"${{{{{context}}}}}":
            yield (f"{where(wf, name, 'env')} {found.group(1)} (plan's {option}) must be ${{{{ {context} }}}}, "
                   f"not {env.get(found.group(1))!r}: any other value lets the workflow pick the channel")


JOB_RULES: tuple[JobRule, ...] = (_may, _channels, _gate, _publishing, _steps, _downloads, _uploads, _credentials,
                                  _injection, _caches, _outputs, _channel_facts)


def composite_actions(root: Path) -> dict[str, list[dict[str, Any]]]:
    """``{".github/actions/NAME": steps}`` of the repository's local composite actions."""
    found: dict[str, list[dict[str, Any]]] = {}
    for path in sorted((root / ".github" / "actions").glob("*/action.y*ml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        runs = data.get("runs") if isinstance(data, dict) else None
        steps = runs.get("steps") if isinstance(runs, dict) else None
        found[path.parent.relative_to(root).as_posix()] = [s for s in steps or [] if isinstance(s, dict)]
    return found
