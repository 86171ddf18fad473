#!/usr/bin/env bash
# SHA256SUMS beside each per-variant index: for every index under SITE (the folder two levels
# above its wheels: whl/<label>/ for whl/<label>/<project>/<wheel>), one `sha256sum` line per
# wheel it serves, its own and the mirrored requirements, paths relative to the index.
#   usage: ci/checksums.sh SITE        check later with: (cd SITE/whl/cu132 && sha256sum -c SHA256SUMS)
set -euo pipefail
site=${1:?usage: ci/checksums.sh SITE}
indexes=$(find "$site" -mindepth 3 -name '*.whl' -type f -printf '%h\n' | sed 's|/[^/]*$||' | LC_ALL=C sort -u)
[ -n "$indexes" ] || { echo "::error::ci/checksums.sh: no wheels under $site"; exit 1; }
while IFS= read -r index; do
  (cd "$index" && find . -mindepth 2 -maxdepth 2 -name '*.whl' -type f | sed 's|^\./||' | LC_ALL=C sort \
    | xargs -r sha256sum -- > SHA256SUMS)
  echo "$index/SHA256SUMS: $(wc -l < "$index/SHA256SUMS") wheel(s)"
done <<<"$indexes"
