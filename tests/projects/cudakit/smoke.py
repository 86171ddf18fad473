"""cudakit's own smoke checks (stdlib only): the extension was compiled against the matrix's CUDA
(``CUDART_VERSION`` of the headers nvcc used) and runs the runtime the wheel requires, and both
libcudart and libcublas were loaded from the runtime wheels in the venv (``/proc/self/maps``),
never from a toolkit on the build host.

Facts arrive as JSON on stdin; one JSON document ``{"checks": [...], "facts": {...}}`` goes to stdout.
"""

from __future__ import annotations

import json
import sys
import sysconfig
from pathlib import Path


def loaded(prefix: str) -> list[str]:
    """The files named ``prefix``* this process has mapped."""
    maps = Path("/proc/self/maps").read_text().splitlines()
    return sorted({line.split()[-1] for line in maps if Path(line.split()[-1]).name.startswith(prefix)})


def main() -> int:
    facts = json.load(sys.stdin)
    import cudakit

    want = facts["expected_runtime_version"]
    wheels = str(Path(sysconfig.get_paths()["purelib"]) / "nvidia")
    libs = {name: loaded(name) for name in ("libcudart.so", "libcublas.so")}
    checks = [
        {"name": "compiled with the matrix's CUDA", "ok": cudakit.compiled_runtime() == want,
         "detail": f"CUDART_VERSION {cudakit.compiled_runtime()}, the matrix's {want}"},
        {"name": "the variant's runtime", "ok": cudakit.runtime() == want, "detail": f"{cudakit.runtime()}"},
        {"name": "cuBLAS answers", "ok": cudakit.cublas()[0] >= 13, "detail": str(cudakit.cublas())},
        *({"name": f"{name} from the runtime wheels", "ok": bool(paths) and all(p.startswith(wheels) for p in paths),
           "detail": ", ".join(paths) or "not loaded"} for name, paths in libs.items()),
    ]
    print(json.dumps({"checks": checks, "facts": {"compiled_runtime": cudakit.compiled_runtime(),
                                                  "cublas": list(cudakit.cublas()), "loaded": libs}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
