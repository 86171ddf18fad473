"""stableshape's own smoke checks: the stable-ABI module imports and works on this Python."""

from __future__ import annotations

import json
import sys


def main() -> int:
    json.load(sys.stdin)
    import stableshape

    checks = [{"name": "call", "ok": stableshape.add(2, 3) == 5, "detail": f"add(2, 3) = {stableshape.add(2, 3)}"},
              {"name": "stable ABI", "ok": stableshape.python() == "abi3", "detail": stableshape.python()}]
    print(json.dumps({"checks": checks}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
