"""The compatibility page and the Markdown report, read back with a plain HTML parser.

Expectations come from the matrix's YAML (``tests/expected.py``), never from the code under
test: which combinations exist, which are excluded and why, the install command of each.
The browser half (selector clicks, visibility, axe-core) is tests/integration/test_report_browser.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from importlib import resources

import pytest

from builders.families import loader as matrix
from builders.pipeline.results import Result
from builders.report import compatibility as report
from tests import expected

VOID = {"meta", "br", "input", "link", "img", "hr", "col", "source", "wbr"}


@dataclass
class El:
    tag: str
    attrs: dict[str, str]
    children: list[El | str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text for c in self.children)

    def all(self, tag: str) -> list[El]:
        out = []
        for c in self.children:
            if isinstance(c, El):
                out += ([c] if c.tag == tag else []) + c.all(tag)
        return out

    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())


class Dom(HTMLParser):
    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.root = El("#root", {})
        self.stack = [self.root]
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        el = El(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(el)
        if tag not in VOID:
            self.stack.append(el)

    def handle_endtag(self, tag: str) -> None:
        while len(self.stack) > 1:
            if self.stack.pop().tag == tag:
                break

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def squash(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def page(m) -> str:
    return report.to_html(m, {})


@pytest.fixture(scope="module")
def dom(page: str) -> El:
    return Dom(page).root


# --- facts from the YAML -------------------------------------------------------------------------


def exclusion_reason(data: dict, tid: str) -> str | None:
    import fnmatch

    return next((e["reason"] for e in data.get("exclude", []) if fnmatch.fnmatchcase(tid, e["targets"])), None)


def expected_command(data: dict, platform: str, python: str, label: str, manager: str = "pip") -> str:
    """The install command, from the matrix's channels: PyPI for the platform's default, else the
    variant's own index (base_url + layout)."""
    project = data["project"]
    spec = f"{project['name']}=={project['version']}"
    os_name = data["platforms"][platform]["os"]
    if manager == "uv":
        head = f"uv pip install --python {python} {spec}"
    elif os_name == "windows":
        head = f"py -{python} -m pip install {spec}"
    else:
        head = f"python{python} -m pip install {spec}"
    if data["channels"]["pypi"].get(platform) == label:
        return head
    index = data["channels"]["index"]
    return f"{head} --index-url {index['base_url']}{index['layout'].format(label=label)}"


def dropped_reason(data: dict, python: str) -> str:
    d = next(d for d in data["dropped"] if d.get("python") == python)
    return f"Python {python} was dropped in {d['since']}: {d['reason']}"


def all_reasons(data: dict) -> set[str]:
    """Every exclusion reason that applies to some combination, and every dropped item's."""
    live = set(expected.candidates(data))
    used = {exclusion_reason(data, tid) for tid in live} - {None}
    return used | {squash(str(d["reason"])) for d in data["dropped"]}


# --- the page ------------------------------------------------------------------------------------


def test_page_is_self_contained(page: str, dom: El) -> None:
    assert "<script" not in page.lower()
    for tag in ("script", "link", "img", "iframe", "object", "embed"):
        assert not dom.all(tag), tag
    style = dom.all("style")[0].text
    assert "url(" not in style and "@import" not in style
    for a in dom.all("a"):
        assert a.attrs["href"].startswith("#"), a.attrs  # no result given: only in-page links
    assert dom.all("html")[0].attrs["lang"] == "en"


def test_template_is_package_data(root) -> None:
    assert resources.files("builders").joinpath("templates/compatibility.html.j2").is_file()
    assert '"templates/*.j2"' in (root / "pyproject.toml").read_text()


def answers(dom: El) -> dict[tuple[str, ...], El]:
    """Selector answers by (platform, manager, python, label), decoded through the radio ids."""
    values: dict[str, str] = {}
    for radio in dom.all("input"):
        values[radio.attrs["id"].removeprefix("pick-")] = radio.attrs["value"]
    out = {}
    for div in dom.all("div"):
        if "answer" in div.classes():
            keys = sorted(div.classes() - {"answer"}, key=lambda c: "pmyv".index(c[0]))
            out[tuple(values[k] for k in keys)] = div
    return out


