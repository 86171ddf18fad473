"""How long ``builders verify`` takes, and how much memory, on a large real wheel.

The default wheel is PyTorch's CPU wheel (about 180 MB, 12,000 members, 700 MB inflated,
one 430 MB shared library), fetched once with ``pip download`` through pip's own
configuration and kept in ``~/.cache/builders/test-wheels``. It is verified against
``tests/projects/torch/matrix.yaml`` in a child process that does nothing else, so the peak
RSS it reports (``ru_maxrss``) is verify's own. Exit 1 when over the budget.

    python benchmarks/bench_verify.py [WHEEL] [--matrix M] [--target ID]
    nox -s bench -- [same arguments]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from packaging.tags import Tag
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
TORCH = ("torch", "2.13.0+cpu", "3.11", "manylinux_2_28_x86_64")
DEFAULT_MATRIX = ROOT / "tests" / "projects" / "torch" / "matrix.yaml"
DEFAULT_TARGET = "cpu-cp311-linux-x86_64"
BUDGET_SECONDS = 15.0
BUDGET_MB = 300.0


def default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "builders" / "test-wheels"


def fetch(cache: Path, name: str = TORCH[0], version: str = TORCH[1], python: str = TORCH[2],
          platform: str = TORCH[3]) -> Path:
    """The wheel ``name==version`` for CPython ``python`` on ``platform``, downloaded once into ``cache``."""
    found = cached(cache, name, version, python, platform)
    if found is not None:
        return found
    cache.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", f"{name}=={version}",
                    "--python-version", python, "--platform", platform, "-d", str(cache)], check=True)
    found = cached(cache, name, version, python, platform)
    if found is None:
        raise SystemExit(f"pip download left no {name}=={version} wheel for {platform} in {cache}")
    return found


def cached(cache: Path, name: str, version: str, python: str, platform: str) -> Path | None:
    abi = "cp" + python.replace(".", "")
    want = Tag(abi, abi, platform)
    for path in sorted(cache.glob("*.whl")):
        try:
            dist, ver, _build, tags = parse_wheel_filename(path.name)
        except InvalidWheelFilename:
            continue
        if dist == canonicalize_name(name) and ver == Version(version) and want in tags:
            return path
    return None


def child(wheel: Path, matrix_path: Path, target_id: str) -> None:
    """Load the matrix, verify once, print timing, peak RSS and findings as JSON."""
    from builders.cli.verify import check
    from builders.families import loader as matrix
    from builders.matrix.targets import Selection, select
    from builders.wheel.archive import Wheel

    m = matrix.load(matrix_path)
    (target,) = select(m, Selection(targets=(target_id,)))
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    findings = check(m, target, Wheel(wheel))
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"seconds": seconds, "peak_rss_kb": peak, "rss_before_verify_kb": rss_before,
                      "findings": [f.to_json() for f in findings]}))


def measure(wheel: Path, matrix_path: Path, target_id: str) -> dict:
    cmd = [sys.executable, __file__, "--child", str(wheel), "--matrix", str(matrix_path), "--target", target_id]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=ROOT)
    return json.loads(out.stdout)


def numbers(wheel: Path | None = None, matrix_path: Path = DEFAULT_MATRIX, target_id: str = DEFAULT_TARGET,
            cache: Path | None = None) -> dict:
    """The figures ``benchmarks/bench.py`` lifts: the wheel, its size, verify's seconds, peak RSS and findings."""
    wheel = wheel or fetch(cache or default_cache())
    result = measure(wheel, matrix_path.resolve(), target_id)
    return {"wheel": str(wheel), "size_mib": wheel.stat().st_size / 2**20, "seconds": result["seconds"],
            "peak_mib": result["peak_rss_kb"] / 1024, "rss_before_verify_mib": result["rss_before_verify_kb"] / 1024,
            "findings": result["findings"]}


def report(wheel: Path, result: dict) -> int:
    peak_mb = result["peak_rss_kb"] / 1024
    findings = result["findings"]
    print(f"wheel: {wheel} ({wheel.stat().st_size / 2**20:.0f} MiB)")
    print(f"verify: {result['seconds']:.2f} s, peak RSS {peak_mb:.0f} MiB "
          f"(after imports and matrix load: {result['rss_before_verify_kb'] / 1024:.0f} MiB)")
    print(f"findings: {len(findings)}")
    for f in findings:
        print(f"  {f['code']}: {f['message']} [{f['file']}]")
    over = result["seconds"] > BUDGET_SECONDS or peak_mb > BUDGET_MB
    print(f"budget: {BUDGET_SECONDS:.0f} s, {BUDGET_MB:.0f} MiB: {'EXCEEDED' if over else 'ok'}")
    return 1 if over else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("wheel", nargs="?", type=Path, help="wheel to verify (default: the torch CPU wheel, downloaded once)")
    p.add_argument("--matrix", type=Path, default=DEFAULT_MATRIX)
    p.add_argument("--target", default=DEFAULT_TARGET)
    p.add_argument("--cache", type=Path, default=default_cache(), help="where the downloaded wheel is kept")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        child(args.wheel, args.matrix, args.target)
        return 0
    wheel = args.wheel or fetch(args.cache)
    return report(wheel, measure(wheel, args.matrix.resolve(), args.target))


if __name__ == "__main__":
    sys.exit(main())
