"""The structural half of ``workflow --check``: per job, who may run when, with which rights.

Read per job from the parsed workflow, never as substrings of its text:

- ``if``: a job that publishes (or runs after one) has no status function (``always()``,
  ``!cancelled()``, ``failure()``), so GitHub's implicit ``success()`` holds (every job it needs
  succeeded), and has the release gate ``needs.plan.outputs.release == 'true'`` as one of its
  ``&&`` terms; a job a publishing job needs may use ``!cancelled()`` only with a
  ``needs.X.result == 'success'`` term for each job X it needs; no such condition is an ``||``;
- ``needs``: a publishing job comes after the plan, every images job and every build; a job
  that uploads to PyPI comes after every job that publishes the release index (the Pages
  deploy, ``promote-release``), or after that step in its own job: PyPI last, since a file
  name is PyPI's for good and everything the index publication can refuse must happen first;
- ``permissions``: exactly what the job's steps need (derived from them, below), nothing at
  workflow level beyond ``contents: read``; so ``id-token: write`` only where a step signs
  (actions/attest) or publishes to PyPI;
- ``environment``: the PyPI upload runs in the ``pypi`` environment (its trusted publisher is
  registered for that environment, which only release tags may deploy to);
- ``concurrency``: the release policy's (:mod:`builders.ci.workflow_policy`), for every file;
- ``uses``: every action is pinned by a 40-hex commit (a tag can be moved);
- ``timeout-minutes``: a positive whole number on every job that runs steps;
- images fail closed: a job that runs the build shards needs every images job, and its ``if``, evaluated as
  GitHub would (:func:`outcomes`), is false on a release or a candidate whose images jobs did not all succeed
  (the shards would build unattested images of their own, and promotion releases a candidate's bytes) and
  true when they did, or when the plan needs no image (``image_count == '0'``, the images jobs skipped);
- the bucket's role session lasts the job: a step that runs ``ci/bucket-credentials.sh`` passes
  ``BUCKET_SESSION_SECONDS`` whose default is the job's ``timeout-minutes`` in seconds.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from builders.base.errors import Problem, WorkflowDrift
from builders.channels import credentials
from builders.ci import expressions as ex
from builders.ci.workflow_jobs import (
    ATTEST_ACTIONS,
    CHECKOUT_ACTION,
    DOWNLOAD_ACTION,
    PYPI_ACTIONS,
    Workflow,
    action,
    first,
    given,
    local_calls,
    needs,
    publishes,
    publishes_release_index,
    steps,
    uploads_to_pypi,
    upstream,
)

GATE = ("needs.plan.outputs.release", "true")
CANDIDATE = "needs.plan.outputs.candidate"
IMAGE_COUNT = "needs.plan.outputs.image_count"
# The runs whose wheels may be released, so whose builds use only images their images jobs pushed and attested.
ATTESTED_RUNS = {"release": GATE[0], "candidate": CANDIDATE}
IMAGES_NOT_SUCCEEDED = ("failure", "cancelled", "skipped")
MOST_ASSIGNMENTS = 4096  # of the free references of one condition (each '' or one of its literals)
CREDENTIALS_SCRIPT = "ci/bucket-credentials.sh"
SESSION_VARIABLE = "BUCKET_SESSION_SECONDS"
# How an ``if`` is evaluated on such a run (not cancelled): its bare literals, and the status functions over the
# results of the jobs it needs.
LITERALS: dict[str, str | bool] = {"true": True, "false": False, "null": ""}
STATUS: dict[str, Callable[[tuple[str, ...]], bool]] = {
    "always": lambda _: True, "cancelled": lambda _: False,
    "success": lambda found: all(r == "success" for r in found),
    "failure": lambda found: any(r == "failure" for r in found)}
PYPI_ENVIRONMENT = "pypi"
WORKFLOW_PERMISSIONS: tuple[dict[str, str], ...] = ({}, {"contents": "read"})
PINNED = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_./-]+@[0-9a-f]{40}")
BYPASSES = frozenset({"always", "cancelled", "failure"})
LEVELS = {"none": 0, "read": 1, "write": 2}
# What a step needs, by what it runs: (scope, level, why).
RUN_NEEDS = (("ci/images.sh push", "packages", "write", "pushes images"),
             ("ci/images.sh pull", "packages", "read", "pulls images"),
             ("ci/deploy-index.sh", "contents", "write", "pushes the index branch"),
             ("ci/github-release.sh", "contents", "write", "creates the GitHub Release"),
             ("ci/bucket-credentials.sh", "id-token", "write", "mints an OIDC token for the bucket"),
             ("ci/compile-cache.sh", "id-token", "write", "mints an OIDC token for the compile cache's role"))


def structural_problems(release: Workflow, called: list[Workflow]) -> list[str]:
    """Every structural problem of the release workflow and the workflows it calls."""
    by_name = {wf.name: wf for wf in called}
    problems = [*_gate_problems(release), *_needs_problems(release),
                *pypi_last_problems(release), *image_gate_problems(release)]
    for wf in (release, *called):
        problems += per_workflow_problems(wf, by_name)
    return problems


def per_workflow_problems(wf: Workflow, called: dict[str, Workflow]) -> list[str]:
    """The rules every workflow file keeps: permissions, environments, pins, timeouts."""
    return [*_workflow_permissions(wf), *_permission_problems(wf, called), *_environment_problems(wf),
            *_pin_problems(wf), *_timeout_values(wf), *_session_problems(wf)]


def where(wf: Workflow, job: str, key: str) -> str:
    return f"{wf.name}: job {job!r}, key {key!r}:"


# -- if ------------------------------------------------------------------------------------

def publishing_jobs(wf: Workflow) -> set[str]:
    """Jobs with a publishing step, and every job that runs after one."""
    direct = {name for name, job in wf.jobs.items() if any(publishes(s) for s in steps(job))}
    return direct | {name for name in wf.jobs if upstream(wf, name) & direct}


def _condition(wf: Workflow, name: str) -> tuple[ex.Node | None, str | None]:
    try:
        return ex.parse(wf.jobs[name].get("if", True)), None
    except WorkflowDrift as exc:
        return None, f"{where(wf, name, 'if')} {exc.problems[0].message}"


def _gate_problems(wf: Workflow) -> Iterator[str]:
    gated = publishing_jobs(wf)
    for name in sorted(gated):
        yield from _gated_if(wf, name)
    feeders = set().union(*(upstream(wf, job) for job in gated)) - gated
    for name in sorted(feeders & wf.jobs.keys()):
        yield from _feeder_if(wf, name)


def _gated_if(wf: Workflow, name: str) -> Iterator[str]:
    node, error = _condition(wf, name)
    if node is None:
        yield str(error)
        return
    bypass = sorted(ex.calls(node) & BYPASSES)
    if bypass:
        yield (f"{where(wf, name, 'if')} calls {', '.join(f'{b}()' for b in bypass)}: a publishing job runs only "
               "when every job it needs succeeded (GitHub's implicit success()); drop the status function")
    if node.kind == "or":
        yield f"{where(wf, name, 'if')} is an || of alternatives: any one of them would publish"
    if not any(ex.equals(term, *GATE) for term in ex.conjuncts(node)):
        yield (f"{where(wf, name, 'if')} the release gate `{GATE[0]} == '{GATE[1]}'` is not one of its && terms "
               "(a dispatch, a wrong tag or a partial selection could publish)")


def _feeder_if(wf: Workflow, name: str) -> Iterator[str]:
    node, error = _condition(wf, name)
    if node is None:
        yield str(error)
        return
    used = ex.calls(node)
    if used & {"always", "failure"} or node.kind == "or":
        yield (f"{where(wf, name, 'if')} lets the job run over a failed job it needs (always(), failure() or ||), "
               "and a publishing job needs it")
        return
    if "cancelled" not in used:
        return
    terms = ex.conjuncts(node)
    for need in needs(wf.jobs[name]):
        if not any(_requires_success(term, need) for term in terms):
            yield (f"{where(wf, name, 'if')} !cancelled() without `needs.{need}.result == 'success'`: it would run, "
                   f"and a publishing job after it, when {need!r} failed")


def _requires_success(node: ex.Node, need: str) -> bool:
    """``needs.NEED.result == 'success'``, alone or as one side of a parenthesised alternative."""
    if ex.equals(node, f"needs.{need}.result", "success"):
        return True
    return node.kind == "or" and any(_requires_success(a, need) for a in node.args)


# -- needs and concurrency -----------------------------------------------------------------

def image_jobs(wf: Workflow) -> set[str]:
    """The jobs that push the images the builds pull (``ci/images.sh push``)."""
    return {name for name, job in wf.jobs.items() if any("ci/images.sh push" in str(s.get("run", ""))
                                                        for s in steps(job))}


def producers(wf: Workflow) -> set[str]:
    """The plan, every images job and every job that runs a build shard: what a release is made of."""
    return {"plan", *image_jobs(wf), *local_calls(wf)} & wf.jobs.keys()


def _needs_problems(wf: Workflow) -> Iterator[str]:
    for name in sorted(publishing_jobs(wf)):
        missing = sorted(producers(wf) - upstream(wf, name))
        if missing:
            yield (f"{where(wf, name, 'needs')} does not come after {', '.join(map(repr, missing))} (directly or "
                   "through the jobs it needs): it could publish before, or without, what they make")


def pypi_last_problems(wf: Workflow) -> Iterator[str]:
    """Every PyPI upload comes after the release index is published: in a job it needs, or earlier in its own."""
    indexes = {name for name, job in wf.jobs.items() if first(job, publishes_release_index) is not None}
    for name, job in sorted(wf.jobs.items()):
        upload = first(job, uploads_to_pypi)
        if upload is None:
            continue
        own = first(job, publishes_release_index)
        if not indexes:
            yield (f"{where(wf, name, 'needs')} uploads to PyPI, and no job publishes the release index "
                   "(ci/deploy-index.sh or promote-release) before it")
        elif own is not None and own > upload:
            yield f"{where(wf, name, 'steps')} uploads to PyPI before its own step that publishes the release index"
        for index in sorted(indexes - upstream(wf, name) - {name}):
            yield (f"{where(wf, name, 'needs')} uploads to PyPI without coming after {index!r}, which publishes the "
                   "release index: PyPI never takes a file name twice, so it goes last, once the index is published")


# -- permissions and environment -----------------------------------------------------------

def _normal(permissions: Any) -> dict[str, str] | str:
    if isinstance(permissions, dict):
        return {str(k): str(v) for k, v in permissions.items() if str(v) != "none"}
    return str(permissions)


def _workflow_permissions(wf: Workflow) -> Iterator[str]:
    granted = _normal(wf.top.get("permissions", "(unset: the repository default)"))
    if granted not in WORKFLOW_PERMISSIONS:
        yield (f"{wf.name}: key 'permissions' (workflow level) grants {granted}: nothing beyond contents: read "
               "belongs there; each job asks for what it needs")


def required(job: dict[str, Any], called: dict[str, Workflow]) -> dict[str, tuple[str, str]]:
    """``{scope: (level, why)}``: the least the job's steps (or the workflow it calls) need."""
    need: dict[str, tuple[str, str]] = {}

    def add(scope: str, level: str, why: str) -> None:
        if LEVELS[level] > LEVELS[need.get(scope, ("none", ""))[0]]:
            need[scope] = (level, why)

    for step in steps(job):
        _step_needs(step, add)
    uses = job.get("uses")
    if isinstance(uses, str) and uses.startswith("./") and (wf := called.get(uses.rsplit("/", 1)[-1])):
        for name, inner in wf.jobs.items():
            for scope, level in _granted(wf, inner).items():
                add(scope, level, f"calls {wf.name}, whose job {name!r} has it")
    return need


