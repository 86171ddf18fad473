"""Every command-line option of every command, and every environment variable builders reads: one table.

An :class:`Option` is declared once: its flags, its parser, the environment variable and the
matrix key it falls back to (if any), its default, its help and the commands that take it.
:mod:`builders.cli.arguments` builds each command's parser from :data:`OPTIONS` (no
``add_argument`` anywhere else) and applies one rule, :func:`~builders.cli.arguments.choose`:
the command line, else the environment variable, else the matrix, else the default.
``docs/options.md`` is rendered from this table (``python -m builders options --markdown``).

Variables builders reads that are not options (where the run is, how to print, what a command
set for its children) are :data:`ENVIRONMENT`, each with the module that reads it and why there.
"""

from __future__ import annotations

import argparse
import datetime
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from builders import engines
from builders.base import folderlock
from builders.base.untrusted import INDEX_PAGE_LIMIT as PAGE_LIMIT
from builders.base.untrusted import INDEX_TIMEOUT as PAGE_TIMEOUT
from builders.cli.paths import input_dir, input_file, input_path, output_dir, output_file
from builders.families import Family, families
from builders.families.provision import CACHE_ENV, default_cache, toolchains_under
from builders.families.rocm import ROCM_SOURCE_ENV, ROCM_SOURCES
from builders.matrix.compile_cache import LOCATION_ENV, location_problem
from builders.matrix.promotion_policy import FILE_LIMIT_MB, TOTAL_LIMIT_GB
from builders.matrix.release_channels import ChannelName
from builders.pipeline import caches
from builders.pipeline.cacheprobe import TIMEOUT as PROBE_TIMEOUT
from builders.pipeline.caches import DEFAULT_STORE_BUDGET, STORE_BUDGET_ENV
from builders.pipeline.host import CONTAINER_ENGINES
from builders.pipeline.remotecache import DIST_TOKEN, DIST_VAR, MODE_VAR, UNAVAILABLE_VAR
from builders.wheel.smoke import INSTALLERS

ROOT = ""  # the options of ``python -m builders`` itself (before the command)
CACHE_KINDS = ("toolchain", "ccache", "uv", "image", "store", "core", caches.PARTIAL)
SELECTION = "selection (shell globs over ids like cu132-cp314t-linux-x86_64)"
MATRIX_COMMANDS = ("plan", "build", "images", "verify", "smoke", "report", "promote", "index", "workflow", "audit",
                   "variants", "publish", "validate", "promote-release", "manifest", "yank", "rollback", "repair-index",
                   "history", "check-index", "rebuild", "verify-release")
SELECTING = ("plan", "build", "images", "validate", "promote-release", "audit", "check-index")
CHANNELS = tuple(c.value for c in ChannelName)
WHEELHOUSE = Path("wheelhouse")  # ``build --output``'s default, where ``cache`` looks for a store
MATRIX = Path("matrix.yaml")  # ``--matrix``'s default



@dataclass(frozen=True)
class Computed:
    """A default worked out from the environment the run was given (``text`` says how, for the docs)."""

    make: Callable[[Mapping[str, str]], Any]
    text: str


@dataclass(frozen=True, kw_only=True)
class Option:
    """One option (or positional argument) as argparse and the docs see it.

    ``parse`` turns the text of the flag or of ``env`` into the value (an argparse ``type``);
    ``from_env`` when the variable means something else than the flag (``$BUILDERS_CACHE`` is
    the folder above ``--cache``). ``matrix`` is the attribute path of the matrix value that
    stands in when neither is given. ``help`` and ``choices`` may be computed (the engines and
    families builders knows) when the parser is built.
    """

    flags: tuple[str, ...]
    commands: tuple[str, ...]
    help: str | Callable[[], str]
    dest: str = ""
    parse: Callable[[str], Any] | None = None
    from_env: Callable[[str], Any] | None = None
    default: Any = None
    env: str | None = None
    matrix: str | None = None
    action: str | None = None
    const: Any = None
    choices: tuple[str, ...] | Callable[[], tuple[str, ...]] | None = None
    metavar: str | None = None
    required: bool = False
    group: str | None = None

    @property
    def positional(self) -> bool:
        return not self.flags[0].startswith("-")

    @property
    def name(self) -> str:
        """The attribute of the options value: ``dest``, else argparse's own rule (the first long flag)."""
        if self.dest:
            return self.dest
        longs = [f for f in self.flags if f.startswith("--")] or list(self.flags)
        return longs[0].lstrip("-").replace("-", "_")

    def help_text(self) -> str:
        return self.help() if callable(self.help) else self.help

    def choice_list(self) -> tuple[str, ...] | None:
        return self.choices() if callable(self.choices) else self.choices

    def default_for(self, env: Mapping[str, str]) -> Any:
        """The default, computed from ``env`` where it depends on it; lists become tuples (values are frozen)."""
        if isinstance(self.default, Computed):
            return self.default.make(env)
        return tuple(self.default) if isinstance(self.default, list) else self.default


@dataclass(frozen=True, kw_only=True)
class EnvironmentFact:
    """A variable builders reads that is no option: what it tells, and the module that reads it (from the
    ``env`` mapping it is given, never ``os.environ``)."""

    name: str
    read_by: str
    why: str


@dataclass(frozen=True)
class Number:
    """A numeric option's parser: a finite number of ``kind`` in [``low``, ``high``] (above ``low`` when
    ``above``). NaN, infinities, negatives and absurd magnitudes are refused where the text is read, so no
    command waits ``nan`` seconds or sizes a limit of ``1e308``."""

    kind: type
    low: float
    high: float
    above: bool = False

    def __call__(self, text: str) -> Any:
        try:
            value = self.kind(text.strip())
        except (TypeError, ValueError):
            raise argparse.ArgumentTypeError(f"{text!r} is not {self.words()}") from None
        if not math.isfinite(value) or value > self.high or value < self.low or (self.above and value == self.low):
            raise argparse.ArgumentTypeError(f"{text!r}: must be {self.words()}")
        return value

    def words(self) -> str:
        what = "a whole number" if self.kind is int else "a finite number"
        low = f"above {self.low:g}" if self.above else f"at least {self.low:g}"
        return f"{what} {low} and at most {self.high:g}"


