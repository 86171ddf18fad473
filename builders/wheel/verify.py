"""Static checks of one wheel against the target it claims to be.

Usable on any wheel, including ones built elsewhere: ``python -m builders verify WHEEL
--target ID``. Every finding is structured (code, message, file inside the wheel); any
finding fails the target.

A wheel is opened once and every member is read once, in one streaming pass that hashes it
for RECORD and, when it starts with the ELF magic, spools it to a bounded temporary file for
the ELF checks. That keeps a 700 MB torch wheel to seconds and a flat memory profile.

The archive is read defensively (:mod:`builders.wheel.archive`): unsafe member names, links,
encryption, unknown compression, sizes past the caps, a bad CRC are findings of
:func:`check_archive`, and a member unsafe to inflate is never inflated. A dist-info file that
cannot be read becomes a ``wheel-unreadable`` finding; only a file that is not a zip archive at
all raises :class:`~builders.base.errors.WheelError`.
"""

from __future__ import annotations

import fnmatch
import hashlib
import itertools
import posixpath
import tempfile
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cache, cached_property
from typing import IO

from packaging.requirements import Requirement
from packaging.tags import Tag
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from builders.base.errors import WheelError
from builders.families import Family, families, family_for
from builders.families.base import MadeBy
from builders.matrix import runpath
from builders.matrix.model import OS, Dropped, Matrix, Platform, PythonVersion, Variant
from builders.matrix.targets import Target
from builders.wheel import elf, metadata_rules, sbom
from builders.wheel.abi_audit import shape_findings
from builders.wheel.archive import RecordEntry, Wheel, WheelReader, record_digest
from builders.wheel.zipcheck import Finding


def driver_libs(extra: Iterable[Family] = ()) -> tuple[str, ...]:
    """They come with the GPU driver on the user's machine, never in a wheel."""
    return tuple(glob for family in families(extra) for glob in family.driver_libraries)


# An ELF member is spooled to disk past this size: enough for most .so files, flat for libtorch.
SPOOL_MAX = 8 << 20

# RECORD hashes a verifier may recompute (PEP 376/427: sha256 or stronger; never md5 or sha1).
RECORD_ALGORITHMS = frozenset({"sha256", "sha384", "sha512", "sha3_256", "sha3_384", "sha3_512", "blake2b", "blake2s"})

# Signature files sit next to RECORD and cannot list themselves in it (PEP 427).
RECORD_SIGNATURES = ("RECORD.jws", "RECORD.p7s")


@dataclass(frozen=True, kw_only=True)
class Expectation:
    """What the wheel must be; by default the target's labelled wheel."""

    target: Target
    dropped: tuple[Dropped, ...]
    version: Version | None = None
    requirements: tuple[Requirement, ...] | None = None
    # A PyPI wheel's: the matrix's other variants, whose runtime requirements must not install with it on its
    # platform (PyPI holds one Requires-Dist for every platform's wheel); empty for a labelled wheel.
    others: tuple[Variant, ...] = ()
    # builders' own build: the wheel must carry its SBOM (a wheel built elsewhere has its SBOM checked if it has one)
    sbom_required: bool = False

    @property
    def wanted_version(self) -> Version:
        return self.version or self.target.version

    @property
    def wanted_requirements(self) -> tuple[Requirement, ...] | None:
        """The whole Requires-Dist expected; None: the build's own, with the variant's in it."""
        return self.target.declared_requirements if self.requirements is None else self.requirements

    @property
    def wanted_metadata(self) -> metadata_rules.Wanted:
        project = self.target.project
        return metadata_rules.Wanted(project=project.name, version=self.wanted_version,
                                     requires_python=project.requires_python, requirements=self.wanted_requirements,
                                     dropped=self.dropped, required=self.target.variant.requirements,
                                     environment=marker_environment(self.target))


@dataclass(frozen=True, kw_only=True)
class Member:
    """One file of the wheel after its single streaming pass."""

    name: str
    size: int = 0
    hash: str = ""
    elf: elf.ElfInfo | None = None
    elf_error: str = ""
    made_by: tuple[MadeBy, ...] = ()  # what its device code records of the toolkit that compiled it
    problem: Finding | None = None  # refused (never inflated) or damaged (see check_archive)
    inflated: bool = True  # False: refused from the central directory, nothing was read

    @property
    def is_elf(self) -> bool:
        return self.elf is not None or bool(self.elf_error)


