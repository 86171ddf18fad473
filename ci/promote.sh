#!/usr/bin/env bash
# promote.yml's steps around `builders promote-release` (nothing here is rebuilt).
#   ci/promote.sh preflight VALIDATION DIST RECORD   the whole preflight, PyPI included, reading only
#                                                    (--dry-run): VALIDATION/test-*.json are the test
#                                                    channel's records, pypi-*.json the staging ones;
#                                                    RECORD lists every release and PyPI file's sha256
#   ci/promote.sh index VALIDATION RECORD            the copy to the release channel and its pages
#                                                    (PyPI is the next job's, after this one)
#   ci/promote.sh check RECORD DIST                  DIST holds exactly the PyPI files RECORD planned,
#                                                    each with its sha256
# The environment gives INDEX_BUCKET, PYPI_SIMPLE_URL, PYPI_REPOSITORY_URL, MANIFEST (the candidate's
# release manifest), ATTESTATIONS (`index` only: the attest steps' bundles, for PyPI files it uploads),
# EXPECT_VERSION (the dispatch's version) and EXPECT_TAG, EXPECT_COMMIT and
# EXPECT_RUN_ID (the candidate run as GitHub reports it: ci/candidate-run.sh), and, to override the
# matrix's channels.promotion for this run, ACCEPT_NOT_RUNNABLE (globs, space-separated) and the
# PyPI limits PYPI_FILE_LIMIT_MB and PYPI_TOTAL_LIMIT_GB (empty: the matrix's). The PyPI upload is
# the publish job's, with trusted publishing (--trusted-publishing: no twine credentials here).
set -euo pipefail

die() { echo "::error::ci/promote.sh: $*"; exit 1; }

records() {
  local kind=$1 folder=$2 file found=0
  for file in "$folder"/"$kind"-*.json; do
    [ -f "$file" ] || continue
    printf -- '%s\n%s\n' "--$3" "$file"; found=1
  done
  [ "$found" = 1 ] || [ "$kind" = pypi ] || die "no $kind-*.json validation record in $folder"
}

common() {
  local glob globs=() args=(--bucket "${INDEX_BUCKET:?INDEX_BUCKET is not set}"
                             --manifest "${MANIFEST:?MANIFEST is not set}"
                             --expect-version "${EXPECT_VERSION:?EXPECT_VERSION is not set}"
                             --expect-tag "${EXPECT_TAG:?EXPECT_TAG is not set}"
                             --expect-commit "${EXPECT_COMMIT:?EXPECT_COMMIT is not set}"
                             --expect-run-id "${EXPECT_RUN_ID:?EXPECT_RUN_ID is not set}"
                             --trusted-publishing)
  while IFS= read -r line; do args+=("$line"); done < <(records test "$1" validation)
  read -ra globs <<<"${ACCEPT_NOT_RUNNABLE:-}"  # split on spaces, never expanded against files here
  for glob in "${globs[@]}"; do args+=(--accept-not-runnable "$glob"); done
  printf '%s\n' "${args[@]}"
}

preflight() {
  local validation=$1 dist=$2 record=$3 args=()
  while IFS= read -r line; do args+=("$line"); done < <(common "$validation")
  if compgen -G "$dist/*.whl" >/dev/null; then
    args+=(--pypi-wheels "$dist" --repository-url "${PYPI_REPOSITORY_URL:?PYPI_REPOSITORY_URL is not set}"
           --simple-url "${PYPI_SIMPLE_URL:?PYPI_SIMPLE_URL is not set}")
    while IFS= read -r line; do args+=("$line"); done < <(records pypi "$validation" pypi-validation)
    [ -z "${PYPI_FILE_LIMIT_MB:-}" ] || args+=(--file-limit-mb "$PYPI_FILE_LIMIT_MB")
    [ -z "${PYPI_TOTAL_LIMIT_GB:-}" ] || args+=(--total-limit-gb "$PYPI_TOTAL_LIMIT_GB")
  fi
  python -m builders promote-release "${args[@]}" --record "$record" --dry-run
}

index() {
  local args=()
  while IFS= read -r line; do args+=("$line"); done < <(common "$1")
  [ -z "${ATTESTATIONS:-}" ] || args+=(--attestations "$ATTESTATIONS")
  python -m builders promote-release "${args[@]}" --record "$2"
}

check() {
  local record=$1 dist=$2 planned found
  planned=$(jq -r '.pypi | keys[]' "$record" | LC_ALL=C sort)
  found=$(find "$dist" -maxdepth 1 -type f -name '*.whl' -printf '%f\n' | LC_ALL=C sort)
  [ "$planned" = "$found" ] || die "the PyPI files in $dist are not the ones $record planned"
  [ -z "$found" ] || jq -r --arg d "$dist" '.pypi | to_entries[] | "\(.value)  \($d)/\(.key)"' "$record" | sha256sum -c --strict
}

case ${1:-} in
  preflight) [ $# -eq 4 ] || die "usage: ci/promote.sh preflight VALIDATION DIST RECORD"; preflight "$2" "$3" "$4" ;;
  index) [ $# -eq 3 ] || die "usage: ci/promote.sh index VALIDATION RECORD"; index "$2" "$3" ;;
  check) [ $# -eq 3 ] || die "usage: ci/promote.sh check RECORD DIST"; check "$2" "$3" ;;
  *) die "usage: ci/promote.sh preflight VALIDATION DIST RECORD | index VALIDATION RECORD | check RECORD DIST" ;;
esac
