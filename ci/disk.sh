#!/usr/bin/env bash
# release-files' disk, checked before the runner runs out (a full disk fails a step midway and
# can leave an artifact half-written):
#   ci/disk.sh before PLAN DIR        before the download: the plan's bound on the downloaded
#                                     wheels (wheels x project.wheel_size_budget_mb) must fit
#                                     in DIR's free space
#   ci/disk.sh after WHEELS COPIES DIR after it: the downloaded wheels' real size times the
#                                     COPIES still to write (promote, variants, indexes) must fit
# Sizes are apparent sizes (what the copies will occupy), in MB; free space from `df -Pm`.
set -euo pipefail

die() { echo "::error::ci/disk.sh: $*"; exit 1; }

free_mb() { df -Pm "$1" | awk 'NR == 2 { print $4 }'; }

before() {
  local need free
  need=$(jq -er '.disk.download_mb' "$1") || die "$1 has no disk estimate (plan --format github writes one)"
  free=$(free_mb "$2")
  [ "$need" -le "$free" ] || die "the planned wheels may need $need MB, and $2 has $free MB free: split the release (--select) or give release-files a larger runner"
  echo "planned wheels: at most $need MB (whole release-files: $(jq -r '.disk.release_files_mb' "$1") MB); $free MB free"
}

after() {
  local bytes need free
  bytes=$(find "$1" -name '*.whl' -type f -printf '%s\n' | awk '{ s += $1 } END { printf "%.0f", s }')
  need=$(( (bytes * $2 + 1048575) / 1048576 ))
  free=$(free_mb "$3")
  [ "$need" -le "$free" ] || die "$2 more copies of the wheels ($(( bytes / 1048576 )) MB) need $need MB, and $3 has $free MB free"
  echo "wheels: $(( bytes / 1048576 )) MB; $2 more copies need $need MB; $free MB free"
}

case ${1:-} in
  before) [ $# -eq 3 ] || die "usage: ci/disk.sh before PLAN DIR"; before "$2" "$3" ;;
  after) [ $# -eq 4 ] || die "usage: ci/disk.sh after WHEELS COPIES DIR"; [[ $3 =~ ^[0-9]+$ ]] || die "COPIES is a number"
         after "$2" "$3" "$4" ;;
  *) die "usage: ci/disk.sh before PLAN DIR | ci/disk.sh after WHEELS COPIES DIR" ;;
esac