class Contents:
    """A wheel open for verification: its reader, and every member scanned once (on first use)."""

    def __init__(self, reader: WheelReader, device: Family | None = None) -> None:
        self.reader = reader
        self.device = device  # the family whose device code is read from each ELF file (None: not read)

    @cached_property
    def record(self) -> dict[str, RecordEntry]:
        return {e.path: e for e in self.reader.record()}

    @cached_property
    def members(self) -> dict[str, Member]:
        """Every file, hashed with the algorithm its RECORD entry names (sha256 if unlisted or
        if RECORD is unreadable: check_record reports that)."""
        try:
            algorithms = {path: _algorithm(e.hash) for path, e in self.record.items()}
        except WheelError:
            algorithms = {}
        return {i.filename: scan_member(self.reader, i, algorithms.get(i.filename, "sha256"), self.device)
                for i in self.reader.infos}

    @property
    def elves(self) -> list[Member]:
        return [m for m in self.members.values() if m.is_elf]

    @cached_property
    def basenames(self) -> frozenset[str]:
        return frozenset(posixpath.basename(i.filename) for i in self.reader.infos)


Check = Callable[[Contents, Expectation], Iterator[Finding]]


def verify(wheel: Wheel, expect: Expectation) -> list[Finding]:
    """Raises :class:`WheelError` only for a file that is not a readable zip archive."""
    with wheel.open() as reader:
        return run_checks(Contents(reader, family_for(expect.target.variant.accelerator)), expect, CHECKS)


def run_checks(contents: Contents, expect: Expectation, checks: Iterable[Check]) -> list[Finding]:
    """Every check's findings, in order; a check that cannot read the dist-info file it needs
    adds one ``wheel-unreadable`` finding (once per distinct reason) and the others go on."""
    findings: list[Finding] = []
    for check in checks:
        try:
            findings.extend(check(contents, expect))
        except WheelError as exc:
            unreadable = Finding(code="wheel-unreadable", message=str(exc))
            if unreadable not in findings:
                findings.append(unreadable)
    return findings


def scan_member(reader: WheelReader, info: zipfile.ZipInfo, algorithm: str, device: Family | None = None) -> Member:
    """Hash one member in chunks; an ELF member is spooled in the same pass and parsed after (and its device
    code read by ``device``). A member refused from the central directory is not read at all."""
    digest = hashlib.new(algorithm)
    stream = reader.member_stream(info)
    if stream.refusal is not None:
        return Member(name=info.filename, problem=stream.refusal, inflated=False)
    chunks = iter(stream)
    first = next(chunks, b"")
    rest = itertools.chain([first], chunks)
    if not first.startswith(elf.MAGIC):
        size = _consume(rest, digest)
        return Member(name=info.filename, size=size, hash=record_digest(digest), problem=stream.problem)
    with tempfile.SpooledTemporaryFile(max_size=SPOOL_MAX) as spool:
        size = _consume(rest, digest, spool)
        spool.seek(0)
        try:
            parsed, error = elf.parse(spool), ""
        except elf.ElfParseError as exc:
            parsed, error = None, str(exc)
        made = _made_by(device, spool) if parsed is not None and device is not None else ()
    if stream.problem is not None:  # a damaged member's ELF headers mean nothing
        return Member(name=info.filename, size=size, hash=record_digest(digest), problem=stream.problem)
    return Member(name=info.filename, size=size, hash=record_digest(digest), elf=parsed, elf_error=error,
                  made_by=made)


def _made_by(device: Family, spool: IO[bytes]) -> tuple[MadeBy, ...]:
    """What ``device`` reads of the toolkit in the ELF file; nothing where its sections cannot be read (a stripped
    file has no section headers: the checks of its program headers still run)."""
    try:
        spool.seek(0)
        return device.made_by(spool)
    except Exception:  # noqa: BLE001 - pyelftools raises many kinds on damaged sections; bad-elf covers the headers
        return ()


