"""flagged's own smoke checks: the object was compiled for the Python that loads it and for the
variant of its wheel, and a CUDA build finds the runtime the wheel requires (the facts on stdin
say which variant and which runtime version)."""

from __future__ import annotations

import json
import sys


def main() -> int:
    facts = json.load(sys.stdin)
    import flagged

    want = f"{sys.version_info.major}.{sys.version_info.minor}"
    variant = (facts["accelerator"], facts["accelerator_version"] or "")
    checks = [{"name": "compiled for this Python", "ok": flagged.python() == want,
               "detail": f"compiled for {flagged.python()}, loaded by {want}"},
              {"name": "compiled for this variant", "ok": flagged.variant() == variant,
               "detail": f"compiled for {flagged.variant()}, the wheel is {variant}"},
              {"name": "the variant's runtime", "ok": flagged.runtime() == facts["expected_runtime_version"],
               "detail": f"runtime {flagged.runtime()}, expected {facts['expected_runtime_version']}"}]
    print(json.dumps({"checks": checks}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
