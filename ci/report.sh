#!/usr/bin/env bash
# The release workflow's report step: the compatibility matrix over every build job's
# results.json found under the downloaded artifacts, at any depth (download-artifact puts a
# single matching artifact directly into its path and several into path/<name>/).
#   usage: ci/report.sh [ARTIFACTS_DIR] [OUTPUT_DIR]
set -euo pipefail
artifacts=${1:-artifacts}
output=${2:-report}
args=()
if [ -d "$artifacts" ]; then
  while IFS= read -r -d '' results; do
    args+=(--results "$results")
  done < <(find "$artifacts" -name results.json -type f -print0 | LC_ALL=C sort -z)
fi
[ "${#args[@]}" -gt 0 ] || echo "::warning::ci/report.sh: no results.json under $artifacts: the report shows every target as planned"
nox -s report -- --output "$output" "${args[@]}"