def _consume(chunks: Iterable[bytes], digest: hashlib._Hash, sink: IO[bytes] | None = None) -> int:
    size = 0
    for chunk in chunks:
        digest.update(chunk)
        size += len(chunk)
        if sink is not None:
            sink.write(chunk)
    return size


def _algorithm(record_hash: str) -> str:
    """The hash RECORD names for an entry; sha256 (which then will not match) for anything weaker."""
    name = record_hash.partition("=")[0]
    return name if name in RECORD_ALGORITHMS else "sha256"


# --- the archive itself --------------------------------------------------------------------------


def check_archive(wheel: Contents, expect: Expectation) -> Iterator[Finding]:
    """What the central directory shows (names, links, flags, compression, declared sizes), then
    what inflating showed (bad CRC, corrupt stream, a size that lied)."""
    yield from wheel.reader.problems
    for member in wheel.members.values():
        if member.problem is not None and member.inflated:
            yield member.problem


def integrity(wheel: Wheel) -> list[Finding]:
    """The checks that need no target: the archive, and every member against RECORD."""
    with wheel.open() as reader:
        return run_checks(Contents(reader), None, (check_archive, check_record))  # type: ignore[arg-type]


# --- name, tags, version ---------------------------------------------------------------------


def check_name_and_tags(wheel: Contents, expect: Expectation) -> Iterator[Finding]:
    r, t = wheel.reader, expect.target
    for want in sorted(t.tags, key=str):  # a shared abi3.abi3t wheel: both of its tags
        yield from _filename_tag_findings(r.tags, want, t.tags)
    if r.wheel_tags != r.tags:
        yield Finding(code="wheel-file-tags", message=f"WHEEL Tag lines {_tags(r.wheel_tags)} != file name tags {_tags(r.tags)}",
                      file=f"{r.dist_info}/WHEEL")
    if r.version != expect.wanted_version:
        yield Finding(code="version-mismatch", message=f"version {r.version} != expected {expect.wanted_version}")
    if canonicalize_name(r.name) != t.project.canonical_name:
        yield Finding(code="name-mismatch", message=f"distribution {r.name!r} != {t.project.name!r} (PEP 503-normalised)")
    yield from _dist_info_findings(r)


def _dist_info_findings(r: WheelReader) -> Iterator[Finding]:
    """The .dist-info folder names the distribution and version the file name does (a renamed file does not)."""
    name, _, version = r.dist_info.removesuffix(".dist-info").partition("-")
    if canonicalize_name(name) != canonicalize_name(r.name) or not _same_version(version, r.version):
        yield Finding(code="dist-info-mismatch", message=f"folder {r.dist_info!r} is not {r.name}-{r.version}.dist-info: "
                      "the file was renamed after it was built", file=r.dist_info)


def _same_version(text: str, version: Version) -> bool:
    try:
        return Version(text) == version
    except InvalidVersion:
        return False


def _filename_tag_findings(tags: frozenset[Tag], want: Tag, siblings: frozenset[Tag] = frozenset()) -> Iterator[Finding]:
    """A compressed tag set passes when it includes the target's tag and adds only siblings of it (of the
    target's other tags, ``siblings``: a shared ``abi3.abi3t`` wheel has two)."""
    if want not in tags:
        yield Finding(code="tag-mismatch", message=f"file name tags {_tags(tags)} do not include the target's {want}")
    foreign = [t for t in tags if not any(_same_kind(t, w) for w in {want, *siblings})]
    if foreign and want != min({want, *siblings}, key=str):
        return  # said once, for the first of the target's tags
    if foreign:
        family, arch = platform_kind(want.platform)
        yield Finding(code="tag-mismatch", message=f"file name tags {_tags(foreign)} are not for "
                      f"{want.interpreter}-{want.abi} on {family} {arch}")


def _same_kind(tag: Tag, want: Tag) -> bool:
    return (tag.interpreter, tag.abi) == (want.interpreter, want.abi) and platform_kind(tag.platform) == platform_kind(want.platform)


