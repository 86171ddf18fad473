"""Static checks of one wheel against the target it claims to be.

Usable on any wheel, including ones built elsewhere: ``python -m builders verify WHEEL
--target ID``. Every finding is structured (code, message, file inside the wheel); any
finding fails the target.
"""

from __future__ import annotations

import fnmatch
import io
import posixpath
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache

from elftools.common.exceptions import ELFError
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from .model import Dropped
from .policy import dropped_admitted_by
from .targets import Target
from .wheels import Wheel, record_hash

# Driver-side libraries come with the GPU driver on the user's machine, never in a wheel.
DRIVER_LIBS = ("libcuda.so*", "libnvidia-*.so*", "libhsakmt.so*", "libdrm_amdgpu.so*", "libze_intel_gpu.so*",
               "libigdrcl.so*", "libamdhip64_driver*")


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


def verify(wheel: Wheel, expect: Expectation) -> list[Finding]:
    """All findings for ``wheel``; an empty list means it is what the matrix promised."""
    checks = (check_name_and_tags, check_metadata, check_record, check_libraries, check_size)
    return [f for check in checks for f in check(wheel, expect)]


def check_name_and_tags(wheel: Wheel, expect: Expectation) -> Iterator[Finding]:
    t = expect.target
    if wheel.tags != t.tags:
        yield Finding(code="tag-mismatch", message=f"filename tags {_tags(wheel.tags)} != expected {_tags(t.tags)}")
    if wheel.wheel_tags != t.tags:
        yield Finding(code="wheel-file-tags", message=f"WHEEL Tag lines {_tags(wheel.wheel_tags)} != expected {_tags(t.tags)}",
                      file=f"{wheel.dist_info}/WHEEL")
    if wheel.version != expect.wanted_version:
        yield Finding(code="version-mismatch", message=f"version {wheel.version} != expected {expect.wanted_version}")
    if wheel.name != t.project.name:
        yield Finding(code="name-mismatch", message=f"distribution {wheel.name!r} != {t.project.name!r}")


def check_metadata(wheel: Wheel, expect: Expectation) -> Iterator[Finding]:
    meta, where = wheel.metadata, f"{wheel.dist_info}/METADATA"
    if meta.get("Version") != str(expect.wanted_version):
        yield Finding(code="version-mismatch", message=f"METADATA Version {meta.get('Version')} != {expect.wanted_version}", file=where)
    requires = SpecifierSet(meta.get("Requires-Python", ""))
    if not meta.get("Requires-Python"):
        yield Finding(code="requires-python-missing", message="no Requires-Python", file=where)
    for d in dropped_admitted_by(requires, expect.dropped):
        yield Finding(code="requires-python-admits-dropped",
                      message=f"Requires-Python {requires} admits Python {d.value}: {d.describe()}", file=where)
    have = sorted(str(r) for r in wheel.requires_dist)
    want = sorted(str(r) for r in expect.wanted_requirements)
    if have != want:
        yield Finding(code="requirements-mismatch", message=f"Requires-Dist {have} != expected {want}", file=where)


def check_record(wheel: Wheel, expect: Expectation) -> Iterator[Finding]:
    record_name = f"{wheel.dist_info}/RECORD"
    entries = {e.path: e for e in wheel.record()}
    files = [n for n in wheel.names() if not n.endswith("/")]
    for name in files:
        entry = entries.get(name)
        if entry is None:
            yield Finding(code="record-unlisted", message="file is not listed in RECORD", file=name)
        elif name != record_name:
            data = wheel.read(name)
            if entry.hash != record_hash(data) or entry.size != str(len(data)):
                yield Finding(code="record-mismatch", message="hash or size differs from RECORD", file=name)
    for name in sorted(set(entries) - set(files)):
        yield Finding(code="record-missing", message="listed in RECORD but absent", file=name)


