"""The compatibility page in a real browser: Debian's headless Chromium, driven by selenium
through Debian's chromium-driver, checked by axe-core from the npm registry.

Nothing here downloads a browser: ``scripts/setup-test-host.sh`` installs ``chromium`` and
``chromium-driver`` with apt and ``axe-core`` with npm into ``~/.cache/builders/axe`` (or
``$BUILDERS_AXE_DIR``). The page comes from ``python -m builders report`` over a results file
with a built, a reused and a failed target; the expected command and reasons are read from
the matrix's YAML. A full-page screenshot is saved in the test's output folder and its path
printed, for people to look at.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import expected
from tests.helpers import require_tool
from tests.unit.test_report_page import all_reasons, expected_command, squash

pytestmark = pytest.mark.slow

AXE_DIR = Path(os.environ.get("BUILDERS_AXE_DIR") or Path.home() / ".cache/builders/axe")
AXE = AXE_DIR / "node_modules/axe-core/axe.min.js"
PICK = {"platform": "linux-x86_64", "manager": "pip", "python": "3.14t"}  # and CUDA 13.4, from the matrix


def browser_tools() -> tuple[str, str]:
    return require_tool("chromium"), require_tool("chromedriver")


@pytest.fixture(scope="module")
def results(data: dict, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict]]:
    """A results file next to its logs, as ``build`` leaves it: one built, one reused, one failed."""
    folder = tmp_path_factory.mktemp("wheelhouse")
    cuda = data["accelerators"]["cuda"]["versions"]
    labels = [v["label"] for v in cuda.values()]
    ids = [f"{labels[0]}-cp312-linux-x86_64", f"{expected.label_of(data, 'cpu')}-cp312-linux-x86_64",
           f"{labels[-1]}-cp313-linux-x86_64"]
    assert set(ids) <= expected.live_ids(data)
    records = [
        {"id": ids[0], "status": "built", "engine": "local", "log": f"logs/{ids[0]}.log"},
        {"id": ids[1], "status": "reused", "engine": "container", "log": f"logs/{ids[1]}.log"},
        {"id": ids[2], "status": "failed", "stage": "smoke", "reason": "cudaRuntimeGetVersion() returned 13020",
         "log": f"logs/{ids[2]}.log"},
    ]
    (folder / "logs").mkdir()
    for r in records:
        (folder / r["log"]).write_text(f"# {r['id']}\n")
    (folder / "results.json").write_text(json.dumps({"schema": 1, "targets": records}))
    return folder / "results.json", {r["id"]: r for r in records}


@pytest.fixture(scope="module")
def page(root: Path, results: tuple[Path, dict], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report")
    proc = subprocess.run([sys.executable, "-m", "builders", "report", "--results", str(results[0]),
                           "--output", str(out)], cwd=root, text=True, capture_output=True, timeout=300,
                          env={k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"})
    assert proc.returncode == 0, proc.stderr
    return out / "compatibility.html"


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    chromium, driver_path = browser_tools()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1400,1000", "--force-prefers-reduced-motion"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    driver.set_script_timeout(120)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def opened(browser, page: Path):
    browser.get(page.as_uri())
    return browser


def radio(driver, name: str, value: str):
    from selenium.webdriver.common.by import By

    return driver.find_element(By.CSS_SELECTOR, f'input[type=radio][name="{name}"][value="{value}"]')


def visible_answers(driver) -> list:
    """The answers the browser renders (one script call; 400-odd ``is_displayed`` calls take seconds)."""
    return driver.execute_script(
        "return [...document.querySelectorAll('.answers .answer')].filter(e => e.getClientRects().length > 0)")


def cuda_label(data: dict, version: str) -> str:
    return expected.label_of(data, "cuda", version)


def test_picking_linux_pip_314t_cuda134_shows_its_command(opened, data: dict) -> None:
    label = cuda_label(data, "13.4")
    for name, value in [*PICK.items(), ("variant", label)]:
        radio(opened, name, value).find_element("xpath", "..").click()  # the visible label, as a user clicks
        assert radio(opened, name, value).is_selected()
    (answer,) = visible_answers(opened)
    from selenium.webdriver.common.by import By

    command = answer.find_element(By.TAG_NAME, "code").text
    assert command == expected_command(data, "linux-x86_64", "3.14t", label)
    assert "free-threaded" in answer.text
    # uv: the same choice with the other package manager
    radio(opened, "manager", "uv").find_element("xpath", "..").click()
    (answer,) = visible_answers(opened)
    assert answer.find_element(By.TAG_NAME, "code").text == expected_command(data, "linux-x86_64", "3.14t", label, "uv")


def test_an_excluded_choice_says_why(opened, data: dict) -> None:
    macos = next(name for name, p in data["platforms"].items() if p["os"] == "macos")
    radio(opened, "platform", macos).find_element("xpath", "..").click()
    radio(opened, "variant", cuda_label(data, "13.4")).find_element("xpath", "..").click()
    (answer,) = visible_answers(opened)
    reason = next(e["reason"] for e in data["exclude"] if e["targets"].startswith("cu") and "macos" in e["targets"])
    assert "Not available" in answer.text and squash(reason) in squash(answer.text)


def test_the_selector_works_from_the_keyboard(opened, data: dict) -> None:
    """Tab reaches every radio group; Space picks a choice; the command follows."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    body = opened.find_element(By.TAG_NAME, "body")
    body.click()
    reached = set()
    for _ in range(60):
        opened.switch_to.active_element.send_keys(Keys.TAB)
        active = opened.switch_to.active_element
        if active.tag_name == "input":
            reached.add(active.get_attribute("name"))
        if len(reached) == 4:
            break
    assert reached == {"platform", "manager", "python", "variant"}
    target = radio(opened, "python", "3.14t")
    opened.execute_script("arguments[0].focus()", target)
    opened.switch_to.active_element.send_keys(Keys.SPACE)
    assert target.is_selected()
    (answer,) = visible_answers(opened)
    assert "Python 3.14t" in answer.text