def platform_kind(platform: str) -> tuple[str, str]:
    """(family, arch) of a platform tag: ``manylinux_2_27_x86_64`` and ``manylinux2014_x86_64``
    are both ("manylinux", "x86_64"); ``win_amd64`` is ("win", "amd64")."""
    for family in ("manylinux", "musllinux", "macosx"):
        if platform.startswith(family + "_"):
            return family, platform.split("_", 3)[-1]
    head, _, arch = platform.partition("_")
    return head.rstrip("0123456789"), arch


# --- METADATA and RECORD -------------------------------------------------------------------------


# What each METADATA rule's problem is called here (builders.wheel.metadata_rules holds the rules).
METADATA_CODES = {"name": "name-mismatch", "version": "version-mismatch", "requires-python": "requires-python-mismatch",
                  "requires-python-missing": "requires-python-missing", "requires-python-invalid": "requires-python-invalid",
                  "requires-python-admits-dropped": "requires-python-admits-dropped",
                  "requires-dist": "requirements-mismatch", "requires-dist-invalid": "requirements-invalid"}


def check_metadata(wheel: Contents, expect: Expectation) -> Iterator[Finding]:
    where = f"{wheel.reader.dist_info}/METADATA"
    for p in metadata_rules.problems(metadata_rules.Headers.of(wheel.reader.metadata), expect.wanted_metadata):
        yield Finding(code=METADATA_CODES[p.code], message=p.message, file=where)


def check_record(wheel: Contents, expect: Expectation) -> Iterator[Finding]:
    dist_info = wheel.reader.dist_info
    unlisted_ok = {f"{dist_info}/{s}" for s in RECORD_SIGNATURES}
    for name, member in wheel.members.items():
        if member.problem is not None:  # refused or damaged: check_archive says so
            continue
        entry = wheel.record.get(name)
        if entry is None:
            if name not in unlisted_ok:
                yield Finding(code="record-unlisted", message="file is not listed in RECORD", file=name)
        elif name != f"{dist_info}/RECORD" and (entry.hash != member.hash or entry.size != str(member.size)):
            yield Finding(code="record-mismatch", message="hash or size differs from RECORD", file=name)
    for name in sorted(set(wheel.record) - set(wheel.members)):
        yield Finding(code="record-missing", message="listed in RECORD but absent", file=name)


# --- extension modules -------------------------------------------------------------------------


def check_extension_modules(wheel: Contents, expect: Expectation) -> Iterator[Finding]:
    """Every module the project declares is a file with an extension suffix this target imports."""
    names = {i.filename for i in wheel.reader.infos}
    suffixes = extension_suffixes(expect.target)
    for module in expect.target.extension_modules:
        base = module.replace(".", "/")
        if not any(base + suffix in names for suffix in suffixes):
            yield Finding(code="extension-missing", message=f"extension module {module} is not in the wheel "
                          f"(looked for {base} + one of {', '.join(suffixes)})")


def extension_suffixes(target: Target) -> tuple[str, ...]:
    """The file suffixes CPython imports an extension module from on ``target`` (EXTENSION_SUFFIXES)."""
    py, platform = target.python, target.platform
    if target.shape.shared:  # loads on every Python of the wheel: the stable ABI's names, or a plain one
        return (".abi3.so", ".so") if platform.os is not OS.WINDOWS else (".pyd",)
    if platform.os is OS.WINDOWS:
        return (f".{py.abi}-{platform.wheel_platform}.pyd", ".pyd")
    soabi = f"cpython-{py.abi.removeprefix('cp')}"
    host = "darwin" if platform.os is OS.MACOS else _multiarch(platform.arch, platform.wheel_platform)
    stable = () if py.free_threaded else (".abi3.so",)
    return (f".{soabi}-{host}.so", *stable, ".so")


def _multiarch(arch: str, wheel_platform: str) -> str:
    """The Linux multiarch triplet in CPython's SOABI suffix (``x86_64-linux-gnu``)."""
    arch = elf.normalise_arch(arch)
    libc = "musl" if wheel_platform.startswith("musllinux") else "gnu"
    special = {"i686": "i386", "ppc64le": "powerpc64le", "ppc64": "powerpc64"}
    if arch == "armv7l":
        return f"arm-linux-{libc}eabihf"
    return f"{special.get(arch, arch)}-linux-{libc}"


