"""The release lifecycle's channels: ``nightly``, ``test`` and ``release``, and where each one publishes.

A *channel* here is one stage of a release's life, each with its own per-variant indexes beside
the others on the same host (``channels.index.base_url``):

- ``release``: the final wheels, at ``channels.index.layout`` (``whl/{label}/``), and the PyPI
  default variant of each platform on PyPI (``channels.pypi``). Never rebuilt: a release is the
  validated candidate's bytes, copied. Nothing published there ever changes.
- ``test``: release candidates (tags ``v2.15.0-rc1``...), built with the final version
  (``2.15.0+cu132``) at ``channels.test.layout``; a later candidate replaces the earlier's files.
- ``nightly``: a build of the main branch per day, versioned as a PEP 440 development release of
  the next version (``channels.nightly.base_version``) from the commit date
  (``2.16.0.dev20261201+cu132``; by default the minor after ``project.version``), at ``channels.nightly.layout``, keeping the last
  ``channels.nightly.keep`` days per variant. Installing one takes ``--pre``.

``channels.pypi`` and ``channels.index`` predate the lifecycle and keep their meaning: they are the
release channel's PyPI default variants and its per-variant indexes. :mod:`builders.matrix.build`
reads the keys (:class:`~builders.matrix.draft.LifecycleDraft`) and makes the model with
:func:`release_channel` and :func:`pre_release_channel`; :mod:`builders.matrix.rules` applies
:func:`base_version_problem` and :func:`overlap_problems` (the layouts' own form is
:func:`builders.matrix.findings.layout_problem`).
"""

from __future__ import annotations

import datetime
import enum
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import product

from packaging.version import InvalidVersion, Version

from builders.base.errors import Location
from builders.matrix.findings import Violation

KeyPath = tuple[str | int, ...]


class ChannelName(enum.Enum):
    NIGHTLY = "nightly"
    TEST = "test"
    RELEASE = "release"


# The lifecycle keys under ``channels``, in the order the model lists them after the release channel
# (which is ``channels.index``).
PRE_RELEASE_ORDER = (ChannelName.TEST, ChannelName.NIGHTLY)


@dataclass(frozen=True, kw_only=True)
class ReleaseChannel:
    """One channel of the release lifecycle and the rules its publication follows."""

    name: ChannelName
    layout: str  # per-variant index folder under the index host, with {label}
    keep: int | None = None  # nightly: the dev releases kept per variant; None keeps everything
    base_version: Version | None = None  # nightly: the version its dev releases lead to (None: the next minor)
    location: Location | None = field(default=None, compare=False, repr=False)

    @property
    def replaces(self) -> bool:
        """Only test's later candidate: a nightly's same name is the same commit date, so other bytes are refused."""
        return self.name is ChannelName.TEST

    @property
    def prerelease(self) -> bool:
        """Whether its versions are PEP 440 pre-releases, which pip and uv install only with ``--pre``."""
        return self.name is ChannelName.NIGHTLY

    def index_path(self, label: str) -> str:
        return self.layout.format(label=label)

    def version(self, release: Version, commit_date: datetime.date | None = None) -> Version:
        """The public version this channel's wheels carry: the release's for test and release, a dev release
        of ``base_version`` dated by the commit for nightly (``2.16.0.dev20261201``)."""
        if self.name is not ChannelName.NIGHTLY:
            return Version(release.public)
        if commit_date is None:
            raise ValueError("a nightly version needs the commit date")
        return Version(f"{self.nightly_base(release)}.dev{commit_date:%Y%m%d}")

    def nightly_base(self, release: Version) -> Version:
        """``base_version``, or by default the minor after ``release`` (2.15.0 -> 2.16.0)."""
        if self.base_version is not None:
            return self.base_version
        return Version(f"{release.major}.{release.minor + 1}.0")

    def install_argv(self, project: str, version: Version | None, index_url: str | None,
                     manager: str = "pip") -> list[str]:
        """``pip install`` (or ``uv pip install``) of this channel's wheel: from ``index_url`` alone when given
        (else PyPI), as a pre-release for a dev release (``--pre``; uv's ``--prerelease allow``), ``==version``
        when it is known (a nightly's changes every day: without it the newest is taken)."""
        spec = f"{project}=={version}" if version is not None else project
        pre = (["--prerelease", "allow"] if manager == "uv" else ["--pre"]) if self.prerelease else []
        argv = ["uv", "pip", "install"] if manager == "uv" else ["pip", "install"]
        return argv + pre + [spec] + (["--index-url", index_url] if index_url is not None else [])

    def install_command(self, project: str, version: Version | None, index_url: str | None,
                        manager: str = "pip") -> str:
        return shlex.join(self.install_argv(project, version, index_url, manager))