def test_every_reason_is_visible_text_once(opened, data: dict, results: tuple[Path, dict]) -> None:
    from selenium.webdriver.common.by import By

    text = squash(opened.find_element(By.TAG_NAME, "body").text)
    failures = {f"at {r['stage']}: {r['reason']}" for r in results[1].values() if r["status"] == "failed"}
    for reason in all_reasons(data) | failures:
        assert text.count(squash(reason)) == 1, reason


def test_the_table_shows_results_and_links_logs(opened, results: tuple[Path, dict]) -> None:
    from selenium.webdriver.common.by import By

    links = opened.find_elements(By.CSS_SELECTOR, "#matrix td a:not(.ref)")
    hrefs = sorted(a.get_attribute("href") for a in links)
    folder = results[0].parent
    assert hrefs == sorted((folder / r["log"]).resolve().as_uri() for r in results[1].values())
    statuses = {td.get_attribute("class") for td in opened.find_elements(By.CSS_SELECTOR, "#matrix td")}
    assert {"st-built", "st-reused", "st-failed", "st-planned", "st-excluded", "st-dropped"} <= statuses


def test_axe_finds_no_serious_or_critical_violation(opened) -> None:
    if not AXE.is_file():
        pytest.fail(f"axe-core is not installed in {AXE_DIR}: run scripts/setup-test-host.sh, which installs it "
                    "with npm", pytrace=False)
    opened.execute_script(AXE.read_text(encoding="utf-8"))
    outcome = opened.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run(document, {resultTypes: ['violations']})"
        ".then(r => done({violations: r.violations, version: axe.version}))"
        ".catch(e => done({error: String(e)}));")
    assert "error" not in outcome, outcome
    bad = [v for v in outcome["violations"] if v["impact"] in ("serious", "critical")]
    details = [(v["id"], v["impact"], v["help"], [n["target"] for n in v["nodes"][:3]]) for v in bad]
    print(f"axe-core {outcome['version']}: {len(outcome['violations'])} violation(s), none serious or critical"
          if not bad else details)
    assert not bad, details


def test_screenshot_for_people(opened, tmp_path: Path) -> None:
    height = opened.execute_script("return document.documentElement.scrollHeight")
    opened.set_window_size(1400, min(int(height), 16000))
    shot = tmp_path / "compatibility.png"
    assert opened.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    print(f"screenshot: {shot}")