# --- top-level folders ------------------------------------------------------------------------


def check_top_level(wheel: Contents, expect: Expectation) -> Iterator[Finding]:
    """Every top-level folder is one of the project's packages (import_name, ``packages``, the extension modules'),
    its ``.dist-info`` or ``.data``, or auditwheel's ``<name>.libs``: a ``lib/`` or ``include/`` that a CMake
    install rule put at the wheel's root lands beside every other distribution in site-packages."""
    allowed = expect.target.project.top_level
    folders = sorted({name.split("/", 1)[0] for name in wheel.members if "/" in name})
    for top in folders:
        if top in allowed or top.endswith((".dist-info", ".data", ".libs")):
            continue
        yield Finding(code="stray-top-level", message=f"installs the top-level folder {top}/ into site-packages, "
                      f"outside the project's packages ({', '.join(sorted(allowed))}): install it inside the package, "
                      "or declare it in project.packages", file=f"{top}/")


# --- ELF files ----------------------------------------------------------------------------------


def check_libraries(wheel: Contents, expect: Expectation) -> Iterator[Finding]:
    """Every ELF file (found by magic bytes, executables too): what it bundles, needs, and where it looks."""
    allowed = policy_libs(expect.target.platform.wheel_platform)
    for member in wheel.elves:
        yield from _bundled_findings(member.name, expect.target.variant)
        if member.elf is None:
            yield Finding(code="bad-elf", message=f"cannot parse ELF: {member.elf_error}", file=member.name)
            continue
        yield from _machine_findings(member.name, member.elf, expect.target)
        yield from _host_cpu_findings(member.name, member.elf)
        yield from _rpath_findings(member.name, member.elf)
        yield from _needed_findings(member.name, member.elf, wheel.basenames, allowed, expect.target)


def _bundled_findings(name: str, variant: Variant) -> Iterator[Finding]:
    base = posixpath.basename(name)
    if _matches(base, driver_libs((family_for(variant.accelerator),))):
        yield Finding(code="driver-bundled", message="GPU driver library is bundled; it must come from the driver", file=name)
    elif _matches(base, variant.exclude_libs):
        yield Finding(code="accelerator-bundled",
                      message="accelerator library is bundled; it must come from the runtime requirement", file=name)


def _machine_findings(name: str, info: elf.ElfInfo, target: Target) -> Iterator[Finding]:
    want = elf.normalise_arch(target.platform.arch)
    if info.arch != want:
        have = info.arch or "an unknown architecture"
        yield Finding(code="elf-machine-mismatch", message=f"ELF for {have} ({info.machine}, {info.elf_class}-bit) "
                      f"in a wheel for {want}", file=name)


def _host_cpu_findings(name: str, info: elf.ElfInfo) -> Iterator[Finding]:
    """Code compiled for the build host's CPU (-march=native) passes every check there and dies with SIGILL on
    an older CPU; the compiler's own record of its options says so (where it kept one: ``-g``)."""
    if info.host_cpu_flags:
        yield Finding(code="host-cpu-only", message="compiled for the build host's CPU only (-march=native; the "
                      f"compiler recorded: {info.host_cpu_flags[:160]}...): build for the platform's baseline and "
                      "select wider instructions at run time", file=name)


def _rpath_findings(name: str, info: elf.ElfInfo) -> Iterator[Finding]:
    bad = [p for p in info.rpaths if not elf.is_origin_relative(p)]
    if bad:
        yield Finding(code="bad-rpath", message=f"RPATH/RUNPATH entries {bad} are absolute or point at the build tree",
                      file=name)


def _needed_findings(name: str, info: elf.ElfInfo, bundled: frozenset[str], allowed: frozenset[str],
                     target: Target) -> Iterator[Finding]:
    variant = target.variant
    for lib in info.needed:
        if lib in bundled or lib in allowed or _is_system(lib, info, variant):
            continue
        if _matches(lib, variant.exclude_libs):
            if variant.runtime_dirs and not _reaches_runtime(name, info, variant.runtime_dirs):
                yield Finding(code="missing-rpath", message=f"needs {lib} from a runtime requirement, but no RUNPATH "
                              f"entry of it ({':'.join(info.rpaths) or 'none'}) reaches a runtime folder "
                              f"({', '.join(variant.runtime_dirs)}, relative to site-packages) from where it lies "
                              "in a venv", file=name)
            continue
        yield Finding(code="unresolved-library", message=f"needs {lib}: not bundled, not a declared runtime library, "
                      f"not allowed by {target.platform.wheel_platform}", file=name)


