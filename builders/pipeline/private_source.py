"""Every build starts from its own copy of the source: no build sees another's objects.

A build backend that writes into its tree (setuptools' ``build/temp.*`` and ``build/bdist.*``, an
in-tree CMake folder) reuses whatever an earlier build left there: objects compiled with other
flags, for another variant, or by a build running at the same time (``--jobs``). The source digest
does not cover those folders (:data:`~builders.pipeline.store.IGNORED_DIRS`), so nothing would
notice. Each plan's ``prepare`` step therefore copies the tree, less the build outputs the digest
skips, into a folder of the target's own, and the build runs there. VCS data is copied (a version
computed from tags needs it), though the digest leaves it out: the epoch stands for it.

The copy is one short script run by the build's own interpreter (``python -c``), so it needs
nothing from builders where it runs (an image has only its Pythons).
"""

from __future__ import annotations

from collections.abc import Sequence

from builders.pipeline.plan import Command
from builders.pipeline.store import IGNORED_DIRS, IGNORED_SUFFIXES

VCS_DIRS = frozenset({".git", ".hg", ".svn"})
SKIPPED_DIRS = tuple(sorted(IGNORED_DIRS - VCS_DIRS))  # what a build wrote, or a tool's cache
COPY_TIMEOUT = 1800.0

# argv: SOURCE DEST SKIPPED-NAMES SKIPPED-SUFFIXES [SKIPPED-PATH...]; DEST is made afresh.
# One line: a log shows each command on one line, and the dry run's comparison with the log reads it back.
COPY_SCRIPT = ("import os, shutil, sys; src, dest = sys.argv[1], sys.argv[2]; names = set(sys.argv[3].split(',')); "
               "suffixes = tuple(sys.argv[4].split(',')); paths = {os.path.realpath(p) for p in sys.argv[5:]}; "
               "shutil.rmtree(dest, ignore_errors=True); shutil.copytree(src, dest, symlinks=True, "
               "ignore=lambda folder, entries: [e for e in entries if e in names or e.endswith(suffixes) "
               "or os.path.realpath(os.path.join(folder, e)) in paths])")


def copy_command(python: str, source: str, dest: str, skip: Sequence[str] = ()) -> Command:
    """``python`` copies ``source`` to ``dest`` without build outputs, tool caches or the paths in ``skip``
    (an output folder inside the source tree must not be copied into itself)."""
    argv = (python, "-I", "-c", COPY_SCRIPT, source, dest, ",".join(SKIPPED_DIRS), ",".join(IGNORED_SUFFIXES),
            *skip)
    return Command(argv=argv, timeout=COPY_TIMEOUT)

