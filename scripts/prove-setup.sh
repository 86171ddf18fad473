#!/usr/bin/env bash
# Prove scripts/setup-test-host.sh on a clean Debian: run it in a fresh container of the local base
# image (debootstrap's minbase Debian unstable, made by scripts/podman-base.sh), then its --check
# mode there, which fails naming whatever the suite needs and is still missing, then ask each tool
# for its version. One thing is left out inside: making the base image itself (podman inside
# podman does not run on these hosts), so podman is installed and asked, but not used. Prints the
# time it took.
#   usage: scripts/prove-setup.sh [IMAGE]   (default localhost/builders-base:sid)
set -euo pipefail
image=${1:-localhost/builders-base:sid}
here=$(cd "$(dirname "$0")/.." && pwd)
export CONTAINERS_CONF=${CONTAINERS_CONF:-$here/builders/resources/containers/containers.conf}

# The host's apt settings about its mirror (a snapshot mirror older than the clock needs
# Check-Valid-Until "false"; a proxy), so the container reaches the same mirror the same way.
apt_conf=$(apt-config dump 2>/dev/null | grep -E '^Acquire::(Check-Valid-Until|Check-Date|https?::Proxy) ' || true)

# HTTPS from a container here needs the host's CA bundle (design.md): given to npm (node) beside the
# system's, which apt's ca-certificates makes inside.
ca=(); [ -f /etc/ssl/certs/ca-certificates.crt ] && ca=(--volume /etc/ssl/certs/ca-certificates.crt:/host-ca.crt:ro
                                                      --env NODE_EXTRA_CA_CERTS=/host-ca.crt)

start=$(date +%s)
podman run --rm --network host --volume "$here:/src:ro" "${ca[@]}" --env BUILDERS_SETUP_NO_BASE_IMAGE=1 \
  --env DEBIAN_FRONTEND=noninteractive --env "APT_CONF=$apt_conf" "$image" bash -euo pipefail -c '
    command -v ccache && { echo "the base image already has ccache: not a fresh machine"; exit 1; }
    printf "%s\n" "$APT_CONF" > /etc/apt/apt.conf.d/99host
    /src/scripts/setup-test-host.sh
    /src/scripts/setup-test-host.sh --check
    for tool in ccache podman runc debootstrap dockerd docker chromium chromedriver docker-registry readelf npm; do
      printf "%-16s %s\n" "$tool" "$(command -v "$tool")"
    done
    ccache --version | head -1; podman --version; chromium --version 2>/dev/null | head -1
    echo "a second run installs nothing:"; /src/scripts/setup-test-host.sh'
echo "setup-test-host.sh proven on a fresh $image in $(( $(date +%s) - start )) s (base image step skipped inside)"