def _reaches_runtime(name: str, info: elf.ElfInfo, runtime_dirs: Iterable[str]) -> bool:
    """Whether one of ``info``'s RUNPATH entries, from where member ``name`` installs, names a runtime folder
    (the loader then finds the runtime wheel's library there, whatever the environment's path)."""
    where = runpath.site_dir(name)
    if where is None:
        return False
    return bool({runpath.reached(where, e) for e in info.rpaths} & set(runtime_dirs))


def _is_system(lib: str, info: elf.ElfInfo, variant: Variant) -> bool:
    """The loader (auditwheel's rule, or this file's own PT_INTERP), the driver, libpython."""
    own_loader = info.interpreter is not None and lib == posixpath.basename(info.interpreter)
    driver = _matches(lib, driver_libs((family_for(variant.accelerator),)))
    return own_loader or elf.is_loader(lib) or driver or lib.startswith("libpython")


# --- the variant label ------------------------------------------------------------------------


def check_label(wheel: Contents, expect: Expectation) -> Iterator[Finding]:
    """An accelerator label the contents back: some ELF file needs one of the variant's runtime
    libraries. A CPU build renamed ``+cu132`` needs none of them and is refused."""
    variant = expect.target.variant
    if not variant.exclude_libs or any(m.problem for m in wheel.members.values()):
        return  # a member left unread (check_archive says why) could be the one that needs them
    needed = {lib for m in wheel.elves if m.elf for lib in m.elf.needed}
    if not any(_matches(lib, variant.exclude_libs) for lib in needed):
        yield Finding(code="label-contradicted", message=f"labelled {variant.label!r} but no ELF file needs any of its "
                      f"runtime libraries ({', '.join(variant.exclude_libs)}): a build for another variant")


def check_toolkit(wheel: Contents, expect: Expectation) -> Iterator[Finding]:
    """The device code was compiled by the matrix's toolkit: every release the code records (CUDA: each cubin's
    ptxas and nvlink) is the variant's. A build that found another toolkit (one on the build host's PATH) made
    these bytes, whatever the label says."""
    variant = expect.target.variant
    display = family_for(variant.accelerator).accelerator.facts.display
    for member in wheel.elves:
        other = [m for m in member.made_by if m.release != variant.version]
        if other and variant.version:
            found = ", ".join(sorted({m.release for m in other}))
            what = ", ".join(m.what for m in other[:4]) + (", ..." if len(other) > 4 else "")
            yield Finding(code="toolkit-mismatch", message=f"device code compiled by {display} {found} ({what}); "
                          f"the matrix's toolkit for {variant.label} is {display} {variant.version}: the build found "
                          "another toolkit than the pinned one", file=member.name)


# --- excluded libraries and their providers ----------------------------------------------------


def check_providers(wheel: Contents, expect: Expectation) -> Iterator[Finding]:
    """An excluded library an ELF file needs must come from a requirement the wheel declares
    (or from the system package the matrix names for it in ``system_libs``)."""
    target = expect.target
    declared = installed_requirements(wheel.reader.requires_dist, target)
    for lib, users in sorted(_excluded_needs(wheel, target.variant).items()):
        if target.variant.system_package_for(lib):
            continue
        provider = target.variant.provider_for(lib)
        where = f"needed by {len(users)} ELF file(s)"
        if provider is None:
            yield Finding(code="unprovided-library", message=f"{lib} is excluded ({where}) but no requirement "
                          "is declared to provide it", file=users[0])
        elif not any(_provides(req, provider) for req in declared):
            yield Finding(code="unprovided-library", message=f"{lib} is excluded ({where}) and must come from "
                          f"{provider}, which Requires-Dist does not declare for {target.id}", file=users[0])


