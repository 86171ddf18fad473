#!/usr/bin/env bash
# The release workflow's hand-off of the plan (`nox -s plan -- --format github > plan.json`).
#   ci/plan.sh outputs PLAN       the plan job: shards (the shard index), images, image_count, release
#                                 (true only for a release the plan accepted), candidate (true for a
#                                 v{version}-rcN tag: built and checked whole, published nowhere
#                                 here), nightly (true for a plan of the nightly channel) and
#                                 nightly_date (its commit date, else empty),
#                                 validate (the candidate's validate jobs: the targets by smoke
#                                 runner, those with a PyPI form apart), and the runner-time
#                                 estimate in the job summary
#   ci/plan.sh shard PLAN INDEX   a shard's matrix job: builds and include, that shard's build jobs and
#                                 smoke jobs as {"include": [...]}
# Values go to $GITHUB_OUTPUT only after they are checked: valid JSON, not empty, and within
# GitHub's limits (256 jobs per job matrix, 1 MB of outputs per job, sized as UTF-16), so a
# failing or malformed plan fails its job instead of handing on an empty matrix.
set -euo pipefail

MAX_JOBS=256
MAX_OUTPUT_BYTES=1000000

die() { echo "::error::ci/plan.sh: $*"; exit 1; }

# The bytes GitHub counts for the outputs given (two per character: UTF-16).
check_size() {
  local total=0 value
  for value in "$@"; do total=$((total + 2 * ${#value})); done
  [ "$total" -le "$MAX_OUTPUT_BYTES" ] || die "outputs of $total bytes, more than GitHub's $MAX_OUTPUT_BYTES per job"
}

write() {
  local dest=${GITHUB_OUTPUT:?ci/plan.sh writes to \$GITHUB_OUTPUT}
  printf '%s=%s\n' "$@" >> "$dest"
}

outputs() {
  local plan=$1 shards images count
  jq -e 'type == "object" and (.shards | type == "array") and (.images | type == "array")' "$plan" >/dev/null \
    || die "$plan is not a plan for GitHub (nox -s plan -- --format github)"
  shards=$(jq -ce '{"include": [.shards[] | {index, name, count}]} | select(.include | length > 0)' "$plan") \
    || die "$plan has no shards"
  [ "$(jq '.include | length' <<<"$shards")" -le "$MAX_JOBS" ] || die "more than $MAX_JOBS shards"
  images=$(jq -ce '{"include": .images}' "$plan")
  count=$(jq '.images | length' "$plan")
  [ "$count" -le "$MAX_JOBS" ] || die "more than $MAX_JOBS images"
  release=$(jq -r 'if .release == true then "true" else "false" end' "$plan")
  candidate=$(jq -r 'if .candidate == true then "true" else "false" end' "$plan")
  nightly=$(jq -r 'if .nightly == true then "true" else "false" end' "$plan")
  nightly_date=$(jq -r '.nightly_date // ""' "$plan")
  validate=$(validate_groups "$plan")
  [ "$(jq '.include | length' <<<"$validate")" -le "$MAX_JOBS" ] || die "more than $MAX_JOBS validate jobs"
  check_size "$shards" "$images" "$count" "$release" "$candidate" "$nightly" "$nightly_date" "$validate"
  write shards "$shards" images "$images" image_count "$count" release "$release" candidate "$candidate" \
    nightly "$nightly" nightly_date "$nightly_date" validate "$validate"
  echo "$(jq '.targets' "$plan") targets, $(jq '.builds' "$plan") build job(s) in $(jq '.include | length' <<<"$shards") shard(s), $count image(s); release: $release; candidate: $candidate; nightly: $nightly"
  summary "$plan"
}

# One validate job per smoke runner (GPU variants on the matrix's GPU runners, as their smoke jobs):
# its targets, those of them with a PyPI form, and the Pythons to set up (the tools' 3.11 last).
validate_groups() {
  jq -ce '{"include": [[.shards[].include[]] | group_by(.smoke_runner)[]
    | {name: (.[0].smoke_runner // [] | join("-")), runner: .[0].smoke_runner, targets: (map(.id) | join(" ")),
       pypi: (map(select(.pypi == true) | .id) | join(" ")),
       pythons: ((map(.python) | unique | map(select(. != "3.11"))) + ["3.11"] | join("\n"))}]}' "$1"
}

# The estimate (plan --estimate) as a table in the job summary, when there is one.
summary() {
  local dest=${GITHUB_STEP_SUMMARY:-}
  [ -n "$dest" ] && jq -e '.estimate' "$1" >/dev/null || return 0
  jq -r '"### Runner time of this run (estimate)\n\n| layout | jobs | core builds | runner-minutes | critical path (min) |\n|---|---|---|---|---|",
    (.estimate.before, .estimate.after | "| \(.layout) | \(.jobs) | \(.core_builds) | \(.runner_minutes) | \(.critical_path_minutes) |")' \
    "$1" >> "$dest"
}

shard() {
  local plan=$1 index=$2 include builds
  [[ $index =~ ^[0-9]+$ ]] || die "shard index '$index' is not a number"
  include=$(jq -ce --argjson i "$index" '.shards[] | select(.index == $i) | {"include": .include} | select(.include | length > 0)' \
    "$plan") || die "$plan has no shard $index"
  builds=$(jq -ce --argjson i "$index" '.shards[] | select(.index == $i) | {"include": .builds} | select(.include | length > 0)' \
    "$plan") || die "shard $index of $plan has no build jobs"
  [ "$(jq '.include | length' <<<"$include")" -le "$MAX_JOBS" ] || die "shard $index has more than $MAX_JOBS jobs"
  [ "$(jq '.include | length' <<<"$builds")" -le "$MAX_JOBS" ] || die "shard $index has more than $MAX_JOBS build jobs"
  check_size "$include" "$builds"
  write builds "$builds" include "$include"
  echo "shard $index: $(jq -r --argjson i "$index" '.shards[] | select(.index == $i) | "\(.name), \(.count) targets"' "$plan")"
}

case ${1:-} in
  outputs) [ $# -eq 2 ] || die "usage: ci/plan.sh outputs PLAN"; outputs "$2" ;;
  shard) [ $# -eq 3 ] || die "usage: ci/plan.sh shard PLAN INDEX"; shard "$2" "$3" ;;
  *) die "usage: ci/plan.sh outputs PLAN | ci/plan.sh shard PLAN INDEX" ;;
esac
