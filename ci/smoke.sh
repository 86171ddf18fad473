#!/usr/bin/env bash
# The release workflow's smoke job.
#   ci/smoke.sh find WHEELHOUSE WHEEL        path=<the wheel> to $GITHUB_OUTPUT, or path= (and a
#                                            notice) when the build produced none: its build failed
#                                            and failed the run already; there is nothing to smoke
#   ci/smoke.sh run WHEEL TARGET PYTHON [OPTION...]
#                                            builders installed from this checkout as a user would
#                                            (not editable, by uv), then `builders smoke` with a
#                                            managed CPython PYTHON (3.14t is free-threaded) and the
#                                            OPTIONs (--require-device: a GPU job fails first, exit 23,
#                                            on a runner that shows no device of its accelerator)
set -euo pipefail

BUILDERS_PYTHON=3.12

die() { echo "::error::ci/smoke.sh: $*"; exit 1; }

find_wheel() {
  local found=
  [ -d "$1" ] && found=$(find "$1" -name "$2" -type f -print -quit)
  if [ -z "$found" ]; then
    echo "::notice::no $2 among the build's files: its build failed, nothing to smoke"
  fi
  echo "path=$found" >> "${GITHUB_OUTPUT:?ci/smoke.sh writes to \$GITHUB_OUTPUT}"
}

run() {
  local wheel=$1 target=$2 python=$3 interpreter
  shift 3
  uv python install "$python" "$BUILDERS_PYTHON"
  interpreter=$(uv python find "$python")
  echo "$target: $python at $interpreter"
  uvx --python "$BUILDERS_PYTHON" --from . builders smoke "$wheel" --target "$target" --python "$interpreter" "$@"
}

case ${1:-} in
  find) [ $# -eq 3 ] || die "usage: ci/smoke.sh find WHEELHOUSE WHEEL"; find_wheel "$2" "$3" ;;
  run) [ $# -ge 4 ] || die "usage: ci/smoke.sh run WHEEL TARGET PYTHON [OPTION...]"; shift; run "$@" ;;
  *) die "usage: ci/smoke.sh find WHEELHOUSE WHEEL | run WHEEL TARGET PYTHON [OPTION...]" ;;
esac
