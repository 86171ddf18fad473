"""switched's own smoke check: compiled with the switches its variant's CMAKE_ARGS gave (the facts on stdin
name the variant)."""

from __future__ import annotations

import json
import sys


def main() -> int:
    facts = json.load(sys.stdin)
    import switched

    want = (1, facts["variant"])
    checks = [{"name": "the variant's CMAKE_ARGS", "ok": switched.switches() == want,
               "detail": f"compiled with {switched.switches()}, the variant asked for {want}"}]
    print(json.dumps({"checks": checks}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
