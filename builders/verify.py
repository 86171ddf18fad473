"""Static checks of one wheel against the target it claims to be.

Usable on any wheel, including ones built elsewhere: ``python -m builders verify WHEEL
--target ID``. Every finding is structured (code, message, file inside the wheel); any
finding fails the target.

A wheel is opened once and every member is read once, in one streaming pass that hashes it
for RECORD and, when it starts with the ELF magic, spools it to a bounded temporary file for
the ELF checks. That keeps a 700 MB torch wheel to seconds and a flat memory profile.
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
from packaging.specifiers import SpecifierSet
from packaging.tags import Tag
from packaging.utils import canonicalize_name
from packaging.version import Version

from . import elf
from .model import OS, Dropped, Variant
from .policy import dropped_admitted_by
from .targets import Target
from .wheels import RecordEntry, Wheel, WheelReader, record_digest

# Driver-side libraries come with the GPU driver on the user's machine, never in a wheel.
DRIVER_LIBS = ("libcuda.so*", "libnvidia-*.so*", "libhsakmt.so*", "libdrm_amdgpu.so*", "libze_intel_gpu.so*",
               "libigdrcl.so*", "libamdhip64_driver*")

# An ELF member is spooled to disk past this size: enough for most .so files, flat for libtorch.
SPOOL_MAX = 8 << 20

# RECORD hashes a verifier may recompute (PEP 376/427: sha256 or stronger; never md5 or sha1).
RECORD_ALGORITHMS = frozenset({"sha256", "sha384", "sha512", "sha3_256", "sha3_384", "sha3_512", "blake2b", "blake2s"})

# Signature files sit next to RECORD and cannot list themselves in it (PEP 427).
RECORD_SIGNATURES = ("RECORD.jws", "RECORD.p7s")


@dataclass(frozen=True, kw_only=True)
class Finding:
    code: str
    message: str
    file: str = ""

    def __str__(self) -> str:
        where = f" [{self.file}]" if self.file else ""
        return f"{self.code}: {self.message}{where}"

    def to_json(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message, "file": self.file}


@dataclass(frozen=True, kw_only=True)
class Expectation:
    """What the wheel must be; by default the target's labelled wheel."""

    target: Target
    dropped: tuple[Dropped, ...]
    version: Version | None = None
    requirements: tuple[Requirement, ...] | None = None

    @property
    def wanted_version(self) -> Version:
        return self.version or self.target.version

    @property
    def wanted_requirements(self) -> tuple[Requirement, ...]:
        return self.target.requirements if self.requirements is None else self.requirements


@dataclass(frozen=True, kw_only=True)
class Member:
    """One file of the wheel after its single streaming pass."""

    name: str
    size: int
    hash: str
    elf: elf.ElfInfo | None = None
    elf_error: str = ""

    @property
    def is_elf(self) -> bool:
        return self.elf is not None or bool(self.elf_error)


class Contents:
    """A wheel open for verification: its reader, and every member scanned once (on first use)."""

    def __init__(self, reader: WheelReader) -> None:
        self.reader = reader

    @cached_property
    def record(self) -> dict[str, RecordEntry]:
        return {e.path: e for e in self.reader.record()}

    @cached_property
    def members(self) -> dict[str, Member]:
        """Every file, hashed with the algorithm its RECORD entry names (sha256 if unlisted)."""
        algorithms = {path: _algorithm(e.hash) for path, e in self.record.items()}
        return {i.filename: scan_member(self.reader, i, algorithms.get(i.filename, "sha256")) for i in self.reader.infos}

    @property
    def elves(self) -> list[Member]:
        return [m for m in self.members.values() if m.is_elf]

    @cached_property
    def basenames(self) -> frozenset[str]:
        return frozenset(posixpath.basename(i.filename) for i in self.reader.infos)


Check = Callable[[Contents, Expectation], Iterator[Finding]]


def verify(wheel: Wheel, expect: Expectation) -> list[Finding]:
    """All findings for ``wheel``; an empty list means it is what the matrix promised."""
    with wheel.open() as reader:
        contents = Contents(reader)
        return [f for check in CHECKS for f in check(contents, expect)]


