"""ctshape's own smoke checks: the library loads through ctypes on this Python and says its variant."""

from __future__ import annotations

import json
import sys


def main() -> int:
    facts = json.load(sys.stdin)
    import ctshape

    checks = [{"name": "ctypes call", "ok": ctshape.add(2, 3) == 5, "detail": f"add(2, 3) = {ctshape.add(2, 3)}"},
              {"name": "variant", "ok": ctshape.variant() == facts["accelerator"],
               "detail": f"compiled for {ctshape.variant()}, the wheel is {facts['accelerator']}"}]
    print(json.dumps({"checks": checks, "python": f"{sys.version_info.major}.{sys.version_info.minor}"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
