"""``audit``: compare a published index with what the matrix promises for one channel."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping

import requests

from builders.base.console import Console
from builders.base.errors import AuditError
from builders.base.process import ProcessError, run
from builders.cli import load
from builders.cli.arguments import Options
from builders.index import audit, variant_audit
from builders.index.variants import settings
from builders.matrix.model import Matrix
from builders.matrix.targets import selected
from builders.report.compatibility import index_url, variant_index_url

HELP = "compare a published index with the matrix"
DESCRIPTION = ("Read a published index (PEP 691 JSON or PEP 503 HTML, PEP 658/714 metadata "
                "files; METADATA out of the wheel with HTTP range requests where a file has "
                "none; never whole wheels) and compare this release's files with what the "
                "matrix promises for one channel: missing files, unexpected files (dropped "
                "Pythons, excluded combinations, another channel's wheels), wrong tags, wrong "
                "Requires-Dist or Requires-Python, yanked files. Exit 21 on any drift.")


def execute(opts: Options, console: Console) -> int:
    m = load.matrix(opts)
    if opts.channel == variant_audit.CHANNEL:
        settings(m)  # a matrix without wheel_variants has no variant index
    else:
        audit.promises(m, opts.channel)  # an unknown channel is refused before anything is read
    url = opts.index_url or default_index_url(m, opts.channel, dict(opts.env))
    try:
        result = (variant_audit.audit_variants(m, url) if opts.channel == variant_audit.CHANNEL
                  else audit.audit(m, opts.channel, url, targets=chosen(m, opts)))
    except requests.RequestException as exc:
        raise AuditError(f"{url}: cannot read the index: {exc}") from None
    md = audit.to_markdown(result)
    console.out(md if opts.format == "markdown" else json.dumps(result.to_json(), indent=2))
    console.job_summary(md)
    if result.drift:
        raise AuditError(f"{len(result.drift)} drift finding(s) between {url} and the matrix's {opts.channel!r} "
                         "channel (listed above)")
    console.line(f"{url}: {result.promised} promised file(s), no drift")
    return 0


def chosen(m: Matrix, opts: Options) -> frozenset[str] | None:
    """The ids ``--target``/``--select``/``--skip`` pick (each selector must pick a real target), or None for all."""
    selection = load.selection(opts)
    if not (selection.targets or selection.select or selection.skip):
        return None
    return frozenset(t.id for t in selected(m, selection))


# pip's own default index, asked of pip (builders never names a package index itself).
PIP_DEFAULT_INDEX = "from pip._internal.models.index import PyPI; print(PyPI.simple_url)"


def default_index_url(m: Matrix, channel: str, env: Mapping[str, str]) -> str:
    """A variant's own index from the matrix; for PyPI, the index pip would use: the one it is configured with
    (``pip config list``: PIP_INDEX_URL, its configuration files), else pip's own default."""
    if channel == variant_audit.CHANNEL:
        return variant_index_url(m) or ""
    if channel != audit.PYPI:
        return index_url(m, channel)
    listing = run([sys.executable, "-m", "pip", "config", "list"], env=env, separate_stderr=True, timeout=120).stdout
    return audit.configured_index_url(listing) or pip_default_index(env)


def pip_default_index(env: Mapping[str, str]) -> str:
    """The index pip uses when none is configured, as this interpreter's pip says."""
    try:
        url = run([sys.executable, "-c", PIP_DEFAULT_INDEX], env=env, separate_stderr=True, timeout=120).stdout.strip()
    except ProcessError:
        url = ""
    if not url:
        raise AuditError("no index URL for the pypi channel: pip has none configured and its default could not be "
                         "read from it; pass --index-url URL, or configure pip's index-url (PIP_INDEX_URL or pip.conf)")
    return url