def release_channel(layout: str, *, location: Location | None = None) -> ReleaseChannel:
    """The release channel: ``channels.index.layout``, nothing replaced, nothing pruned."""
    return ReleaseChannel(name=ChannelName.RELEASE, layout=layout, location=location)


def pre_release_channel(name: ChannelName, *, layout: str, keep: int | None, base_version: str | None,
                        location: Location | None = None) -> ReleaseChannel:
    """``channels.test`` or ``channels.nightly`` as every rule accepted it."""
    return ReleaseChannel(name=name, layout=layout, keep=keep,
                          base_version=Version(base_version) if base_version is not None else None, location=location)


# --- rules (applied by :mod:`builders.matrix.rules` where each value is written) ----------------


def nightly_date(version: Version) -> datetime.date | None:
    """The commit date a nightly's ``.devYYYYMMDD`` carries, or None."""
    try:
        return datetime.datetime.strptime(str(version.dev), "%Y%m%d").date() if version.dev is not None else None
    except ValueError:
        return None


def base_version_problem(text: str, release: str | None) -> Violation | None:
    """``channels.nightly.base_version``: a plain release after ``project.version``."""
    try:
        base = Version(text)
    except InvalidVersion:
        return Violation(f"{text!r} is not a PEP 440 version", hint="e.g. 2.16.0")
    if base.local or base.is_prerelease or base.is_postrelease:
        return Violation(f"base_version {text!r} must be a plain release", hint=f"e.g. {base.base_version!r}")
    current = _version(release) if release is not None else None
    if current is not None and base <= current:
        return Violation(f"base_version {text} is not after project.version {release}: its dev releases would sort "
                         "before the release pip already has", hint="the next version, e.g. the next minor")
    return None


def _version(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None


def overlap_problems(layouts: Iterable[tuple[ChannelName, KeyPath, str]],
                     labels: Iterable[str] | None) -> list[tuple[KeyPath, Violation]]:
    """Two channels' indexes must never nest or coincide: a page of one would list, or a prune of one delete,
    the other's files (``whl/{label}/`` with a variant labelled ``test`` is ``whl/test/``). ``layouts``: each
    channel's layout as written, with its key."""
    if labels is None:
        return []
    names = list(labels)
    usable = [(name, key, text) for name, key, text in layouts if "{label}" in text]
    out: list[tuple[KeyPath, Violation]] = []
    for (a, key_a, la), (b, _, lb) in product(usable, usable):
        if a.value >= b.value:
            continue
        clash = _nesting(la, lb, names)
        if clash:
            out.append((key_a, Violation(f"the {a.value} and {b.value} channels' indexes overlap: {clash}",
                                         hint="give each channel its own folder, e.g. whl/{label}/, "
                                              "whl/test/{label}/, whl/nightly/{label}/")))
    return out


def _nesting(la: str, lb: str, labels: list[str]) -> str:
    for x, y in product(labels, labels):
        pa, pb = la.format(label=x).rstrip("/") + "/", lb.format(label=y).rstrip("/") + "/"
        if pa.startswith(pb) or pb.startswith(pa):
            return f"{pa} and {pb}"
    return ""
