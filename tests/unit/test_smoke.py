"""The smoke protocol without a subprocess: the probe's pure parts (library discovery, parsing,
comparisons), the facts builders writes, the record builders reads, and the engines' wiring.

The probe is imported as a module from the package data it ships as. macOS and Windows
discovery cannot run on this Linux host: their parsing and selection are tested with fake
``dyld``/``psapi`` objects, and the real calls are skipped with a reason saying so.
"""

from __future__ import annotations

import ast
import ctypes
import importlib.util
import json
import sys
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import builders.wheel.smoke as smoke_mod
from builders.base.errors import EngineError, SmokeError
from builders.base.process import Completed, ProcessError
from builders.families import families
from builders.families.cuda import runtime_version
from builders.matrix import findings
from builders.matrix.model import OS
from builders.matrix.targets import Selection, select
from builders.resources import smoke_probe as probe
from tests.helpers import accelerator, one

ROOT = Path(__file__).resolve().parents[2]


def with_script(target, script: Path | None = Path("/p/smoke.py"), timeout: float = 42.0):
    """``target`` whose project declares a smoke script (the shipped matrix may or may not yet)."""
    return replace(target, project=replace(target.project, smoke_script=script, smoke_timeout=timeout))


# ---- loaded-library discovery ----------------------------------------------------------

MAPS = """\
55d4c5a00000-55d4c5a28000 r--p 00000000 08:01 1234 /usr/bin/python3.11
7f1c2a000000-7f1c2a021000 rw-p 00000000 00:00 0
7f1c2b000000-7f1c2b100000 r-xp 00000000 08:01 99 /venv/lib/python3.11/site-packages/pkg/_C.cpython-311-x86_64-linux-gnu.so
7f1c2b100000-7f1c2b200000 r--p 00100000 08:01 99 /venv/lib/python3.11/site-packages/pkg/_C.cpython-311-x86_64-linux-gnu.so
7f1c2c000000-7f1c2c100000 r-xp 00000000 08:01 77 /opt/old/libcudart.so.13 (deleted)
7ffd1a000000-7ffd1a021000 rw-p 00000000 00:00 0                          [stack]
7f1c2d000000-7f1c2d001000 r--p 00000000 08:01 55 /tmp/dir with spaces/libx.so
"""


def test_proc_maps_parsing_keeps_files_once_in_order() -> None:
    assert probe.parse_proc_maps(MAPS) == [
        "/usr/bin/python3.11",
        "/venv/lib/python3.11/site-packages/pkg/_C.cpython-311-x86_64-linux-gnu.so",
        "/opt/old/libcudart.so.13",
        "/tmp/dir with spaces/libx.so",
    ]


@pytest.mark.parametrize(("platform", "finder"), [("linux", "linux_libraries"), ("darwin", "macos_libraries"),
                                                  ("win32", "windows_libraries")])
def test_discovery_is_chosen_by_sys_platform(platform: str, finder: str) -> None:
    assert probe.library_finder(platform) is getattr(probe, finder)


@pytest.mark.parametrize("platform", ["emscripten", "wasi", "aix", "freebsd14"])
def test_platforms_without_discovery_report_none(platform: str) -> None:
    assert probe.library_finder(platform) is None
    assert probe.loaded_libraries(platform) is None


class FakeDyld:
    """``_dyld_image_count``/``_dyld_get_image_name`` as ctypes returns them (bytes, NULL as None)."""

    def __init__(self, names: list[bytes | None]) -> None:
        self.names = names

    def _dyld_image_count(self) -> int:
        return len(self.names)

    def _dyld_get_image_name(self, index: int) -> bytes | None:
        return self.names[index]


def test_macos_discovery_reads_every_dyld_image() -> None:
    names = [b"/usr/lib/dyld", None, b"/venv/lib/python3.13/site-packages/pkg/_C.cpython-313-darwin.so"]
    assert probe.macos_libraries(FakeDyld(names)) == ["/usr/lib/dyld", "/venv/lib/python3.13/site-packages/pkg/_C.cpython-313-darwin.so"]