jobs = Number(int, 1, 4096)
above_zero = Number(float, 0, 1e9, above=True)  # a limit: a limit of 0 would refuse every file
days = Number(float, 0, 36_500)
seconds = Number(float, 0, 7 * 24 * 3600, above=True)
count = Number(int, 0, 10**12)
window_days = Number(int, 0, 36_500)
gigabytes = Number(float, 0, 1e9)
MAX_SIZE = 1 << 60  # an exbibyte: more than any disk; a larger size is a typo


def budget(text: str) -> int | None:
    """A store budget in bytes; None for ``unlimited``."""
    if text.strip().lower() in ("unlimited", "none"):
        return None
    return size(text)


def store_location(text: str) -> str:
    """A shared compile cache's location (s3://, redis://, http://): never one holding a credential."""
    problem = location_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return text


def size(text: str) -> int:
    """A size in bytes (500M, 20G): refused past :data:`MAX_SIZE`."""
    try:
        value = caches.parse_size(text)
    except (ValueError, OverflowError) as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if value > MAX_SIZE:
        raise argparse.ArgumentTypeError(f"{text!r}: must be at most {MAX_SIZE} bytes")
    return value


def matrix_if_there(env: Mapping[str, str]) -> Path | None:
    """``cache``'s matrix when none is named: ./matrix.yaml, where there is one (``prune`` then asks for one)."""
    return MATRIX if MATRIX.is_file() else None


def wheelhouse_if_there(env: Mapping[str, str]) -> tuple[Path, ...]:
    """``cache``'s outputs when none is named: ./wheelhouse, where there is one."""
    return (WHEELHOUSE,) if WHEELHOUSE.is_dir() else ()


def device_rules(extra: Iterable[Family] = ()) -> str:
    """What counts as a device, family by family (their own words), for ``smoke --require-device``."""
    rules = [f"{f.accelerator.value}: {f.device_help}" for f in families(extra) if f.needs_device]
    spared = [f.accelerator.value for f in families(extra) if not f.needs_device]
    return "; ".join(rules) + (f"; {', '.join(spared)} wheels never need one" if spared else "")


def _build_engine_help() -> str:
    return (f"{engines.help_text()}. An engine asked for that cannot run here is an error, exit 9 "
            f"(default: {engines.DEFAULT})")


def _require_device_help() -> str:
    return ("fail (exit 23) unless a device of the target's accelerator shows, where the matrix names GPU "
            f"smoke runners for it ({device_rules()})")


_MATRIX = Option(flags=("--matrix",), commands=MATRIX_COMMANDS, parse=input_file, default=MATRIX,
                 metavar="PATH", help="the release matrix (default: ./matrix.yaml)")

_SELECTION = (
    Option(flags=("--target",), commands=SELECTING, action="append", default=[], metavar="ID",
           group=SELECTION, help="exactly this target (repeatable)"),
    Option(flags=("--select",), commands=SELECTING, action="append", default=[], metavar="GLOB",
           group=SELECTION, help="targets matching GLOB (repeatable)"),
    Option(flags=("--skip",), commands=SELECTING, action="append", default=[], metavar="GLOB",
           group=SELECTION, help="leave out targets matching GLOB (repeatable)"),
)

_CONTAINERS = (
    Option(flags=("--container-engine",), commands=("build", "images", "cache"), choices=CONTAINER_ENGINES,
           help="which container engine (default: the first that works, podman then docker)"),
    Option(flags=("--base-image",), commands=("build", "images", "cache"), env="BUILDERS_BASE_IMAGE",
           matrix="platforms.<platform>.base_image", metavar="IMAGE",
           help="base image for every build image instead of the platform's (default: $BUILDERS_BASE_IMAGE, else "
                "base_image in the matrix)"),
)

