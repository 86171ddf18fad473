#!/usr/bin/env bash
# Create the local base image the container tests build on, when it is missing:
# a minimal Debian unstable (it packages python3.13, 3.14 and 3.15) made with debootstrap and
# imported into podman. No registry is contacted; Debian's packages come from the apt mirror.
#   usage: scripts/podman-base.sh [IMAGE]   (default localhost/builders-base:sid)
set -euo pipefail
image=${1:-localhost/builders-base:sid}
here=$(cd "$(dirname "$0")/.." && pwd)
export CONTAINERS_CONF=${CONTAINERS_CONF:-$here/builders/resources/containers/containers.conf}

if podman image exists "$image"; then
  echo "base image $image exists"
  exit 0
fi
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
debootstrap --variant=minbase sid "$root" >/dev/null
tar -C "$root" -c . | podman import - "$image" >/dev/null
echo "created base image $image"