def scan_member(reader: WheelReader, info: zipfile.ZipInfo, algorithm: str) -> Member:
    """Hash one member in chunks; an ELF member is spooled in the same pass and parsed after."""
    digest = hashlib.new(algorithm)
    chunks = reader.stream(info)
    first = next(chunks, b"")
    rest = itertools.chain([first], chunks)
    if not first.startswith(elf.MAGIC):
        return Member(name=info.filename, size=_consume(rest, digest), hash=record_digest(digest))
    with tempfile.SpooledTemporaryFile(max_size=SPOOL_MAX) as spool:
        size = _consume(rest, digest, spool)
        spool.seek(0)
        try:
            parsed, error = elf.parse(spool), ""
        except elf.ElfParseError as exc:
            parsed, error = None, str(exc)
    return Member(name=info.filename, size=size, hash=record_digest(digest), elf=parsed, elf_error=error)


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


# --- name, tags, version ---------------------------------------------------------------------


def check_name_and_tags(wheel: Contents, expect: Expectation) -> Iterator[Finding]:
    r, t = wheel.reader, expect.target
    yield from _filename_tag_findings(r.tags, t.tag)
    if r.wheel_tags != r.tags:
        yield Finding(code="wheel-file-tags", message=f"WHEEL Tag lines {_tags(r.wheel_tags)} != file name tags {_tags(r.tags)}",
                      file=f"{r.dist_info}/WHEEL")
    if r.version != expect.wanted_version:
        yield Finding(code="version-mismatch", message=f"version {r.version} != expected {expect.wanted_version}")
    if canonicalize_name(r.name) != t.project.canonical_name:
        yield Finding(code="name-mismatch", message=f"distribution {r.name!r} != {t.project.name!r} (PEP 503-normalised)")


def _filename_tag_findings(tags: frozenset[Tag], want: Tag) -> Iterator[Finding]:
    """A compressed tag set passes when it includes the target's tag and adds only siblings of it."""
    if want not in tags:
        yield Finding(code="tag-mismatch", message=f"file name tags {_tags(tags)} do not include the target's {want}")
    foreign = [t for t in tags if not _same_kind(t, want)]
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


def check_metadata(wheel: Contents, expect: Expectation) -> Iterator[Finding]:
    meta, where = wheel.reader.metadata, f"{wheel.reader.dist_info}/METADATA"
    if meta.get("Version") != str(expect.wanted_version):
        yield Finding(code="version-mismatch", message=f"METADATA Version {meta.get('Version')} != {expect.wanted_version}", file=where)
    if canonicalize_name(meta.get("Name") or "") != expect.target.project.canonical_name:
        yield Finding(code="name-mismatch", message=f"METADATA Name {meta.get('Name')!r} != {expect.target.project.name!r}",
                      file=where)
    requires = SpecifierSet(meta.get("Requires-Python", ""))
    if not meta.get("Requires-Python"):
        yield Finding(code="requires-python-missing", message="no Requires-Python", file=where)
    for d in dropped_admitted_by(requires, expect.dropped):
        yield Finding(code="requires-python-admits-dropped",
                      message=f"Requires-Python {requires} admits Python {d.value}: {d.describe()}", file=where)
    yield from _requirement_findings(wheel.reader.requires_dist, expect.wanted_requirements, where)


def _requirement_findings(have: Iterable[Requirement], want: Iterable[Requirement], where: str) -> Iterator[Finding]:
    """Requires-Dist compared as sets of normalised requirement strings."""
    have_set, want_set = {str(r) for r in have}, {str(r) for r in want}
    if have_set != want_set:
        yield Finding(code="requirements-mismatch", message=f"Requires-Dist lacks {sorted(want_set - have_set)} "
                      f"and has unexpected {sorted(have_set - want_set)}", file=where)


