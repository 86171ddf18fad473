#!/usr/bin/env bash
# The candidate's validate jobs: install what was published, as a user would, then smoke-test.
#   ci/validate.sh test RECORD TARGET...        `builders validate --channel test` over HTTP from the
#                                               test channel (INDEX_URL, else the matrix's base_url)
#   ci/validate.sh pypi DIST RECORD TARGET...   the PyPI form of TARGETs (promote's files in DIST)
#                                               from a staging index served on 127.0.0.1 for this
#                                               job (a PEP 503 project folder), their requirements
#                                               from PYPI_SIMPLE_URL, as PyPI will serve them
# Both pass --require-device: a GPU target whose device this runner does not show is recorded
# as not runnable here (promote-release refuses it unless accepted), never as passed.
set -euo pipefail

die() { echo "::error::ci/validate.sh: $*"; exit 1; }


channel() {
  local record=$1 args=() target
  shift
  [ -z "${INDEX_URL:-}" ] || args+=(--index-url "$INDEX_URL")
  for target in "$@"; do args+=(--target "$target"); done
  python -m builders validate --channel test --require-device --record "$record" "${args[@]}"
}

pypi() {
  local dist=$1 record=$2 staging port pid name file target status=0 args=()
  shift 2
  [ -n "${PYPI_SIMPLE_URL:-}" ] || die "PYPI_SIMPLE_URL (where the wheels' requirements come from) is not set"
  staging=$(mktemp -d)
  for file in "$dist"/*.whl; do
    [ -f "$file" ] || die "no PyPI files in $dist"
    name=$(basename "$file"); name=$(printf '%s' "${name%%-*}" | tr 'A-Z_.' 'a-z--')  # PEP 503
    mkdir -p "$staging/$name" && cp -- "$file" "$staging/$name/"
  done
  port=$(python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  python -m http.server --bind 127.0.0.1 --directory "$staging" "$port" >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 50); do curl --silent --fail "http://127.0.0.1:$port/" >/dev/null && break; sleep 0.2; done
  for target in "$@"; do args+=(--target "$target"); done
  python -m builders validate --pypi --index-url "http://127.0.0.1:$port/" --extra-index-url "$PYPI_SIMPLE_URL" \
    --require-device --record "$record" "${args[@]}" || status=$?
  kill "$pid"
  return "$status"
}

case ${1:-} in
  test) [ $# -ge 3 ] || die "usage: ci/validate.sh test RECORD TARGET..."; shift; channel "$@" ;;
  pypi) [ $# -ge 4 ] || die "usage: ci/validate.sh pypi DIST RECORD TARGET..."; shift; pypi "$@" ;;
  *) die "usage: ci/validate.sh test RECORD TARGET... | pypi DIST RECORD TARGET..." ;;
esac
