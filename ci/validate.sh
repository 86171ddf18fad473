#!/usr/bin/env bash
# The candidate's validate jobs: install what was published, as a user would, then smoke-test.
#   ci/validate.sh test RECORD TARGET...        `builders validate --channel test` over HTTP from the
#                                               test channel (INDEX_URL, else the matrix's base_url)
#   ci/validate.sh pypi DIST RECORD TARGET...   the PyPI form of TARGETs (promote's files in DIST)
#                                               from a staging index of DIST alone that builders
#                                               serves on 127.0.0.1 for this run (an earlier
#                                               candidate's file of the same name is never there),
#                                               their requirements from PYPI_SIMPLE_URL
# MANIFEST (the candidate's release manifest) is required: each installer must install its files'
# bytes, and the record names its digest, which promote-release requires.
# Both pass --require-device: a GPU target whose device this runner does not show is recorded
# as not runnable here (promote-release refuses it unless accepted), never as passed.
set -euo pipefail

die() { echo "::error::ci/validate.sh: $*"; exit 1; }

[ -f "${MANIFEST:-}" ] || die "MANIFEST (the candidate's release manifest) is not a file: ${MANIFEST:-unset}"

channel() {
  local record=$1 args=() target
  shift
  [ -z "${INDEX_URL:-}" ] || args+=(--site-url "$INDEX_URL")
  for target in "$@"; do args+=(--target "$target"); done
  python -m builders validate --channel test --require-device --manifest "$MANIFEST" --record "$record" "${args[@]}"
}

pypi() {
  local dist=$1 record=$2 target args=()
  shift 2
  [ -n "${PYPI_SIMPLE_URL:-}" ] || die "PYPI_SIMPLE_URL (where the wheels' requirements come from) is not set"
  compgen -G "$dist/*.whl" >/dev/null || die "no PyPI files in $dist"
  for target in "$@"; do args+=(--target "$target"); done
  python -m builders validate --pypi --pypi-wheels "$dist" --extra-index-url "$PYPI_SIMPLE_URL" \
    --require-device --manifest "$MANIFEST" --record "$record" "${args[@]}"
}

case ${1:-} in
  test) [ $# -ge 3 ] || die "usage: ci/validate.sh test RECORD TARGET..."; shift; channel "$@" ;;
  pypi) [ $# -ge 4 ] || die "usage: ci/validate.sh pypi DIST RECORD TARGET..."; shift; pypi "$@" ;;
  *) die "usage: ci/validate.sh test RECORD TARGET... | pypi DIST RECORD TARGET..." ;;
esac
