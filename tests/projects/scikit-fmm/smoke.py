"""scikit-fmm's own smoke checks: builders' generic probe has already checked the version and that
``skfmm.cfmm`` loads from the venv; these run the C++ fast-marching solvers on a 1-D level set
whose exact answers are known (the zero contour lies half-way between the 2nd and 3rd points).

Facts arrive as JSON on stdin; one JSON document ``{"checks": [...], "facts": {...}}`` goes to stdout
(results.json keeps the facts).
"""

from __future__ import annotations

import json
import sys


def main() -> int:
    json.load(sys.stdin)
    import numpy as np
    import skfmm

    phi = np.array([-1.0, -1.0, 1.0, 1.0])
    distance = skfmm.distance(phi, dx=1.0)
    travel = skfmm.travel_time(phi, np.full(4, 2.0), dx=1.0)
    checks = [
        {"name": "distance", "ok": bool(np.allclose(distance, [-1.5, -0.5, 0.5, 1.5])), "detail": str(distance)},
        {"name": "travel_time at speed 2", "ok": bool(np.allclose(np.abs(travel), [0.75, 0.25, 0.25, 0.75])),
         "detail": str(travel)},
    ]
    print(json.dumps({"checks": checks, "facts": {"distance": [round(float(d), 9) for d in distance]}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
