#!/usr/bin/env bash
# The subjects of the release's build provenance: the SHA-256 of every wheel (and release manifest) under the DIRs,
# named by file name, in lists of at most 1024 (actions/attest's limit per attestation):
# OUT/subjects-1.sha256, OUT/subjects-2.sha256, ... The release workflow attests up to four
# lists; more wheels than that is refused here rather than published half-attested.
#   usage: ci/provenance.sh OUT DIR...
set -euo pipefail
PER_LIST=1024
LISTS=4
out=${1:?usage: ci/provenance.sh OUT DIR...}
shift
[ $# -gt 0 ] || { echo "::error::ci/provenance.sh: no folders of wheels given"; exit 1; }
mkdir -p "$out"
all="$out/all.sha256"
find "$@" \( -name '*.whl' -o -name manifest.json \) -type f -print0 | xargs -0 -r sha256sum -- \
  | while read -r digest path; do printf '%s  %s\n' "$digest" "${path##*/}"; done | LC_ALL=C sort -u > "$all"
count=$(wc -l < "$all")
[ "$count" -gt 0 ] || { echo "::error::ci/provenance.sh: no wheels under $*"; exit 1; }
names=$(cut -d' ' -f3 "$all" | sort | uniq -d)
[ -z "$names" ] || { echo "::error::ci/provenance.sh: different wheels with one name: $names"; exit 1; }
[ "$count" -le $((PER_LIST * LISTS)) ] \
  || { echo "::error::ci/provenance.sh: $count wheels, more than the $LISTS attestations of $PER_LIST the workflow makes"; exit 1; }
split --lines="$PER_LIST" --numeric-suffixes=1 --suffix-length=1 --additional-suffix=.sha256 "$all" "$out/subjects-"
rm "$all"
echo "$count wheel(s) to attest in $(find "$out" -name 'subjects-*.sha256' | wc -l) list(s)"
