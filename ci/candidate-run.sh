#!/usr/bin/env bash
# The run promote.yml is asked to release, as GitHub's API reports it: a run of release.yml that
# succeeded, built a candidate tag of the dispatch's version (v{VERSION}-rcN). Its tag, commit and id
# go to $GITHUB_ENV as EXPECT_TAG, EXPECT_COMMIT and EXPECT_RUN_ID, which promote-release compares
# with the candidate's release manifest before anything is written.
#   usage: ci/candidate-run.sh VERSION RUN_ID     (GH_TOKEN with actions: read, GITHUB_REPOSITORY)
set -euo pipefail

die() { echo "::error::ci/candidate-run.sh: $*"; exit 1; }

version=${1:?usage: ci/candidate-run.sh VERSION RUN_ID}
run=${2:?usage: ci/candidate-run.sh VERSION RUN_ID}
[[ $run =~ ^[A-Za-z0-9_-]+$ ]] || die "run id $run is not an id"
info=$(gh api "repos/${GITHUB_REPOSITORY:?}/actions/runs/$run") || die "GitHub does not know run $run"
path=$(jq -r '.path // ""' <<<"$info")
conclusion=$(jq -r '.conclusion // ""' <<<"$info")
tag=$(jq -r '.head_branch // ""' <<<"$info")
commit=$(jq -r '.head_sha // ""' <<<"$info")
id=$(jq -r '.id // ""' <<<"$info")
[ "${path%%@*}" = .github/workflows/release.yml ] || die "run $run is a run of $path, not of .github/workflows/release.yml"
[ "$conclusion" = success ] || die "run $run ended '$conclusion', not success: only a candidate whose every job passed is released"
[[ $tag =~ ^v${version//./\\.}-rc[0-9]+$ ]] || die "run $run built $tag, not a candidate tag v$version-rcN"
{
  echo "EXPECT_TAG=$tag"
  echo "EXPECT_COMMIT=$commit"
  echo "EXPECT_RUN_ID=$id"
} >> "${GITHUB_ENV:?}"
echo "run $run: release.yml, $conclusion, tag $tag, commit $commit"
