#!/usr/bin/env bash
# The release workflow's smoke job.
#   ci/smoke.sh find WHEELHOUSE WHEEL        path=<the wheel> to $GITHUB_OUTPUT; fails when the wheel is
#                                            not there (its build failed, or its artifact is missing):
#                                            a smoke job never passes with nothing tested
#   ci/smoke.sh run WHEEL TARGET PYTHON [OPTION...]
#                                            builders installed from this checkout as a user would (not
#                                            editable; its dependencies from the hash-locked
#                                            $BUILDERS_LOCK), then `builders smoke` with CPython PYTHON
#                                            (3.14t is free-threaded; one already on the runner, else a
#                                            uv-managed one) and the OPTIONs (--require-device: a GPU job
#                                            fails first, exit 23, on a runner that shows no device of its
#                                            accelerator); the wheel's smoke record, its probe's
#                                            JSON (TARGET.json) and the log (TARGET.log), goes to
#                                            $SMOKE_RECORDS (default smoke-records/), failed or not,
#                                            for the job's per-wheel artifact. PYTHON may list several
#                                            ("3.11 3.12 3.13": a shared py3-none or abi3 wheel, tested
#                                            on each; records TARGET-3.12.json ...), every one is run
#                                            and the job fails if any failed
set -euo pipefail

BUILDERS_PYTHON=3.12

die() { echo "::error::ci/smoke.sh: $*"; exit 1; }

find_wheel() {
  local found=
  [ -d "$1" ] && found=$(find "$1" -name "$2" -type f -print -quit)
  [ -n "$found" ] || die "no $2 among the build's files in $1: its build failed or its artifact is missing; nothing was smoke-tested"
  echo "path=$found" >> "${GITHUB_OUTPUT:?ci/smoke.sh writes to \$GITHUB_OUTPUT}"
}

# An interpreter for VERSION: one the runner has, else one uv installs.
interpreter() {
  uv python find --no-python-downloads "$1" 2>/dev/null && return 0
  uv python install "$1" >&2
  uv python find "$1"
}

run() {
  local wheel=$1 target=$2 python=$3 tools venv bin
  shift 3
  [ -f "$wheel" ] || die "$wheel: no such wheel"
  tools=$(interpreter "$BUILDERS_PYTHON")
  venv=$(mktemp -d)/tools
  uv venv --quiet --python "$tools" "$venv"
  bin=$venv/bin
  [ -d "$bin" ] || bin=$venv/Scripts  # Windows
  uv pip install --quiet --python "$bin/python" --require-hashes --no-deps -r "${BUILDERS_LOCK:-ci/release-tools.txt}"
  uv pip install --quiet --python "$bin/python" --no-deps .
  if [ "$python" = "${python%% *}" ]; then
    python=$(interpreter "$python")
    echo "$target: smoke-testing with $python"
    record "$target" "$bin/python" -m builders smoke "$wheel" --target "$target" --python "$python" "$@"
    return
  fi
  local one status=0 found
  for one in $python; do
    found=$(interpreter "$one")
    echo "$target: smoke-testing with $found (CPython $one)"
    record "$target-$one" "$bin/python" -m builders smoke "$wheel" --target "$target" --python "$found" "$@" || status=1
  done
  return "$status"
}

# Run a smoke command with its record kept under $SMOKE_RECORDS: stdout (the probe's JSON) to
# TARGET.json, stderr to TARGET.log and the job's log as it comes; the JSON shown after; its status.
record() {
  local target=$1 records=${SMOKE_RECORDS:-smoke-records} status=0
  shift
  mkdir -p "$records"
  { "$@" 2>&1 1>&3 | tee "$records/$target.log" >&2; } 3>"$records/$target.json" || status=$?
  cat "$records/$target.json"
  return "$status"
}

case ${1:-} in
  find) [ $# -eq 3 ] || die "usage: ci/smoke.sh find WHEELHOUSE WHEEL"; find_wheel "$2" "$3" ;;
  run) [ $# -ge 4 ] || die "usage: ci/smoke.sh run WHEEL TARGET PYTHON [OPTION...]"; shift; run "$@" ;;
  *) die "usage: ci/smoke.sh find WHEELHOUSE WHEEL | run WHEEL TARGET PYTHON [OPTION...]" ;;
esac
