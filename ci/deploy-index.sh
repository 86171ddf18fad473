#!/usr/bin/env bash
# Publish the per-variant indexes (the folder `python -m builders index` wrote), added to what
# is published already: earlier releases stay installable.
#   usage: ci/deploy-index.sh SITE
# By default to GitHub Pages: SITE is merged into the gh-pages branch (`builders merge-index`:
# its files added, a published file never changed, every page rewritten from the wheels the
# branch then holds, SHA256SUMS recomputed; a CNAME file is kept) in one commit on top of the
# branch's history, which Pages serves once Settings > Pages > Build and deployment is "Deploy
# from a branch", gh-pages, /. A push that lost a race with another deploy is retried on top of
# it. INDEX_GIT_REMOTE names another git remote (default: this repository on GitHub). Pages
# serves sites of at most 1 GB and git refuses files over 100 MB, so a larger index is refused
# before anything is pushed. Needs GH_TOKEN (contents: write) and GITHUB_REPOSITORY, or
# INDEX_GIT_REMOTE.
#
# An index too large for Pages (a framework's CUDA, ROCm or XPU index) goes to an S3-compatible
# bucket instead (INDEX_BUCKET): candidates go to its test channel and promote.yml releases the
# validated candidate's bytes (docs/channels.md). The former INDEX_DEPLOY_COMMAND (any command run on a
# folder that held this release alone, often `sync --delete`) dropped every earlier release from
# the host; it is refused now.
set -euo pipefail

MAX_FILE_BYTES=$((100 * 1000 * 1000))
MAX_SITE_BYTES=$((1000 * 1000 * 1000))
BRANCH=gh-pages

site=${1:?usage: ci/deploy-index.sh SITE}
[ -f "$site/index.html" ] || [ -n "$(find "$site" -name index.html -print -quit)" ] \
  || { echo "::error::ci/deploy-index.sh: $site holds no index"; exit 1; }
site=$(cd "$site" && pwd)

if [ -n "${INDEX_DEPLOY_COMMAND:-}" ]; then
  echo "::error::INDEX_DEPLOY_COMMAND is no longer supported: it published this release alone over the earlier ones. Set INDEX_BUCKET (an S3-compatible bucket): candidates then go to the test channel and promote.yml releases the validated one (docs/channels.md), or leave it empty for GitHub Pages."
  exit 1
fi

here=$(cd "$(dirname "$0")" && pwd)
remote=${INDEX_GIT_REMOTE:-}
if [ -z "$remote" ]; then
  : "${GH_TOKEN:?GH_TOKEN (contents: write) pushes the $BRANCH branch}"
  : "${GITHUB_REPOSITORY:?}"
  remote="${GITHUB_SERVER_URL:-https://github.com}/$GITHUB_REPOSITORY.git"
fi
auth=
if [ -n "${GH_TOKEN:-}" ]; then
  credential=$(printf 'x-access-token:%s' "$GH_TOKEN" | base64 | tr -d '\n')
  echo "::add-mask::$credential"
  auth="AUTHORIZATION: basic $credential"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git() { command git -C "$work" -c "http.extraheader=$auth" "$@"; }

# The published branch (or a new one), with SITE merged in and committed (changed=1), or
# changed=0 when the branch holds these indexes already.
prepare() {
  changed=0
  rm -rf "$work" && mkdir -p "$work"
  git init --quiet
  local found=0
  git ls-remote --exit-code --heads "$remote" "$BRANCH" >/dev/null || found=$?
  case $found in
    0) git fetch --quiet --depth 1 "$remote" "$BRANCH" && git checkout --quiet -b "$BRANCH" FETCH_HEAD ;;
    2) git checkout --quiet --orphan "$BRANCH" ;;  # the first release: a new branch
    *) echo "::error::cannot read $remote (git ls-remote exit $found)"; exit 1 ;;
  esac
  python -m builders merge-index "$site" --into "$work"
  bash "$here/checksums.sh" "$work"
  touch "$work/.nojekyll"  # serve every file as it is (no Jekyll)
  check_size "$work"
  git add --all
  if git diff --cached --quiet; then
    echo "$BRANCH already holds these indexes"
    return 0
  fi
  changed=1
  git -c user.name="github-actions[bot]" -c user.email="41898282+github-actions[bot]@users.noreply.github.com" \
    commit --quiet -m "indexes for ${GITHUB_REF_NAME:-a release} (${GITHUB_SHA:-unknown commit})"
}

check_size() {
  local too_big total
  too_big=$(find "$1" -path "$1/.git" -prune -o -type f -size +"$MAX_FILE_BYTES"c -printf '%P (%s bytes)\n')
  [ -z "$too_big" ] || { echo "::error::GitHub Pages (a git branch) takes no file over 100 MB: $too_big. Set INDEX_BUCKET (an S3-compatible bucket) instead: promote.yml then releases the validated candidate there (docs/channels.md)."; exit 1; }
  total=$(du -sb --exclude=.git "$1" | cut -f1)
  [ "$total" -le "$MAX_SITE_BYTES" ] || { echo "::error::the indexes are $total bytes; GitHub Pages serves at most 1 GB. Set INDEX_BUCKET (an S3-compatible bucket) instead: promote.yml then releases the validated candidate there (docs/channels.md)."; exit 1; }
}

for attempt in 1 2 3; do
  prepare
  [ "$changed" = 1 ] || exit 0
  if git push --quiet "$remote" "HEAD:refs/heads/$BRANCH"; then
    echo "pushed the indexes to $BRANCH of $remote ($(du -sh --exclude=.git "$work" | cut -f1) in all)"
    exit 0
  fi
  echo "::warning::the push of $BRANCH lost a race with another deploy (attempt $attempt); merging again on top of it"
done
echo "::error::could not push $BRANCH after 3 attempts"
exit 1