_PLAN = (
    Option(flags=("--format",), commands=("plan",), choices=("table", "json", "github"), default="table",
           help="table (default); json: full records; github: the workflow's job-matrix shards (<= 256 jobs "
                "each) and images"),
    Option(flags=("--json",), commands=("plan",), dest="format", action="store_const", const="json",
           help="same as --format json"),
    Option(flags=("--engine",), commands=("plan",), choices=engines.names, default=engines.DEFAULT,
           help=f"which engine's host capability to report (default: {engines.DEFAULT})"),
    Option(flags=("--output",), commands=("plan",), metavar="FILE",
           help="with --format json or github: write the document to FILE instead of stdout (under nox, whose "
                "sessions merge stderr into stdout, warnings would otherwise land in it)"),
    Option(flags=("--release-tag",), commands=("plan",), metavar="TAG", group="the release workflow",
           help="this run publishes the release tagged TAG: refused (exit 25) unless TAG is spelled exactly "
                "v{project.version} (v2.15.0) or v{project.version}-rcN (a candidate: built and checked, never "
                "published), the selection is the whole matrix and every Linux base image is pinned by digest; the "
                "plan then says release: true (candidate: true for a candidate)"),
    Option(flags=("--event",), commands=("plan",), metavar="NAME", group="the release workflow",
           help="the run's event; with --ref and --default-branch (github.event_name...) plan picks the channel itself: a pushed tag "
                "its release or candidate (as --release-tag), the default branch's schedule the nightly (dated "
                "--commit-date), a dispatch or anything else nothing (builders/ci/run_channel.py); refused beside "
                "--release-tag or --channel"),
    Option(flags=("--ref",), commands=("plan",), metavar="REF", group="the release workflow",
           help="the run's ref; with --event (github.ref: refs/tags/v2.15.0, refs/heads/main)"),
    Option(flags=("--default-branch",), commands=("plan",), metavar="NAME", group="the release workflow",
           help="with --event; only its schedule is a nightly (github.event.repository.default_branch)"),
    Option(flags=("--gpu-runners",), commands=("plan",), metavar="LABELS", group="the release workflow",
           help="labels of the self-hosted runners the repository has (space or comma separated); a GPU smoke job "
                "whose runner nobody serves goes to its build runner, where --require-device fails it at once "
                "instead of queueing for a day"),
    Option(flags=("--estimate",), commands=("plan",), action="store_true", default=False,
           group="the release workflow",
           help="the run's job count, core builds, runner-minutes and critical path, one build job per (variant, "
                "platform) against one per target (with --format github: under 'estimate')"),
    Option(flags=("--results",), commands=("plan",), action="append", default=[], parse=input_file, metavar="FILE",
           group="the release workflow",
           help="with --estimate: stage times measured by these results.json files (repeatable); with --rehearse: "
                "wheel sizes and core times over the profile's"),
    Option(flags=("--rehearse",), commands=("plan",), metavar="PROFILE", group="rehearsal at scale",
           help="rehearse every release run at PROFILE's scale (a file, a shipped name such as torch-2.15.0, or "
                "'declared': the matrix's own weights): per job its runner, count, minutes cold and warm, disk, bytes "
                "and dollars; per run and per month; build layouts side by side; every limit crossed (exit 47). "
                "docs/rehearsal.md"),
    Option(flags=("--index-sizes",), commands=("plan",), metavar="URL", group="rehearsal at scale",
           help="with --rehearse: wheel sizes as this published index serves them (PEP 691 JSON 'size'), over the "
                "profile's"),
    Option(flags=("--compare",), commands=("plan", "report"), parse=input_file, metavar="MATRIX",
           group="rehearsal at scale",
           help="with --rehearse (plan) or --cost (report): what this matrix adds against it, per nightly, per "
                "release and per month, in minutes and dollars"),
    Option(flags=("--downloads",), commands=("plan", "report"), parse=count, default=10_000, metavar="N",
           group="rehearsal at scale", help="wheel downloads a month, for the egress figure (default 10,000)"),
    Option(flags=("--pypi-held",), commands=("plan", "report"), parse=gigabytes, metavar="GB", group="rehearsal at scale",
           help="what the project already holds on PyPI (default: the profile's pypi_held_gb)"),
    Option(flags=("--promotion-window",), commands=("plan", "report"), parse=window_days, default=30, metavar="DAYS",
           group="rehearsal at scale",
           help="how long after its candidate a release may be promoted; the candidate's artifacts must be kept "
                "as long (default 30)"),
)

_BUILD = (
    Option(flags=("--output",), commands=("build",), parse=output_dir, default=WHEELHOUSE, metavar="DIR",
           help="wheels by channel (whl/<label>/), logs/<id>.log, results.json and the store of verified wheels by "
                "plan digest, .store/ (default: wheelhouse/)"),
    Option(flags=("--source",), commands=("build",), parse=input_dir, matrix="project.source", metavar="DIR",
           help="framework source tree (default: project.source in the matrix)"),
    Option(flags=("--engine",), commands=("build",), choices=engines.names, default=engines.DEFAULT,
           help=_build_engine_help),
    Option(flags=("--allow-skip",), commands=("build",), action="store_true", default=False,
           help="exit 0 even if every selected target is skipped here, or a planned target is skipped during the "
                "build (default: exit 22 with each target's reason, as cibuildwheel fails on an empty selection "
                "without --allow-empty)"),
    Option(flags=("--jobs", "-j"), commands=("build",), parse=jobs, metavar="N",
           default=Computed(lambda env: _cores(), "the number of cores"),
           help="targets in their build stages (provision, compile, repair) at the same time; verify and smoke of "
                "finished builds run beside them (default: the number of cores)"),
    Option(flags=("--force",), commands=("build",), action="store_true", default=False,
           help="build every plan, even one whose wheel is in the store"),
    Option(flags=("--verbose", "-v"), commands=("build",), action="store_true", default=False,
           help="show every command's output as it is written"),
    Option(flags=("--dry-run",), commands=("build",), action="store_true", default=False,
           help="print each selected target's build plan (commands, environment, digest), build nothing"),
    Option(flags=("--json",), commands=("build",), action="store_true", default=False,
           help="with --dry-run: the plans as JSON"),
    Option(flags=("--channel",), commands=("build", "plan", "smoke"), choices=CHANNELS,
           help="build for this channel's version; nightly is a dev release of the matrix's nightly base from "
                "--commit-date (2.16.0.dev20261201+cu132); test and release the matrix's version (default: the "
                "matrix's version)"),
    Option(flags=("--commit-date",), commands=("build", "plan", "smoke", "check-index"), parse=datetime.date.fromisoformat,
           metavar="YYYY-MM-DD",
           help="with --channel nightly: the date of the commit built (its committer date, as git log shows it with "
                "--date=short)"),
)