def _step_needs(step: dict[str, Any], add: Any) -> None:
    used, run = action(step), str(step.get("run", ""))
    if used == CHECKOUT_ACTION:
        add("contents", "read", "checks out the repository")
    if used in ATTEST_ACTIONS:
        add("id-token", "write", "signs an attestation (actions/attest)")
        add("attestations", "write", "stores an attestation")
        if str(given(step).get("push-to-registry", "")).lower() == "true":
            add("packages", "write", "pushes the attestation to the registry")
    if used in PYPI_ACTIONS:
        add("id-token", "write", "trusted publishing to PyPI")
    if used == DOWNLOAD_ACTION and given(step).get("run-id"):
        add("actions", "read", "downloads another run's artifacts")
    for command, scope, level, why in RUN_NEEDS:
        if command in run:
            add(scope, level, why)


def _granted(wf: Workflow, job: dict[str, Any]) -> dict[str, str]:
    granted = _normal(job.get("permissions", wf.top.get("permissions", {})))
    return granted if isinstance(granted, dict) else {"(all)": granted}


def _permission_problems(wf: Workflow, called: dict[str, Workflow]) -> Iterator[str]:
    for name, job in wf.jobs.items():
        granted, need = _granted(wf, job), required(job, called)
        for scope in sorted(granted.keys() | need.keys()):
            have, (want, why) = granted.get(scope, "none"), need.get(scope, ("none", ""))
            if have == want:
                continue
            if LEVELS.get(have, 3) > LEVELS[want]:
                yield (f"{where(wf, name, 'permissions')} grants {scope}: {have}, but its steps need "
                       f"{want if want != 'none' else 'none of it'} (least privilege)")
            else:
                yield f"{where(wf, name, 'permissions')} lacks {scope}: {want}, which it needs: it {why}"