def test_selector_offers_every_combination_with_its_command_or_reason(data: dict, dom: El) -> None:
    found = answers(dom)
    pythons = [str(p) for p in data["pythons"]] + expected.dropped_pythons(data)
    live = expected.live_ids(data)
    assert len(found) == len(data["platforms"]) * 2 * len(pythons) * len(expected.labels(data))
    for platform in data["platforms"]:
        for python in pythons:
            for label in expected.labels(data):
                tid = f"{label}-{expected.abi(python)}-{platform}"
                for manager in ("pip", "uv"):
                    text = squash(found[(platform, manager, python, label)].text)
                    if python in expected.dropped_pythons(data):
                        assert squash(dropped_reason(data, python)) in text
                    elif tid in live:
                        codes = found[(platform, manager, python, label)].all("code")
                        assert [c.text for c in codes] == [expected_command(data, platform, python, label, manager)]
                    else:
                        assert squash(exclusion_reason(data, tid)) in text, (tid, text)


def test_selector_controls_are_labelled_radio_groups(data: dict, dom: El) -> None:
    form = dom.all("form")[0]
    fieldsets = form.all("fieldset")
    assert [squash(f.all("legend")[0].text) for f in fieldsets] == [
        "Operating system", "Package manager", "Python", "Compute platform"]
    for f in fieldsets:
        radios = f.all("input")
        assert radios and all(r.attrs["type"] == "radio" for r in radios)
        assert sum("checked" in r.attrs for r in radios) == 1
        assert len({r.attrs["name"] for r in radios}) == 1
    labels = {squash(label.text) for label in form.all("label")}
    assert "uv" in labels and "pip" in labels


def tables(dom: El) -> list[El]:
    section = next(s for s in dom.all("section") if s.attrs.get("id") == "matrix")
    return section.all("table")


def test_one_semantic_table_per_platform_with_every_live_command(data: dict, dom: El) -> None:
    found = tables(dom)
    assert len(found) == len(data["platforms"])
    live = expected.live_ids(data)
    for table, platform in zip(found, data["platforms"]):
        assert platform_words(data, platform) in squash(table.all("caption")[0].text)
        headers = table.all("th")
        assert all(th.attrs.get("scope") in ("col", "row") for th in headers)
        commands = [c.text for c in table.all("code") if "pip install" in c.text]
        want = sorted(expected_command(data, platform, python_of(tid), tid.split("-")[0])
                      for tid in live if tid.endswith(platform))
        assert sorted(commands) == want


def python_of(tid: str) -> str:
    """``cu132-cp314t-linux-x86_64`` -> ``3.14t``."""
    abi = tid.split("-")[1].removeprefix("cp")
    return f"{abi[0]}.{abi[1:]}"


def platform_words(data: dict, platform: str) -> str:
    p = data["platforms"][platform]
    return {"linux": "Linux", "windows": "Windows", "macos": "macOS"}[p["os"]] + " " + p["arch"]


def test_free_threaded_rows_are_marked(data: dict, dom: El) -> None:
    for table in tables(dom):
        for th in table.all("th"):
            if th.attrs.get("scope") == "row" and squash(th.text).split()[0].endswith("t"):
                assert "free-threaded" in th.text


def test_every_reason_is_written_once_in_grouped_notes(data: dict, dom: El) -> None:
    section = next(s for s in dom.all("section") if s.attrs.get("id") == "notes")
    items = [squash(li.text) for li in section.all("li")]
    assert len(items) == len(set(items))
    for reason in all_reasons(data):
        assert sum(reason in item for item in items) == 1, reason
    headings = [squash(h.text) for h in section.all("h3")]
    assert headings == ["Dropped in this release", "Excluded combinations"]
    numbers = [int(li.attrs["value"]) for li in section.all("li")]
    assert numbers == list(range(1, len(items) + 1))


def test_cells_point_at_their_note(data: dict, dom: El) -> None:
    notes = {li.attrs["id"]: squash(li.text) for li in dom.all("li") if li.attrs.get("id", "").startswith("note-")}
    refs = [a for t in tables(dom) for a in t.all("a") if "ref" in a.classes()]
    assert refs
    for a in refs:
        assert notes[a.attrs["href"][1:]] == squash(a.attrs["title"])


