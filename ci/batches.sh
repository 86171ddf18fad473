#!/usr/bin/env bash
# The PyPI wheels in upload batches: a trusted-publishing token is minted once per
# pypa/gh-action-pypi-publish step and lives about 15 minutes (pypa/gh-action-pypi-publish#307),
# so each step uploads one batch of at most BUDGET_MB (one larger wheel goes alone), and the
# publish job has one step per batch. More batches than the job has steps is refused here,
# before anything is published, rather than published in part.
#   usage: ci/batches.sh DIST OUT STEPS BUDGET_MB   writes OUT/1, OUT/2, ... (hard links to DIST's files)
set -euo pipefail

die() { echo "::error::ci/batches.sh: $*"; exit 1; }

[ $# -eq 4 ] || die "usage: ci/batches.sh DIST OUT STEPS BUDGET_MB"
dist=$1 out=$2 steps=$3 budget=$(( $4 * 1048576 ))
[[ $3 =~ ^[1-9][0-9]*$ && $4 =~ ^[1-9][0-9]*$ ]] || die "STEPS and BUDGET_MB are positive numbers"
mkdir -p "$out"
batch=1 used=0 count=0
# Largest first, name order among equals: the same files give the same batches.
while IFS=$'\t' read -r size path; do
  if [ "$used" -gt 0 ] && [ $((used + size)) -gt "$budget" ]; then
    batch=$((batch + 1)) used=0
  fi
  [ "$batch" -le "$steps" ] || die "the PyPI files need more than the $steps upload steps of the publish job at $4 MB each: add steps (and raise STEPS) or lower the size"
  mkdir -p "$out/$batch"
  ln -- "$path" "$out/$batch/" 2>/dev/null || cp -- "$path" "$out/$batch/"
  used=$((used + size)) count=$((count + 1))
done < <(find "$dist" -maxdepth 1 -type f \( -name '*.whl' -o -name '*.tar.gz' \) -printf '%s\t%p\n' | LC_ALL=C sort -t$'\t' -k1,1nr -k2,2)
[ "$count" -gt 0 ] || { echo "no PyPI files in $dist: nothing to upload"; exit 0; }
echo "$count PyPI file(s) in $batch batch(es) of at most $4 MB"