def environment(job: dict[str, Any]) -> str | None:
    env = job.get("environment")
    return str(env.get("name")) if isinstance(env, dict) else None if env is None else str(env)


def _environment_problems(wf: Workflow) -> Iterator[str]:
    for name, job in wf.jobs.items():
        uploads = any(action(s) in PYPI_ACTIONS for s in steps(job))
        if uploads and environment(job) != PYPI_ENVIRONMENT:
            yield (f"{where(wf, name, 'environment')} uploads to PyPI outside the {PYPI_ENVIRONMENT!r} environment "
                   f"(found {environment(job)!r}); the trusted publisher is registered for that environment only")
        elif not uploads and environment(job) == PYPI_ENVIRONMENT:
            yield f"{where(wf, name, 'environment')} is bound to {PYPI_ENVIRONMENT!r} but does not upload to PyPI"


# -- uses and timeouts ---------------------------------------------------------------------

def _pin_problems(wf: Workflow) -> Iterator[str]:
    for name, job in wf.jobs.items():
        for uses in [job.get("uses"), *(s.get("uses") for s in steps(job))]:
            text = str(uses)
            if uses is None or text.startswith("./") or (text.startswith("docker://") and "@sha256:" in text):
                continue
            if not PINNED.fullmatch(text):
                yield f"{where(wf, name, 'uses')} {uses} is not pinned by a 40-hex commit (a tag or branch can move)"