def test_toolkits_and_gpu_architectures_are_listed(data: dict, dom: El) -> None:
    section = squash(next(s for s in dom.all("section") if s.attrs.get("id") == "compute").text)
    for family in data["accelerators"].values():
        for version in (family.get("versions") or {}).values():
            for pin in (version.get("toolkit") or {}).get("requirements", []):
                assert pin in section
            arch = version.get("arch_list")
            lists = arch.values() if isinstance(arch, dict) else [arch] if arch else []
            for one in lists:
                assert ", ".join(one.split(";")) in section


RESULTS = {tid: Result.from_json(entry) for tid, entry in {
    "cu132-cp312-linux-x86_64": {"id": "cu132-cp312-linux-x86_64", "status": "built", "engine": "local",
                                 "log": "logs/cu132-cp312-linux-x86_64.log"},
    "cpu-cp312-linux-x86_64": {"id": "cpu-cp312-linux-x86_64", "status": "reused", "engine": "container",
                               "log": "logs/cpu-cp312-linux-x86_64.log"},
    "cu134-cp312-linux-x86_64": {"id": "cu134-cp312-linux-x86_64", "status": "failed", "stage": "smoke",
                                 "reason": "cudaRuntimeGetVersion returned 13020", "log": "javascript:alert(1)"},
}.items()}


def test_build_results_show_status_stage_and_log_links(m) -> None:
    dom = Dom(report.to_html(m, RESULTS)).root
    cells = [td for t in tables(dom) for td in t.all("td")]
    built = [td for td in cells if "st-built" in td.classes()]
    reused = [td for td in cells if "st-reused" in td.classes()]
    failed = [td for td in cells if "st-failed" in td.classes()]
    assert len(built) == len(reused) == len(failed) == 1
    assert [a.attrs["href"] for a in built[0].all("a")] == ["logs/cu132-cp312-linux-x86_64.log"]
    assert "(container)" in reused[0].text
    assert not [a for a in failed[0].all("a") if "javascript" in a.attrs["href"]]
    assert not failed[0].all("code")  # no install command for a wheel that does not exist
    notes = next(s for s in dom.all("section") if s.attrs.get("id") == "notes")
    assert "at smoke: cudaRuntimeGetVersion returned 13020" in squash(notes.text)
    assert "Build results" in [squash(h.text) for h in notes.all("h3")]


@pytest.mark.parametrize("href", ["javascript:alert(1)", "https://evil.invalid/x", "/etc/passwd", "//host/x",
                                  "a\nb", ""])
def test_log_links_are_relative_paths_only(href: str) -> None:
    assert report.safe_href(href) == ""


def test_logs_are_linked_relative_to_the_page() -> None:
    moved = report.rebase_logs(RESULTS, "wheelhouse", "report")
    assert moved["cu132-cp312-linux-x86_64"].log == "../wheelhouse/logs/cu132-cp312-linux-x86_64.log"
    assert moved["cu134-cp312-linux-x86_64"].log == "javascript:alert(1)"  # left alone, never linked


def test_matrix_text_is_escaped(shipped_text: str) -> None:
    evil = '<img src=x onerror="alert(1)">'
    text = shipped_text.replace("reason: CUDA does not support macOS", f"reason: '{evil}'")
    assert text != shipped_text
    page = report.to_html(matrix.loads(text), {})
    assert evil not in page and "<img" not in page
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in page


# --- Markdown ------------------------------------------------------------------------------------


def test_markdown_writes_each_reason_once_with_footnotes(data: dict, m) -> None:
    md = report.to_markdown(m, {})
    for reason in all_reasons(data):
        assert md.count(reason) == 1, reason
    refs = set(re.findall(r"\[\^(\d+)\](?!:)", md))
    defs = set(re.findall(r"^\[\^(\d+)\]:", md, re.MULTILINE))
    assert refs == defs and refs
    assert md.count("dropped") < 10  # not a cell per dropped Python and variant


def test_markdown_fits_a_job_summary_whatever_the_results(data: dict, m) -> None:
    live = sorted(expected.live_ids(data))
    huge = {tid: Result(id=tid, status="failed", stage="build", reason=f"{tid} " + "x" * 99_000) for tid in live}
    md = report.to_markdown(m, huge)
    assert len(md.encode()) <= report.SUMMARY_LIMIT
    assert "cut; the JSON report has all of it" in md
    small = report.to_markdown(m, huge, limit=64 * 1024)
    assert len(small.encode()) <= 64 * 1024 and "more notes: see compatibility.json" in small