class FakePsapi:
    """EnumProcessModules writing handles into the caller's ctypes array (and the size it needs)."""

    def __init__(self, handles: list[int]) -> None:
        self.handles, self.calls = handles, 0

    def EnumProcessModules(self, process: Any, array: Any, size: int, needed: Any) -> int:
        self.calls += 1
        width = ctypes.sizeof(ctypes.c_void_p)
        needed.contents.value = len(self.handles) * width
        for i, handle in enumerate(self.handles[: size // width]):
            array[i] = handle
        return 1


class FakeKernel32:
    def __init__(self, names: dict[int, str]) -> None:
        self.names = names

    def GetCurrentProcess(self) -> int:
        return -1

    def GetModuleFileNameW(self, handle: Any, buf: Any, size: int) -> int:
        buf.value = self.names[handle]
        return len(buf.value)


def test_windows_discovery_grows_the_handle_array_until_all_fit() -> None:
    names = {0x1000 + i: f"C:\\venv\\Lib\\site-packages\\pkg\\m{i}.pyd" for i in range(300)}
    psapi = FakePsapi(list(names))
    assert probe.windows_libraries(psapi, FakeKernel32(names)) == list(names.values())
    assert psapi.calls == 2  # 256 slots first, then enough for 300


def test_linux_discovery_sees_an_extension_this_process_loaded() -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("/proc/self/maps exists on Linux only")
    import _ctypes

    loaded = probe.loaded_libraries()
    assert loaded is not None and probe._norm(_ctypes.__file__) in {probe._norm(p) for p in loaded}


@pytest.mark.skipif(sys.platform != "darwin", reason="the dyld calls exist on macOS only; this host runs Linux "
                    "(the parsing is covered with a fake dyld above)")
def test_macos_discovery_for_real() -> None:  # pragma: no cover - macOS runners
    assert any(p.endswith("dyld") or "libSystem" in p for p in probe.macos_libraries())


@pytest.mark.skipif(sys.platform != "win32", reason="psapi/kernel32 exist on Windows only; this host runs Linux "
                    "(the parsing is covered with fake DLLs above)")
def test_windows_discovery_for_real() -> None:  # pragma: no cover - Windows runners
    assert any(p.lower().endswith("python.exe") or p.lower().endswith(".dll") for p in probe.windows_libraries())


# ---- the probe's comparisons -------------------------------------------------------------

def test_inside_resolves_and_refuses_a_sibling_prefix(tmp_path: Path) -> None:
    (tmp_path / "venv" / "lib").mkdir(parents=True)
    (tmp_path / "venv2").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "venv")
    assert probe.inside(str(tmp_path / "link" / "lib"), str(tmp_path / "venv"))
    assert not probe.inside(str(tmp_path / "venv2" / "x.so"), str(tmp_path / "venv"))


def test_version_check_compares_pep503_names_and_exact_versions() -> None:
    installed = [("MarkupSafe", "3.0.3"), ("pip", "25.0")]
    assert probe.check_version("markupsafe", "3.0.3", installed)["ok"]
    assert probe.check_version("Markup_Safe", "3.0.3", [("markup.safe", "3.0.3")])["ok"]
    wrong = probe.check_version("markupsafe", "3.0.4", installed)
    assert not wrong["ok"] and "3.0.3 is installed, expected 3.0.4" in wrong["detail"]
    assert "no distribution named 'minifw'" in probe.check_version("minifw", "1", installed)["detail"]


def test_extension_check_wants_a_file_inside_the_venv_that_is_loaded(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    ext = venv / "pkg" / "_C.so"
    ext.parent.mkdir(parents=True)
    ext.write_bytes(b"")
    assert probe.check_extension("pkg._C", str(ext), [str(ext)], str(venv))["ok"]
    assert "not among the libraries loaded" in probe.check_extension("pkg._C", str(ext), [], str(venv))["detail"]
    assert "not inside the venv" in probe.check_extension("pkg._C", "/usr/lib/pkg/_C.so", ["/usr/lib/pkg/_C.so"], str(venv))["detail"]
    assert "no __file__" in probe.check_extension("pkg._C", None, [], str(venv))["detail"]
    unknown = probe.check_extension("pkg._C", str(ext), None, str(venv))
    assert unknown["ok"] and "unavailable" in unknown["detail"]


def test_runtime_libraries_must_come_from_the_venv() -> None:
    loaded = ["/usr/bin/python3", "/venv/site-packages/nvidia/cu13/lib/libcudart.so.13", "/usr/lib/libcublas.so.13"]
    checks = probe.check_runtime_libraries(["libcudart.so.13", "libcublas.so.*"], loaded, "/venv")
    assert [(c["name"], c["ok"]) for c in checks] == [("runtime library libcudart.so.13", True),
                                                      ("runtime library libcublas.so.13", False)]
    assert "outside the venv /venv" in checks[1]["detail"] and "system" in checks[1]["detail"]
    assert probe.check_runtime_libraries(["libcudart.so.13"], ["/usr/bin/python3"], "/venv")[0]["ok"]
    assert probe.check_runtime_libraries(["libcudart.so.13"], None, "/venv")[0]["skipped"]
    assert probe.check_runtime_libraries([], loaded, "/venv") == []


CUDA_FACTS = {"accelerator": "cuda", "expected_runtime_version": 13020,
              "runtime_probe": {"libraries": ["libcudart.so*"], "symbol": "cudaRuntimeGetVersion"}}


def test_runtime_version_is_queried_on_the_loaded_library() -> None:
    loaded = ["/venv/nvidia/cu13/lib/libcudart.so.13"]
    calls: list[tuple[str, str]] = []

    def query(path: str, symbol: str) -> int:
        calls.append((path, symbol))
        return 13020

    result, path, got = probe.check_runtime_version(CUDA_FACTS, loaded, query)
    assert result["ok"] and (path, got) == (loaded[0], 13020)
    assert calls == [(loaded[0], "cudaRuntimeGetVersion")]
    wrong, _, _ = probe.check_runtime_version(CUDA_FACTS, loaded, lambda p, s: 13040)
    assert not wrong["ok"] and "= 13040, expected 13020" in wrong["detail"]


def test_runtime_version_failures_and_skips() -> None:
    missing, _, _ = probe.check_runtime_version(CUDA_FACTS, ["/usr/bin/python3"])
    assert not missing["ok"] and "no libcudart.so* is loaded" in missing["detail"]

    def broken(path: str, symbol: str) -> int:
        raise OSError("returned error 35")

    failed, _, _ = probe.check_runtime_version(CUDA_FACTS, ["/v/libcudart.so.13"], broken)
    assert not failed["ok"] and "error 35" in failed["detail"]
    rocm, _, _ = probe.check_runtime_version({"accelerator": "rocm", "runtime_probe": None}, [])
    assert rocm["ok"] and rocm["skipped"] and "no runtime-version probe for accelerator 'rocm'" in rocm["detail"]


def test_gil_check_only_on_free_threaded_targets() -> None:
    assert probe.check_gil(False, False, True) == []
    assert not probe.check_gil(True, False, None)[0]["ok"]
    assert not probe.check_gil(True, True, True)[0]["ok"]
    assert probe.check_gil(True, True, False)[0]["ok"]


def test_facts_selection_by_abi() -> None:
    assert probe.select_facts({"version": "1"}, "cp313") == {"version": "1"}
    doc = {"by_abi": {"cp314": {"free_threaded": False}, "cp314t": {"free_threaded": True}}}
    assert probe.select_facts(doc, "cp314t") == {"free_threaded": True}
    with pytest.raises(KeyError, match="not this interpreter"):
        probe.select_facts(doc, "cp313")
    assert probe.python_abi().startswith(f"cp{sys.version_info[0]}{sys.version_info[1]}")


# ---- the project script's protocol -----------------------------------------------------

DOC = {"checks": [{"name": "saxpy", "ok": True, "detail": "[12.0]"}], "facts": {"op": 1}}


def test_document_is_the_whole_stdout_or_its_last_object() -> None:
    assert probe.parse_document(json.dumps(DOC)) == DOC
    banner = "loading kernels {not json}\n" * 50_000
    assert probe.parse_document(banner + json.dumps(DOC, indent=2) + "\n") == DOC
    assert probe.parse_document(json.dumps(DOC) + "\ntrailing words") is None
    assert probe.parse_document("") is None and probe.parse_document("[1, 2]") is None


def test_project_checks_are_prefixed_and_validated() -> None:
    raw = {"checks": [{"name": "a", "ok": True, "detail": "x"}, {"name": "b", "ok": "yes"}, "c"]}
    checks, facts = probe.project_checks(json.dumps(raw), "", 0)
    assert [(c["name"], c["ok"]) for c in checks] == [("project:a", True), ("project:#1", False), ("project:#2", False)]
    assert "malformed check" in checks[1]["detail"] and facts == {}
    assert probe.project_checks(json.dumps(DOC), "", 0)[1] == {"op": 1}


def test_a_crashing_script_becomes_a_failed_check_with_exit_code_and_stderr() -> None:
    stderr = "noise\n" * 1000 + "Traceback ...\nImportError: libfoo.so: cannot open shared object file\n"
    (failed,), _ = probe.project_checks("", stderr, 1)
    assert not failed["ok"] and failed["name"] == "project script"
    assert failed["detail"].splitlines()[0].endswith("exit code 1: ImportError: libfoo.so: cannot open shared object file")
    assert failed["detail"].endswith("cannot open shared object file")
    assert len(failed["detail"]) < probe.STDERR_TAIL + 200


def test_a_timeout_and_a_nonzero_exit_after_valid_json_fail() -> None:
    (timed_out,), _ = probe.project_checks(json.dumps(DOC), "working...\n[timed out after 5s]", None)
    assert not timed_out["ok"] and "timed out" in timed_out["detail"] and "exit code none" in timed_out["detail"]
    checks, _ = probe.project_checks(json.dumps(DOC), "Segmentation fault", -11)
    assert [c["ok"] for c in checks] == [True, False] and "exit code -11" in checks[1]["detail"]


# ---- builders' side: facts, staging, reading the record ------------------------------------

def test_facts_of_a_free_threaded_cuda_target(m) -> None:
    t = with_script(one(m, "cu132-cp314t-linux-x86_64"))
    f = smoke_mod.facts(t)
    assert f["distribution"] == t.project.name and f["import_name"] == t.project.import_name
    assert f["version"] == str(t.version) and f["variant"] == "cu132" and f["accelerator"] == "cuda"
    assert f["expected_runtime_version"] == runtime_version(t.variant.version) == 13020
    assert f["runtime_probe"]["symbol"] == "cudaRuntimeGetVersion"
    assert f["runtime_libraries"] == sorted(t.variant.exclude_libs) and "libcudart.so.13" in f["runtime_libraries"]
    assert f["python_abi"] == "cp314t" and f["free_threaded"] is True
    assert f["extension_modules"] == list(t.project.extension_modules)
    assert (f["script"], f["script_timeout"]) == ("project_smoke.py", 42.0)
    json.dumps(f)  # the facts travel as JSON


def test_facts_without_a_runtime_probe_or_a_script(m) -> None:
    xpu = smoke_mod.facts(with_script(one(m, "xpu-cp313-linux-x86_64"), None))
    assert xpu["runtime_probe"] is None and xpu["expected_runtime_version"] is None and xpu["script"] is None
    cpu = smoke_mod.facts(one(m, "cpu-cp313-linux-x86_64"), dist_version="2.15.0+cpu.dev1")
    assert cpu["runtime_libraries"] == [] and cpu["version"] == "2.15.0+cpu.dev1"


def test_the_probe_is_package_data_inside_builders() -> None:
    resource = smoke_mod.probe_resource()
    assert Path(str(resource)).resolve().is_relative_to(ROOT / "builders")
    assert resource.read_text() == Path(probe.__file__).read_text()
    assert not (ROOT / "scripts" / "smoke_test.py").exists()


def test_stage_writes_probe_script_and_facts(m, tmp_path: Path) -> None:
    script = tmp_path / "my_smoke.py"
    script.write_text("print('{}')\n")
    t = with_script(one(m, "cu132-cp313-linux-x86_64"), script)
    folder = smoke_mod.stage(tmp_path / "staged", [t])
    assert (folder / "smoke_probe.py").read_bytes() == smoke_mod.probe_resource().read_bytes()
    assert (folder / "project_smoke.py").read_text() == script.read_text()
    assert json.loads((folder / "facts.json").read_text()) == smoke_mod.facts(t)


def test_stage_keys_facts_by_abi_for_several_interpreters(m, tmp_path: Path) -> None:
    group = [with_script(t, None) for t in select(m, Selection(select=("cu134-cp314*-linux-x86_64",)))]
    doc = json.loads((smoke_mod.stage(tmp_path, group) / "facts.json").read_text())
    assert set(doc["by_abi"]) == {"cp314", "cp314t"} and doc["by_abi"]["cp314t"]["free_threaded"] is True
    assert not (tmp_path / "project_smoke.py").exists()


def test_venv_layout_and_probe_command() -> None:
    assert smoke_mod.venv_python("C:/t/venv", OS.WINDOWS) == "C:/t/venv/Scripts/python.exe"
    assert smoke_mod.venv_python("/t/venv", OS.LINUX) == smoke_mod.venv_python("/t/venv", OS.MACOS) == "/t/venv/bin/python"
    assert smoke_mod.probe_argv("py", "/s") == ["py", "-I", "/s/smoke_probe.py", "/s/facts.json"]
    assert smoke_mod.probe_argv("py", "d", strict=True) == ["py", "-I", "d/smoke_probe.py", "--strict", "d/facts.json"]


RECORD = {"probe": 1, "checks": [
    probe.check("version", True, "minifw 2.15.0+cu132"),
    probe.check("extension minifw._C", True, "/v/_C.so"),
    probe.check("runtime version", False, "cudaRuntimeGetVersion() = 13040, expected 13020 (/v/libcudart.so.13)"),
    probe.check("project:saxpy", True, ""),
], "facts": {"version": "2.15.0+cu132", "accelerator": "cuda", "runtime_library": "/v/libcudart.so.13",
             "runtime_version": 13040, "runtime_libraries": ["/v/libcudart.so.13"], "gil_enabled": True}}


def test_failed_checks_become_problems_naming_the_check() -> None:
    out = smoke_mod.outcome(json.dumps(RECORD))
    assert not out.ok and out.problems == (
        "smoke check 'runtime version' failed: cudaRuntimeGetVersion() = 13040, expected 13020 (/v/libcudart.so.13)",)
    assert smoke_mod.problems({"checks": []}) == ["smoke probe record has no checks"]
    assert "malformed check" in smoke_mod.problems({"checks": ["x"]})[0]


def test_garbage_or_a_crashed_probe_is_a_problem_not_a_missing_record() -> None:
    garbage = smoke_mod.outcome("Segmentation fault\n")
    assert not garbage.ok and "no JSON record" in garbage.problems[0] and "Segmentation fault" in garbage.problems[0]
    crashed = smoke_mod.crashed(ProcessError(["py", "probe"], -11, "Fatal Python error: Segmentation fault"))
    assert "exited with code -11" in crashed.problems[0] and "Fatal Python error" in crashed.problems[0]


def test_summary_keeps_what_results_json_shows() -> None:
    s = smoke_mod.outcome(json.dumps(RECORD)).summary
    assert s["version"] == "2.15.0+cu132" and s["cuda_runtime_version"] == 13040
    assert s["cudart_path"] == "/v/libcudart.so.13" and s["extension_loaded"] is True
    assert s["project_ok"] is True and s["op_ok"] is True and s["failed_checks"] == ["runtime version"]
    rocm = smoke_mod.summarize({"checks": [], "facts": {"accelerator": "rocm", "runtime_library": None}})
    assert rocm["cudart_path"] is None and rocm["extension_loaded"] is None and rocm["project_ok"] is None


class FakeRunner:
    """A Runner that records commands and answers the probe's with ``stdout`` (or raises); a command whose
    argv contains ``fail_on`` exits 2 as uv does on a resolution error."""

    def __init__(self, stdout: str = "", error: ProcessError | None = None, fail_on: str | None = None) -> None:
        self.calls: list[tuple[list[str], dict[str, Any]]] = []
        self.envs: list[dict[str, str]] = []
        self.stdout, self.error, self.fail_on = stdout, error, fail_on

    def __call__(self, argv, *, cwd=None, separate_stderr=False, timeout=1800) -> Completed:
        return self.run(argv, env={}, cwd=cwd, separate_stderr=separate_stderr, timeout=timeout)

    def run(self, argv, *, env, cwd=None, separate_stderr=False, timeout=None) -> Completed:
        self.calls.append((list(argv), {"cwd": cwd, "separate_stderr": separate_stderr, "timeout": timeout}))
        self.envs.append(dict(env))
        if self.fail_on is not None and self.fail_on in argv:
            raise ProcessError(argv, 2, "Resolved 3 packages\nerror: No solution found when resolving dependencies")
        if "-I" in argv and self.error is not None:
            raise self.error
        return Completed(tuple(argv), 0, self.stdout if "-I" in argv else "", 0.0)


@pytest.mark.parametrize(("os_", "python"), [(OS.LINUX, "/s/venv/bin/python"), (OS.WINDOWS, "/s/venv/Scripts/python.exe")])
def test_smoke_with_runs_the_probe_from_an_empty_dir_with_the_projects_timeout(m, os_: OS, python: str) -> None:
    """The venv's interpreter where the target's OS keeps it (an accelerator variant where the OS has one)."""
    on_os = sorted(select(m, Selection()), key=lambda t: (t.variant.accelerator == accelerator("cpu"), t.id))
    target = next(t for t in on_os if t.platform.os is os_ and t.python.abi == "cp313")
    call = FakeRunner(json.dumps(RECORD))
    out = smoke_mod.smoke_with(call, python="py3", wheel="/w/x.whl", staged="/staged", scratch="/s",
                               target=with_script(target, timeout=42.0))
    argv, opts = call.calls[-1]
    assert argv == [python, "-I", "/staged/smoke_probe.py", "/staged/facts.json"]
    assert opts == {"cwd": "/s/cwd", "separate_stderr": True, "timeout": 42.0 + smoke_mod.PROBE_MARGIN}
    assert call.calls[-2][0] == [python, "-m", "pip", "install", "--no-input", "/w/x.whl"]
    assert out.record == RECORD and len(out.problems) == 1


def test_smoke_with_turns_a_probe_crash_into_a_problem(m) -> None:
    call = FakeRunner(error=ProcessError(["py"], 124, "[timed out after 162.0s]"))
    out = smoke_mod.smoke_with(call, python="py3", wheel="w.whl", staged="/st", scratch="/s",
                               target=one(m, "cpu-cp313-linux-x86_64"))
    assert out.record == {} and "code 124" in out.problems[0] and "timed out" in out.problems[0]


# ---- the installer: uv where it runs, pip's settings translated, venv + pip as the fallback ----------

# ``pip config list`` as pip 25 prints it (``section.name=repr(value)``), from files and PIP_* variables.
PIP_CONFIG_LIST = """\
:env:.cert='/etc/ssl/certs/ca-certificates.crt'
:env:.default-timeout='180'
:env:.find-links='/opt/wheels /srv/more wheels'
global.cert='/etc/ssl/old.crt'
global.constraint='/etc/xdg/pip/constraints.txt'
global.extra-index-url='file:///opt/pypi/simple https://index.invalid/extra/simple'
global.find-links='/opt/ignored'
global.index-url='https://index.invalid/global/simple'
install.index-url='https://index.invalid/install/simple'
install.no-index='false'
freeze.exclude='pip'
not a setting line
"""


def test_pip_settings_follow_pips_own_precedence() -> None:
    settings = smoke_mod.pip_settings(PIP_CONFIG_LIST)
    assert settings == {
        "cert": "/etc/ssl/certs/ca-certificates.crt",  # :env: over global
        "default-timeout": "180",
        "find-links": "/opt/wheels /srv/more wheels",
        "constraint": "/etc/xdg/pip/constraints.txt",
        "extra-index-url": "file:///opt/pypi/simple https://index.invalid/extra/simple",
        "index-url": "https://index.invalid/install/simple",  # the install command's section over global
        "no-index": "false",
    }
    assert smoke_mod.pip_env_settings({"PIP_EXTRA_INDEX_URL": "a b", "PIP_NO_INDEX": "1", "PATH": "/bin"}) == {
        "extra-index-url": "a b", "no-index": "1"}


def test_uv_gets_pips_indexes_find_links_constraints_trust_and_timeout() -> None:
    env = smoke_mod.uv_env(smoke_mod.pip_settings(PIP_CONFIG_LIST))
    assert env == {
        "UV_DEFAULT_INDEX": "https://index.invalid/install/simple",
        "UV_INDEX": "file:///opt/pypi/simple https://index.invalid/extra/simple",  # uv: space-separated
        "UV_FIND_LINKS": "/opt/wheels,/srv/more,wheels",  # uv: comma-separated; pip splits on whitespace
        "UV_CONSTRAINT": "/etc/xdg/pip/constraints.txt",
        "SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt",
        "UV_HTTP_TIMEOUT": "180",
    }  # no-index is false: no UV_NO_INDEX


def test_uv_trusts_the_system_store_where_pip_has_no_cert_and_takes_pips_switches() -> None:
    env = smoke_mod.uv_env({"no-index": "yes", "pre": "1", "trusted-host": "a.invalid  b.invalid"})
    assert env == {"UV_NO_INDEX": "1", "UV_PRERELEASE": "allow", "UV_INSECURE_HOST": "a.invalid b.invalid",
                   "UV_SYSTEM_CERTS": "1"}
    assert smoke_mod.uv_env({}) == {"UV_SYSTEM_CERTS": "1"}  # pip's defaults are uv's: nothing else to say


def test_uv_is_planned_where_builders_has_it_and_copied_into_an_inbox() -> None:
    here = smoke_mod.planned_installer("", "/venv/bin/uv")
    assert (here.kind, here.uv, here.source, here.note) == ("uv", "/venv/bin/uv", "/venv/bin/uv", "")
    boxed = smoke_mod.planned_installer("/tmp", "/venv/bin/uv")
    assert (boxed.uv, boxed.source) == ("/tmp/uv", "/venv/bin/uv")
    absent = smoke_mod.planned_installer("/tmp", None)
    assert absent.kind == "pip" and absent.note == "the uv package is not installed with builders; venv + pip ran instead"
    assert smoke_mod.chosen_installer("pip") == smoke_mod.VENV_PIP and smoke_mod.VENV_PIP.note == ""


def test_builders_ships_uv_as_a_dependency() -> None:
    """``uv`` is in builders' dependencies, so an installed builders finds its binary."""
    found = smoke_mod.find_uv()
    assert found is not None and Path(found).name.startswith("uv")
    assert smoke_mod.chosen_installer("uv").uv == found == smoke_mod.chosen_installer("auto").uv


def test_uv_steps_make_an_unseeded_venv_for_the_interpreter_and_install_like_pip(m) -> None:
    uv = smoke_mod.Installer(kind="uv", uv="/tmp/uv", env=(("UV_CACHE_DIR", "/c"),))
    steps = smoke_mod.smoke_steps(python="/opt/py", wheel="/tmp/w.whl", staged="/st", scratch="/s",
                                  target=one(m, "cpu-cp313-linux-x86_64"), installer=uv)
    venv, install = steps[1], steps[2]
    assert venv.argv == ("/tmp/uv", "venv", "--no-config", "--no-project", "--python", "/opt/py", "/s/venv")
    assert "--seed" not in venv.argv
    assert install.argv == ("/tmp/uv", "pip", "install", "--no-config", "--index-strategy", "unsafe-best-match",
                            "--python", "/s/venv/bin/python", "/tmp/w.whl")
    assert venv.env == install.env == (("UV_CACHE_DIR", "/c"),)
    pip = smoke_mod.smoke_steps(python="/opt/py", wheel="/tmp/w.whl", staged="/st", scratch="/s",
                                target=one(m, "cpu-cp313-linux-x86_64"))
    assert (steps[0], steps[-1]) == (pip[0], pip[-1])  # the probe and its folder are the same either way


def test_a_failing_uv_install_falls_back_to_pip_in_a_fresh_folder_with_a_note(m) -> None:
    runner = FakeRunner(json.dumps(RECORD), fail_on="--index-strategy")
    uv = smoke_mod.Installer(kind="uv", uv="/tmp/uv", env=(("UV_CACHE_DIR", "/c"),))
    out = smoke_mod.smoke_with(runner, python="py3", wheel="/w/x.whl", staged="/st", scratch="/s",
                               target=one(m, "cu132-cp313-linux-x86_64"), installer=uv)
    argvs = [argv for argv, _ in runner.calls]
    assert argvs[4:6] == [["py3", "-m", "venv", "/s/pip/venv"],
                          ["/s/pip/venv/bin/python", "-m", "pip", "install", "--no-input", "/w/x.whl"]]
    assert argvs[-1][0] == "/s/pip/venv/bin/python" and runner.calls[-1][1]["cwd"] == "/s/pip/cwd"
    assert out.installer == "pip" and out.record == RECORD
    assert out.note == "uv failed: exit code 2: error: No solution found when resolving dependencies; venv + pip ran instead"
    assert out.summary["installer"] == "pip" and out.summary["installer_note"] == out.note


def test_a_pip_failure_is_not_retried(m) -> None:
    runner = FakeRunner(fail_on="--no-input")
    with pytest.raises(SmokeError, match=r"installing the wheel and its runtime requirements with pip from the index "
                                         r"pip is configured with .*: exit code 2: error: No solution found"):
        smoke_mod.smoke_with(runner, python="py3", wheel="w.whl", staged="/st", scratch="/s",
                             target=one(m, "cpu-cp313-linux-x86_64"))
    assert len(runner.calls) == 3


def test_a_failed_install_names_every_index_it_asked(m) -> None:
    """uv, then pip, fail against a broken index: the error names it (pip's, translated for uv, and the variant's)."""
    uv = smoke_mod.Installer(kind=smoke_mod.UV, uv="/uv", env=(("UV_DEFAULT_INDEX", "http://127.0.0.1:9/simple"),
                                                                ("UV_INDEX", "file:///opt/extra")),
                             indexes=("http://variant.example/simple",))
    runner = FakeRunner(fail_on="install")
    steps = smoke_mod.planned_steps(python="py3", wheel="w.whl", staged="/st", scratch="/s",
                                    target=one(m, "cpu-cp313-linux-x86_64"), installer=uv)
    fallback = smoke_mod.fallback_steps(python="py3", wheel="w.whl", staged="/st", scratch="/s",
                                        target=one(m, "cpu-cp313-linux-x86_64"), installer=uv)
    with pytest.raises(SmokeError) as caught:
        smoke_mod.run_planned(runner, steps, fallback, uv)
    message = str(caught.value)
    assert "with pip from http://127.0.0.1:9/simple, file:///opt/extra, http://variant.example/simple" in message
    assert "uv failed: exit code 2" in message


def test_uv_runs_with_its_settings_and_the_probe_without_them(m) -> None:
    runner = FakeRunner(json.dumps(RECORD))
    uv = smoke_mod.Installer(kind="uv", uv="/tmp/uv", env=(("UV_INDEX", "file:///w"),))
    out = smoke_mod.smoke_with(runner, python="py3", wheel="w.whl", staged="/st", scratch="/s",
                               target=one(m, "cpu-cp313-linux-x86_64"), installer=uv)
    assert runner.envs == [{}, {"UV_INDEX": "file:///w"}, {"UV_INDEX": "file:///w"}, {}]
    assert (out.installer, out.note) == ("uv", "")


def test_uv_cache_is_builders_own_on_the_host_and_a_mount_in_a_container(tmp_path: Path) -> None:
    from builders.engines.container import ContainerSpec, Mount
    from builders.engines.local import HostSpec

    folder = tmp_path / "cache" / "uv"
    assert smoke_mod.uv_cache(HostSpec(), folder) == {"UV_CACHE_DIR": str(folder)}
    assert smoke_mod.uv_cache(ContainerSpec(image="i", engine="podman"), folder) == {}
    mounted = ContainerSpec(image="i", engine="podman",
                            mounts=(Mount(source=str(folder), target=smoke_mod.UV_CACHE_MOUNT, writable=True),))
    assert smoke_mod.uv_cache(mounted, folder) == {"UV_CACHE_DIR": "/uv-cache", "UV_LINK_MODE": "copy"}
    assert folder.is_dir()  # podman refuses to mount a folder that does not exist
    places = (("{output}", "/o"), ("{cache}", str(tmp_path / "toolchains")))
    assert smoke_mod.uv_cache_folder(places, {}) == tmp_path / "uv"
    assert smoke_mod.uv_cache_folder((), {"BUILDERS_CACHE": str(tmp_path / "b")}) == tmp_path / "b" / "uv"


def test_the_plan_shows_the_uv_commands_where_the_smoke_runner_sees_uv(m) -> None:
    from builders.engines.container import ContainerSpec
    from builders.pipeline.plan import Recipe, ToolchainPin, smoke_plan

    target = one(m, "cu132-cp313-linux-x86_64")
    recipe = Recipe(engine="container", runner=ContainerSpec(image="i", engine="podman"),
                    smoke_runner=ContainerSpec(image="i", engine="podman", network=True), interpreter="/opt/py",
                    smoke_interpreter="/opt/py", toolchain=ToolchainPin(accelerator="cuda"), source="/src",
                    work="/work", smoke_scratch="/tmp/smoke", smoke_inbox="/tmp", build_cwd="/tmp")
    plan = smoke_plan(target, recipe, "/out/w.whl", "/out/.work/t")
    uv = smoke_mod.find_uv()
    assert uv is not None and plan.installer == smoke_mod.planned_installer("/tmp", uv)
    assert [c.argv[:2] for c in plan.commands[1:3]] == [("/tmp/uv", "venv"), ("/tmp/uv", "pip")]
    assert plan.commands[2].argv[-1] == f"/tmp/{target.wheel_name}" and plan.commands[1].argv[-1] == "/tmp/smoke/venv"


def test_results_keep_the_installer_and_reject_an_unknown_one() -> None:
    from builders.pipeline.results import schema_problems

    summary = replace(smoke_mod.outcome(json.dumps(RECORD)), installer="uv").summary
    assert (summary["installer"], summary["installer_note"]) == ("uv", "")
    doc = {"schema": 1, "targets": [{"id": "cpu-cp313-linux-x86_64", "status": "built", "smoke": summary}]}
    bad = {"schema": 1, "targets": [{"id": "cpu-cp313-linux-x86_64", "status": "built",
                                     "smoke": {**summary, "installer": "conda"}}]}
    good_problems, bad_problems = list(schema_problems(doc)), list(schema_problems(bad))
    assert not [p for p in good_problems if "smoke" in p]
    assert [p for p in bad_problems if "smoke" in p and "installer" in p]


def test_the_smoke_runner_drops_the_projects_build_variables(m, tmp_path: Path) -> None:
    """An installed wheel must not need its build settings: the plan's smoke runner unsets them."""
    from builders.base.process import HostRunner, Log
    from builders.engines.local import host_smoke_runner

    t = one(m, "cu132-cp313-linux-x86_64")
    build_vars = {var for _, var in t.project.build_env}
    env = {"PATH": "/usr/bin", "PIP_INDEX_URL": "https://i", "PYTHONPATH": "/x", **dict.fromkeys(build_vars, "x")}
    with host_smoke_runner(t).open(env, Log(tmp_path / "log")) as runner:
        assert isinstance(runner, HostRunner)
        assert dict(runner.env) == {"PATH": "/usr/bin", "PIP_INDEX_URL": "https://i"}


# ---- no framework named where builders runs -----------------------------------------------

def _code_without_docstrings(path: Path) -> str:
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body[0] = ast.Pass()
    return ast.unparse(tree)


@pytest.mark.parametrize("path", ["builders/wheel/smoke.py", "builders/resources/smoke_probe.py", "builders/cli/smoke.py",
                                  "builders/engines/container.py", "builders/engines/cibw.py"])
def test_smoke_code_names_no_framework(path: str) -> None:
    assert "minifw" not in _code_without_docstrings(ROOT / path).lower()


# ---- minifw's own script, against a fake minifw ----------------------------------------------

def _minifw_smoke():
    spec = importlib.util.spec_from_file_location("minifw_smoke", ROOT / "examples" / "minifw" / "smoke.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _fake_minifw(accelerator: str = "cuda", version: str | None = "13.2", runtime: int | None = 13020,
                 saxpy_bias: float = 0.0) -> SimpleNamespace:
    fields = {"cuda": None, "hip": None, "xpu": None}
    fields[{"cuda": "cuda", "rocm": "hip", "xpu": "xpu"}.get(accelerator, "none")] = version
    return SimpleNamespace(
        __version__=f"2.15.0+{accelerator}", device_count=lambda: 0,
        version=SimpleNamespace(accelerator=accelerator, accelerator_version=version, gpu_archs="", **fields),
        saxpy=lambda a, x, y, device=None: [a * p + q + saxpy_bias for p, q in zip(x, y)],
        add=lambda x, y: [p + q for p, q in zip(x, y)],
        cuda=SimpleNamespace(runtime_version=lambda: runtime))


def test_minifw_script_checks_pass_on_a_right_build() -> None:
    s = _minifw_smoke()
    fw = _fake_minifw()
    facts = {"version": "2.15.0+cuda", "accelerator": "cuda", "accelerator_version": "13.2",
             "expected_runtime_version": 13020}
    checks = s.version_checks(fw, facts) + s.op_checks(fw) + s.runtime_checks(fw, facts)
    assert all(c["ok"] for c in checks), checks
    assert {c["name"] for c in checks} >= {"__version__", "version.cuda", "saxpy", "saxpy cpu", "add", "cuda.runtime_version"}


def test_minifw_script_reports_wrong_numbers_and_runtime() -> None:
    s = _minifw_smoke()
    fw = _fake_minifw(runtime=13040, saxpy_bias=1.0)
    facts = {"version": "2.15.0+cuda", "accelerator": "cuda", "accelerator_version": "13.2", "expected_runtime_version": 13020}
    failed = {c["name"] for c in s.op_checks(fw) + s.runtime_checks(fw, facts) if not c["ok"]}
    assert failed == {"saxpy", "saxpy cpu", "cuda.runtime_version"}
    assert s.runtime_checks(_fake_minifw("cpu", None, None), {"accelerator": "cpu"}) == []
    boom = s.guarded("ops", lambda: 1 / 0)
    assert boom[0]["name"] == "ops" and "ZeroDivisionError" in boom[0]["detail"]


def test_accelerators_with_runtime_probes_are_declared() -> None:
    probed = {f.accelerator for f in families() if f.runtime_probe is not None}
    assert probed == {accelerator("cuda"), accelerator("rocm")}


# -- a variant's own runtime index (TheRock's for rocm) is added to the smoke install's ------------------


def indexed_and_plain(m) -> tuple:
    """A Linux target whose variant names a runtime index (``toolkit.index_url``), one whose variant has
    runtime requirements and no index, and the variable the index address comes from."""
    linux = [t for t in select(m, Selection(select=("*-linux-*",))) if t.variant.requirements]
    indexed = next(t for t in linux if t.variant.toolkit.index_url)
    plain = next(t for t in linux if not t.variant.toolkit.index_url)
    (var,) = findings.ENV_REF.findall(indexed.variant.toolkit.index_url)
    return indexed, plain, var


def test_the_smoke_install_adds_the_variants_index_to_uvs_and_pips(m) -> None:
    indexed, plain, var = indexed_and_plain(m)
    env = {var: "https://rocm.example.invalid/simple/"}
    uv = smoke_mod.Installer(kind="uv", uv="/tmp/uv", env=(("UV_CACHE_DIR", "/c"), ("UV_INDEX", "file:///w")))
    for target, added in ((indexed, (env[var],)), (plain, ())):
        venv, install = smoke_mod.smoke_steps(python="/opt/py", wheel="/w.whl", staged="/st", scratch="/s",
                                              target=target, installer=uv.for_target(target, env))[1:3]
        assert dict(install.env)["UV_INDEX"].split() == ["file:///w", *added]  # pip's extra index kept
        assert venv.env == uv.env and "--index" not in install.argv
        pip = smoke_mod.smoke_steps(python="/opt/py", wheel="/w.whl", staged="/st", scratch="/s", target=target,
                                    installer=smoke_mod.VENV_PIP.for_target(target, env))[2]
        assert pip.argv == ("/s/venv/bin/python", "-m", "pip", "install", "--no-input",
                            *(arg for url in added for arg in ("--extra-index-url", url)), "/w.whl")
        fallback = uv.for_target(target, env).fallback("uv failed")
        assert fallback.indexes == added


def test_an_unset_index_variable_fails_the_smoke_naming_it_and_its_place(m) -> None:
    indexed, _, var = indexed_and_plain(m)
    with pytest.raises(EngineError, match=rf"{indexed.variant.location.file}:\d+:\d+: .*needs \$\{{{var}\}}"):
        smoke_mod.VENV_PIP.for_target(indexed, {})
