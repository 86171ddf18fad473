#!/usr/bin/env bash
# The GitHub Release of a final release, made after PyPI and the indexes are published:
#   ci/github-release.sh TAG PLAN SITE BUNDLES OUT
# The notes (OUT/notes.md) come from the plan, which the matrix made: the version and every wheel
# by variant; the per-variant indexes' SHA256SUMS are joined into one OUT/SHA256SUMS (paths
# whl/<label>/<project>/<wheel>, as the index site lays them out); the attestation bundles under
# BUNDLES are named in the notes. All of them are the release's assets. `gh release create
# --verify-tag` refuses a tag that is not pushed; a rerun (the release exists) uploads the assets
# again (--clobber) and keeps the notes. Needs GH_TOKEN (contents: write).
# Two paths: the final tag's run (TAG is v{version}, PLAN a release's), or, with MANIFEST set (the
# bucket path: promote.yml after a promotion), the validated candidate's: PLAN and SITE are the
# candidate run's, the release manifest is attached too, BUNDLES may be empty (promote.yml's
# attestations are the repository's: `gh attestation verify`), and the tag v{version} is created at
# the manifest's commit if it is not pushed yet.
set -euo pipefail

die() { echo "::error::ci/github-release.sh: $*"; exit 1; }

[ $# -eq 5 ] || die "usage: ci/github-release.sh TAG PLAN SITE BUNDLES OUT"
tag=$1 plan=$2 site=$3 bundles=$4 out=$5
version=$(jq -er '.version' "$plan") || die "$plan has no version"
if [ -n "${MANIFEST:-}" ]; then
  jq -e '.candidate == true' "$plan" >/dev/null || die "$plan is not the plan of a candidate (MANIFEST: the bucket path)"
  [ "$(jq -r '.version' "$MANIFEST")" = "$version" ] || die "$MANIFEST is not of version $version"
  commit=$(jq -er '.commit' "$MANIFEST") || die "$MANIFEST names no commit"
  built_from=$(jq -r '.tag' "$MANIFEST")
  where=(--target "$commit")
else
  jq -e '.release == true' "$plan" >/dev/null || die "$plan is not the plan of a release (a candidate or a dispatch gets no GitHub Release)"
  built_from=$tag
  where=(--verify-tag)
fi
[ "$tag" = "v$version" ] || die "tag $tag is not v$version"
mkdir -p "$out"

: > "$out/SHA256SUMS"
while IFS= read -r sums; do
  index=$(dirname "$sums")
  sed "s|  |  ${index#"$site"/}/|" "$sums" >> "$out/SHA256SUMS"
done < <(find "$site" -name SHA256SUMS -type f | LC_ALL=C sort)
[ -s "$out/SHA256SUMS" ] || die "no SHA256SUMS under $site (ci/checksums.sh writes them)"
mapfile -t assets < <(find "$bundles" -type f 2>/dev/null | LC_ALL=C sort)
[ ${#assets[@]} -gt 0 ] || [ -n "${MANIFEST:-}" ] || die "no attestation bundles under $bundles"
[ -z "${MANIFEST:-}" ] || { cp -- "$MANIFEST" "$out/manifest.json"; assets+=("$out/manifest.json"); }

project=$(jq -er '[.shards[].include[].wheel][0] | split("-")[0]' "$plan")
{
  echo "# $project $version"
  echo
  echo "$(jq '.targets' "$plan") wheels, built from matrix.yaml at $built_from."
  echo
  echo "## Wheels by variant"
  jq -r '[.shards[].include[]] | group_by(.variant)[] | "\n### \(.[0].variant)\n", (.[] | "- `\(.wheel)`")' "$plan"
  echo
  echo "## Checksums"
  echo
  echo "\`SHA256SUMS\`: every wheel of the per-variant indexes (\`sha256sum -c SHA256SUMS\` in a copy of the index site)."
  echo
  echo "## Build provenance"
  echo
  echo "Verify any wheel with \`gh attestation verify WHEEL --repo ${GITHUB_REPOSITORY:-OWNER/REPOSITORY}\`."
  [ -z "${MANIFEST:-}" ] || echo "\`manifest.json\`: the release manifest, every file the candidate $built_from built, with its sha256."
  for asset in "${assets[@]}"; do echo "- \`${asset##*/}\`"; done
} > "$out/notes.md"

if gh release view "$tag" >/dev/null 2>&1; then
  gh release upload "$tag" --clobber "$out/SHA256SUMS" "${assets[@]}"
else
  gh release create "$tag" "${where[@]}" --title "$project $version" --notes-file "$out/notes.md" "$out/SHA256SUMS" "${assets[@]}"
fi
echo "GitHub Release $tag: SHA256SUMS ($(wc -l < "$out/SHA256SUMS") wheels) and ${#assets[@]} attestation bundle(s)"