def check_record(wheel: Contents, expect: Expectation) -> Iterator[Finding]:
    dist_info = wheel.reader.dist_info
    unlisted_ok = {f"{dist_info}/{s}" for s in RECORD_SIGNATURES}
    for name, member in wheel.members.items():
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
    for module in expect.target.project.extension_modules:
        base = module.replace(".", "/")
        if not any(base + suffix in names for suffix in suffixes):
            yield Finding(code="extension-missing", message=f"extension module {module} is not in the wheel "
                          f"(looked for {base} + one of {', '.join(suffixes)})")


def extension_suffixes(target: Target) -> tuple[str, ...]:
    """The file suffixes CPython imports an extension module from on ``target`` (EXTENSION_SUFFIXES)."""
    py, platform = target.python, target.platform
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
        yield from _rpath_findings(member.name, member.elf)
        yield from _needed_findings(member.name, member.elf, wheel.basenames, allowed, expect.target)


def _bundled_findings(name: str, variant: Variant) -> Iterator[Finding]:
    base = posixpath.basename(name)
    if _matches(base, DRIVER_LIBS):
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


def _rpath_findings(name: str, info: elf.ElfInfo) -> Iterator[Finding]:
    bad = [p for p in info.rpaths if not elf.is_origin_relative(p)]
    if bad:
        yield Finding(code="bad-rpath", message=f"RPATH/RUNPATH entries {bad} are absolute or point at the build tree",
                      file=name)


def _needed_findings(name: str, info: elf.ElfInfo, bundled: frozenset[str], allowed: frozenset[str],
                     target: Target) -> Iterator[Finding]:
    variant = target.variant
    for lib in info.needed:
        if lib in bundled or lib in allowed or _is_system(lib, info):
            continue
        if _matches(lib, variant.exclude_libs):
            missing = [r for r in variant.rpath if r not in info.rpaths]
            if missing:
                yield Finding(code="missing-rpath", message=f"needs {lib} from a runtime requirement but lacks RPATH {missing}",
                              file=name)
            continue
        yield Finding(code="unresolved-library", message=f"needs {lib}: not bundled, not a declared runtime library, "
                      f"not allowed by {target.platform.wheel_platform}", file=name)


def _is_system(lib: str, info: elf.ElfInfo) -> bool:
    """The loader (auditwheel's rule, or this file's own PT_INTERP), the driver, libpython."""
    own_loader = info.interpreter is not None and lib == posixpath.basename(info.interpreter)
    return own_loader or elf.is_loader(lib) or _matches(lib, DRIVER_LIBS) or lib.startswith("libpython")


# --- excluded libraries and their providers ----------------------------------------------------


def check_providers(wheel: Contents, expect: Expectation) -> Iterator[Finding]:
    """An excluded library an ELF file needs must come from a requirement the wheel declares."""
    target = expect.target
    declared = installed_requirements(wheel.reader.requires_dist, target)
    for lib, users in sorted(_excluded_needs(wheel, target.variant).items()):
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
    return [r for r in requirements if r.marker is None or r.marker.evaluate(env)]


def marker_environment(target: Target) -> dict[str, str]:
    """PEP 508 marker values of the target's platform and Python (not of this host)."""
    system = {OS.LINUX: "Linux", OS.WINDOWS: "Windows", OS.MACOS: "Darwin"}[target.platform.os]
    return {
        "platform_system": system,
        "sys_platform": {"Linux": "linux", "Windows": "win32", "Darwin": "darwin"}[system],
        "os_name": "nt" if system == "Windows" else "posix",
        "platform_machine": target.platform.arch,
        "python_version": target.python.release,
        "python_full_version": f"{target.python.release}.0",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "extra": "",
    }


# --- size and policy -----------------------------------------------------------------------------


def check_size(wheel: Contents, expect: Expectation) -> Iterator[Finding]:
    budget = expect.target.project.wheel_size_budget_mb
    size = wheel.reader.size
    if budget is not None and size > budget * 1024 * 1024:
        yield Finding(code="size-budget", message=f"{size / 2**20:.1f} MiB exceeds the budget of {budget} MiB")


CHECKS: tuple[Check, ...] = (check_name_and_tags, check_metadata, check_record, check_extension_modules,
                             check_libraries, check_providers, check_size)


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
