#!/usr/bin/env bash
# Publish the per-variant indexes (the folder `python -m builders index` wrote).
#   usage: ci/deploy-index.sh SITE
# By default to GitHub Pages: SITE becomes the content of the gh-pages branch (one commit per
# release on top of the branch's history; a CNAME file already there is kept), which Pages
# serves once Settings > Pages > Build and deployment is "Deploy from a branch", gh-pages, /.
# Pages serves sites of at most 1 GB and git refuses files over 100 MB, so a larger index is
# refused before anything is pushed. Needs GH_TOKEN (contents: write) and GITHUB_REPOSITORY.
#
# Another static host: set the repository variable INDEX_DEPLOY_COMMAND to a command; it runs
# with bash, with SITE set to the folder and INDEX_DEPLOY_TOKEN (a secret) in its environment,
# e.g.  aws s3 sync "$SITE" s3://downloads.example.org/ --delete
#       rsync -a --delete "$SITE"/ deploy@downloads.example.org:/srv/www/
set -euo pipefail

MAX_FILE_BYTES=$((100 * 1000 * 1000))
MAX_SITE_BYTES=$((1000 * 1000 * 1000))
BRANCH=gh-pages

site=${1:?usage: ci/deploy-index.sh SITE}
[ -f "$site/index.html" ] || [ -n "$(find "$site" -name index.html -print -quit)" ] \
  || { echo "::error::ci/deploy-index.sh: $site holds no index"; exit 1; }
site=$(cd "$site" && pwd)

if [ -n "${INDEX_DEPLOY_COMMAND:-}" ]; then
  echo "publishing $site with INDEX_DEPLOY_COMMAND"
  SITE=$site bash -euo pipefail -c "$INDEX_DEPLOY_COMMAND"
  exit 0
fi

too_big=$(find "$site" -type f -size +"$MAX_FILE_BYTES"c -printf '%P (%s bytes)\n')
[ -z "$too_big" ] || { echo "::error::GitHub Pages (a git branch) takes no file over 100 MB: $too_big. Set INDEX_DEPLOY_COMMAND to publish to another static host."; exit 1; }
total=$(du -sb "$site" | cut -f1)
[ "$total" -le "$MAX_SITE_BYTES" ] || { echo "::error::the indexes are $total bytes; GitHub Pages serves at most 1 GB. Set INDEX_DEPLOY_COMMAND to publish to another static host."; exit 1; }

: "${GH_TOKEN:?GH_TOKEN (contents: write) pushes the $BRANCH branch}"
: "${GITHUB_REPOSITORY:?}"
remote="${GITHUB_SERVER_URL:-https://github.com}/$GITHUB_REPOSITORY.git"
credential=$(printf 'x-access-token:%s' "$GH_TOKEN" | base64 | tr -d '\n')
echo "::add-mask::$credential"
auth="AUTHORIZATION: basic $credential"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git() { command git -C "$work" -c "http.extraheader=$auth" "$@"; }

git init --quiet
found=0
git ls-remote --exit-code --heads "$remote" "$BRANCH" >/dev/null || found=$?
case $found in
  0)
    git fetch --quiet --depth 1 "$remote" "$BRANCH"
    git checkout --quiet -b "$BRANCH" FETCH_HEAD
    find "$work" -mindepth 1 -maxdepth 1 ! -name .git ! -name CNAME -exec rm -rf {} + ;;
  2) git checkout --quiet --orphan "$BRANCH" ;;  # the first release: a new branch
  *) echo "::error::cannot read $remote (git ls-remote exit $found)"; exit 1 ;;
esac
cp -R "$site"/. "$work"/
touch "$work/.nojekyll"  # serve every file as it is (no Jekyll)
git add --all
if git diff --cached --quiet; then
  echo "$BRANCH already holds these indexes"
  exit 0
fi
git -c user.name="github-actions[bot]" -c user.email="41898282+github-actions[bot]@users.noreply.github.com" \
  commit --quiet -m "indexes for ${GITHUB_REF_NAME:-a release} (${GITHUB_SHA:-unknown commit})"
git push --quiet "$remote" "HEAD:refs/heads/$BRANCH"
echo "pushed the indexes to $BRANCH of $GITHUB_REPOSITORY ($(du -sh "$site" | cut -f1))"