_BUILD_AFTER = (
    Option(flags=("--cache",), commands=("build",), parse=output_dir, env=CACHE_ENV, from_env=toolchains_under,
           default=Computed(default_cache, "~/.cache/builders/toolchains ($XDG_CACHE_HOME for ~/.cache)"),
           metavar="DIR", help="toolchain cache (default: $BUILDERS_CACHE or ~/.cache/builders/toolchains)"),
    Option(flags=("--no-smoke",), commands=("build",), dest="smoke", action="store_false", default=True,
           help="skip the smoke stage"),
    Option(flags=("--keep-failed",), commands=("build",), action="store_true", default=False,
           help="keep a failed target's work folder (the raw and labelled wheels, the unrepaired one); "
                "its reason says where"),
    Option(flags=("--local-only",), commands=("build",), action="store_true", default=False,
           help="tag Linux wheels at this host's own glibc level (manylinux_2_36 on glibc 2.36) instead of the "
                "matrix's policy: wheels for testing here, which promote, index and release refuse"),
    Option(flags=("--no-wait",), commands=("build",), dest="wait", action="store_false", default=True,
           help=f"when another run is writing the output folder (it holds {folderlock.LOCK_NAME} there), stop at "
                "once with exit 26 instead of waiting for it to finish (the message names its pid, command line "
                "and start)"),
    Option(flags=("--store-budget",), commands=("build",), parse=budget, env=STORE_BUDGET_ENV,
           default=Computed(lambda env: budget(DEFAULT_STORE_BUDGET), DEFAULT_STORE_BUDGET), metavar="SIZE",
           help="after the build, trim <output>/.store to SIZE (500M, 20G; 'unlimited' keeps all), least recently "
                "used first, never an entry of this run's plans (default: $BUILDERS_STORE_BUDGET, else "
                f"{DEFAULT_STORE_BUDGET})"),
    Option(flags=("--compile-cache-write",), commands=("build",), action="store_true", default=False,
           group="shared compile cache",
           help="write into the matrix's shared compile cache (compile_cache): for a developer who owns the store; "
                "refused in CI and in pull requests, where only trusted runs write (docs/compile-cache.md). "
                "Without it a local build only reads"),
    Option(flags=("--compile-cache-required",), commands=("build",), action="store_true", default=False,
           group="shared compile cache",
           help="fail if the store is down; exit 20 when the shared cache does not answer before the build (closed, silent for "
                f"{PROBE_TIMEOUT:g} s, or refusing the credentials). Without it the run builds on with the local "
                "cache, says why, and records 0 hits and the cause for each target"),
    Option(flags=("--compile-cache",), commands=("build",), parse=store_location, env=LOCATION_ENV, metavar="URL",
           matrix="compile_cache.location", group="shared compile cache",
           help="the shared compile cache's store (s3://bucket/path, redis://host:port, http(s)://...), over the "
                "matrix's compile_cache.location; never a credential in it (those go in the store's own "
                "variables). Without a matrix compile_cache it changes nothing"),
    Option(flags=("--sccache-dist",), commands=("build",), env=DIST_VAR, matrix="compile_cache.dist_scheduler",
           metavar="URL", group="shared compile cache",
           help="the sccache-dist scheduler the core's compiles are sent to; over the matrix's "
                "compile_cache.dist.scheduler (its token: $SCCACHE_DIST_TOKEN)"),
)

_WHEEL_CHECKS = (
    Option(flags=("wheel",), commands=("verify",), parse=Path, metavar="WHEEL", help=""),
    Option(flags=("--target",), commands=("verify",), required=True, metavar="ID",
           help="the target the wheel claims to be"),
    Option(flags=("--channel",), commands=("verify",), choices=("auto", "index", "pypi"), default="auto",
           help="expect the labelled index wheel or the promoted PyPI wheel; auto (default): the PyPI wheel when "
                "WHEEL has no local label and the target is published to PyPI"),
    Option(flags=("--json",), commands=("verify",), action="store_true", default=False,
           help="print findings as JSON"),
    Option(flags=("wheel",), commands=("smoke",), parse=Path, metavar="WHEEL", help=""),
    Option(flags=("--target",), commands=("smoke",), required=True, metavar="ID", help=""),
    Option(flags=("--python",), commands=("smoke",), parse=Path,
           help="interpreter to use (default: discovered for the target)"),
    Option(flags=("--installer",), commands=("smoke",), choices=("auto", "uv", "pip"), default="auto",
           help="what makes the venv and installs: uv (builders' uv package; its cache keeps runtime requirements), "
                "venv + pip, or uv where it runs, else pip with a note (default: auto)"),
    Option(flags=("--require-device",), commands=("smoke",), action="store_true", default=False,
           help=_require_device_help),
)

_RELEASE = (
    Option(flags=("--output",), commands=("report",), parse=output_dir, default=Path("report"), metavar="DIR",
           help="folder for compatibility.{md,json,html} (default: report/)"),
    Option(flags=("--cost",), commands=("report",), metavar="PROFILE",
           help="also cost.md: the cost and duration of a nightly, a candidate and a release at PROFILE's scale "
                "(plan --rehearse), and with --compare what the matrix adds against an earlier one"),
    Option(flags=("--results",), commands=("report",), parse=input_file, action="append", default=[], metavar="PATH",
           help="build results to show, repeatable (default: wheelhouse/results.json, if it exists); the HTML page "
                "links each target's log next to its results file"),
    Option(flags=("wheel",), commands=("promote",), parse=input_path, metavar="WHEEL",
           help="a wheel, or a folder: every PyPI-default wheel under it (others are left alone)"),
    Option(flags=("--output",), commands=("promote",), parse=output_dir, default=Path("wheelhouse/pypi"),
           metavar="DIR", help="where the PyPI wheel is written (default: wheelhouse/pypi/)"),
    Option(flags=("--allow-empty",), commands=("promote",), action="store_true", default=False,
           help="a folder of wheels none of which is a PyPI-default wheel (a release of cu134-* only) promotes "
                "nothing: write nothing, say why, exit 0 (default: exit 15). A folder with no wheels at all is "
                "still an error"),
    Option(flags=("wheelhouse",), commands=("index",), parse=input_dir, metavar="WHEELHOUSE", help=""),
    Option(flags=("--output",), commands=("index",), parse=output_dir, required=True, metavar="DIR",
           help="where the index is written"),
    Option(flags=("--no-mirror",), commands=("index",), action="store_true", default=False,
           help="index only the project's own wheels (offline); pip then needs another index for their "
                "requirements"),
    Option(flags=("new",), commands=("merge-index",), parse=input_dir, metavar="NEW", help=""),
    Option(flags=("--into",), commands=("merge-index",), parse=output_dir, required=True, metavar="PUBLISHED",
           help="the published indexes, updated in place (an empty folder for the first release)"),
    Option(flags=("wheelhouse",), commands=("release-check",), parse=input_dir, metavar="WHEELHOUSE", help=""),
    Option(flags=("--plan",), commands=("release-check",), parse=input_file, required=True, metavar="PLAN",
           help="plan.json of the run"),
    Option(flags=("--workflow",), commands=("workflow",), parse=input_file,
           default=Path(".github/workflows/release.yml"), metavar="PATH", help=""),
    Option(flags=("--check",), commands=("workflow",), action="store_true", default=False,
           help="check for drift (the only mode)"),
    Option(flags=("--channel",), commands=("audit",), default="pypi", metavar="CHANNEL",
           help="pypi (default): the unlabelled PyPI wheels; or a variant label (cu132, ...): its own index; or "
                "variants: the wheel-variant index (PEP 825; its variants.json and variant wheels)"),
    Option(flags=("--index-url",), commands=("audit",), metavar="URL",
           help="the index to read (http, https or file); default: for a variant label, the matrix's "
                "channels.index base_url + layout; for pypi, the index pip uses: its configured index-url "
                "(PIP_INDEX_URL or pip.conf), else pip's own default"),
    Option(flags=("--format",), commands=("audit",), choices=("markdown", "json"), default="markdown",
           help="what goes to stdout (default: markdown; it also goes to the GitHub job summary)"),
)

