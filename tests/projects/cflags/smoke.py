"""flagged's own smoke check: the object was compiled for the Python that loads it."""

from __future__ import annotations

import json
import sys


def main() -> int:
    json.load(sys.stdin)
    import flagged

    want = f"{sys.version_info.major}.{sys.version_info.minor}"
    checks = [{"name": "compiled for this Python", "ok": flagged.python() == want,
               "detail": f"compiled for {flagged.python()}, loaded by {want}"}]
    print(json.dumps({"checks": checks}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