def _excluded_needs(wheel: Contents, variant: Variant) -> dict[str, list[str]]:
    """Excluded (not bundled) library -> the ELF members that need it."""
    needs: dict[str, list[str]] = {}
    for member in wheel.elves:
        for lib in member.elf.needed if member.elf else ():
            if lib not in wheel.basenames and _matches(lib, variant.exclude_libs):
                needs.setdefault(lib, []).append(member.name)
    return needs


def _provides(declared: Requirement, provider: Requirement) -> bool:
    return canonicalize_name(declared.name) == canonicalize_name(provider.name) and provider.extras <= declared.extras


def installed_requirements(requirements: Iterable[Requirement], target: Target) -> list[Requirement]:
    """The requirements pip installs with the wheel on ``target`` (markers true, no extra asked for)."""
    env = marker_environment(target)
    return [r for r in requirements if installs(r, env)]


def _evaluate(requirement: Requirement, env: dict[str, str]) -> bool:
    """A marker that cannot be evaluated (``python_version ~= "x"``) installs nothing."""
    try:
        return bool(requirement.marker and requirement.marker.evaluate(env))
    except ValueError:  # packaging's UndefinedComparison, InvalidVersion
        return False


def installs(requirement: Requirement, env: dict[str, str]) -> bool:
    """Whether pip installs ``requirement`` where markers see ``env`` (no marker: everywhere)."""
    return requirement.marker is None or _evaluate(requirement, env)


def marker_environment(target: Target) -> dict[str, str]:
    """PEP 508 marker values of the target's platform and Python (not of this host)."""
    return platform_environment(target.platform, target.python)


def platform_environment(platform: Platform, python: PythonVersion) -> dict[str, str]:
    """PEP 508 marker values of ``platform`` under ``python``. ``platform_machine`` is the matrix's ``arch``, which
    the matrix spells as ``platform.machine()`` does on that system (``AMD64`` on Windows, ``arm64`` on macOS)."""
    system = {OS.LINUX: "Linux", OS.WINDOWS: "Windows", OS.MACOS: "Darwin"}[platform.os]
    return {
        "platform_system": system,
        "sys_platform": {"Linux": "linux", "Windows": "win32", "Darwin": "darwin"}[system],
        "os_name": "nt" if system == "Windows" else "posix",
        "platform_machine": platform.arch,
        "python_version": python.release,
        "python_full_version": f"{python.release}.0",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "extra": "",
    }


# --- a PyPI wheel's requirements ----------------------------------------------------------------


def check_pypi_requirements(wheel: Contents, expect: Expectation) -> Iterator[Finding]:
    """A PyPI wheel installs no other variant's runtime on its own platform (a CPU wheel that pulls CUDA)."""
    where = f"{wheel.reader.dist_info}/METADATA"
    for message in foreign_requirement_problems(expect.target, expect.others, wheel.reader.requires_dist):
        yield Finding(code="pypi-foreign-requirement", message=message, file=where)


def pypi_requirement_problems(matrix: Matrix, target: Target, requires_dist: Iterable[Requirement]) -> list[str]:
    """One message per requirement of another variant that would install on ``target``'s platform."""
    return foreign_requirement_problems(target, other_variants(matrix, target), requires_dist)


def other_variants(matrix: Matrix, target: Target) -> tuple[Variant, ...]:
    """Every variant of the matrix but ``target``'s: those whose runtime its PyPI wheel must not install."""
    return tuple(v for v in matrix.variants if v.label != target.variant.label)


def foreign_requirement_problems(target: Target, others: Iterable[Variant],
                                 requires_dist: Iterable[Requirement]) -> list[str]:
    """One message per requirement that is a runtime requirement of one of ``others`` (whatever its marker says),
    not the project's nor the target's own variant's, and that installs on ``target``."""
    env = marker_environment(target)
    own = {metadata_rules.requirement_identity(r) for r in target.variant.requirements}
    project = {metadata_rules.requirement_key(r) for r in target.project.requirements}
    owners = _owners(others)
    out = []
    for req in requires_dist:
        identity = metadata_rules.requirement_identity(req)
        labels = owners.get(identity, ())
        if labels and identity not in own and metadata_rules.requirement_key(req) not in project and installs(req, env):
            out.append(f"Requires-Dist {str(req)!r} installs on {target.platform.name} (Python {target.python}), whose "
                       f"PyPI wheel is {target.variant.label!r}'s, but it is the runtime requirement of "
                       f"{', '.join(map(repr, labels))}: its marker must keep it to the platforms where that variant "
                       "is the PyPI default")
    return out