_VARIANTS = (
    Option(flags=("wheelhouse",), commands=("variants",), parse=input_dir, metavar="WHEELHOUSE",
           help="what `build` wrote (whl/<label>/...)"),
    Option(flags=("--output",), commands=("variants",), parse=output_dir, metavar="DIR",
           help="the index folder the variant index goes into (default: WHEELHOUSE, beside whl/<label>/)"),
    Option(flags=("--no-mirror",), commands=("variants",), action="store_true", default=False,
           help="index only the project's own variant wheels (offline); uv then needs another index for their "
                "requirements"),
    Option(flags=("--smoke",), commands=("variants",), action="store_true", default=False,
           help="smoke-test each variant's twin (the same files but variant.json, proved by the checks) with the "
                "target's interpreter, as `smoke` does: a variant wheel installs only where its provider matches "
                "the machine"),
    Option(flags=("--installer",), commands=("variants",), choices=("auto", "uv", "pip"), default="auto",
           help="the smoke test's installer"),
    Option(flags=("--copy-wheels",), commands=("variants",), parse=output_dir, metavar="DIR",
           help="also copy the project's variant wheels (not the mirrored requirements) into DIR, e.g. for the "
                "release's build provenance (DIR is made, and left empty without wheel_variants)"),
)

_PUBLISH = (
    Option(flags=("wheelhouse",), commands=("publish",), parse=input_dir, metavar="WHEELHOUSE", help=""),
    Option(flags=("--channel",), commands=("publish",), required=True, choices=CHANNELS,
           help="the channel whose indexes the wheels are added to"),
    Option(flags=("--no-mirror",), commands=("publish",), action="store_true", default=False,
           help="publish only the project's own wheels (offline)"),
    Option(flags=("--dry-run",), commands=("publish",), action="store_true", default=False,
           help="print what would be added, replaced and pruned; write nothing"),
    Option(flags=("--record",), commands=("publish",), parse=output_file, metavar="PATH",
           help="also write the publication record (JSON) here"),
    Option(flags=("--bucket",), commands=("publish", "promote-release"), required=True, metavar="URL",
           help="s3://BUCKET/ or s3://BUCKET/PREFIX/: the channels' site root"),
    Option(flags=("--attestations",), commands=("publish", "promote-release"), parse=input_dir, metavar="DIR",
           help="the attest step's Sigstore bundles (*.json, *.jsonl): publish serves each as its "
                "file's PEP 740 provenance (<file>.provenance, linked from the pages); promote-release uploads them "
                "to the package server with twine --attestations (one single-subject attestation per PyPI file)"),
    Option(flags=("--site-url",), commands=("publish", "promote-release"), metavar="URL",
           help="web front for link checks; the bucket's root as served (default: check through the S3 API)"),
)

_VALIDATE = (
    Option(flags=("--channel",), commands=("validate",), choices=CHANNELS, default=ChannelName.TEST.value,
           help="the channel to validate (default: test)"),
    Option(flags=("--index-url",), commands=("validate",), metavar="URL",
           help="the simple index to install every selected target from, as pip's --index-url (PEP 503); with "
                "--pypi, the staging index's (default: each variant's index on the channel's site, --site-url)"),
    Option(flags=("--site-url",), commands=("validate",), metavar="URL",
           help="the channels' site as served: each variant's index is URL + the channel's layout (default: "
                "the matrix's channels.index.base_url)"),
    Option(flags=("--pypi",), commands=("validate",), action="store_true", default=False,
           help="validate the PyPI-form wheels from a staging package index"),
    Option(flags=("--extra-index-url",), commands=("validate",), action="append", default=[], metavar="URL",
           help="with --pypi: where the wheels' requirements come from, as PyPI would serve them (repeatable)"),
    Option(flags=("--version",), commands=("validate",), metavar="VERSION",
           help="the version to install (nightly: the dev release, required)"),
    Option(flags=("--installer",), commands=("validate",), action="append", choices=INSTALLERS, default=[],
           help="pip, uv, or both (repeatable; default: both)"),
    Option(flags=("--require-device",), commands=("validate",), action="store_true", default=False,
           help="a GPU target whose device this machine does not show is not runnable here"),
    Option(flags=("--record",), commands=("validate",), parse=output_file, default=Path("validation.json"),
           metavar="PATH", help="the validation record (default: ./validation.json)"),
    Option(flags=("--manifest",), commands=("validate",), parse=input_file, metavar="PATH",
           help="the candidate's release manifest (`manifest`): only its targets are validated, each installer "
                "must install its file's bytes (sha256), and the record names the manifest's digest, which "
                "promote-release requires"),
    Option(flags=("--index-page-limit",), commands=("validate",), parse=size, default=PAGE_LIMIT, metavar="SIZE",
           help=f"the project's page, read first; validate reads it itself, through the bounded reader, before pip "
                f"or uv do: a larger page fails its targets (default: {PAGE_LIMIT // (1 << 20)}M)"),
    Option(flags=("--index-timeout",), commands=("validate",), parse=seconds, default=PAGE_TIMEOUT, metavar="SECONDS",
           help=f"read timeout; of that page, in seconds: a slower read fails its targets (default: {PAGE_TIMEOUT:g})"),
    Option(flags=("--pypi-wheels",), commands=("validate",), parse=input_dir, metavar="DIR",
           help="with --pypi: this candidate's PyPI-form wheels; served for this run alone from a fresh staging "
                "index on 127.0.0.1 (instead of --index-url: a long-lived staging server keeps an earlier "
                "candidate's file under the same name)"),
)

