"""``audit``: compare a published index with what the matrix promises for one channel."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping

import requests

from builders.base.console import Console
from builders.base.errors import AuditError
from builders.base.process import ProcessError, run
from builders.cli import add_matrix_option
from builders.matrix import loader as matrix_mod
from builders.matrix.model import Matrix
from builders.release import audit, variant_audit
from builders.release.report import index_url, variant_index_url
from builders.release.variants import settings


def configure_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("audit", help="compare a published index with the matrix",
                       description="Read a published index (PEP 691 JSON or PEP 503 HTML, PEP 658/714 metadata "
                                   "files; METADATA out of the wheel with HTTP range requests where a file has "
                                   "none; never whole wheels) and compare this release's files with what the "
                                   "matrix promises for one channel: missing files, unexpected files (dropped "
                                   "Pythons, excluded combinations, another channel's wheels), wrong tags, wrong "
                                   "Requires-Dist or Requires-Python, yanked files. Exit 21 on any drift.")
    add_matrix_option(p)
    p.add_argument("--channel", default=audit.PYPI, metavar="CHANNEL",
                   help="pypi (default): the unlabelled PyPI wheels; or a variant label (cu132, ...): its own index; "
                        "or variants: the wheel-variant index (PEP 825; its variants.json and variant wheels)")
    p.add_argument("--index-url", default=None, metavar="URL",
                   help="the index to read (http, https or file); default: for a variant label, the matrix's "
                        "channels.index base_url + layout; for pypi, the index pip uses: its configured "
                        "index-url (PIP_INDEX_URL or pip.conf), else pip's own default")
    p.add_argument("--format", choices=("markdown", "json"), default="markdown",
                   help="what goes to stdout (default: markdown; it also goes to the GitHub job summary)")
    p.set_defaults(execute=execute)


def execute(args: argparse.Namespace, console: Console) -> int:
    m = matrix_mod.load(args.matrix, builds=False)
    if args.channel == variant_audit.CHANNEL:
        settings(m)  # a matrix without wheel_variants has no variant index
    else:
        audit.promises(m, args.channel)  # an unknown channel is refused before anything is read
    url = args.index_url or default_index_url(m, args.channel, dict(os.environ))
    try:
        result = (variant_audit.audit_variants(m, url) if args.channel == variant_audit.CHANNEL
                  else audit.audit(m, args.channel, url))
    except requests.RequestException as exc:
        raise AuditError(f"{url}: cannot read the index: {exc}") from None
    md = audit.to_markdown(result)
    print(md if args.format == "markdown" else json.dumps(result.to_json(), indent=2))
    console.job_summary(md)
    if result.drift:
        raise AuditError(f"{len(result.drift)} drift finding(s) between {url} and the matrix's {args.channel!r} "
                         "channel (listed above)")
    console.line(f"{url}: {result.promised} promised file(s), no drift")
    return 0


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
