"""Every build starts from its own copy of the source: no build sees another's objects.

A build backend that writes into its tree (setuptools' ``build/temp.*`` and ``build/bdist.*``, an
in-tree CMake folder) reuses whatever an earlier build left there: objects compiled with other
flags, for another variant, or by a build running at the same time (``--jobs``). Each plan's
``prepare`` step therefore copies the tree into a folder of the target's own, and the build runs
there. The copy holds what the source digest covers (:mod:`builders.pipeline.sourcetree`): it
leaves out bytecode caches and the root-relative paths the run worked out on this host (what git
ignores, or ``build.exclude``, and the output folder), never a folder for its name alone, so a
package ``mypkg/build/`` is copied. VCS data is copied (a version computed from tags needs it),
though the digest leaves it out: the epoch stands for it.

The copy is one short script run by the build's own interpreter (``python -c``), so it needs
nothing from builders where it runs (an image has only its Pythons).
"""

from __future__ import annotations

from collections.abc import Sequence

from builders.pipeline.plan import Command
from builders.pipeline.sourcetree import BYTECODE_DIRS, BYTECODE_SUFFIXES

SKIPPED_DIRS = tuple(sorted(BYTECODE_DIRS))  # left out at any depth: an import's bytecode, never source
COPY_TIMEOUT = 1800.0

# argv: SOURCE DEST SKIPPED-NAMES SKIPPED-SUFFIXES [SKIPPED-PATH...]; DEST is made afresh. A skipped path is
# relative to SOURCE (or absolute). One line: a log shows each command on one line, and the dry run's
# comparison with the log reads it back.
COPY_SCRIPT = ("import os, shutil, sys; src, dest = sys.argv[1], sys.argv[2]; names = set(sys.argv[3].split(',')); "
               "suffixes = tuple(sys.argv[4].split(',')); "
               "paths = {os.path.realpath(os.path.join(src, p)) for p in sys.argv[5:]}; "
               "shutil.rmtree(dest, ignore_errors=True); shutil.copytree(src, dest, symlinks=True, "
               "ignore=lambda folder, entries: [e for e in entries if e in names or e.endswith(suffixes) "
               "or os.path.realpath(os.path.join(folder, e)) in paths])")


def copy_command(python: str, source: str, dest: str, skip: Sequence[str] = ()) -> Command:
    """``python`` copies ``source`` to ``dest`` without bytecode caches or the paths in ``skip`` (relative to
    ``source``: what the source's VCS ignores, the output folder where it lies inside, which must not be
    copied into itself)."""
    argv = (python, "-I", "-c", COPY_SCRIPT, source, dest, ",".join(SKIPPED_DIRS), ",".join(BYTECODE_SUFFIXES),
            *skip)
    return Command(argv=argv, timeout=COPY_TIMEOUT)