def _owners(variants: Iterable[Variant]) -> dict[tuple[object, ...], tuple[str, ...]]:
    """A runtime requirement (less its marker) -> the labels of the variants that declare it."""
    out: dict[tuple[object, ...], tuple[str, ...]] = {}
    for variant in variants:
        for req in variant.requirements:
            key = metadata_rules.requirement_identity(req)
            out[key] = (*out.get(key, ()), variant.label)
    return out


# --- the SBOM ------------------------------------------------------------------------------------


def check_sbom(wheel: Contents, expect: Expectation) -> Iterator[Finding]:
    """builders' SBOM against the wheel it is in: every bundled library, Requires-Dist and declared component
    listed, nothing listed that the wheel lacks (:func:`builders.wheel.sbom.findings`)."""
    reader = wheel.reader
    where = f"{reader.dist_info}/{sbom.SBOM_NAME}"
    if where not in wheel.members:
        if expect.sbom_required:
            yield Finding(code="sbom-missing", message=f"the wheel has no {sbom.SBOM_NAME} (PEP 770)", file=where)
        return
    try:
        doc = sbom.parse(reader.read(where))
    except ValueError as exc:
        yield Finding(code="sbom-unreadable", message=f"not a CycloneDX JSON SBOM: {exc}", file=where)
        return
    record = tuple(e for e in reader.record() if e.path != where)
    facts = sbom.WheelFacts(name=reader.wheel.name, version=str(reader.wheel.version), record=record,
                            requires_dist=reader.requires_dist)
    yield from sbom.findings(doc, facts, expect.target.project.sbom_components, where)


# --- size and policy -----------------------------------------------------------------------------


def check_size(wheel: Contents, expect: Expectation) -> Iterator[Finding]:
    """The wheel within its budget: the variant's for its platform, else the project's (the key is named)."""
    budget = expect.target.size_budget
    size = wheel.reader.size
    if budget is not None and size > budget[0] * 1024 * 1024:
        yield Finding(code="size-budget", message=f"{wheel.reader.path.name} is "
                      f"{size / 2**20:.1f} MiB, over its budget of {budget[0]:g} MiB ({budget[1]})")


def check_shape(wheel: Contents, expect: Expectation) -> Iterator[Finding]:
    """A shared wheel's binaries against its tag (:mod:`builders.wheel.abi_audit`)."""
    infos = {i.filename: i for i in wheel.reader.infos}
    yield from shape_findings(expect.target.shape, [m.name for m in wheel.elves],
                              lambda name: wheel.reader.stream(infos[name]))


CHECKS: tuple[Check, ...] = (check_archive, check_name_and_tags, check_metadata, check_record, check_extension_modules,
                             check_top_level, check_libraries, check_label, check_toolkit, check_providers,
                             check_pypi_requirements, check_sbom, check_size, check_shape)


@cache
def policy_libs(wheel_platform: str) -> frozenset[str]:
    """System libraries a manylinux policy allows a wheel to need (auditwheel's policy data)."""
    family, arch = platform_kind(wheel_platform)
    if family not in ("manylinux", "musllinux"):
        return frozenset()
    from auditwheel.architecture import Architecture
    from auditwheel.libc import Libc
    from auditwheel.policy import WheelPolicies

    libc = Libc.MUSL if family == "musllinux" else Libc.GLIBC
    try:
        policy = WheelPolicies(libc=libc, arch=Architecture(arch)).get_policy_by_name(wheel_platform)
    except (LookupError, ValueError):
        return frozenset()
    return frozenset(policy.whitelist)


def _matches(name: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def _tags(tags: Iterable[object]) -> str:
    return ",".join(sorted(map(str, tags))) or "(none)"
