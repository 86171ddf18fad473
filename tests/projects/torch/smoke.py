"""PyTorch's own smoke checks for a CPU wheel (stdlib only; torch is what is tested).

builders' generic probe has already checked the version and that ``torch._C`` loads from the
venv. Facts arrive as JSON on stdin; one JSON document ``{"checks": [...]}`` goes to stdout.
"""

from __future__ import annotations

import json
import sys


def main() -> int:
    facts = json.load(sys.stdin)
    import torch

    a = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    product = (a @ a.T).tolist()
    checks = [
        {"name": "torch.__version__", "ok": torch.__version__ == facts["version"], "detail": torch.__version__},
        {"name": "matmul", "ok": product == [[5.0, 14.0], [14.0, 50.0]], "detail": repr(product)},
        {"name": "no CUDA in a cpu build", "ok": torch.version.cuda is None and not torch.cuda.is_available(),
         "detail": f"torch.version.cuda={torch.version.cuda!r}"},
        {"name": "OpenMP threads", "ok": torch.get_num_threads() >= 1, "detail": str(torch.get_num_threads())},
    ]
    print(json.dumps({"checks": checks}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
