"""The one subprocess helper, for real (seconds, no builds): output reaches the log while the
command still runs, stdout stays data, timeouts and cancellation stop the whole process group."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import pytest

from builders.base import process
from builders.base.process import Cancelled, Log, ProcessError, run

PY = sys.executable
ENV = dict(os.environ)


@pytest.fixture(autouse=True)
def _uncancelled():
    process.reset_cancel()
    yield
    process.reset_cancel()


def wait_for(predicate, seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_the_log_shows_output_while_the_command_runs(tmp_path: Path) -> None:
    log = tmp_path / "t.log"
    code = "import time; print('first line', flush=True); time.sleep(4); print('second line')"
    worker = threading.Thread(target=run, args=([PY, "-c", code],), kwargs={"env": ENV, "log": log})
    worker.start()
    assert wait_for(lambda: log.exists() and "\nfirst line\n" in log.read_text())
    text = log.read_text()
    assert worker.is_alive() and "\nsecond line\n" not in text and "[exit" not in text
    worker.join(30)
    assert "\nsecond line\n" in log.read_text() and "[exit 0 after" in log.read_text()


def test_verbose_mirrors_each_line_as_it_comes(tmp_path: Path) -> None:
    seen: list[tuple[float, str]] = []
    code = "import time; print('a', flush=True); time.sleep(1); print('b', flush=True)"
    run([PY, "-c", code], env=ENV, log=Log(tmp_path / "t.log", echo=lambda line: seen.append((time.monotonic(), line))))
    lines = [line for _, line in seen]
    assert "a" in lines and "b" in lines
    (ta,), (tb,) = ([t for t, line in seen if line == x] for x in "ab")
    assert tb - ta > 0.5  # "a" was mirrored before "b" was printed


def test_data_stdout_is_kept_whole_and_stderr_goes_to_the_log(tmp_path: Path) -> None:
    log = tmp_path / "t.log"
    code = "import sys; print('{\"ok\": true}'); print('noise', file=sys.stderr)"
    result = run([PY, "-c", code], env=ENV, log=log, separate_stderr=True)
    assert result.stdout == '{"ok": true}\n'
    assert "noise" in log.read_text() and '{"ok": true}' in log.read_text()


def test_the_plan_environment_is_written_under_the_command(tmp_path: Path) -> None:
    log = tmp_path / "t.log"
    run([PY, "-c", "pass"], env=ENV, log=log, shown_env={"B": "two words", "A": "1"}, cwd=tmp_path)
    lines = log.read_text().splitlines()
    assert lines[0].startswith("$ ") and lines[1] == f"# cwd: {tmp_path}" and lines[2] == "# env: A=1 'B=two words'"


def test_a_failure_carries_the_tail_of_its_output(tmp_path: Path) -> None:
    code = "import sys; [print(f'line {i}') for i in range(100)]; sys.exit(3)"
    with pytest.raises(ProcessError) as info:
        run([PY, "-c", code], env=ENV, log=tmp_path / "t.log")
    assert info.value.returncode == 3 and "line 99" in info.value.tail and "line 10\n" not in info.value.tail


def test_a_timeout_kills_the_process_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    code = (f"import subprocess, sys, time; c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']);"
            f"open({str(pidfile)!r}, 'w').write(str(c.pid)); time.sleep(60)")
    start = time.monotonic()
    result = run([PY, "-c", code], env=ENV, log=tmp_path / "t.log", timeout=2, check=False)
    assert result.returncode == 124 and time.monotonic() - start < 20
    assert "[timed out after 2s]" in (tmp_path / "t.log").read_text()
    assert wait_for(lambda: not _alive(int(pidfile.read_text())), 10)


def test_cancel_all_stops_every_running_command(tmp_path: Path) -> None:
    errors: list[BaseException] = []

    def one(i: int) -> None:
        try:
            run([PY, "-c", "import time; print('up', flush=True); time.sleep(60)"], env=ENV, log=tmp_path / f"{i}.log")
        except BaseException as exc:  # noqa: BLE001 - the test collects what each thread saw
            errors.append(exc)

    workers = [threading.Thread(target=one, args=(i,)) for i in range(2)]
    for w in workers:
        w.start()
    assert wait_for(lambda: all((tmp_path / f"{i}.log").exists() and "up" in (tmp_path / f"{i}.log").read_text()
                                for i in range(2)))
    start = time.monotonic()
    process.cancel_all()
    for w in workers:
        w.join(30)
    assert time.monotonic() - start < 15 and len(errors) == 2 and all(isinstance(e, Cancelled) for e in errors)
    with pytest.raises(Cancelled):
        run([PY, "-c", "pass"], env=ENV)
    assert run([PY, "-c", "print('cleanup')"], env=ENV, cancellable=False).stdout == "cleanup\n"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").exists() and Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def test_a_command_stopped_at_its_limit_says_it_timed_out(tmp_path: Path) -> None:
    with pytest.raises(ProcessError) as caught:
        run([sys.executable, "-c", "import time; time.sleep(30)"], env=dict(os.environ), log=tmp_path / "log",
            timeout=0.5)
    assert caught.value.timeout == 0.5 and str(caught.value).startswith("timed out after 0.5 s:")
    named = str(caught.value.named("project.timeouts.build[cuda]"))
    assert named.startswith("timed out after 0.5 s (project.timeouts.build[cuda]):") and "exit code" not in named
    with pytest.raises(ProcessError) as failed:
        run([sys.executable, "-c", "raise SystemExit(3)"], env=dict(os.environ), log=tmp_path / "log", timeout=30)
    assert failed.value.timeout is None and failed.value.named("x") is failed.value