def check_libraries(wheel: Wheel, expect: Expectation) -> Iterator[Finding]:
    variant = expect.target.variant
    names = wheel.names()
    bundled = {posixpath.basename(n) for n in names}
    allowed = policy_libs(expect.target.platform.wheel_platform)
    elves = [n for n in names if _is_shared_object(n)]
    for name in elves:
        if _matches(posixpath.basename(name), DRIVER_LIBS):
            yield Finding(code="driver-bundled", message="GPU driver library is bundled; it must come from the driver", file=name)
        elif _matches(posixpath.basename(name), variant.exclude_libs):
            yield Finding(code="accelerator-bundled",
                          message="accelerator library is bundled; it must come from the runtime requirement", file=name)
        yield from _check_elf(name, wheel.read(name), bundled, allowed, expect)
    if expect.target.platform.os.value == "linux" and not any(n.startswith(f"{expect.target.project.import_name}/_C") for n in elves):
        yield Finding(code="no-extension", message=f"no {expect.target.project.import_name}._C extension in the wheel")


def _check_elf(name: str, data: bytes, bundled: set[str], allowed: frozenset[str], expect: Expectation) -> Iterator[Finding]:
    try:
        needed, rpaths = elf_dynamic(data)
    except ELFError as exc:
        yield Finding(code="bad-elf", message=f"cannot parse ELF: {exc}", file=name)
        return
    variant = expect.target.variant
    for entry in rpaths:
        if not entry.startswith("$ORIGIN"):
            yield Finding(code="bad-rpath", message=f"RPATH entry {entry!r} is absolute or points at the build tree", file=name)
    for lib in needed:
        if lib in bundled or lib in allowed or _matches(lib, DRIVER_LIBS) or lib.startswith("libpython"):
            continue
        if _matches(lib, variant.exclude_libs):
            missing = [r for r in variant.rpath if r not in rpaths]
            if missing:
                yield Finding(code="missing-rpath", message=f"needs {lib} from a runtime requirement but lacks RPATH {missing}", file=name)
            elif not variant.runtime_requirements:
                yield Finding(code="unresolved-library", message=f"{lib} is excluded but no runtime requirement provides it", file=name)
            continue
        yield Finding(code="unresolved-library", message=f"needs {lib}: not bundled, not a declared runtime library, "
                      f"not allowed by {expect.target.platform.wheel_platform}", file=name)


def elf_dynamic(data: bytes) -> tuple[list[str], list[str]]:
    """DT_NEEDED names and RPATH/RUNPATH entries of an ELF image."""
    elf = ELFFile(io.BytesIO(data))
    needed: list[str] = []
    rpaths: list[str] = []
    for section in elf.iter_sections():
        if not isinstance(section, DynamicSection):
            continue
        for tag in section.iter_tags():
            if tag.entry.d_tag == "DT_NEEDED":
                needed.append(tag.needed)
            elif tag.entry.d_tag in ("DT_RPATH", "DT_RUNPATH"):
                value = tag.rpath if tag.entry.d_tag == "DT_RPATH" else tag.runpath
                rpaths.extend(p for p in value.split(":") if p)
    return needed, rpaths


def check_size(wheel: Wheel, expect: Expectation) -> Iterator[Finding]:
    budget = expect.target.project.wheel_size_budget_mb
    size = wheel.path.stat().st_size
    if budget is not None and size > budget * 1024 * 1024:
        yield Finding(code="size-budget", message=f"{size / 2**20:.1f} MiB exceeds the budget of {budget} MiB")


@cache
def policy_libs(wheel_platform: str) -> frozenset[str]:
    """System libraries a manylinux policy allows a wheel to need (auditwheel's policy data)."""
    if not wheel_platform.startswith(("manylinux", "musllinux")):
        return frozenset()
    from auditwheel.architecture import Architecture
    from auditwheel.libc import Libc
    from auditwheel.policy import WheelPolicies

    arch = wheel_platform.split("_", 3)[-1]
    libc = Libc.MUSL if wheel_platform.startswith("musllinux") else Libc.GLIBC
    policies = WheelPolicies(libc=libc, arch=Architecture(arch))
    policy = policies.get_policy_by_name(wheel_platform)
    return frozenset(policy.whitelist) if policy else frozenset()


def _is_shared_object(name: str) -> bool:
    base = posixpath.basename(name)
    return base.endswith(".so") or ".so." in base


def _matches(name: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def _tags(tags: Iterable[object]) -> str:
    return ",".join(sorted(map(str, tags))) or "(none)"