_MANIFEST = (
    Option(flags=("wheelhouse",), commands=("manifest",), parse=input_dir, metavar="WHEELHOUSE",
           help="the candidate's labelled wheels (what the test channel will serve)"),
    Option(flags=("--pypi-wheels",), commands=("manifest",), parse=input_dir, metavar="DIR",
           help="the candidate's PyPI-form wheels (`promote`'s output)"),
    Option(flags=("--output",), commands=("manifest",), parse=output_file, required=True, metavar="PATH",
           help="where the manifest is written"),
    Option(flags=("--channel",), commands=("manifest",), choices=CHANNELS, default=ChannelName.TEST.value,
           help="the channel the run publishes to (default: test, a candidate)"),
    Option(flags=("--tag",), commands=("manifest",), env="GITHUB_REF_NAME", metavar="TAG",
           help="the tag the run built (default: $GITHUB_REF_NAME), such as v2.15.0-rc2"),
    Option(flags=("--commit",), commands=("manifest",), env="GITHUB_SHA", metavar="SHA",
           help="the commit the run built (default: $GITHUB_SHA)"),
    Option(flags=("--run-id",), commands=("manifest",), env="GITHUB_RUN_ID", metavar="ID",
           help="the run's id (default: $GITHUB_RUN_ID)"),
)

_REBUILD = (
    Option(flags=("--manifest",), commands=("rebuild",), parse=input_file, required=True, metavar="PATH",
           help="the release manifest (`manifest`): the commit, the file and its build record"),
    Option(flags=("--target",), commands=("rebuild",), required=True, metavar="ID",
           help="the target to rebuild (its labelled file in the manifest)"),
    Option(flags=("--wheel",), commands=("rebuild",), parse=input_file, metavar="PATH",
           help="the released wheel (checked against the manifest's sha256; default: downloaded from --channel)"),
    Option(flags=("--channel",), commands=("rebuild",), choices=CHANNELS, default=ChannelName.TEST.value,
           help="without --wheel: the channel whose index (at the matrix's channels.index.base_url) serves the "
                "released file (default: test)"),
    Option(flags=("--repo",), commands=("rebuild",), parse=input_dir, default=Path("."), metavar="DIR",
           help="the git repo with the commit (default: .); --matrix is read at the commit, at its path relative "
                "to this repository"),
    Option(flags=("--work",), commands=("rebuild",), parse=output_dir, metavar="DIR",
           help="kept work folder: the commit checked out and built (default: a temporary one, removed)"),
    Option(flags=("--cache",), commands=("rebuild",), parse=output_dir, env=CACHE_ENV, from_env=toolchains_under,
           default=Computed(default_cache, "build's"),
           metavar="DIR", help="toolchain cache, shared (the compiler cache is the rebuild's own, empty: every "
                               "file is compiled again)"),
    Option(flags=("--json",), commands=("rebuild",), action="store_true", default=False,
           help="the comparison as JSON"),
)

_YANK = (
    Option(flags=("version",), commands=("yank",), metavar="VERSION",
           help="the version to yank (its public part: every label's file of it)"),
    Option(flags=("--channel",), commands=("yank", "repair-index", "history"), required=True, choices=CHANNELS,
           help="the channel whose pages are rewritten"),
    Option(flags=("--bucket",), commands=("yank", "rollback", "repair-index", "history"), required=True, metavar="URL",
           help="s3://BUCKET/ or s3://BUCKET/PREFIX/: the channels' site root"),
    Option(flags=("--reason",), commands=("rollback",), required=True, metavar="TEXT",
           help="why (PEP 592: installers show it to whoever pins the version)"),
    Option(flags=("--reason",), commands=("yank",), metavar="TEXT",
           help="why, needed unless --undo (PEP 592: installers show it to whoever pins the version)"),
    Option(flags=("--undo",), commands=("yank",), action="store_true", default=False,
           help="un-yank: list the version's files as installable again"),
    Option(flags=("--promotion",), commands=("rollback",), required=True, metavar="KEY",
           help="the promotion: its ledger entry id (builders history --channel release), its publish record in the "
                "bucket (publish-records/release/....json, printed by promote-release), or a local copy of it or of "
                "promote-release --record's file"),
    Option(flags=("--dry-run",), commands=("yank", "rollback", "repair-index"), action="store_true", default=False,
           help="print the pages that would be written; write nothing"),
)

_VERIFY_RELEASE = (
    Option(flags=("version",), commands=("verify-release",), metavar="VERSION",
           help="the version to check (its public part: every variant's file of it)"),
    Option(flags=("--channel",), commands=("verify-release",), choices=CHANNELS, default=ChannelName.RELEASE.value,
           help="the channel to read (default: release)"),
    Option(flags=("--site-url",), commands=("verify-release",), metavar="URL",
           help="the channels' site as served: each variant's index is URL + the channel's layout (default: "
                "the matrix's channels.index.base_url)"),
    Option(flags=("--manifest",), commands=("verify-release",), parse=input_file, metavar="PATH",
           help="the release manifest (each file's sha256; --ref defaults to its tag)"),
    Option(flags=("--repository",), commands=("verify-release",), required=True, metavar="OWNER/NAME",
           help="the repository whose workflow built the release"),
    Option(flags=("--workflow",), commands=("verify-release",), default="release.yml", metavar="FILE",
           help="the workflow that attested it (default: release.yml)"),
    Option(flags=("--ref",), commands=("verify-release",), metavar="REF",
           help="the ref built (default: refs/tags/ + the manifest's tag; none: any ref)"),
)

