"""``verify-release VERSION --channel C``: every file of a version checked as the served index serves it."""

from __future__ import annotations

from packaging.utils import canonicalize_name

from builders.base.console import Console
from builders.base.errors import ReleaseUnverified, SelectionError
from builders.channels import manifest, verifying
from builders.channels.provenance import NOT_CHECKED, Identity
from builders.cli import load
from builders.cli.arguments import Options
from builders.index.remote import Client
from builders.matrix.model import Matrix

SHOWN = 20
HELP = "check every served file of a version against its pages, the release manifest and its PEP 740 provenance"
DESCRIPTION = ("Read each variant's project pages (JSON and HTML) of the channel from the served index (--site-url "
               "and the channel's layout), download every file of VERSION, and check: its "
               "sha256 is what both pages and the release manifest (--manifest) declare; both pages link its "
               "provenance (PEP 740); the provenance's in-toto statement names the file's sha256, its DSSE "
               "signature verifies with its certificate's key, and the certificate's builder (Fulcio's extensions: "
               "repository, workflow file, ref) and the publisher are --repository, --workflow and --ref. "
               f"Not checked, and said so: {NOT_CHECKED}. Exit 51 naming each file and what is wrong.")


def execute(opts: Options, console: Console) -> int:
    m = load.matrix(opts)
    channel = m.declared_channel(opts.channel)
    release = manifest.load(opts.manifest) if opts.manifest else None
    expected = identity(opts, release)
    client = Client()
    served = verifying.gather(client, page_urls(opts, m, channel.index_path), m.project.name, opts.version)
    if not served:
        raise ReleaseUnverified(f"the {channel.name.value} channel's pages list no file of {m.project.name} "
                                f"{opts.version}")
    files = {f.name: f.sha256 for f in release.files} if release else None
    bad = [(f, found) for f in served if (found := verifying.problems(f, files, expected))]
    for f in served:
        console.line(f"{'FAIL' if any(f is b for b, _ in bad) else 'ok  '} {f.filename}")
    say(console, expected, release is not None, len(served), client)
    if bad:
        lines = [f"{f.filename}: {'; '.join(found)}" for f, found in bad[:SHOWN]]
        raise ReleaseUnverified(f"{len(bad)} of {len(served)} file(s) of {opts.version} fail:\n  " + "\n  ".join(lines))
    return 0


def say(console: Console, expected: Identity, manifest_checked: bool, count: int, client: Client) -> None:
    """What was checked and what was not, in words (a user reads this line, not the source)."""
    console.line(f"{count} file(s) read ({client.read['files']:,} bytes): sha256 against the JSON and HTML pages"
                 f"{' and the release manifest' if manifest_checked else ' (no --manifest: not against a manifest)'}; "
                 f"provenance subject, DSSE signature with the certificate's key, builder {expected.repository} "
                 f"{expected.workflow} {expected.ref or '(any ref: no --ref and no manifest tag)'}")
    console.line(f"not checked: {NOT_CHECKED}")


def identity(opts: Options, release: manifest.Manifest | None) -> Identity:
    """The builder expected: --repository, --workflow, --ref (default the manifest's tag)."""
    repository = str(opts.repository).removeprefix("https://github.com/").strip("/")
    if repository.count("/") != 1:
        raise SelectionError(f"--repository {opts.repository!r}: OWNER/NAME, the repository whose workflow built it")
    ref = opts.ref or (f"refs/tags/{release.tag}" if release and release.tag else "")
    return Identity(repository=repository, workflow=opts.workflow.rsplit("/", 1)[-1], ref=ref)


def page_urls(opts: Options, m: Matrix, index_path: object) -> list[str]:
    """Each variant's project page folder on the site (``--site-url`` + the channel's layout)."""
    project = canonicalize_name(m.project.name)
    site = (opts.site_url or m.channels.index_base_url).rstrip("/") + "/"
    return [f"{site}{index_path(v.label)}{project}/" for v in m.variants]  # type: ignore[operator]
