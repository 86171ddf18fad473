"""Accelerator families: one module per family behind :class:`Family`, and their registry.

Each family is one module of this package that defines ``FAMILY`` (and its ``ACCELERATOR``, the
facts the matrix needs), listed in :data:`builders.families.registry.BUILTIN`: adding a family is
adding its module (and its Containerfile) to that tuple. Nothing registers itself: the matrix
loader is handed the families (:mod:`builders.families.loader`), and code outside the package asks
:func:`family_for`, never names a family. A family module never imports the registry.

Host compiler probes (:func:`probe_compilers`) live here too: the facts every family's
``unavailable`` reads.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from builders.base.process import ProcessError, run
from builders.families.base import Family, Toolchain
from builders.families.registry import BUILTIN, accelerators, declared, families, family_for, toolchain_for

__all__ = ["BUILTIN", "Family", "Toolchain", "accelerators", "declared", "families", "family_for", "probe_compilers",
           "toolchain_for"]


CXX20_PROBE = ("#include <concepts>\n#include <span>\ntemplate <std::integral T> T twice(T v) { return v * 2; }\n"
               "int main() { int a[2]{1, 2}; std::span<int> s{a}; return twice(s[0]) - 2; }\n")


def probe_compilers(env: Mapping[str, str]) -> dict[str, Any]:
    """Host compiler facts for :class:`builders.pipeline.host.Host`."""
    cxx, problem = probe_cxx20(env)
    tools = tuple(sorted(tool for family in families() for tool in family.probe_host(env)))
    return {"cxx20": cxx, "cxx20_problem": problem, "tools": tools}


def probe_cxx20(env: Mapping[str, str]) -> tuple[str | None, str]:
    """The first C++ compiler that really compiles C++20, or the reason there is none."""
    names = [env["CXX"]] if env.get("CXX") else ["c++", "g++", "clang++"]
    for name in names:
        exe = shutil.which(name, path=env.get("PATH"))
        if exe is None:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp) / "probe.cpp"
            src.write_text(CXX20_PROBE)
            try:
                run([exe, "-std=c++20", "-fsyntax-only", str(src)], env=env, timeout=60)
            except ProcessError as exc:
                return None, f"{exe} cannot compile C++20: {exc.tail.splitlines()[-1] if exc.tail else exc.returncode}"
        return exe, ""
    return None, f"no C++ compiler found (tried {', '.join(names)})"

