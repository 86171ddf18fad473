#!/usr/bin/env bash
# The attest steps' Sigstore bundles (their bundle-path outputs; a skipped step gives none) copied into OUT
# as provenance-1.sigstore.json, provenance-2.sigstore.json, ...: the folder `builders publish --attestations`
# reads (each bundle becomes the PEP 740 provenance of the files it names by sha256), the GitHub Release
# attaches and promote.yml hands to promote-release. No bundle at all is refused: nothing would be attested.
# With no BUNDLE argument the paths are read from BUNDLES, split on white space (the workflow's steps pass the
# attest steps' outputs there, so no shell line word-splits an unquoted variable).
#   usage: ci/attestation-bundles.sh OUT [BUNDLE...]
set -euo pipefail
out=${1:?usage: ci/attestation-bundles.sh OUT [BUNDLE...]}
shift
bundles=("$@")
[ ${#bundles[@]} -gt 0 ] || read -r -a bundles <<< "${BUNDLES:-}"
mkdir -p "$out"
n=0
for bundle in "${bundles[@]}"; do
  [ -f "$bundle" ] || { echo "::error::ci/attestation-bundles.sh: no bundle at $bundle"; exit 1; }
  n=$((n + 1))
  cp -- "$bundle" "$out/provenance-$n.sigstore.json"
done
[ "$n" -gt 0 ] || { echo "::error::ci/attestation-bundles.sh: no attestation bundle"; exit 1; }
echo "$n attestation bundle(s) in $out"
