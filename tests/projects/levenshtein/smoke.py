"""Levenshtein's own smoke checks (stdlib only): builders' generic probe has already checked the
version and that ``Levenshtein.levenshtein_cpp`` loads from the venv; these check the C++ answers
(values from Levenshtein's own documentation) and that rapidfuzz, its own requirement, came along.

Facts arrive as JSON on stdin; one JSON document ``{"checks": [...], "facts": {...}}`` goes to stdout
(results.json keeps the facts).
"""

from __future__ import annotations

import json
import sys


def main() -> int:
    json.load(sys.stdin)
    import Levenshtein
    import rapidfuzz

    checks = [
        {"name": "distance", "ok": Levenshtein.distance("lewenstein", "levenshtein") == 2,
         "detail": str(Levenshtein.distance("lewenstein", "levenshtein"))},
        {"name": "hamming", "ok": Levenshtein.hamming("Hello world!", "HelLo world!") == 1,
         "detail": str(Levenshtein.hamming("Hello world!", "HelLo world!"))},
        {"name": "median", "ok": Levenshtein.median(["SpSm", "mpamm", "Spam", "Spa", "Sua", "hSam"]) == "Spam",
         "detail": Levenshtein.median(["SpSm", "mpamm", "Spam", "Spa", "Sua", "hSam"])},
        {"name": "rapidfuzz installed with it", "ok": bool(rapidfuzz.__version__), "detail": rapidfuzz.__version__},
    ]
    facts = {"distance": Levenshtein.distance("lewenstein", "levenshtein"), "rapidfuzz": rapidfuzz.__version__}
    print(json.dumps({"checks": checks, "facts": facts}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
