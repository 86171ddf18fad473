#!/usr/bin/env bash
# The release workflow's report step: the compatibility matrix over every build job's
# results.json (downloaded artifacts, one folder per job).
#   usage: ci/report.sh [ARTIFACTS_DIR] [OUTPUT_DIR]
set -euo pipefail
artifacts=${1:-artifacts}
output=${2:-report}
args=()
for results in "$artifacts"/*/results.json; do
  [ -f "$results" ] && args+=(--results "$results")
done
nox -s report -- --output "$output" "${args[@]}"