def _timeout_values(wf: Workflow) -> Iterator[str]:
    for name, job in wf.jobs.items():
        value = job.get("timeout-minutes")
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
            yield f"{where(wf, name, 'timeout-minutes')} {value!r} is not a positive number of minutes"


# -- images fail closed: what a job's ``if`` does on a release or a candidate ----------------------

def _value(node: ex.Node, context: Mapping[str, str], results: Mapping[str, str]) -> str | bool:
    """``node`` as GitHub evaluates it in ``context`` (references to values; the needed jobs' results for the
    status functions). The parser keeps no literal's type: ``true``, ``false`` and ``null`` read as GitHub's
    (``'false'`` quoted too), and every comparison is of strings, case-insensitively."""
    if node.kind == "lit":
        return LITERALS.get(node.text, node.text)
    if node.kind == "ref":
        return context.get(node.text, "")
    if node.kind == "not":
        return not truthy(_value(node.args[0], context, results))
    if node.kind in ("and", "or"):
        for arg in node.args[:-1]:
            value = _value(arg, context, results)
            if truthy(value) is (node.kind == "or"):
                return value
        return _value(node.args[-1], context, results)
    if node.kind == "cmp" and node.text in ("==", "!="):
        left, right = (str(_value(a, context, results)).casefold() for a in node.args)
        return (left == right) is (node.text == "==")
    if node.kind == "call" and node.text in STATUS and not node.args:
        return STATUS[node.text](tuple(results.values()))
    raise WorkflowDrift([Problem(message=f"cannot evaluate {node.text!r} ({node.kind}) here")])


def truthy(value: str | bool) -> bool:
    """GitHub's truth: a non-empty string is true (``'false'`` too)."""
    return value if isinstance(value, bool) else value != ""


def _literals(node: ex.Node) -> set[str]:
    found = {node.text} if node.kind == "lit" else set()
    return found.union(*(_literals(a) for a in node.args))


def outcomes(node: ex.Node, context: Mapping[str, str], results: Mapping[str, str]) -> set[bool]:
    """Whether ``node`` holds in ``context`` (a run not cancelled), for every value the references it does not
    fix might take: ``''`` or any literal of the condition (``github.event_name == 'push'`` is tried as push)."""
    free = sorted(ex.references(node) - context.keys())
    choices = ["", *sorted(_literals(node))]
    if len(choices) ** len(free) > MOST_ASSIGNMENTS:
        raise WorkflowDrift([Problem(message=f"refers to too many values to judge ({', '.join(free)})")])
    return {truthy(_value(node, {**context, **dict(zip(free, combo))}, results))
            for combo in itertools.product(choices, repeat=len(free))}