_PROMOTE_RELEASE = (
    Option(flags=("--validation",), commands=("promote-release",), parse=input_file, action="append", required=True,
           metavar="PATH",
           help="a validation record of the test channel (`validate --channel test`; repeatable: one per host)"),
    Option(flags=("--pypi-wheels",), commands=("promote-release",), parse=input_dir, metavar="DIR",
           help="the PyPI-form wheels (`promote`'s output)"),
    Option(flags=("--pypi-validation",), commands=("promote-release",), parse=input_file, action="append",
           default=[], metavar="PATH",
           help="a validation record of those wheels from the staging index (`validate --pypi`; repeatable)"),
    Option(flags=("--repository-url",), commands=("promote-release",), metavar="URL",
           help="the package server's upload URL (twine --repository-url)"),
    Option(flags=("--simple-url",), commands=("promote-release",), metavar="URL",
           help="the package server's simple index, asked whether the version is already there"),
    Option(flags=("--accept-not-runnable",), commands=("promote-release",), action="append", default=[],
           matrix="channels.promotion.accept_not_runnable", metavar="GLOB",
           help="targets released although no host could run their validation (repeatable); given, "
                "these globs replace the matrix's entries (default: the matrix's, each with its reason)"),
    Option(flags=("--file-limit-mb",), commands=("promote-release",), parse=above_zero, default=FILE_LIMIT_MB,
           matrix="channels.promotion.pypi_file_limit_mb", metavar="MB",
           help=f"the project's PyPI file limit; given, it wins over the matrix's (default: the matrix's, else "
                f"PyPI's {FILE_LIMIT_MB:g} MB)"),
    Option(flags=("--total-limit-gb",), commands=("promote-release",), parse=above_zero, default=TOTAL_LIMIT_GB,
           matrix="channels.promotion.pypi_total_limit_gb", metavar="GB",
           help=f"the budget for the release's PyPI files; given, it wins over the matrix's (default: the matrix's, "
                f"else PyPI's {TOTAL_LIMIT_GB:g} GB)"),
    Option(flags=("--audit-timeout",), commands=("promote-release",), parse=seconds, default=300.0, metavar="SECONDS",
           help="how long to wait for the package server to serve the uploaded files (default: 300; exit 21)"),
    Option(flags=("--dry-run",), commands=("promote-release",), action="store_true", default=False,
           help="the preflight and the plan only"),
    Option(flags=("--record",), commands=("promote-release",), parse=output_file, metavar="PATH",
           help="write the promotion record here"),
    Option(flags=("--manifest",), commands=("promote-release",), parse=input_file, required=True, metavar="PATH",
           help="the candidate's release manifest: exactly its files that passed validation (or whose target is "
                "accepted as not runnable) are released, nothing else the test channel holds"),
    Option(flags=("--expect-version",), commands=("promote-release",), metavar="VERSION",
           help="the dispatch's version: refused unless the manifest and the matrix have it"),
    Option(flags=("--expect-tag",), commands=("promote-release",), metavar="TAG",
           help="the tag of the run to release (as GitHub reports the run): refused unless the manifest's"),
    Option(flags=("--expect-commit",), commands=("promote-release",), metavar="SHA",
           help="the commit of the run to release: refused unless the manifest's"),
    Option(flags=("--expect-run-id",), commands=("promote-release",), metavar="ID",
           help="the id of the run to release: refused unless the manifest's"),
    Option(flags=("--trusted-publishing",), commands=("promote-release",), action="store_true", default=False,
           help="the PyPI upload is made by a job with trusted publishing (OIDC), not by this command: the "
                "preflight does not ask for twine credentials"),
)

_CACHE = (
    Option(flags=("verb",), commands=("cache",), choices=("list", "prune"),
           help="list: each entry's size, last use and whether a plan uses it; prune: killed runs' leftovers, "
                "entries unused for --older-than DAYS, then the least recently used until --max-size; never what a "
                "plan uses"),
    Option(flags=("--matrix",), commands=("cache",), parse=input_file, metavar="PATH",
           default=Computed(matrix_if_there, "./matrix.yaml if it exists, else none"),
           help="the matrix whose plans' entries are kept (default: ./matrix.yaml; prune needs one)"),
    Option(flags=("--source",), commands=("cache",), parse=input_dir, matrix="project.source", metavar="DIR",
           help="the source tree (default: project.source)"),
    Option(flags=("--output",), commands=("cache",), parse=output_dir, action="append", metavar="DIR",
           default=Computed(wheelhouse_if_there, "./wheelhouse if it exists, else none"),
           help="an output folder whose store to include (repeatable; default: ./wheelhouse if it exists)"),
    Option(flags=("--cache",), commands=("cache",), parse=output_dir, env=CACHE_ENV, from_env=toolchains_under,
           default=Computed(default_cache, "~/.cache/builders/toolchains ($XDG_CACHE_HOME for ~/.cache)"),
           metavar="DIR", help="toolchain cache as `build --cache` names it; ccache/ and uv/ are beside it (default: "
                               "$BUILDERS_CACHE or ~/.cache/builders/toolchains)"),
    Option(flags=("--kind",), commands=("cache",), action="append", choices=CACHE_KINDS, default=[],
           help="only entries of this kind (repeatable; default: all)"),
)

_PRUNE = (
    Option(flags=("--older-than",), commands=("cache",), parse=days, metavar="DAYS", group="prune",
           help="delete entries not used for more than DAYS days"),
    Option(flags=("--max-size",), commands=("cache",), parse=size, metavar="SIZE", group="prune",
           help="then delete the least recently used entries until the listed ones total SIZE (500M, 20G)"),
    Option(flags=("--dry-run",), commands=("cache",), action="store_true", default=False, group="prune",
           help="say what would be deleted, delete nothing"),
    Option(flags=("--no-keep",), commands=("cache",), action="store_true", default=False, group="prune",
           help="keep nothing the matrix references (no matrix needed)"),
)

_IMAGES = (
    Option(flags=("--dry-run",), commands=("images",), action="store_true", default=False,
           help="print each image's tag and build command, build nothing"),
)

_ENV_ONLY = (
    Option(flags=(), dest="rocm_source", commands=("build", "images", "cache"), env=ROCM_SOURCE_ENV,
           choices=ROCM_SOURCES, default=ROCM_SOURCES[0],
           help="where a ROCm image takes its toolkit from: therock (TheRock's index, the default) or debian "
                "(Debian's HIP packages, the matrix's toolkit.system_packages). Read by builders/families/rocm.py "
                "from the environment the engine passes, when it computes the image's build arguments"),
)

