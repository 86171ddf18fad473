"""The generic smoke probe: what must hold for every framework's installed wheel (stdlib only).

builders ships this file as package data (it runs on Python 3.9 and later) and runs it with the
interpreter of a fresh venv where the wheel is installed, from an empty directory::

    VENV/bin/python -I smoke_probe.py [--strict] FACTS.json

FACTS.json is one JSON object describing the target (see ``builders.smoke.facts``)::

    {"distribution": "minifw", "import_name": "minifw", "version": "2.15.0+cu132",
     "variant": "cu132", "accelerator": "cuda", "accelerator_version": "13.2",
     "python_abi": "cp314t", "free_threaded": true, "extension_modules": ["minifw._C"],
     "runtime_libraries": ["libcudart.so.13", ...], "system_libraries": [],
     "runtime_probe": {"libraries": ["libcudart.so*"], "symbol": "cudaRuntimeGetVersion"},
     "expected_runtime_version": 13020, "script": "project_smoke.py", "script_timeout": 300}

or ``{"by_abi": {"cp314t": {...}, "cp314": {...}}}`` when one staged folder serves several
interpreters (cibuildwheel); the probe picks its own ABI's entry. ``script`` is relative to
the facts file's folder.

It prints exactly one JSON record on stdout and nothing else (anything else printed, also by
native code at import, is sent to stderr)::

    {"probe": 1, "checks": [{"name": ..., "ok": ..., "detail": ..., "skipped": ...}], "facts": {...}}

and exits 0 once the record is printed, whatever the checks say: judging is the caller's job.
With ``--strict`` (cibuildwheel's test command) it exits 1 when a check failed.

The project's own script gets the selected facts (plus ``venv``) as JSON on stdin, runs from
the same empty directory with ``-I``, may print anything on stderr, and prints one JSON
document on stdout: ``{"checks": [{"name", "ok", "detail"}...], "facts": {...optional}}``.
A crash, a timeout, a non-zero exit or output that is not such a document is a failed check
whose detail has the exit code and the end of the script's stderr.
"""

from __future__ import annotations

import fnmatch
import importlib
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import sysconfig
import traceback
from collections.abc import Callable, Iterable
from typing import Any

PROBE_VERSION = 1
STDERR_TAIL = 2000

Check = dict[str, Any]


def check(name: str, ok: bool, detail: str = "", *, skipped: bool = False) -> Check:
    """One line of the verdict; a skipped check counts as passed and says why it was skipped."""
    return {"name": name, "ok": bool(ok), "detail": detail, "skipped": skipped}


# ---- loaded-library discovery (one function per OS, chosen by sys.platform) -------------

def parse_proc_maps(text: str) -> list[str]:
    """File paths mapped into a Linux process, in first-seen order, from /proc/PID/maps text."""
    seen: dict[str, None] = {}
    for line in text.splitlines():
        parts = line.split(None, 5)
        if len(parts) == 6 and parts[5].startswith("/"):
            seen.setdefault(parts[5].strip().removesuffix(" (deleted)"), None)
    return list(seen)


def linux_libraries() -> list[str]:
    with open("/proc/self/maps", encoding="utf-8", errors="replace") as fh:
        return parse_proc_maps(fh.read())


def macos_libraries(dyld: Any = None) -> list[str]:
    """Images dyld has loaded (``_dyld_image_count``/``_dyld_get_image_name``); ``dyld`` is injectable."""
    if dyld is None:
        import ctypes

        dyld = ctypes.CDLL("/usr/lib/libSystem.B.dylib")
        dyld._dyld_get_image_name.restype = ctypes.c_char_p
        dyld._dyld_get_image_name.argtypes = [ctypes.c_uint32]
        dyld._dyld_image_count.restype = ctypes.c_uint32
    names = (dyld._dyld_get_image_name(i) for i in range(dyld._dyld_image_count()))
    return [os.fsdecode(n) for n in names if n]


def windows_libraries(psapi: Any = None, kernel32: Any = None) -> list[str]:
    """Modules of this process (``EnumProcessModules`` + ``GetModuleFileNameW``); DLLs are injectable."""
    if psapi is None or kernel32 is None:
        psapi, kernel32 = _windows_dlls()
    process = kernel32.GetCurrentProcess()
    return [_module_name(kernel32, h) for h in _module_handles(psapi, process) if h]


