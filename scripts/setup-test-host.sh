#!/usr/bin/env bash
# What the slow tests need on a Debian host, installed if missing: podman with runc (crun fails
# on these hosts' cgroup layout; see docker/containers.conf), debootstrap, and the local base
# image the container tests build on. Run by `nox -s tests` (and so by .ci/run); needs root
# only when something is missing.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)

missing=()
for tool in podman runc debootstrap; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "installing ${missing[*]} (apt)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman runc debootstrap >/dev/null
fi
"$here/scripts/podman-base.sh" localhost/builders-base:sid
