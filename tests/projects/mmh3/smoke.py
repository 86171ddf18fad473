"""mmh3's own smoke checks (stdlib only): the generic probe has already checked the version and
that the ``mmh3`` extension loads from the venv; this checks known hashes and that the variant's
runtime requirement was installed beside it.

Facts arrive as JSON on stdin; one JSON document ``{"checks": [...]}`` goes to stdout.
"""

from __future__ import annotations

import importlib.util
import json
import sys


def main() -> int:
    json.load(sys.stdin)
    import mmh3

    checks = [
        {"name": "murmur3 32-bit of 'foo'", "ok": mmh3.hash("foo") == -156908512, "detail": str(mmh3.hash("foo"))},
        {"name": "seeded", "ok": mmh3.hash("foo", 42) == -1322301282, "detail": str(mmh3.hash("foo", 42))},
        {"name": "the runtime requirement is installed", "ok": importlib.util.find_spec("typing_extensions") is not None,
         "detail": "typing_extensions"},
    ]
    print(json.dumps({"checks": checks}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