def _windows_dlls() -> tuple[Any, Any]:
    """psapi and kernel32 with the signatures we call (handles are pointer-sized)."""
    import ctypes

    psapi, kernel32 = ctypes.WinDLL("psapi"), ctypes.WinDLL("kernel32")  # type: ignore[attr-defined]
    kernel32.GetCurrentProcess.restype = ctypes.c_void_p
    kernel32.GetModuleFileNameW.argtypes = [ctypes.c_void_p, ctypes.c_wchar_p, ctypes.c_ulong]
    psapi.EnumProcessModules.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_ulong,
                                         ctypes.POINTER(ctypes.c_ulong)]
    return psapi, kernel32


def _module_handles(psapi: Any, process: Any) -> list[Any]:
    """EnumProcessModules, growing the array until every handle fits."""
    import ctypes

    count = 256
    while True:
        handles = (ctypes.c_void_p * count)()
        needed = ctypes.c_ulong(0)
        if not psapi.EnumProcessModules(process, handles, ctypes.sizeof(handles), ctypes.pointer(needed)):
            raise OSError("EnumProcessModules failed")
        if needed.value <= ctypes.sizeof(handles):
            return list(handles[: needed.value // ctypes.sizeof(ctypes.c_void_p)])
        count = needed.value // ctypes.sizeof(ctypes.c_void_p) + 16


def _module_name(kernel32: Any, handle: Any) -> str:
    import ctypes

    buf = ctypes.create_unicode_buffer(32768)
    kernel32.GetModuleFileNameW(handle, buf, len(buf))
    return buf.value


FINDERS: dict[str, Callable[[], list[str]]] = {
    "linux": linux_libraries, "darwin": macos_libraries, "win32": windows_libraries,
}


def library_finder(platform: str) -> Callable[[], list[str]] | None:
    """The discovery function for ``platform`` (a ``sys.platform`` value), None where there is none."""
    for prefix, finder in FINDERS.items():
        if platform.startswith(prefix):
            return finder
    return None


def loaded_libraries(platform: str = sys.platform) -> list[str] | None:
    """Real paths of the shared libraries loaded in this process; None where unknown."""
    finder = library_finder(platform)
    if finder is None:
        return None
    try:
        return [os.path.realpath(p) for p in finder()]
    except OSError:
        return None


# ---- comparisons (pure) ------------------------------------------------------------------

def _norm(path: str) -> str:
    return os.path.normcase(os.path.realpath(path))


def inside(path: str, root: str) -> bool:
    """Whether ``path`` lies under ``root`` once both are resolved (case-insensitive on Windows)."""
    try:
        return os.path.commonpath([_norm(path), _norm(root)]) == _norm(root)
    except ValueError:  # different drives
        return False


def canonical(name: str) -> str:
    """PEP 503 normalisation of a distribution name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def check_version(name: str, expected: str, installed: Iterable[tuple[str, str]]) -> Check:
    """The installed distribution called ``name`` (PEP 503) has exactly the target's version."""
    found = sorted({v for n, v in installed if canonical(n) == canonical(name)})
    if not found:
        return check("version", False, f"no distribution named {name!r} is installed")
    if found != [expected]:
        return check("version", False, f"{name} {', '.join(found)} is installed, expected {expected}")
    return check("version", True, f"{name} {expected}")


def check_extension(name: str, file: str | None, loaded: list[str] | None, prefix: str) -> Check:
    """An extension module's file is inside the venv and is the file this process loaded."""
    label = f"extension {name}"
    if not file:
        return check(label, False, f"{name} has no __file__ (not a compiled extension?)")
    if not inside(file, prefix):
        return check(label, False, f"{file} is not inside the venv {prefix}")
    if loaded is None:
        return check(label, True, f"{file} (loaded-library list unavailable on {sys.platform}; not confirmed loaded)")
    if _norm(file) not in {_norm(p) for p in loaded}:
        return check(label, False, f"{file} is not among the libraries loaded in the process")
    return check(label, True, file)


def matching_libraries(patterns: Iterable[str], loaded: list[str]) -> list[tuple[str, str]]:
    """Real paths match too: ``libamdhip64.so.7`` is often a link to ``libamdhip64.so.7.2.53211``."""
    pats = list(patterns)
    hits = []
    for path in loaded:
        base = os.path.basename(path)
        pattern = next((p for p in pats if fnmatch.fnmatch(base, p) or fnmatch.fnmatch(base, p + ".*")), None)
        if pattern is not None:
            hits.append((pattern, path))
    return hits


def check_runtime_libraries(patterns: list[str], loaded: list[str] | None, prefix: str) -> list[Check]:
    """Accelerator runtime libraries in the process come from the venv (the runtime wheels), not the system."""
    if not patterns:
        return []
    if loaded is None:
        return [check("runtime libraries", True, f"no loaded-library list on {sys.platform}", skipped=True)]
    checks = [_runtime_library(path, prefix) for _, path in matching_libraries(patterns, loaded)]
    return checks or [check("runtime libraries", True, "none of " + ", ".join(patterns) + " is loaded")]


def check_system_libraries(patterns: list[str], loaded: list[str] | None, prefix: str) -> list[Check]:
    """Libraries the matrix says the system provides are loaded from the system, never from the venv."""
    if not patterns:
        return []
    if loaded is None:
        return [check("system libraries", True, f"no loaded-library list on {sys.platform}", skipped=True)]
    checks = [_system_library(path, prefix) for _, path in matching_libraries(patterns, loaded)]
    return checks or [check("system libraries", True, "none of " + ", ".join(patterns) + " is loaded")]


def _system_library(path: str, prefix: str) -> Check:
    name = f"system library {os.path.basename(path)}"
    if inside(path, prefix):
        return check(name, False, f"{path} is loaded from the venv {prefix}, not from the system's package")
    return check(name, True, path)


def _runtime_library(path: str, prefix: str) -> Check:
    name = f"runtime library {os.path.basename(path)}"
    if inside(path, prefix):
        return check(name, True, path)
    return check(name, False, f"{path} is loaded from outside the venv {prefix} (the system's copy, not the runtime wheel's)")


def check_runtime_version(facts: dict[str, Any], loaded: list[str] | None,
                          query: Callable[[str, str], int] | None = None) -> tuple[Check, str | None, int | None]:
    """The runtime loaded in this process reports the version the variant promises."""
    probe, accel = facts.get("runtime_probe"), facts.get("accelerator")
    if not probe:
        return check("runtime version", True, f"no runtime-version probe for accelerator {accel!r}", skipped=True), None, None
    if loaded is None:
        return check("runtime version", True, f"no loaded-library list on {sys.platform}", skipped=True), None, None
    hits = matching_libraries(probe["libraries"], loaded)
    if not hits:
        return check("runtime version", False, f"no {' / '.join(probe['libraries'])} is loaded after importing "
                     "the extension modules"), None, None
    path = hits[0][1]
    try:
        got = (query or _query_version)(path, probe["symbol"])
    except (OSError, AttributeError) as exc:
        return check("runtime version", False, f"{probe['symbol']} in {path}: {exc}"), path, None
    want, divisor = facts.get("expected_runtime_version"), int(probe.get("divisor", 1))
    shown = f"{got} (// {divisor} = {got // divisor})" if divisor != 1 else str(got)
    return (check("runtime version", got // divisor == want, f"{probe['symbol']}() = {shown}, expected {want} ({path})"),
            path, got)


def _query_version(path: str, symbol: str) -> int:
    """Call ``int symbol(int *)`` (cudaRuntimeGetVersion's shape) in the already loaded ``path``."""
    import ctypes

    value = ctypes.c_int(0)
    status = getattr(ctypes.CDLL(path), symbol)(ctypes.byref(value))
    if status != 0:
        raise OSError(f"returned error {status}")
    return value.value


def check_gil(free_threaded: bool, build_disables_gil: bool, gil_enabled: bool | None) -> list[Check]:
    """On a free-threaded target the interpreter is free-threaded and importing kept the GIL off."""
    if not free_threaded:
        return []
    if not build_disables_gil:
        return [check("gil", False, "the target is free-threaded but this interpreter is not")]
    return [check("gil", gil_enabled is False, f"sys._is_gil_enabled() = {gil_enabled} after import")]


# ---- the project's own script --------------------------------------------------------

def tail(text: str, limit: int = STDERR_TAIL) -> str:
    return text[-limit:].strip()


def parse_document(stdout: str) -> dict[str, Any] | None:
    """A banner before the document (a library at import) is tolerated, anything after it is not."""
    try:
        doc = json.loads(stdout)
    except ValueError:
        doc = _last_document(stdout)
    return doc if isinstance(doc, dict) else None


def _last_document(stdout: str) -> Any:
    """The object that starts at a line's first ``{`` and runs to the end of ``stdout``, if any."""
    decoder = json.JSONDecoder()
    for match in reversed(list(re.finditer(r"(?m)^[ \t]*\{", stdout))):
        try:
            doc, end = decoder.raw_decode(stdout, match.end() - 1)
        except ValueError:
            continue
        if isinstance(doc, dict) and not stdout[end:].strip():
            return doc
    return None


def project_checks(stdout: str, stderr: str, returncode: int | None) -> tuple[list[Check], dict[str, Any]]:
    """The project script's checks (names prefixed ``project:``) and facts, or a failed check saying why."""
    doc = parse_document(stdout)
    if returncode is None:
        return [_script_failed("timed out", returncode, stderr)], {}
    if doc is None or not isinstance(doc.get("checks"), list):
        return [_script_failed("printed no JSON document with a 'checks' list on stdout", returncode, stderr)], {}
    checks = [_project_check(i, c) for i, c in enumerate(doc["checks"])]
    if returncode != 0:
        checks.append(_script_failed("exited non-zero", returncode, stderr))
    facts = doc.get("facts")
    return checks, facts if isinstance(facts, dict) else {}


def _project_check(index: int, raw: Any) -> Check:
    if not (isinstance(raw, dict) and isinstance(raw.get("name"), str) and isinstance(raw.get("ok"), bool)):
        return check(f"project:#{index}", False, f"malformed check {raw!r} (want name: str, ok: bool, detail: str)")
    return check(f"project:{raw['name']}", raw["ok"], str(raw.get("detail", "")), skipped=raw.get("skipped") is True)


def _script_failed(what: str, returncode: int | None, stderr: str) -> Check:
    """Exit code and the last stderr line first (a one-line report shows them), then the stderr tail."""
    code = "none (killed)" if returncode is None else str(returncode)
    last = next((line for line in reversed(stderr.splitlines()) if line.strip()), "")
    return check("project script", False, f"{what}; exit code {code}: {last}\nstderr ends:\n{tail(stderr)}")


def run_project_script(script: str, facts: dict[str, Any], timeout: float) -> tuple[str, str, int | None]:
    """Run the project's script with this interpreter, facts on stdin; (stdout, stderr, exit code or None)."""
    try:
        proc = subprocess.run([sys.executable, "-I", script], input=json.dumps(facts), capture_output=True,
                              text=True, errors="replace", timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        return _text(exc.stdout), _text(exc.stderr) + f"\n[timed out after {timeout}s]", None
    return proc.stdout, proc.stderr, proc.returncode


def _text(data: str | bytes | None) -> str:
    return data.decode(errors="replace") if isinstance(data, bytes) else (data or "")


# ---- the run ---------------------------------------------------------------------------

def python_abi() -> str:
    """This interpreter's CPython ABI tag: ``cp314t``."""
    t = "t" if sysconfig.get_config_var("Py_GIL_DISABLED") else ""
    return f"cp{sys.version_info[0]}{sys.version_info[1]}{t}"


def select_facts(doc: dict[str, Any], abi: str) -> dict[str, Any]:
    """The facts for this interpreter: the document itself, or its ``by_abi`` entry."""
    if "by_abi" not in doc:
        return doc
    if abi not in doc["by_abi"]:
        raise KeyError(f"the facts describe {sorted(doc['by_abi'])}, not this interpreter ({abi})")
    picked: dict[str, Any] = doc["by_abi"][abi]
    return picked


def gil_enabled() -> bool | None:
    probe = getattr(sys, "_is_gil_enabled", None)
    return bool(probe()) if probe is not None else None


def import_module(name: str) -> tuple[Any, Check]:
    """Import ``name``; the check carries the exception's last traceback line on failure."""
    try:
        return importlib.import_module(name), check(f"import {name}", True)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - a wheel's import may fail in any way
        sys.stderr.write(traceback.format_exc())
        return None, check(f"import {name}", False, f"{type(exc).__name__}: {exc}")


def installed_distributions() -> list[tuple[str, str]]:
    return [(d.metadata["Name"] or "", d.version) for d in importlib.metadata.distributions()]


def probe(facts: dict[str, Any], facts_dir: str) -> dict[str, Any]:
    """Every generic check, then the project's script; the record to print."""
    prefix = os.path.realpath(sys.prefix)
    checks = [check("python", python_abi() == facts.get("python_abi", python_abi()),
                    f"{python_abi()} ({sys.executable}), expected {facts.get('python_abi')}"),
              check_version(facts["distribution"], facts["version"], installed_distributions())]
    observed: dict[str, Any] = {"python_abi": python_abi(), "prefix": prefix, "platform": sys.platform,
                                "accelerator": facts.get("accelerator")}
    checks += _import_checks(facts, prefix, observed)
    checks += _project(facts, facts_dir, prefix, observed)
    return {"probe": PROBE_VERSION, "checks": checks, "facts": observed}


def _import_checks(facts: dict[str, Any], prefix: str, observed: dict[str, Any]) -> list[Check]:
    """Import the package and its extension modules, then look at what the process loaded."""
    modules = {}
    checks = []
    for name in [facts["import_name"], *facts.get("extension_modules", ())]:
        modules[name], result = import_module(name)
        checks.append(result)
    loaded = loaded_libraries()
    for name in facts.get("extension_modules", ()):
        if modules[name] is not None:
            checks.append(check_extension(name, getattr(modules[name], "__file__", None), loaded, prefix))
    checks += check_runtime_libraries(list(facts.get("runtime_libraries", ())), loaded, prefix)
    checks += check_system_libraries(list(facts.get("system_libraries", ())), loaded, prefix)
    version_check, runtime_path, runtime_version = check_runtime_version(facts, loaded)
    checks.append(version_check)
    observed |= _observed(facts, loaded, modules, runtime_path, runtime_version)
    checks += check_gil(bool(facts.get("free_threaded")), bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
                        observed["gil_enabled"])
    return checks


def _observed(facts: dict[str, Any], loaded: list[str] | None, modules: dict[str, Any],
              runtime_path: str | None, runtime_version: int | None) -> dict[str, Any]:
    names = dict(installed_distributions())
    return {
        "version": next((v for n, v in names.items() if canonical(n) == canonical(facts["distribution"])), None),
        "extension_files": {n: getattr(m, "__file__", None) for n, m in modules.items()
                            if n in facts.get("extension_modules", ()) and m is not None},
        "runtime_libraries": [p for _, p in matching_libraries(facts.get("runtime_libraries", ()), loaded or [])],
        "system_libraries": [p for _, p in matching_libraries(facts.get("system_libraries", ()), loaded or [])],
        "runtime_library": runtime_path,
        "runtime_version": runtime_version,
        "gil_enabled": gil_enabled(),
        "loaded_library_list": loaded is not None,
    }


def _project(facts: dict[str, Any], facts_dir: str, prefix: str, observed: dict[str, Any]) -> list[Check]:
    if not facts.get("script"):
        return [check("project script", True, "the project declares no smoke script", skipped=True)]
    script = os.path.join(facts_dir, facts["script"])
    stdout, stderr, code = run_project_script(script, {**facts, "venv": prefix}, float(facts.get("script_timeout", 300)))
    sys.stderr.write(stderr)
    checks, observed["project"] = project_checks(stdout, stderr, code)
    return checks


def _claim_stdout() -> Any:
    """Keep stdout for the record alone: whatever else is printed, native code included, goes to stderr."""
    sys.stdout.flush()
    record_out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    return record_out


def _scrub_path(here: str) -> None:
    """Never import the package from the working directory or from beside this script."""
    sys.path[:] = [p for p in sys.path if p not in ("", os.getcwd(), here)]


def read_facts(path: str) -> dict[str, Any]:
    with open(path, encoding="utf-8") as fh:
        return select_facts(json.load(fh), python_abi())


def main(argv: list[str]) -> int:
    strict = "--strict" in argv
    args = [a for a in argv if a != "--strict"]
    if len(args) != 1:
        sys.stderr.write("usage: smoke_probe.py [--strict] FACTS.json\n")
        return 2
    _scrub_path(os.path.dirname(os.path.abspath(__file__)))
    out = _claim_stdout()
    try:
        facts = read_facts(args[0])
    except (OSError, ValueError, KeyError) as exc:
        record: dict[str, Any] = {"probe": PROBE_VERSION, "checks": [check("facts", False, f"{args[0]}: {exc}")], "facts": {}}
    else:
        record = probe(facts, os.path.dirname(os.path.abspath(args[0])))
    out.write(json.dumps(record, indent=2, sort_keys=True) + "\n")
    out.flush()
    return 1 if strict and not all(c["ok"] for c in record["checks"]) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