_CHECK_INDEX = (
    Option(flags=("--channel",), commands=("check-index",), required=True, choices=CHANNELS, help="the channel"),
    Option(flags=("--site-url",), commands=("check-index",), metavar="URL",
           help="the site as served (web front; default: channels.index.base_url)"),
    Option(flags=("--bucket",), commands=("check-index",), metavar="URL",
           help="the site root (coverage.json, .html)"),
    Option(flags=("--no-provenance",), commands=("check-index",), action="store_true", default=False,
           help="skip provenance (a channel published before PEP 740 pages)"),
    Option(flags=("--record",), commands=("check-index",), parse=output_file, metavar="PATH",
           help="a copy of coverage.json"),
)

_VERSION = Option(flags=("--version",), commands=(ROOT,), action="version", help="show program's version number and exit")

# Table order is --help order within a command.
OPTIONS: tuple[Option, ...] = (
    _VERSION, _MATRIX, *_SELECTION, *_PLAN, *_BUILD, *_CACHE, *_CONTAINERS, *_BUILD_AFTER, *_IMAGES, *_WHEEL_CHECKS,
    *_RELEASE, *_VARIANTS, *_PUBLISH, *_VALIDATE, *_MANIFEST, *_REBUILD, *_YANK, *_VERIFY_RELEASE, *_PROMOTE_RELEASE,
    *_CHECK_INDEX, *_PRUNE, *_ENV_ONLY,
)

ENVIRONMENT: tuple[EnvironmentFact, ...] = (
    EnvironmentFact(name="GITHUB_ACTIONS", read_by="builders/base/console.py, builders/pipeline/remotecache.py",
                    why="running under GitHub Actions: log groups and annotations instead of live status lines; a "
                        "CI run, where only the trusted contexts write the shared compile cache"),
    EnvironmentFact(name="GITHUB_STEP_SUMMARY", read_by="builders/base/console.py",
                    why="the job summary file the console appends its Markdown tables to"),
    EnvironmentFact(name="TERM", read_by="builders/base/console.py",
                    why="`dumb`: no live status lines redrawn in place"),
    EnvironmentFact(name="XDG_CACHE_HOME", read_by="builders/families/provision.py",
                    why="the folder above builders' caches when $BUILDERS_CACHE is unset (else $HOME/.cache)"),
    EnvironmentFact(name="HOME", read_by="builders/families/provision.py, builders/pipeline/interpreters.py",
                    why="the home folder of the environment given (the process's own only where that names "
                        "none), for the default cache and the interpreters pyenv and uv installed"),
    EnvironmentFact(name="SOURCE_DATE_EPOCH", read_by="builders/pipeline/context.py, builders/wheel/archive.py",
                    why="the build's timestamp when set, else the source tree's last commit"),
    EnvironmentFact(name="GITHUB_EVENT_NAME", read_by="builders/pipeline/remotecache.py",
                    why="with $GITHUB_REF and $GITHUB_ACTIONS: whether this run may write the shared compile cache "
                        "(the matrix's compile_cache.trusted), reads it only, or reads nothing (a pull request)"),
    EnvironmentFact(name="GITHUB_REF", read_by="builders/pipeline/remotecache.py",
                    why="the ref built: a trusted ref may write the shared compile cache (compile_cache.trusted.refs)"),
    EnvironmentFact(name=DIST_TOKEN, read_by="builders/pipeline/remotecache.py",
                    why="the sccache-dist scheduler's client token; written only into the client config in the "
                        "target's work folder (0600) while it builds"),
    EnvironmentFact(name=MODE_VAR, read_by="builders/pipeline/remotecache.py",
                    why="set in a build's environment (never read from the user): what this run may do with the "
                        "shared compile cache, read back for its statistics"),
    EnvironmentFact(name=UNAVAILABLE_VAR, read_by="builders/pipeline/remotecache.py",
                    why="set in a build's environment (never read from the user): why the shared compile cache was "
                        "not used (it did not answer), read back for the target's record"),
    EnvironmentFact(name="BUILDERS_RUN", read_by="builders/base/process.py",
                    why="set on every command builders starts (never read from the user): the watchdog finds a "
                        "run's stray processes by it in /proc after the run died"),
    EnvironmentFact(name="BUILDERS_LEDGER_WRITES", read_by="builders/channels/ledger.py",
                    why="how a channel's ledger head moves: conditional (the store enforces If-Match and "
                        "If-None-Match, as AWS S3 and moto do) or lease (a lock object with a fencing token, for a "
                        "store that ignores them, as rclone serve s3 does); unset: probed once per command"),
    *(EnvironmentFact(name=name, read_by="builders/channels/objectstore.py",
                      why=why)
      for name, why in (("AWS_ENDPOINT_URL_S3", "the S3-compatible store's endpoint, read as AWS clients read all of these"),
                        ("AWS_ENDPOINT_URL", "the endpoint when AWS_ENDPOINT_URL_S3 is unset (neither: AWS itself)"),
                        ("AWS_ACCESS_KEY_ID", "the store's access key"), ("AWS_SECRET_ACCESS_KEY", "the store's secret key"),
                        ("AWS_SESSION_TOKEN", "a temporary credential's token (OIDC)"),
                        ("AWS_PROFILE", "a named profile instead of the keys"),
                        ("AWS_REGION", "the region (default us-east-1)"),
                        ("AWS_DEFAULT_REGION", "the region when AWS_REGION is unset"))),
)


def _cores() -> int:
    import os

    return os.cpu_count() or 1


def for_command(command: str) -> tuple[Option, ...]:
    """The options ``command`` takes, in table order."""
    return tuple(o for o in OPTIONS if command in o.commands)


def env_names() -> frozenset[str]:
    """Every environment variable builders reads: the options' and the facts'."""
    return frozenset({o.env for o in OPTIONS if o.env} | {f.name for f in ENVIRONMENT})