def attested_run(what: str, *, image_count: str = "1", results: Mapping[str, str] | None = None) -> dict[str, str]:
    """The plan's outputs (and the needed jobs' results) on a run of kind ``what`` (``release``, ``candidate``)."""
    context = {"needs.plan.result": "success", GATE[0]: "false", CANDIDATE: "false", ATTESTED_RUNS[what]: "true",
               IMAGE_COUNT: image_count}
    return context | {f"needs.{job}.result": result for job, result in (results or {}).items()}


def image_gate_problems(wf: Workflow) -> Iterator[str]:
    """Each job that runs the build shards waits for every images job, and on a release or a candidate runs
    only over images that all succeeded, or where the plan needs none."""
    images = image_jobs(wf)
    for name in sorted(local_calls(wf)) if images else ():
        missing = sorted(images - set(needs(wf.jobs[name])))
        if missing:
            yield (f"{where(wf, name, 'needs')} does not need {', '.join(map(repr, missing))}: its builds could start "
                   "before, or without, the images they must pull")
            continue
        node, error = _condition(wf, name)
        try:
            yield from [str(error)] if node is None else _image_gate(wf, name, node, images)
        except WorkflowDrift as exc:
            yield f"{where(wf, name, 'if')} {exc.problems[0].message}: the images gate cannot be judged"


def _image_gate(wf: Workflow, name: str, node: ex.Node, images: set[str]) -> Iterator[str]:
    others = dict.fromkeys(needs(wf.jobs[name]), "success")
    succeeded = " && ".join(f"needs.{job}.result == 'success'" for job in sorted(images))
    for what in ATTESTED_RUNS:
        for ended in IMAGES_NOT_SUCCEEDED:
            results = others | dict.fromkeys(images, ended)
            if True in outcomes(node, attested_run(what, results=results), results):
                yield (f"{where(wf, name, 'if')} runs the builds of a {what} whose images job ended {ended!r}: the "
                       f"shards would build unattested images of their own, and a {what}'s bytes are what is "
                       f"released; require `{succeeded}` (or `{IMAGE_COUNT} == '0'`) on a release and a candidate")
                break
        for count, ended in (("1", "success"), ("0", "skipped")):
            results = others | dict.fromkeys(images, ended)
            if True not in outcomes(node, attested_run(what, image_count=count, results=results), results):
                yield (f"{where(wf, name, 'if')} never runs the builds of a {what} whose images jobs ended "
                       f"{ended!r} ({IMAGE_COUNT} {count!r})")


# -- the bucket's role session lasts the job -------------------------------------------------------

def _default_seconds(value: Any) -> int | None:
    """The number a step passes, alone or as the last alternative (``${{ vars.X || 3600 }}``)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    try:
        node = ex.parse(value) if isinstance(value, str) else None
    except WorkflowDrift:
        return None
    last = node.args[-1] if node is not None and node.kind == "or" else node
    return int(last.text) if last is not None and last.kind == "lit" and last.text.isdigit() else None


def _session_problems(wf: Workflow) -> Iterator[str]:
    for name, job in wf.jobs.items():
        timeout = job.get("timeout-minutes")
        if not isinstance(timeout, int) or isinstance(timeout, bool):
            continue
        wanted = credentials.session_seconds({SESSION_VARIABLE: str(timeout * 60)})
        for step in steps(job):
            if CREDENTIALS_SCRIPT not in str(step.get("run", "")):
                continue
            passed = {**_env(job), **_env(step)}.get(SESSION_VARIABLE)
            if _default_seconds(passed) != wanted:
                yield (f"{where(wf, name, 'steps')} runs {CREDENTIALS_SCRIPT} with {SESSION_VARIABLE} {passed!r}, "
                       f"not defaulting to the job's timeout-minutes ({timeout}) in seconds ({wanted}): the bucket's "
                       "role session would end before the job may")


def _env(holder: dict[str, Any]) -> dict[str, Any]:
    env = holder.get("env")
    return env if isinstance(env, dict) else {}
