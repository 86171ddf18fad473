"""Run by the target's own interpreter, not by builders: the source's metadata as that Python's build writes it.

A setup.py may write different requirements under each interpreter that runs it, so the backend's
``prepare_metadata_for_build_wheel`` hook runs in an isolated environment of the target's Python (``build``'s
:class:`~build.env.DefaultIsolatedEnv`, which installs the build requirements with that Python's pip and so
follows the same index settings as the build). A backend without the hook is never asked to build a wheel
here (that is the compile): the sdist's ``PKG-INFO`` is read instead, and failing that nothing is. A source
with neither ``pyproject.toml`` nor ``setup.py`` (built by its own script) has no backend to ask: the same.

``python metadata_probe.py SOURCE OUT`` writes ``{"how": ..., "metadata": ..., "python": ...}`` to OUT.
``build``, ``pyproject_hooks`` and ``packaging`` come from the ``lib`` folder staged beside this file (pure
Python; see :func:`builders.wheel.source_metadata.stage_probe`); the standard library does the rest.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

from build import ProjectBuilder  # from the staged lib folder
from build.env import DefaultIsolatedEnv


def prepared(source: str) -> str | None:
    """METADATA from the backend's hook in a fresh isolated environment; None: the backend has no such hook."""
    with DefaultIsolatedEnv() as env:
        builder = ProjectBuilder.from_isolated_env(env, source)
        env.install(builder.build_system_requires)
        env.install(builder.get_requires_for_build("wheel"))
        with tempfile.TemporaryDirectory() as out:
            path = builder.prepare("wheel", out)
            if path is None:
                return None
            with open(os.path.join(path, "METADATA"), encoding="utf-8") as f:
                return f.read()


def has_backend(source: str) -> bool:
    """Whether ``build`` can ask the source a backend's hook at all (else it refuses the folder)."""
    return any(os.path.isfile(os.path.join(source, name)) for name in ("pyproject.toml", "setup.py"))


def main(source: str, out: str) -> int:
    text = prepared(source) if has_backend(source) else None
    how = "prepare_metadata_for_build_wheel"
    pkg_info = os.path.join(source, "PKG-INFO")
    if text is None and os.path.isfile(pkg_info):
        with open(pkg_info, encoding="utf-8") as f:
            text, how = f.read(), "PKG-INFO"
    record = {"how": how if text is not None else "none", "metadata": text or "",
              "python": ".".join(map(str, sys.version_info[:2]))}
    with open(out, "w", encoding="utf-8") as f:
        json.dump(record, f)
    if text is None:
        sys.stdout.write(f"{source} declares no metadata Python {record['python']} can read (no backend hook, "
                         "no PKG-INFO): the matrix's or the build's own requirements stand\n")
    else:
        sys.stdout.write(f"metadata of {source} read by Python {record['python']} through {record['how']}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
